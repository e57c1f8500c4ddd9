package localbridge_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"sandscope/localbridge/bridgetest"
)

// BenchmarkSSEThroughput compares delivering a process's output as SSE log events (launch, follow
// from the start, decode every event) with reading the same command's output straight from a pipe,
// in the same run. Metrics: sse-MB/s, pipe-MB/s and ratio (sse/pipe; the budget is ≥ 0.5).
// Retention is raised above the output size so the figure counts every byte (a reader that fell
// behind would otherwise be skipped ahead); truncated reports it anyway.
//
//	go test ./localbridge -run '^$' -bench SSEThroughput -benchtime 3x
func BenchmarkSSEThroughput(b *testing.B) {
	for _, bc := range []struct{ name, script string }{
		{"urandom-base64", "head -c 50000000 /dev/urandom | base64"},
		{"zero", "head -c 64000000 /dev/zero"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			br := bridgetest.Start(b, bridgetest.WithProcessLogLimits(1<<30, 1<<24))
			var pipeDur, sseDur time.Duration
			var pipeBytes, sseBytes int64
			truncated := 0
			for i := 0; i < b.N; i++ {
				// Baseline: the same command writing into a pipe we drain.
				start := time.Now()
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
				pipeBytes += n

				// Through the bridge: launch, follow from the start, decode.
				start = time.Now()
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
				err = scanSSE(res.Body, func(typ, _ string, data []byte) bool {
					switch typ {
					case "stdout", "stderr":
						got += int64(len(data))
					case "truncated":
						truncated++
					case "terminal":
						ended = true
					}
					return true
				})
				res.Body.Close()
				cancel()
				if err != nil || !ended {
					b.Fatalf("sse: ended=%v err=%v", ended, err)
				}
				sseDur += time.Since(start)
				sseBytes += got
			}
			pipeMBps := float64(pipeBytes) / 1e6 / pipeDur.Seconds()
			sseMBps := float64(sseBytes) / 1e6 / sseDur.Seconds()
			b.ReportMetric(pipeMBps, "pipe-MB/s")
			b.ReportMetric(sseMBps, "sse-MB/s")
			b.ReportMetric(sseMBps/pipeMBps, "ratio")
			b.ReportMetric(float64(truncated), "truncated")
			if sseBytes != pipeBytes {
				b.Logf("bytes differ: sse %d, pipe %d", sseBytes, pipeBytes)
			}
		})
	}
}
