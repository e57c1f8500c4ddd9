package watch_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/watch"
	"sandscope/localbridge/bridgetest"
	"sandscope/record"
)

var idleWindow = flag.Duration("watch.idle", 30*time.Second, "how long BenchmarkWatchIdle50 measures")

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchIdle50 is watch's idle cost: 50 sandboxes on a local bridge, nothing running, the
// default budget; the process's CPU over -watch.idle (default 30 s) against the same window with
// the bridge alone. The bridge runs in this process, so "watch" includes the bridge answering its
// polls (at most 5 requests/s by the budget): an upper bound for watch itself.
func BenchmarkWatchIdle50(b *testing.B) {
	for i := 0; i < b.N; i++ {
		br := bridgetest.Start(b)
		c, err := client.New(br.URL, client.WithToken(br.Token))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for j := 0; j < 50; j++ {
			sb := fmt.Sprintf("idle%c%c", 'a'+j/26, 'a'+j%26)
			if _, err := c.StartProcess(ctx, sb, client.ExecRequest{Argv: []string{"true"}}); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(time.Second) // the processes end
		rec, err := record.Open(record.Options{Dir: b.TempDir(), Bridge: "sandscope-bridge:bench"})
		if err != nil {
			b.Fatal(err)
		}
		d, err := driver.Open(ctx, c, driver.Options{Record: rec})
		if err != nil {
			b.Fatal(err)
		}

		base0 := cpuTime()
		time.Sleep(*idleWindow)
		base := cpuTime() - base0

		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- watch.Run(wctx, []watch.Target{{Driver: d, Record: rec}}, watch.Options{Budget: record.DefaultWatchBudget}, io.Discard)
		}()
		time.Sleep(5 * time.Second) // the first round of polls and the record's first writes
		w0 := cpuTime()
		time.Sleep(*idleWindow)
		used := cpuTime() - w0
		cancel()
		<-done
		if n := len(mustKnown(b, rec)); n != 50 {
			b.Fatalf("watched %d sandboxes, want 50", n)
		}
		_ = d.Close()
		_ = rec.Close()
		b.ReportMetric(float64(used.Microseconds())/1000/idleWindow.Seconds(), "cpu-ms/s")
		b.ReportMetric(float64(base.Microseconds())/1000/idleWindow.Seconds(), "bridge-alone-cpu-ms/s")
		b.ReportMetric(100*used.Seconds()/idleWindow.Seconds(), "%cpu")
	}
}

func mustKnown(b *testing.B, rec *record.Record) []string {
	_ = rec.Flush()
	s, err := rec.KnownSandboxes()
	if err != nil {
		b.Fatal(err)
	}
	return s
}
