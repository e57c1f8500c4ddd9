package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/internal/e2e"
)

// TestSessionDrivesAShell checks the tmux helper on a plain shell: typed lines run, the screen
// reads back, -e keeps colours, the pipe copies raw bytes (the bell), and a resize reaches the
// program.
func TestSessionDrivesAShell(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	dir := t.TempDir()
	env := append(e2e.Env(t, dir), "PS1=$ ", "TERM=xterm-256color")
	s := e2e.NewSession(t, tmuxPath, dir, "sh", env)
	s.Start(80, 24, "sh")
	if s.PID <= 0 || !e2e.Alive(s.PID) {
		t.Fatalf("pane pid %d not running", s.PID)
	}
	raw := filepath.Join(dir, "pane raw")
	s.PipePane(raw)
	s.Line(`printf 'sum=%d\a\033[31mred\033[0m\n' $((20+22))`)
	sc := s.WaitFor("the command's output", "sum=42red")
	if strings.Contains(sc, "\x1b[") {
		t.Errorf("capture-pane without -e kept escapes: %q", sc)
	}
	if esc := s.ScreenEscapes(); !strings.Contains(esc, "\x1b[31m") {
		t.Errorf("capture-pane -e lost the colour: %q", esc)
	}
	var out []byte
	for deadline := time.Now().Add(e2e.Wait); !bytes.Contains(out, []byte("\a")) && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, _ = os.ReadFile(raw)
	}
	if !bytes.Contains(out, []byte("sum=42\a")) {
		t.Errorf("the pipe lacks the bell: %q", out)
	}
	s.Resize(100, 30)
	s.Line("stty size")
	s.WaitUntil("the new size", func(sc string) bool { return strings.Contains(sc, "\n30 100") })
	if got := len(e2e.Lines(s.Screen())); got > 30 {
		t.Errorf("%d rows after resizing to 30", got)
	}
}
