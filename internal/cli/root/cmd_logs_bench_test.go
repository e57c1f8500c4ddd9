package root

// Log ingest budget: `sandscope logs -f` must consume a stream in at most 1.5× the time a bare SSE
// reader (`curl -N` to /dev/null) needs for the same stream, measured in the same run.
//
//	go test -run '^$' -bench BenchmarkLogsFollowVsCurl -benchtime 3x .
//
// Two shapes:
//   - replay: the 256 MiB stream is fully retained (retention raised to 320 MiB for this bridge),
//     the producer has finished, and each reader consumes the whole backlog alone, alternating.
//     This measures the readers, not the producer.
//   - live: retention at its real 1 MiB; both readers attach before the producer starts and read
//     concurrently while it writes as fast as it can. A reader that falls behind is overtaken
//     (the bridge never waits for readers); the truncations each reader saw are reported, so the
//     times are only comparable when both report 0.

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
	"sandscope/localbridge/bridgetest"
)

const benchStreamBytes = 256 << 20

func benchCurl(b *testing.B) string {
	b.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			b.Fatal("curl is required for this benchmark")
		}
		b.Skip("curl not installed")
	}
	return path
}

// benchSetup starts a bridge and returns the paths the readers need: the token file (sandscope)
// and a header file (curl; the token never goes into argv).
func benchSetup(b *testing.B, opts ...bridgetest.Option) (br *bridgetest.Bridge, tokenFile, headerFile string, c *client.Client) {
	br = bridgetest.Start(b, opts...)
	dir := b.TempDir()
	tokenFile = filepath.Join(dir, "token")
	headerFile = filepath.Join(dir, "headers")
	if err := os.WriteFile(tokenFile, []byte(br.Token), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(headerFile, []byte("Authorization: Bearer "+br.Token+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	c, err := client.New(br.URL, client.WithToken(br.Token))
	if err != nil {
		b.Fatal(err)
	}
	return br, tokenFile, headerFile, c
}

func producer(delay string) []string {
	return []string{"sh", "-c", delay + "yes 'sandscope benchmark line 0123456789abcdefghijklmnopqrstuvwxyz' | head -c " + itoa(benchStreamBytes)}
}

func BenchmarkLogsFollowVsCurl(b *testing.B) {
	curl := benchCurl(b)
	bin := sandscopeBinary(b)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()

	b.Run("replay", func(b *testing.B) {
		br, tokenFile, headerFile, c := benchSetup(b, bridgetest.WithProcessLogLimits(320<<20, 10_000_000))
		p := finishedProducer(b, c)
		url := br.URL + "/v1/sandbox/local/processes/" + p.ID + "/logs?replay=true&follow=true"
		// Check once that sandscope delivers every byte.
		var cnt countingWriter
		check := exec.Command(bin, "--url", br.URL, "--token-file", tokenFile, "logs", "local", p.ID, "-f")
		check.Stdout = &cnt
		if err := check.Run(); err != nil || cnt.n != benchStreamBytes {
			b.Fatalf("sandscope delivered %d bytes (%v)", cnt.n, err)
		}
		var tCurl, tSS time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			cmd := exec.Command(curl, "-sSN", "-H", "@"+headerFile, "-o", os.DevNull, url)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("curl: %v %s", err, out)
			}
			tCurl += time.Since(start)

			start = time.Now()
			cmd = exec.Command(bin, "--url", br.URL, "--token-file", tokenFile, "logs", "local", p.ID, "-f")
			cmd.Stdout = devnull
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				b.Fatalf("sandscope: %v %s", err, stderr.String())
			}
			tSS += time.Since(start)
		}
		b.StopTimer()
		n := float64(b.N)
		b.ReportMetric(tCurl.Seconds()/n, "curl-s/run")
		b.ReportMetric(tSS.Seconds()/n, "sandscope-s/run")
		b.ReportMetric(tSS.Seconds()/tCurl.Seconds(), "ratio")
		b.ReportMetric(float64(benchStreamBytes)/(1<<20)/(tSS.Seconds()/n), "sandscope-MiB/s")
	})

	b.Run("live", func(b *testing.B) {
		br, tokenFile, headerFile, c := benchSetup(b)
		ctx := context.Background()
		var tCurl, tSS time.Duration
		var gapsCurl, gapsSS int
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p, err := c.StartProcess(ctx, "local", client.ExecRequest{Argv: producer("sleep 1; ")})
			if err != nil {
				b.Fatal(err)
			}
			url := br.URL + "/v1/sandbox/local/processes/" + p.ID + "/logs?replay=true&follow=true"
			var wg sync.WaitGroup
			wg.Add(2)
			start := time.Now()
			go func() {
				defer wg.Done()
				cmd := exec.Command(curl, "-sSN", "-H", "@"+headerFile, url)
				out, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					b.Error(err)
					return
				}
				gapsCurl += countTruncated(out)
				_ = cmd.Wait()
				tCurl += time.Since(start)
			}()
			go func() {
				defer wg.Done()
				cmd := exec.Command(bin, "--url", br.URL, "--token-file", tokenFile, "logs", "local", p.ID, "-f")
				cmd.Stdout = devnull
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				_ = cmd.Run()
				gapsSS += strings.Count(stderr.String(), "sandscope: gap")
				tSS += time.Since(start)
			}()
			wg.Wait()
		}
		b.StopTimer()
		n := float64(b.N)
		b.ReportMetric(tCurl.Seconds()/n, "curl-s/run")
		b.ReportMetric(tSS.Seconds()/n, "sandscope-s/run")
		b.ReportMetric(tSS.Seconds()/tCurl.Seconds(), "ratio")
		b.ReportMetric(float64(gapsCurl)/n, "curl-truncations/run")
		b.ReportMetric(float64(gapsSS)/n, "sandscope-gaps/run")
	})
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// countTruncated reads an SSE stream to its end and counts `truncated` events.
func countTruncated(r io.Reader) int {
	br := bufio.NewReaderSize(r, 1<<20)
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if bytes.Contains(line, []byte(`"type":"truncated"`)) {
			n++
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return n
		}
	}
}

