package main

// End-to-end first run: the real sandscope binary on fresh state directories, opened in tmux on a
// local bridge, filled with the demo scene, and read back with capture-pane the way a person would
// look at it. The TUI offers no demo of its own on first run, so the test does what the empty
// sandboxes screen and `sandscope demo --help` tell a newcomer: run `sandscope demo` against the
// same bridge (`sandscope serve`) and watch the scene arrive.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// firstRunWait bounds every wait for the screen: a guard against hangs on a loaded machine, not a
// timing assertion.
const firstRunWait = 90 * time.Second

// firstRunPane drives one tmux session on a private socket.
type firstRunPane struct {
	t      *testing.T
	tmux   string
	socket string
	env    []string
}

func (p *firstRunPane) run(args ...string) (string, error) {
	cmd := exec.Command(p.tmux, append([]string{"-S", p.socket}, args...)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (p *firstRunPane) must(args ...string) string {
	p.t.Helper()
	out, err := p.run(args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

func (p *firstRunPane) keys(keys ...string) {
	p.t.Helper()
	p.must(append([]string{"send-keys", "-t", "first"}, keys...)...)
}

func (p *firstRunPane) screen() string {
	p.t.Helper()
	return p.must("capture-pane", "-p", "-t", "first")
}

// waitFor polls the pane until it shows every one of wants, and returns that screen.
func (p *firstRunPane) waitFor(what string, wants ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(firstRunWait)
	for {
		s := p.screen()
		missing := ""
		for _, w := range wants {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: the screen never showed %q; last screen:\n%s", what, missing, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// selectRow moves the list cursor (a line starting with "> ") onto the first list row showing
// want, counting rows on screen, and waits until the cursor is there.
func (p *firstRunPane) selectRow(want string) {
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
	deadline := time.Now().Add(firstRunWait)
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

// firstRunEnv is the environment of an isolated sandscope: fresh XDG directories under dir, a
// random bridge token (in the environment only, never in argv), none of the caller's bridge
// settings.
func firstRunEnv(t *testing.T, dir string) []string {
	t.Helper()
	var tok [24]byte
	if _, err := rand.Read(tok[:]); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SANDSCOPE_") || strings.HasPrefix(name, "XDG_") ||
			name == "SANDBOX_API_KEY" || name == "TMUX" || name == "TMUX_PANE" {
			continue
		}
		env = append(env, kv)
	}
	for _, sub := range []string{"state", "cache", "config"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return append(env,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"SANDBOX_API_KEY="+hex.EncodeToString(tok[:]),
	)
}

// startFirstRunBridge runs `sandscope serve` and returns its URL; it is stopped (and with it every
// process of the scene) when the test ends.
func startFirstRunBridge(t *testing.T, bin string, env []string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	urls := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "sandscope local bridge listening on "); ok {
				urls <- strings.TrimSpace(u)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	select {
	case u := <-urls:
		return u
	case <-done:
		t.Fatalf("sandscope serve exited before announcing its URL: %s", stderr.String())
	case <-time.After(firstRunWait):
		t.Fatalf("sandscope serve did not announce its URL: %s", stderr.String())
	}
	return ""
}

func TestE2EDemoFirstRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	tmuxPath, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tmux is required under CI: %v", err)
		}
		t.Skip("tmux not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sandscope")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	env := firstRunEnv(t, dir)
	url := startFirstRunBridge(t, bin, env)

	p := &firstRunPane{t: t, tmux: tmuxPath, socket: filepath.Join(dir, "tmux.sock"), env: env}
	t.Cleanup(func() { _, _ = p.run("kill-server") })
	p.must("-f", "/dev/null", "new-session", "-d", "-s", "first", "-x", "160", "-y", "48",
		// the shell stays (until the server is killed) so its last line reliably reaches the pane
		fmt.Sprintf("%q --url %q; echo \"sandscope ended: status $?\"; exec sleep 600", bin, url))
	p.must("set-option", "-t", "first", "remain-on-exit", "on")

	// First run: nothing known yet, and the screen says how to start.
	p.waitFor("first-run sandboxes screen", "Sandboxes (0)", "No sandboxes yet")

	// The demo scene, on the same bridge.
	ctx, cancel := context.WithTimeout(context.Background(), firstRunWait)
	defer cancel()
	demo := exec.CommandContext(ctx, bin, "demo", "--no-replace")
	demo.Env = env
	if out, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("sandscope demo: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "agent") {
		t.Errorf("sandscope demo did not report its agent:\n%s", out)
	}

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
	p.waitFor("the lost agent", "incarnation #2", "LOST", "STALE #1 · EXITED 2")

	// Quit: sandscope asks first when something is still open; either way it must end, cleanly.
	p.keys("q")
	deadline := time.Now().Add(firstRunWait)
	for {
		s := p.screen()
		if i := strings.Index(s, "sandscope ended: status "); i >= 0 {
			if st := strings.Fields(s[i+len("sandscope ended: status "):]); len(st) == 0 || st[0] != "0" {
				t.Errorf("sandscope did not exit 0 after quitting:\n%s", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandscope did not exit after q:\n%s", s)
		}
		if strings.Contains(s, "Quit sandscope?") {
			p.keys("y")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
