package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// Env is the caller's environment without bridge, XDG and tmux settings (and NO_COLOR), plus
// private state, cache and config directories under dir (dir/config/sandscope exists, for a
// config.yaml).
func Env(t testing.TB, dir string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SANDSCOPE_") || strings.HasPrefix(name, "XDG_") ||
			name == "SANDBOX_API_KEY" || name == "TMUX" || name == "TMUX_PANE" || name == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	for _, sub := range []string{"state", "cache", "config/sandscope"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return append(env,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
	)
}

// TokenFile writes a bridge's token to a private file (the token never goes into argv).
func TokenFile(t testing.TB, b *bridgetest.Bridge) string {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(b.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tok
}

// Bridge starts a local bridge holding sandbox "e2e" (a process ran in it, so lists show it) and a
// client of it.
func Bridge(t testing.TB) (*bridgetest.Bridge, *client.Client) {
	t.Helper()
	b := bridgetest.Start(t)
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.StartProcess(ctx, "e2e", client.ExecRequest{Argv: []string{"true"}})
	if err != nil {
		t.Fatalf("create sandbox e2e: %v", err)
	}
	// ended before any screen opens, however slow the machine: an ending seen live would notify
	WaitEnded(t, c, "e2e", p.ID)
	return b, c
}

// WaitEnded waits (up to 30 s) until the bridge no longer reports process id of sandbox running.
func WaitEnded(t testing.TB, c *client.Client, sandbox, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		st, err := c.GetProcess(ctx, sandbox, id)
		if err != nil {
			t.Fatalf("process %s: %v", id, err)
		}
		if st.State != "running" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("process %s still running", id)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// BridgeArgs starts a local bridge and returns the flags that point the binary at it (the token
// travels in a file, never in argv).
func BridgeArgs(t testing.TB, opts ...bridgetest.Option) (*bridgetest.Bridge, []string) {
	t.Helper()
	b := bridgetest.Start(t, opts...)
	return b, []string{"--url", b.URL, "--token-file", TokenFile(t, b)}
}

// StartProc starts argv in sandbox "local" of b.
func StartProc(t testing.TB, b *bridgetest.Bridge, argv ...string) client.Process {
	t.Helper()
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.StartProcess(context.Background(), "local", client.ExecRequest{Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Result is what a run of the binary printed and its exit code.
type Result struct {
	Stdout, Stderr []byte
	Code           int
}

// Run runs the binary with a clean environment (PATH, its own HOME and XDG_STATE_HOME) plus env,
// within two minutes.
func Run(t testing.TB, env []string, args ...string) Result {
	t.Helper()
	bin := Binary(t) // built once, before the command's own time limit starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	cmd.Env = append(base, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run: %v", err)
	}
	return Result{stdout.Bytes(), stderr.Bytes(), code}
}

// RunIn runs the binary with exactly env, within two minutes, and returns its combined output and
// exit code.
func RunIn(t testing.TB, env []string, args ...string) (string, int) {
	t.Helper()
	bin := Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(out), 0
}

// RunID finds a stable bridge's run ID in what exec printed (its ending line names the process,
// its notices the run).
var RunID = regexp.MustCompile(`(?:run|process) (\d{8}T\d{6}Z-[0-9a-f]{8})`)

// Serve is a `sandscope serve` subprocess on a state directory.
type Serve struct {
	Cmd  *exec.Cmd
	Disc localbridge.Discovery // what it announced in serve.json
}

// StartServe runs `sandscope serve` with env and waits for its discovery file under state; the
// test's end stops it.
func StartServe(t testing.TB, env []string, state string) *Serve {
	t.Helper()
	disc := filepath.Join(state, "sandscope", "serve.json")
	_ = os.Remove(disc)
	cmd := exec.Command(Binary(t), "serve")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Serve{Cmd: cmd}
	t.Cleanup(p.Stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, err := localbridge.ReadDiscovery(disc)
		if err == nil && d.PID == cmd.Process.Pid {
			p.Disc = d
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve announced nothing: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends serve with SIGTERM (SIGKILL after 20 s) and waits for it.
func (p *Serve) Stop() {
	if p.Cmd.ProcessState != nil {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-done
	}
}
