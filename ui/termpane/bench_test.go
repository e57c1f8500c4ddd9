package termpane

// Benchmarks (not part of the default test run):
//
//	go test ./ui/termpane -run '^$' -bench Cat -benchtime 1x
//
// BenchmarkCat64MiB pushes 64 MiB of `cat` output through a pane and reports how fast the worker
// digests it (with the catch-up fast path, and without it on a 4 MiB sample in the same run) and
// how long taking a snapshot and drawing the view take while the worker is busy.

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"

	"sandscope/client"
)

func catOutput(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 128)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%08d the quick brown fox jumps over the lazy dog; pack my box with five dozen jugs\r\n", i)
	}
	return b.Bytes()[:size]
}

// pump feeds data through a pane and samples snapshot and view costs until it is all on screen.
func pump(b *testing.B, data []byte, exact bool) (elapsed time.Duration, snaps, views []time.Duration, skipped int64) {
	f := &fakeConn{events: make(chan client.TermEvent, 1024)}
	m := New(f, 120, 41, Options{Plain: false, Exact: exact})
	defer m.Close()
	start := time.Now()
	go func() {
		for i := 0; i < len(data); i += 32 << 10 {
			f.events <- client.TermEvent{Kind: client.TermOutput, Data: data[i:min(i+32<<10, len(data))]}
		}
	}()
	total := int64(len(data))
	for {
		t0 := time.Now()
		s := m.w.Snapshot()
		snaps = append(snaps, time.Since(t0))
		m.snap = s
		t1 := time.Now()
		_ = m.View()
		views = append(views, time.Since(t1))
		if s.Received == total && s.Rendered == total {
			return time.Since(start), snaps, views, s.Skipped
		}
		time.Sleep(time.Second / 60) // the UI's frame rate
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func BenchmarkCat64MiB(b *testing.B) {
	big := catOutput(64 << 20)
	sample := big[:4<<20]
	for i := 0; i < b.N; i++ {
		el, snaps, views, skipped := pump(b, big, false)
		exactEl, _, _, _ := pump(b, sample, true)
		fastRate := float64(len(big)) / el.Seconds() / 1e6
		exactRate := float64(len(sample)) / exactEl.Seconds() / 1e6
		b.ReportMetric(fastRate, "MB/s")
		b.ReportMetric(exactRate, "exact-MB/s")
		b.ReportMetric(float64(skipped)/float64(len(big))*100, "%skipped")
		b.ReportMetric(float64(pct(snaps, 0.5).Nanoseconds()), "snapshot-p50-ns")
		b.ReportMetric(float64(pct(snaps, 0.99).Nanoseconds()), "snapshot-p99-ns")
		b.ReportMetric(float64(pct(views, 0.5).Microseconds()), "view-p50-µs")
		b.ReportMetric(float64(pct(views, 0.99).Microseconds()), "view-p99-µs")
	}
}
