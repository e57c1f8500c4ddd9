package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"sandscope/client"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// seededBridge is a fake bridge with two sandboxes; sandbox "shopweb" has processes (running,
// failed, a long command), a terminal, and a log to follow.
func seededBridge() *uitest.Bridge {
	br := uitest.NewBridge()
	t0 := uitest.T0
	br.Sandboxes = []client.SandboxInfo{
		{ID: "shopweb", Running: true, Incarnation: 2, Processes: 3, Terminals: 1, CreatedAt: t0.Add(-time.Hour)},
		{ID: "nightly", Running: false, Incarnation: 1, CreatedAt: t0.Add(-2 * time.Hour)},
	}
	inc := client.Incarnation{Number: 2}
	proc := func(id, state string, argv []string, ago time.Duration, exit *client.Exit) *client.Process {
		p := &client.Process{ID: id, PID: 4000 + len(id), Command: argv, Cwd: "/workspace/app", State: state, StartedAt: t0.Add(-ago), Incarnation: 2, Exit: exit}
		if exit != nil {
			end := t0.Add(-ago + 5*time.Second)
			p.EndedAt = &end
		}
		return p
	}
	ch := make(chan client.SandboxEvent, 64)
	ch <- client.SandboxEvent{Kind: client.SandboxStarted, Time: t0.Add(-time.Hour), Incarnation: inc}
	ch <- client.SandboxEvent{Kind: client.ProcessAppeared, Time: t0.Add(-90 * time.Second), Incarnation: inc,
		Process: proc("7d56e9e2-d5c1-4b8e-a7f0-2b9c8d1e3f45", "running", []string{"npm", "run", "dev", "--", "--port", "5173"}, 90*time.Second, nil)}
	ch <- client.SandboxEvent{Kind: client.ProcessAppeared, Time: t0.Add(-60 * time.Second), Incarnation: inc,
		Process: proc("0f9d3c2e-8a41-4d6b-9a4e-1c2b3d4e5f60", "exited", []string{"npm", "test", "--", "--watch=false"}, 60*time.Second, &client.Exit{Code: 1})}
	ch <- client.SandboxEvent{Kind: client.ProcessAppeared, Time: t0.Add(-30 * time.Second), Incarnation: inc,
		Process: proc("a1b2c3d4-0000-4000-8000-000000000001", "running", []string{"sh", "-c", "make -j4 2>&1 | tee build.log && ./scripts/deploy-preview.sh --channel staging --verbose"}, 30*time.Second, nil)}
	ch <- client.SandboxEvent{Kind: client.TerminalAppeared, Time: t0.Add(-20 * time.Second), Incarnation: inc,
		Terminal: &client.Terminal{ID: "5e6f7a8b-1111-4222-8333-444455556666", PID: 77, Command: common.LoginShellArgv, Cwd: "/workspace", Status: "running", Incarnation: 2}}
	br.Watches["shopweb"] = ch
	logs := make(chan client.LogEvent, 64)
	for i := 1; i <= 12; i++ {
		logs <- client.LogEvent{Kind: client.Data, Cursor: fmt.Sprintf("c%d", i), Time: t0.Add(time.Duration(i-90) * time.Second), Stream: client.Stdout,
			Data: []byte(fmt.Sprintf("  VITE v5.4.%d  ready in %d ms · http://localhost:5173/ · line %d of the dev server's output\n", i, 300+i, i))}
	}
	br.Follows["7d56e9e2-d5c1-4b8e-a7f0-2b9c8d1e3f45"] = logs
	return br
}

// newPlainRoot is a root without a state directory: nothing is recorded, so each screen folds its
// own watcher's events, synchronously with the test.
func newPlainRoot(t *testing.T, br *uitest.Bridge) *Model {
	t.Helper()
	p, _ := themes.Builtin("dark")
	m, err := New(Options{Target: Target{Driver: br, BridgeLabel: "http://127.0.0.1:7681 (embedded)", BridgeURL: "local:/tmp/x", Local: true},
		Styles: themes.New(p, themes.AsciiRenderer()), Now: func() time.Time { return uitest.T0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestGoldenScreensAtThreeSizes renders every screen at 80×24, 120×40 and 200×60: the sandboxes
// list, the help overlay, the sandbox screen's three tabs and its preview, and the log view. Every
// line fits the width and the frame has exactly the terminal's height.
func TestGoldenScreensAtThreeSizes(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		w, h := sz[0], sz[1]
		br := seededBridge()
		m := newPlainRoot(t, br)
		step(m, tea.WindowSizeMsg{Width: w, Height: h}, 0)
		for _, msg := range uitest.Exec(m.Init(), wait) {
			step(m, msg, 2)
		}
		shot := func(name string) {
			t.Helper()
			v := m.View()
			lines := strings.Split(v, "\n")
			if len(lines) != h {
				t.Errorf("%s at %dx%d: %d lines", name, w, h, len(lines))
			}
			for i, l := range lines {
				if lw := ansi.StringWidth(l); lw > w {
					t.Errorf("%s at %dx%d: line %d is %d cells: %q", name, w, h, i, lw, l)
				}
			}
			uitest.Golden(t, fmt.Sprintf("sizes/%s_%dx%d", name, w, h), v, updating())
		}
		shot("sandboxes")
		step(m, uitest.Key("?"), 0)
		shot("help")
		step(m, uitest.Key("esc"), 0)

		step(m, common.OpenSandboxMsg{ID: "shopweb"}, 3)
		shot("sandbox_processes")
		step(m, uitest.Key("enter"), 3)
		shot("logs")
		step(m, uitest.Key("esc"), 0)
		step(m, uitest.Key("tab"), 0)
		shot("sandbox_terminals")
		step(m, uitest.Key("tab"), 0)
		shot("sandbox_incarnations")
		step(m, uitest.Key("tab"), 0)
		step(m, uitest.Key("p"), 2)
		shot("sandbox_preview")
		step(m, uitest.Key("p"), 0)
	}
}
