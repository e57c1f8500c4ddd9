package termpane

// Benchmarks (not part of the default test run):
//
//	go test ./ui/termpane -run '^$' -bench Cat -benchtime 1x
//
// BenchmarkCat64MiB pushes 64 MiB of `cat` output through a pane, plain text and coloured text
// (SGR on every line, like compiler and test output), and reports how fast the worker digests it
// (with the catch-up fast path, and without it on a 4 MiB sample in the same run), how long taking
// a snapshot and drawing the view take while the worker is busy, and key-to-frame while it floods:
// from a key reaching the pane to the worker writing it to the connection, plus the next frame's
// snapshot and view.

import (
	"bytes"
	"flag"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
)

// benchSize replaces the 64 MiB stream (scripts/bench --quick uses a smaller one).
var benchSize = 0

func init() {
	flag.IntVar(&benchSize, "termpane.size", 0, "bytes of output per benchmark stream (0: 64 MiB)")
}

func catOutput(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 128)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%08d the quick brown fox jumps over the lazy dog; pack my box with five dozen jugs\r\n", i)
	}
	return b.Bytes()[:size]
}

// colouredOutput is build and test output as tools print it to a terminal: SGR colour on every
// line, resets, bold, 256-colour and true-colour runs, erase to end of line.
func colouredOutput(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 256)
	for i := 0; b.Len() < size; i++ {
		switch i % 6 {
		case 0:
			fmt.Fprintf(&b, "\x1b[1m\x1b[32m   Compiling\x1b[0m sandscope-part-%d v0.1.%d (/workspace/crates/part-%d)\r\n", i%97, i%13, i%97)
		case 1:
			fmt.Fprintf(&b, "=== RUN   TestPackage%d/\x1b[36mcase_%d\x1b[0m\r\n", i%211, i)
		case 2:
			fmt.Fprintf(&b, "--- \x1b[32mPASS\x1b[0m: TestPackage%d (0.%02ds)\r\n", i%211, i%100)
		case 3:
			fmt.Fprintf(&b, "\x1b[1;31merror[E0308]\x1b[0m\x1b[1m: mismatched types\x1b[0m at \x1b[38;5;39msrc/module_%d.rs:%d:%d\x1b[0m\x1b[K\r\n", i%53, i%900, i%80)
		case 4:
			fmt.Fprintf(&b, "\x1b[38;2;120;200;80m%08d\x1b[39m \x1b[2mdebug\x1b[22m worker=%d queue depth %d latency %dµs\r\n", i, i%8, i%1000, i%5000)
		case 5:
			fmt.Fprintf(&b, "\x1b[33mwarning\x1b[m: unused variable `x%d` in function \x1b[1mhandle_%d\x1b[m\r\n", i, i%77)
		}
	}
	return b.Bytes()[:size]
}

// pump feeds data through a pane and samples snapshot and view costs until it is all on screen.
// With keys set, it also types a key every frame and measures key-to-frame.
func pump(b *testing.B, data []byte, exact, keys bool) (elapsed time.Duration, snaps, views, k2f []time.Duration, skipped int64) {
	f := &keyConn{fakeConn: fakeConn{events: make(chan client.TermEvent, 1024)}}
	m := New(f, 120, 41, Options{Plain: false, Exact: exact})
	defer m.Close()
	m.Focus()
	start := time.Now()
	go func() {
		for i := 0; i < len(data); i += 32 << 10 {
			f.events <- client.TermEvent{Kind: client.TermOutput, Data: data[i:min(i+32<<10, len(data))]}
		}
	}()
	total := int64(len(data))
	for {
		var t0 time.Time
		if keys {
			t0 = time.Now()
			seen := f.expect()
			m, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'x'}})
			<-seen
		}
		t1 := time.Now()
		s := m.w.Snapshot()
		snaps = append(snaps, time.Since(t1))
		m.snap = s
		t2 := time.Now()
		_ = m.View()
		views = append(views, time.Since(t2))
		if keys {
			k2f = append(k2f, time.Since(t0))
		}
		if s.Received == total && s.Rendered == total {
			return time.Since(start), snaps, views, k2f, s.Skipped
		}
		time.Sleep(time.Second / 60) // the UI's frame rate
	}
}

// keyConn is a fakeConn that signals when the worker writes input to it.
type keyConn struct {
	fakeConn
	kmu  sync.Mutex
	wait chan struct{}
}

func (k *keyConn) expect() <-chan struct{} {
	k.kmu.Lock()
	defer k.kmu.Unlock()
	k.wait = make(chan struct{})
	return k.wait
}

func (k *keyConn) Write(p []byte) (int, error) {
	k.kmu.Lock()
	if k.wait != nil {
		close(k.wait)
		k.wait = nil
	}
	k.kmu.Unlock()
	return len(p), nil
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func BenchmarkCat64MiB(b *testing.B) {
	for _, bc := range []struct {
		name string
		gen  func(int) []byte
	}{{"plain", catOutput}, {"coloured", colouredOutput}} {
		b.Run(bc.name, func(b *testing.B) {
			size := 64 << 20
			if benchSize > 0 {
				size = benchSize
			}
			big := bc.gen(size)
			sample := big[:min(len(big)/4, 4<<20)]
			for i := 0; i < b.N; i++ {
				el, snaps, views, k2f, skipped := pump(b, big, false, true)
				exactEl, _, _, _, _ := pump(b, sample, true, false)
				fastRate := float64(len(big)) / el.Seconds() / 1e6
				exactRate := float64(len(sample)) / exactEl.Seconds() / 1e6
				b.ReportMetric(fastRate, "MB/s")
				b.ReportMetric(exactRate, "exact-MB/s")
				b.ReportMetric(float64(skipped)/float64(len(big))*100, "%skipped")
				b.ReportMetric(float64(pct(snaps, 0.5).Nanoseconds()), "snapshot-p50-ns")
				b.ReportMetric(float64(pct(snaps, 0.99).Nanoseconds()), "snapshot-p99-ns")
				b.ReportMetric(float64(pct(views, 0.5).Microseconds()), "view-p50-µs")
				b.ReportMetric(float64(pct(views, 0.99).Microseconds()), "view-p99-µs")
				b.ReportMetric(float64(pct(k2f, 0.5).Microseconds())/1000, "key-to-frame-p50-ms")
				b.ReportMetric(float64(pct(k2f, 0.99).Microseconds())/1000, "key-to-frame-p99-ms")
			}
		})
	}
}
