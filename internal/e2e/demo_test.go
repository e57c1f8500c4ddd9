package e2e_test

// End-to-end first run: the real sandscope binary on fresh state directories, opened in tmux on its
// embedded local bridge exactly as `go run .` opens it, the demo scene accepted from the first-run
// offer, and the screens read back with capture-pane the way a person would look at them.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sandscope/internal/e2e"
)

func TestE2EDemoFirstRun(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	dir := t.TempDir()
	bin := e2e.Binary(t)
	// A sandscope that never ran: fresh XDG directories, none of the caller's bridge settings, so it
	// opens on its embedded local bridge exactly as `go run .` does.
	env := e2e.Env(t, dir)

	p := &e2e.TUI{Session: e2e.NewSession(t, tmuxPath, dir, "first", env), Bin: bin}
	// The shell stays after sandscope ends (until the server is killed) so the status line it
	// prints reliably reaches the pane.
	launch := fmt.Sprintf("%q; echo \"sandscope ended: status $?\"; exec sleep 600", bin)
	p.Start(160, 48, launch)

	// First run: the embedded bridge is empty and the demo is offered.
	p.WaitFor("the first-run offer", "(embedded)", "Sandboxes (0)", "Welcome to sandscope", "Start the demo scene?")
	p.Keys("y")
	p.WaitFor("the demo sandbox in the list", "Sandboxes (1)", "demo", "RUNNING")
	p.SelectRow("demo")
	p.Keys("Enter")
	p.WaitFor("a lively sandbox screen", "Sandbox demo", "Processes (3)", "demo agent", "RUNNING", "EXITED 2")

	// The agent's JSONL, live.
	p.SelectRow("demo agent")
	p.Keys("Enter")
	p.WaitFor("the agent's log", "Logs · demo", "LIVE")
	p.Keys("J")
	p.WaitFor("the agent's log as JSONL", "jsonl on", "assistant")

	// Replace the container from the sandboxes screen: the agent was running, so it is LOST, and
	// the others stay visible as STALE.
	p.Keys("Escape")
	p.WaitFor("back on the sandbox screen", "Processes (3)")
	p.Keys("Escape")
	p.WaitFor("back on the sandboxes screen", "Sandboxes (1)")
	p.Keys("R")
	p.WaitFor("the replace confirmation", "Replace container?")
	p.Keys("y")
	p.WaitFor("the replacement", "replaced the container")
	p.Keys("Enter")
	p.WaitFor("the lost agent", "incarnation #", "LOST", "STALE #1 · EXITED 2")

	quit(p)

	// Second run on the same state: the offer is made once. The dialog is part of the very first
	// frame when it is offered, so a drawn sandboxes screen without it is the answer.
	p2 := &e2e.TUI{Session: p.Sibling("second"), Bin: bin}
	p2.Start(160, 48, launch)
	screen := p2.WaitFor("the second run", "Sandboxes (")
	if strings.Contains(screen, "Welcome to sandscope") {
		t.Errorf("the demo was offered again on the second run:\n%s", screen)
	}
	quit(p2)
}

// quit presses q, confirms when sandscope asks, and checks that it exits with status 0.
func quit(p *e2e.TUI) {
	p.T.Helper()
	p.Keys("q")
	deadline := time.Now().Add(e2e.Wait)
	for {
		s := p.Screen()
		if i := strings.Index(s, "sandscope ended: status "); i >= 0 {
			if st := strings.Fields(s[i+len("sandscope ended: status "):]); len(st) == 0 || st[0] != "0" {
				p.T.Errorf("sandscope did not exit 0 after quitting:\n%s", s)
			}
			return
		}
		if time.Now().After(deadline) {
			p.T.Fatalf("sandscope did not exit after q:\n%s", s)
		}
		if strings.Contains(s, "Quit sandscope?") {
			p.Keys("y")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
