package logview

import (
	"fmt"
	"testing"

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

// BenchmarkTwentyStreams measures one frame's work with 20 processes followed at once: each
// source delivers a batch of 50 lines, then the view renders. The budget is a key-to-frame time
// under 50 ms; compare ns/op with that.
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for s := range m.sources {
			m.Update(logBatchMsg{owner: m, src: s, gen: m.gen, events: batch, closed: false})
		}
		_ = m.View()
	}
}
