package record

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
)

// BenchmarkOpenClose is what a command pays to record: open the record as commands do (NoFold:
// without it each Add read the sandbox's earlier events back, a cost that grew with b.N and a
// quarter of the op at 200), add one event, close.
func BenchmarkOpenClose(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		r, err := Open(Options{Dir: dir, Bridge: bridgeID, NoFold: true})
		if err != nil {
			b.Fatal(err)
		}
		r.Add(Event{Sandbox: "demo", Source: FromStream, Kind: "ended", Entity: Process, EntityID: "p"})
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiskGrowthChattyAgent records one hour of a chatty agent — 200 JSONL lines of 300
// bytes a second (216 MB of output), a stream interruption every minute and a watcher change
// every 10 s — and reports the record's size on disk at the end against the per-process output
// budget. The record must stay bounded by the budget, not grow with the output.
//
//	go test ./record -run '^$' -bench DiskGrowth -benchtime 1x
func BenchmarkDiskGrowthChattyAgent(b *testing.B) {
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		clock := t0
		r, err := Open(Options{Dir: dir, Bridge: bridgeID, Now: func() time.Time { return clock }, FlushEvery: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		line := []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("thinking about the failing test ", 9) + `"}]}}` + "\n")
		line = line[len(line)-300:]
		var written int64
		seq := 0
		for sec := 0; sec < 3600; sec++ {
			clock = t0.Add(time.Duration(sec) * time.Second)
			for l := 0; l < 200; l++ {
				seq++
				r.CaptureData("demo", "agent", client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(seq), Time: clock, Data: line})
				written += int64(len(line))
			}
			if sec%60 == 30 {
				r.Add(FromLogEvent("demo", "agent", client.LogEvent{Kind: client.Interrupted, Time: clock, Cursor: strconv.Itoa(seq), Reason: "connection reset"}))
				r.Add(FromLogEvent("demo", "agent", client.LogEvent{Kind: client.Resumed, Time: clock, Cursor: strconv.Itoa(seq), Attempt: 1}))
			}
			if sec%10 == 0 {
				p := running("agent", 10, 1)
				p.PID = sec
				r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "demo", Time: clock, Process: p, Incarnation: client.Incarnation{Number: 1}}))
			}
			if sec%5 == 4 {
				if err := r.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(r.Path())
		if err != nil {
			b.Fatal(err)
		}
		size := fi.Size() + outputBytes(r.Path()) // the file and its output's segments
		budget := DefaultBudget.CapturePerRun
		b.ReportMetric(float64(written)/(1<<20), "MiB-output/h")
		b.ReportMetric(float64(size)/(1<<20), "MiB-on-disk")
		b.ReportMetric(float64(size)/float64(budget), "disk/budget")
		if size > 2*budget {
			b.Fatalf("record is %d bytes after an hour, budget %d", size, budget)
		}
	}
}

type countingTransport struct {
	n  atomic.Int64
	rt http.RoundTripper
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(req)
}

// BenchmarkWatchRate50 watches 50 sandboxes of a local bridge, one of them on screen, and counts
// the requests the background watcher makes, against its budget. The budget is scaled ten times
// up (fast 100 ms, slow 1 s, 50 background requests/s) so a 10 s window holds several slow
// rounds; the default (1 s, 10 s, 5/s) is the same arithmetic (TestSlowIntervalHoldsTheBudget).
//
//	go test ./record -run '^$' -bench WatchRate50 -benchtime 1x
func BenchmarkWatchRate50(b *testing.B) {
	srv, err := localbridge.New(localbridge.Config{Root: b.TempDir(), Token: "bench-token"})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	}()
	ct := &countingTransport{rt: http.DefaultTransport}
	c, err := client.New(srv.URL(), client.WithToken("bench-token"), client.WithHTTPClient(&http.Client{Transport: ct}))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for i := 0; i < 50; i++ {
		id, err := c.CreateSandbox(ctx)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	_, _ = c.Capabilities(ctx)
	for i := 0; i < b.N; i++ {
		rec, err := Open(Options{Dir: b.TempDir(), Bridge: bridgeID})
		if err != nil {
			b.Fatal(err)
		}
		budget := WatchBudget{Fast: 100 * time.Millisecond, Slow: time.Second, Background: 50}
		m := NewManager(ctx, rec, FromClient(c), budget)
		m.Track(ids...)
		m.Focus(ids[0])
		time.Sleep(3 * time.Second) // the first round (every sandbox at once) is over
		start, n0 := time.Now(), ct.n.Load()
		time.Sleep(10 * time.Second)
		rate := float64(ct.n.Load()-n0) / time.Since(start).Seconds()
		m.Close()
		rec.Close()
		fast := float64(PollRequests) / budget.Fast.Seconds()
		stated := fast + budget.Background
		b.ReportMetric(rate, "requests/s")
		b.ReportMetric(stated, "budget-requests/s")
		b.ReportMetric(rate/stated, "ratio")
		if rate > stated*1.1 {
			b.Fatalf("%.1f requests/s, budget %.1f", rate, stated)
		}
	}
}
