package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge/bridgetest"
)

// TUI is sandscope's TUI running in a tmux session.
type TUI struct {
	*Session
	Bin string // the sandscope binary
}

// LaunchTUI starts sandscope with args in a new tmux server (socket under dir), in session "tui"
// of 160×48. The pane stays after sandscope ends, so Relaunch can reuse it.
func LaunchTUI(t testing.TB, tmuxPath, dir string, env []string, args ...string) *TUI {
	t.Helper()
	s := &TUI{Session: NewSession(t, tmuxPath, dir, "tui", env), Bin: Binary(t)}
	s.Start(160, 48, s.Command(args...))
	// OSC 52 from programs would create tmux paste buffers (the default only forwards them)
	s.Must("set-option", "-g", "set-clipboard", "on")
	s.Must("set-option", "-g", "allow-rename", "on")
	s.Must("set-option", "-g", "remain-on-exit", "on")
	return s
}

// StartTUI starts a bridge holding sandbox "e2e" (Bridge) and sandscope on it in tmux, and waits
// for the sandboxes screen listing it.
func StartTUI(t testing.TB) (*TUI, *bridgetest.Bridge, *client.Client) {
	t.Helper()
	tmuxPath := NeedTmux(t)
	b, c := Bridge(t)
	dir := t.TempDir()
	s := LaunchTUI(t, tmuxPath, dir, Env(t, dir), "--url", b.URL, "--token-file", TokenFile(t, b))
	s.WaitFor("the sandboxes screen", "sandscope │", "Sandboxes (1)", "e2e")
	return s, b, c
}

// Command is the shell command line that runs sandscope with args in the pane (exec: the pane's
// process is sandscope itself).
func (s *TUI) Command(args ...string) string {
	cmd := "exec " + strconv.Quote(s.Bin)
	for _, a := range args {
		cmd += " " + strconv.Quote(a)
	}
	return cmd
}

// Relaunch runs sandscope again in the same pane, once the previous one ended.
func (s *TUI) Relaunch(args ...string) {
	s.T.Helper()
	s.Respawn(s.Command(args...))
}

// CheckFrame checks that the header is on the first row and the key hints on the last of a 48-row
// screen: nothing the processes printed moved or wiped sandscope's own frame.
func (s *TUI) CheckFrame(sc string) {
	s.T.Helper()
	ls := strings.Split(sc, "\n")
	if len(ls) < 48 || !strings.HasPrefix(ls[0], " sandscope │") {
		s.T.Errorf("the header is not on the first row:\n%s", sc)
	}
	if len(ls) < 48 {
		return
	}
	if h := ls[47]; !strings.Contains(h, "? toggle help") && !strings.Contains(h, "esc back") && !strings.Contains(h, "leave terminal") {
		s.T.Errorf("the key hints are not on the last row (%q):\n%s", ls[47], sc)
	}
}

// CheckHeader checks that sandscope's header is on the first row.
func CheckHeader(t testing.TB, sc string) {
	t.Helper()
	if !strings.HasPrefix(sc, " sandscope │") {
		t.Errorf("the header is not on the first row:\n%s", sc)
	}
}

// OpenSandbox opens sandbox e2e from the sandboxes screen.
func (s *TUI) OpenSandbox() {
	s.T.Helper()
	s.Keys("Enter")
	s.WaitFor("the sandbox screen", "Sandbox e2e", "Processes (")
}

// ExecInTUI runs a command through the exec prompt of sandbox e2e and opens its log.
func (s *TUI) ExecInTUI(command string) {
	s.T.Helper()
	s.Keys("e")
	s.WaitFor("the exec prompt", "Run a process in e2e")
	s.Type(command)
	s.Keys("Enter")
	s.WaitFor("the process started", "started ")
	s.Keys("Enter")
	s.WaitFor("the log view", "Logs · e2e")
}

// SelectRow moves the list cursor (a line starting with "> ") onto the first list row showing
// want, counting rows on screen, and waits until the cursor is there.
func (s *TUI) SelectRow(want string) {
	s.T.Helper()
	lines := strings.Split(s.Screen(), "\n")
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
		s.T.Fatalf("no cursor (%d) or no row showing %q (%d):\n%s", cur, want, row, strings.Join(lines, "\n"))
	}
	for ; cur < row; cur++ {
		s.Keys("j")
	}
	for ; cur > row; cur-- {
		s.Keys("k")
	}
	s.WaitUntil("the cursor on the row showing "+strconv.Quote(want), func(sc string) bool {
		for _, l := range strings.Split(sc, "\n") {
			if strings.HasPrefix(l, "> ") && strings.Contains(l, want) {
				return true
			}
		}
		return false
	})
}

// QuitAndWait presses q and confirms until sandscope (the pane's process) has ended.
func (s *TUI) QuitAndWait() {
	s.T.Helper()
	s.Keys("q")
	deadline := time.Now().Add(Wait)
	for Alive(s.PID) {
		if time.Now().After(deadline) {
			s.T.Fatalf("sandscope still runs after q:\n%s", s.Screen())
		}
		// the pane (and the tmux server) may close with the program: capturing may fail then
		if sc, err := s.Run("capture-pane", "-p", "-t", s.Name); err == nil && strings.Contains(sc, "Quit sandscope?") {
			_, _ = s.Run("send-keys", "-t", s.Name, "y")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
