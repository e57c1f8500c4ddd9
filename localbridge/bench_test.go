package localbridge_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os/exec"
	"syscall"
	"testing"
	"time"

	asmbase64 "github.com/segmentio/asm/base64"

	"sandscope/localbridge/bridgetest"
)

// BenchmarkSSEThroughput compares delivering a process's output as SSE log events (launch, follow
// from the start, read every event the way a bare SSE reader does; the -decoded case also decodes
// every payload) with reading the same command's output straight from a pipe, in the same run. Metrics: sse-MB/s, pipe-MB/s and ratio (sse/pipe; the budget is ≥ 0.5);
// sse-cpu-ms/MB and pipe-cpu-ms/MB, the CPU each side spent per MB (the bridge, the reader and the
// command for the stream); first-byte-ms, from the launch request to the first output event.
// A third side, bare SSE (bare-MB/s, bare-cpu-ms/MB, bare-ratio against the pipe), is the least
// any SSE bridge could do with the same command: its output read into one reused buffer, each
// read written as one base64 event on loopback TCP, no HTTP, no retention, no cursors, and the
// same reader. It says how much of the pipe's speed the SSE framing itself leaves.
// Retention is raised above the output size so the figure counts every byte (a reader that fell
// behind would otherwise be skipped ahead); truncated reports it anyway.
//
//	go test ./localbridge -run '^$' -bench SSEThroughput -benchtime 3x
func BenchmarkSSEThroughput(b *testing.B) {
	for _, bc := range []struct {
		name, script string
		decode       bool
	}{
		{"urandom-base64", "head -c 50000000 /dev/urandom | base64", false},
		{"urandom-base64-decoded", "head -c 50000000 /dev/urandom | base64", true},
		{"zero", "head -c 64000000 /dev/zero", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			retention := benchRetention
			if *sseRetention > 0 {
				retention = *sseRetention
			}
			br := bridgetest.Start(b, bridgetest.WithProcessLogLimits(retention, 1<<24))
			var ttfb time.Duration
			var pipeDur, sseDur, pipeCPU, sseCPU, bareDur, bareCPU time.Duration
			var pipeBytes, sseBytes, bareBytes int64
			truncated, events := 0, 0
			for i := 0; i < b.N; i++ {
				// Baseline: the same command writing into a pipe we drain.
				start, cpu0 := time.Now(), cpuTime()
				cmd := exec.Command("sh", "-c", bc.script)
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, out)
				if err != nil || cmd.Wait() != nil {
					b.Fatalf("pipe: %v", err)
				}
				pipeDur += time.Since(start)
				pipeCPU += cpuTime() - cpu0
				pipeBytes += n

				start, cpu0 = time.Now(), cpuTime()
				n, err = bareSSE(bc.script)
				if err != nil {
					b.Fatalf("bare SSE: %v", err)
				}
				bareDur += time.Since(start)
				bareCPU += cpuTime() - cpu0
				bareBytes += n

				// Through the bridge: launch, follow from the start, decode.
				start, cpu0 = time.Now(), cpuTime()
				st := launch(b, br, sb, map[string]any{"argv": []string{"sh", "-c", bc.script}})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				req, _ := http.NewRequestWithContext(ctx, "GET", br.URL+"/v1/sandbox/"+sb+"/processes/"+st.ID+"/logs?follow=true", nil)
				req.Header.Set("Authorization", "Bearer "+br.Token)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					cancel()
					b.Fatal(err)
				}
				var got int64
				ended := false
				var first time.Time
				each := func(typ, _ string, n int) bool {
					switch typ {
					case "stdout", "stderr":
						if got == 0 {
							first = time.Now()
						}
						got += int64(n)
						events++
					case "truncated":
						truncated++
					case "terminal":
						ended = true
					}
					return true
				}
				if bc.decode {
					err = scanSSE(res.Body, func(typ, c string, data []byte) bool { return each(typ, c, len(data)) })
				} else {
					err = skimSSE(res.Body, each)
				}
				res.Body.Close()
				cancel()
				if err != nil || !ended {
					b.Fatalf("sse: ended=%v err=%v", ended, err)
				}
				sseDur += time.Since(start)
				if !first.IsZero() {
					ttfb += first.Sub(start)
				}
				sseCPU += cpuTime() - cpu0
				sseBytes += got
			}
			pipeMBps := float64(pipeBytes) / 1e6 / pipeDur.Seconds()
			sseMBps := float64(sseBytes) / 1e6 / sseDur.Seconds()
			b.ReportMetric(pipeMBps, "pipe-MB/s")
			b.ReportMetric(sseMBps, "sse-MB/s")
			b.ReportMetric(sseMBps/pipeMBps, "ratio")
			bareMBps := float64(bareBytes) / 1e6 / bareDur.Seconds()
			b.ReportMetric(bareMBps, "bare-MB/s")
			b.ReportMetric(bareMBps/pipeMBps, "bare-ratio")
			b.ReportMetric(bareCPU.Seconds()*1e3/(float64(bareBytes)/1e6), "bare-cpu-ms/MB")
			b.ReportMetric(float64(truncated), "truncated")
			b.ReportMetric(ttfb.Seconds()*1e3/float64(b.N), "first-byte-ms")
			// CPU per MB (this process and its waited children: the command, and for the stream the
			// bridge's pump, handler and reader): steadier than MB/s on a shared machine.
			b.ReportMetric(pipeCPU.Seconds()*1e3/(float64(pipeBytes)/1e6), "pipe-cpu-ms/MB")
			b.ReportMetric(sseCPU.Seconds()*1e3/(float64(sseBytes)/1e6), "sse-cpu-ms/MB")
			b.ReportMetric(float64(sseBytes)/float64(max(events, 1)), "bytes/event")
			if sseBytes != pipeBytes {
				b.Logf("bytes differ: sse %d, pipe %d", sseBytes, pipeBytes)
			}
		})
	}
}