// finishedProducer runs the replay producer to its end, so both readers replay the same log.
func finishedProducer(b *testing.B, c *client.Client) client.Process {
	b.Helper()
	ctx := context.Background()
	p, err := c.StartProcess(ctx, "local", client.ExecRequest{Argv: producer("")})
	if err != nil {
		b.Fatal(err)
	}
	e2e.WaitEnded(b, c, "local", p.ID)
	return p
}

// BenchmarkLogsFollowRecording measures what recording costs `logs -f`: the same 256 MiB replay
// read with the record (the default) and with --no-record, alternating in the same run. The ratio
// is the recording overhead (target ≤ 1.05). The record keeps the stream's events and cursors,
// not its output (the TUI's background capture keeps output, within its budget).
//
//	go test -run '^$' -bench BenchmarkLogsFollowRecording -benchtime 5x .
func BenchmarkLogsFollowRecording(b *testing.B) {
	bin := sandscopeBinary(b)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	br, tokenFile, _, c := benchSetup(b, bridgetest.WithProcessLogLimits(320<<20, 10_000_000))
	p := finishedProducer(b, c)
	state := b.TempDir()
	run := func(extra ...string) time.Duration {
		args := append([]string{"--url", br.URL, "--token-file", tokenFile, "logs", "local", p.ID, "-f"}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		cmd.Stdout = devnull
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("sandscope: %v %s", err, stderr.String())
		}
		return time.Since(start)
	}
	run() // warm the page cache and create the record
	var tOn, tOff time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tOff += run("--no-record")
		tOn += run()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(tOff.Seconds()/n, "no-record-s/run")
	b.ReportMetric(tOn.Seconds()/n, "record-s/run")
	b.ReportMetric(tOn.Seconds()/tOff.Seconds(), "ratio")
	if matches, _ := filepath.Glob(filepath.Join(state, "sandscope", "record", "*.db")); len(matches) != 1 {
		b.Fatalf("the record was not written: %v", matches)
	}
}
