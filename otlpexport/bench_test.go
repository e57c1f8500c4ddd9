package otlpexport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchExport fills a record with fill, then exports it over real OTLP/HTTP to a receiver on
// loopback that reads and discards each body, and returns the CPU the export took (the receiver's
// reading is in the same process and counted too: an upper bound).
func benchExport(b *testing.B, output bool, fill func(*record.Record)) time.Duration {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	rec, err := record.Open(record.Options{Dir: b.TempDir(), Bridge: "sandscope-bridge:bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	fill(rec)
	if err := rec.Flush(); err != nil {
		b.Fatal(err)
	}
	res, err := Resolve(Settings{Output: output}, func(k string) (string, bool) {
		return srv.URL, k == "OTEL_EXPORTER_OTLP_ENDPOINT"
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tr, lg, err := res.Exporters(ctx)
	if err != nil {
		b.Fatal(err)
	}
	x, err := New(Options{Record: rec, Bridge: Bridge{URL: "http://127.0.0.1:1", Dialect: "v1-preview"}, Name: "bench",
		Traces: tr, Logs: lg, Output: output, Poll: 10 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	before := cpuTime()
	go func() { done <- x.Run(runCtx) }()
	for {
		st := x.Status()
		if st.Position > 0 && st.Backlog == 0 && st.OutputBacklog == 0 && !st.Failing {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	used := cpuTime() - before
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return used
}

// BenchmarkExportRuns: the export's CPU per 1,000 runs (each run: appeared, ended; one span).
func BenchmarkExportRuns(b *testing.B) {
	const runs = 1000
	var total time.Duration
	for i := 0; i < b.N; i++ {
		total += benchExport(b, false, func(rec *record.Record) {
			for j := 0; j < runs; j++ {
				ran(rec, fmt.Sprintf("sb%d", j%50), fmt.Sprintf("p%04d", j), j%3)
			}
		})
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "cpu-ms/1000runs")
}

// BenchmarkExportOutput: the export's CPU per MB of captured output (80-byte lines, one log
// record each, with --otlp-output).
func BenchmarkExportOutput(b *testing.B) {
	const size = 8 << 20
	line := strings.Repeat("x", 79) + "\n"
	var total time.Duration
	for i := 0; i < b.N; i++ {
		total += benchExport(b, true, func(rec *record.Record) {
			ran(rec, "sb", "p1", 0)
			chunk := []byte(strings.Repeat(line, (64<<10)/len(line)))
			for n := 0; n < size; n += len(chunk) {
				rec.CaptureData("sb", "p1", client.LogEvent{Kind: client.Data, Data: chunk, Cursor: fmt.Sprint(n)})
				if n%(1<<20) == 0 {
					_ = rec.Flush()
				}
			}
		})
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N)/float64(size>>20), "cpu-ms/MB")
}
