package logview

import (
	"fmt"
	"sort"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// BenchmarkFrame measures one View() with 1,000 and with 1,000,000 lines buffered: the cost must
// depend on the screen, not the history (compare the two ns/op figures; the budget is 1.2×).
// Filling the large buffer takes a while and spills to disk; it is excluded from the timing.
func BenchmarkFrame(b *testing.B) {
	for _, n := range []int{1000, 1000000} {
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			br := uitest.NewBridge()
			ctx := uitest.Context(b, br, 160, 48)
			m := New(ctx, []common.LogTarget{target("p1", "bench")}, Options{})
			defer m.Close()
			m.SetSize(160, 48)
			chunk := make([]client.LogEvent, 0, 1000)
			for i := 0; i < n; i += 1000 {
				chunk = chunk[:0]
				for j := 0; j < 1000 && i+j < n; j++ {
					chunk = append(chunk, data(0, client.Stdout, "c", fmt.Sprintf("line %d: some realistic build output with a path /workspace/src/x.go:%d\n", i+j, j)))
				}
				m.ingest(m.sources[0], chunk)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = m.View()
			}
		})
	}
}

// BenchmarkTwentyStreams measures key-to-frame with 20 processes followed at once: each frame
// interval, every source delivers a batch of 50 lines, then a key (scrolling up or down) arrives
// behind them and the view renders. The time from the batches' arrival to the rendered frame is
// what a key waits in the worst case. Metrics: key-to-frame-p50-ms and -p99-ms (the budget is p99
// under 50 ms) and quiet-key-to-frame-p50-ms, the same key and frame with no output arriving.
func BenchmarkTwentyStreams(b *testing.B) {
	br := uitest.NewBridge()
	ctx := uitest.Context(b, br, 160, 48)
	var targets []common.LogTarget
	for i := 0; i < 20; i++ {
		targets = append(targets, target(fmt.Sprintf("proc-%02d", i), "agent"))
	}
	m := New(ctx, targets, Options{})
	defer m.Close()
	m.SetSize(160, 48)
	batch := make([]client.LogEvent, 50)
	for j := range batch {
		batch[j] = data(0, client.Stdout, "c", fmt.Sprintf("step %d of a long agent transcript with some detail\n", j))
	}
	keys := []tea.KeyMsg{{Type: tea.KeyUp}, {Type: tea.KeyDown}}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		for s := range m.sources {
			m.Update(logBatchMsg{owner: m, src: s, gen: m.gen, events: batch, closed: false})
		}
		m.Update(keys[i%2])
		_ = m.View()
		times = append(times, time.Since(t))
	}
	b.StopTimer()
	quiet := make([]time.Duration, 0, 200)
	for i := 0; i < 200; i++ {
		t := time.Now()
		m.Update(keys[i%2])
		_ = m.View()
		quiet = append(quiet, time.Since(t))
	}
	b.ReportMetric(quantileMs(times, 0.5), "key-to-frame-p50-ms")
	b.ReportMetric(quantileMs(times, 0.99), "key-to-frame-p99-ms")
	b.ReportMetric(quantileMs(quiet, 0.5), "quiet-key-to-frame-p50-ms")
}

func quantileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[min(len(s)-1, int(float64(len(s))*q))].Microseconds()) / 1000
}