// bareSSE runs script with its output delivered as bare SSE over loopback TCP (see
// BenchmarkSSEThroughput) and returns the bytes the reader counted.
func bareSSE(script string) (int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			conn, err := ln.Accept()
			if err != nil {
				return err
			}
			defer conn.Close()
			cmd := exec.Command("sh", "-c", script)
			out, err := cmd.StdoutPipe()
			if err != nil {
				return err
			}
			if err := cmd.Start(); err != nil {
				return err
			}
			buf := make([]byte, 256<<10)
			frame := make([]byte, 0, 512<<10)
			for {
				n, rerr := out.Read(buf)
				if n > 0 {
					frame = append(frame[:0], `data: {"type":"stdout","data":"`...)
					m := asmbase64.StdEncoding.EncodedLen(n)
					frame = frame[:len(frame)+m]
					asmbase64.StdEncoding.Encode(frame[len(frame)-m:], buf[:n])
					frame = append(frame, "\"}\n\n"...)
					if _, err := conn.Write(frame); err != nil {
						_ = cmd.Process.Kill() // the reader left: stop the command, reap it
						_ = cmd.Wait()
						return err
					}
				}
				if rerr != nil {
					break
				}
			}
			if err := cmd.Wait(); err != nil {
				return err
			}
			_, err = conn.Write([]byte("data: {\"type\":\"terminal\"}\n\n"))
			return err
		}()
	}()
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Minute))
	var got int64
	ended := false
	err = skimSSE(conn, func(typ, _ string, n int) bool {
		got += int64(n)
		ended = ended || typ == "terminal"
		return true
	})
	conn.Close() // a reader that stopped early must not leave the writer blocked
	if serr := <-served; serr != nil && err == nil {
		err = serr
	}
	if err == nil && !ended {
		err = errors.New("no terminal event")
	}
	return got, err
}

// cpuTime is the user and system CPU time of this process and its waited children so far.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// skimSSE reads SSE frames like a bare reader (curl -N > /dev/null) would, only classifying each
// event and computing its payload size from the base64 length.
func skimSSE(r io.Reader, each func(typ, cursor string, n int) bool) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var line []byte
	for {
		var err error
		if line, err = nextSSEFrame(br, line[:0]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		typ, n := "other", 0
		switch {
		case bytes.HasPrefix(line, []byte(`data: {"type":"stdout"`)), bytes.HasPrefix(line, []byte(`data: {"type":"stderr"`)):
			typ = string(line[15:21])
			i := bytes.Index(line, []byte(`"data":"`))
			if i < 0 {
				return errors.New("event without data")
			}
			enc := line[i+8 : len(line)-3]
			n = len(enc) / 4 * 3
			if bytes.HasSuffix(enc, []byte("==")) {
				n -= 2
			} else if bytes.HasSuffix(enc, []byte("=")) {
				n--
			}
		case bytes.HasPrefix(line, []byte(`data: {"type":"terminal"`)):
			typ = "terminal"
		case bytes.HasPrefix(line, []byte(`data: {"type":"truncated"`)):
			typ = "truncated"
		}
		if !each(typ, "", n) {
			return nil
		}
	}
}

// benchRetention is the per-process log retention during the benchmark: above the output size,
// so no byte is skipped and every byte is counted.
var benchRetention = 256 << 20

// -sse.retention overrides benchRetention (bytes), to measure with a bounded log whose memory is
// recycled; bytes a slow reader was skipped past are then not counted as delivered.
var sseRetention = flag.Int("sse.retention", 0, "per-process log retention in BenchmarkSSEThroughput (0: every byte)")
