package e2e_test

// Start-up on a terminal that never answers (a serial console, `script`, some CI logs): no command
// asks the terminal anything before it runs, so none waits for an answer that never comes.

import (
	"bytes"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/creack/pty"

	"sandscope/internal/e2e"
)

// runOnSilentTerminal runs the binary with args on a PTY nobody answers and returns everything it
// wrote and how long it took to exit.
func runOnSilentTerminal(t *testing.T, env []string, args ...string) ([]byte, time.Duration) {
	t.Helper()
	cmd := exec.Command(e2e.Binary(t), args...)
	cmd.Env = env
	start := time.Now()
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&out, ptmx); close(done) }()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-waited
		t.Fatalf("sandscope %v did not end on a silent terminal", args)
	}
	took := time.Since(start)
	ptmx.Close()
	<-done
	return out.Bytes(), took
}

// TestStartupSilentTerminal checks that commands which draw no TUI send no terminal query (the
// background-colour query OSC 11, the cursor-position report CSI 6n) and so cannot wait for an
// answer. The time each took is logged for RELIABILITY.md.
func TestStartupSilentTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	env = append(env, "TERM=xterm-256color")
	for _, args := range [][]string{{"--version"}, {"ls"}, {"config"}, {"logs", "--help"}} {
		out, took := runOnSilentTerminal(t, env, args...)
		if bytes.Contains(out, []byte("\x1b]11;?")) || bytes.Contains(out, []byte("\x1b[6n")) {
			t.Errorf("sandscope %v queried the terminal: %q", args, out)
		}
		t.Logf("sandscope %v on a silent terminal: %v", args, took.Round(time.Millisecond))
	}
}

// TestStartupSilentTerminalTUI opens the TUI on a terminal that never answers: it asks for the
// background colour once, gives up after its short bound, and draws. The time to the first frame
// is logged for RELIABILITY.md (the wait itself is only a guard against a hang).
func TestStartupSilentTerminalTUI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	env := append(e2e.Env(t, dir), "TERM=xterm-256color")
	cmd := exec.Command(e2e.Binary(t))
	cmd.Env = env
	start := time.Now()
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 120, Rows: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var out []byte
	buf := make([]byte, 64<<10)
	for !bytes.Contains(out, []byte("Sandboxes")) {
		_ = ptmx.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := ptmx.Read(buf)
		if err != nil {
			t.Fatalf("no frame on a silent terminal (%v); got %q", err, out)
		}
		out = append(out, buf[:n]...)
	}
	took := time.Since(start)
	if n := bytes.Count(out, []byte("\x1b]11;?")); n > 1 {
		t.Errorf("the TUI asked for the background colour %d times", n)
	}
	t.Logf("the TUI's first frame on a silent terminal after %v", took.Round(time.Millisecond))
}
