package sandbox

import (
	"fmt"
	"github.com/muesli/termenv"
	"os"
	"sandscope/themes"
	"testing"

	"sandscope/client"
	"sandscope/ui/internal/uitest"
)

// BenchmarkViewTwentyRunning is one redraw of the sandbox screen with 20 running processes at
// 160×48, in colour: what the screen costs each time only its clock moves.
func BenchmarkViewTwentyRunning(b *testing.B) {
	br := uitest.NewBridge()
	ctx := uitest.Context(b, br, 160, 48)
	// the styles of a colour terminal: lipgloss converts colours at every render
	r := themes.NewRenderer(os.Stderr, false)
	r.SetColorProfile(termenv.TrueColor)
	p, err := themes.Builtin("dark")
	if err != nil {
		b.Fatal(err)
	}
	ctx.Styles = themes.New(p, r)
	m := New(ctx, "sandboxaaaaaaaaaaaaaaaaa")
	m.SetSize(160, 48)
	m.Init()
	evs := []client.SandboxEvent{{Kind: client.SandboxStarted, Time: at(-600), Incarnation: inc(1, false)}}
	for i := 0; i < 20; i++ {
		evs = append(evs, client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-500), Incarnation: inc(1, false),
			Process: proc(fmt.Sprintf("proc-%02d-aaaaaaaaaaaa", i), "running", 1, 500-i)})
	}
	_, cmd := m.Update(watchMsg{sb: m.id, gen: m.watchGen, events: evs, closed: true})
	uitest.Exec(cmd, wait)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.View()
	}
}
