package main

// End-to-end first run: the real sandscope binary on fresh state directories, opened in tmux on its
// embedded local bridge exactly as `go run .` opens it, the demo scene accepted from the first-run
// offer, and the screens read back with capture-pane the way a person would look at them.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selectRow moves the list cursor (a line starting with "> ") onto the first list row showing
// want, counting rows on screen, and waits until the cursor is there.
func (p *tuiSession) selectRow(want string) {
	p.t.Helper()
	lines := strings.Split(p.screen(), "\n")
	cur, row := -1, -1
	for i, l := range lines {
		if cur < 0 && strings.HasPrefix(l, "> ") {
			cur = i
		}
		if row < 0 && (strings.HasPrefix(l, "> ") || strings.HasPrefix(l, "  ")) && strings.Contains(l, want) {
			row = i
		}
	}
	if cur < 0 || row < 0 {
		p.t.Fatalf("no cursor (%d) or no row showing %q (%d):\n%s", cur, want, row, strings.Join(lines, "\n"))
	}
	for ; cur < row; cur++ {
		p.keys("j")
	}
	for ; cur > row; cur-- {
		p.keys("k")
	}
	deadline := time.Now().Add(tuiWait)
	for {
		for _, l := range strings.Split(p.screen(), "\n") {
			if strings.HasPrefix(l, "> ") && strings.Contains(l, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the cursor never reached the row showing %q:\n%s", want, p.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestE2EDemoFirstRun(t *testing.T) {
	tmuxPath := needTmux(t)
	dir := t.TempDir()
	bin := sandscopeBinary(t)
	// A sandscope that never ran: fresh XDG directories, none of the caller's bridge settings, so it
	// opens on its embedded local bridge exactly as `go run .` does.
	env := tuiEnv(t, dir)

	p := &tuiSession{t: t, bin: bin, tmux: tmuxPath, socket: filepath.Join(dir, "tmux.sock"), env: env, target: "first"}
	t.Cleanup(func() { _, _ = p.run("kill-server") })
	// The shell stays after sandscope ends (until the server is killed) so the status line it
	// prints reliably reaches the pane.
	launch := fmt.Sprintf("%q; echo \"sandscope ended: status $?\"; exec sleep 600", bin)
	p.must("-f", "/dev/null", "new-session", "-d", "-s", "first", "-x", "160", "-y", "48", launch)

	// First run: the embedded bridge is empty and the demo is offered.
	p.waitFor("the first-run offer", "(embedded)", "Sandboxes (0)", "Welcome to sandscope", "Start the demo scene?")
	p.keys("y")
	p.waitFor("the demo sandbox in the list", "Sandboxes (1)", "demo", "RUNNING")
	p.selectRow("demo")
	p.keys("Enter")
	p.waitFor("a lively sandbox screen", "Sandbox demo", "Processes (3)", "demo agent", "RUNNING", "EXITED 2")

	// The agent's JSONL, live.
	p.selectRow("demo agent")
	p.keys("Enter")
	p.waitFor("the agent's log", "Logs · demo", "LIVE")
	p.keys("J")
	p.waitFor("the agent's log as JSONL", "jsonl on", "assistant")

	// Replace the container from the sandboxes screen: the agent was running, so it is LOST, and
	// the others stay visible as STALE.
	p.keys("Escape")
	p.waitFor("back on the sandbox screen", "Processes (3)")
	p.keys("Escape")
	p.waitFor("back on the sandboxes screen", "Sandboxes (1)")
	p.keys("R")
	p.waitFor("the replace confirmation", "Replace container?")
	p.keys("y")
	p.waitFor("the replacement", "replaced the container")
	p.keys("Enter")
	p.waitFor("the lost agent", "incarnation #", "LOST", "STALE #1 · EXITED 2")

	p.quit()

	// Second run on the same state: the offer is made once. The dialog is part of the very first
	// frame when it is offered, so a drawn sandboxes screen without it is the answer.
	p2 := *p
	p2.target = "second"
	p2.must("new-session", "-d", "-s", p2.target, "-x", "160", "-y", "48", launch)
	screen := p2.waitFor("the second run", "Sandboxes (")
	if strings.Contains(screen, "Welcome to sandscope") {
		t.Errorf("the demo was offered again on the second run:\n%s", screen)
	}
	p2.quit()
}

// quit presses q, confirms when sandscope asks, and checks that it exits with status 0.
func (p *tuiSession) quit() {
	p.t.Helper()
	p.keys("q")
	deadline := time.Now().Add(tuiWait)
	for {
		s := p.screen()
		if i := strings.Index(s, "sandscope ended: status "); i >= 0 {
			if st := strings.Fields(s[i+len("sandscope ended: status "):]); len(st) == 0 || st[0] != "0" {
				p.t.Errorf("sandscope did not exit 0 after quitting:\n%s", s)
			}
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("sandscope did not exit after q:\n%s", s)
		}
		if strings.Contains(s, "Quit sandscope?") {
			p.keys("y")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
