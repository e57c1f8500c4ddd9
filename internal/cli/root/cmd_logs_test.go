package root

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// TestMain runs the tests with private XDG directories and removes the binary sandscopeBinary
// built once every test has run (e2e.Main).
func TestMain(m *testing.M) {
	if path := os.Getenv(lockerEnv); path != "" {
		os.Exit(holdRecordLock(path)) // a helper process of TestCommandsWaitForALockedRecord
	}
	e2e.Main(m)
}

// sandscopeBinary is the real binary, built once per test run (the end-to-end tests' own).
func sandscopeBinary(t testing.TB) string { return e2e.Binary(t) }

type runResult struct {
	stdout, stderr []byte
	code           int
}

// runSandscope runs the binary with a clean environment: its own XDG_STATE_HOME, no inherited
// bridge settings (e2e.Run).
func runSandscope(t *testing.T, env []string, args ...string) runResult {
	t.Helper()
	r := e2e.Run(t, env, args...)
	return runResult{r.Stdout, r.Stderr, r.Code}
}

// bridgeArgs starts a local bridge and returns the flags that point the binary at it (the token
// travels in a file, never in argv).
func bridgeArgs(t *testing.T, opts ...bridgetest.Option) (*bridgetest.Bridge, []string) {
	t.Helper()
	return e2e.BridgeArgs(t, opts...)
}

// startProc starts argv in sandbox "local" of b.
func startProc(t testing.TB, b *bridgetest.Bridge, argv ...string) client.Process {
	t.Helper()
	return e2e.StartProc(t, b, argv...)
}

func TestLogsSplitsStreamsAndConfirmsEnd(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "printf 'out1\\n'; printf 'err1\\n' >&2; sleep 0.2; printf 'out2'; exit 9")
	r := runSandscope(t, nil, append(flags, "logs", "local", p.ID, "-f")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if string(r.stdout) != "out1\nout2" {
		t.Fatalf("stdout %q", r.stdout)
	}
	if !strings.HasPrefix(string(r.stderr), "err1\n") || !strings.Contains(string(r.stderr), "sandscope: process "+p.ID+" ended: EXITED 9\n") {
		t.Fatalf("stderr %q", r.stderr)
	}
	// Without -f: a snapshot, same bytes.
	r = runSandscope(t, nil, append(flags, "logs", "local", p.ID)...)
	if r.code != 0 || string(r.stdout) != "out1\nout2" {
		t.Fatalf("snapshot: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestLogsExitsThreeWhenSandboxReplaced(t *testing.T) {
	b := bridgetest.Start(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(b.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, b, "sh", "-c", "seq 1 1000; sleep 30")
	var want strings.Builder
	for i := 1; i <= 1000; i++ {
		want.WriteString(itoa(i) + "\n")
	}
	bin := sandscopeBinary(t) // built before the command's time limit starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--token-file", tok, "logs", "local", p.ID, "-f")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(), "SANDSCOPE_URL=" + b.URL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Replace the sandbox once everything written so far has been printed.
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(stdout, got); err != nil {
		t.Fatalf("read: %v (stderr %q)", err, stderr.String())
	}
	if err := b.Server.ReplaceSandbox("local"); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, stderr %q", err, stderr.String())
	}
	if string(got) != want.String() || len(rest) != 0 {
		t.Fatalf("stdout %d+%d bytes, want %d", len(got), len(rest), want.Len())
	}
	if !strings.Contains(stderr.String(), "sandscope: lost: ") || !strings.Contains(stderr.String(), "incarnation") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestLogsUsageAndNotFound(t *testing.T) {
	_, flags := bridgeArgs(t)
	if r := runSandscope(t, nil, append(flags, "logs", "local", "no-such-process", "-f")...); r.code != 2 || !strings.Contains(string(r.stderr), "sandscope: ") {
		t.Fatalf("not found: exit %d stderr %q", r.code, r.stderr)
	}
	if r := runSandscope(t, nil, append(flags, "logs", "local")...); r.code != 2 {
		t.Fatalf("usage: exit %d", r.code)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	_ = os.WriteFile(bad, []byte("wrong-token"), 0o600)
	r := runSandscope(t, nil, "--url", flags[1], "--token-file", bad, "logs", "local", "x", "-f")
	if r.code != 2 || strings.Contains(string(r.stderr), "wrong-token") {
		t.Fatalf("auth: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestNoBridgeSaysHowToStartOne(t *testing.T) {
	r := runSandscope(t, nil, "logs", "local", "p", "-f")
	if r.code != 2 || !strings.Contains(string(r.stderr), "sandscope serve") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

// The local bridge announced by `sandscope serve` is found through its discovery file.
func TestDiscoveryFileFindsLocalBridge(t *testing.T) {
	b := bridgetest.Start(t)
	state := t.TempDir()
	tok := filepath.Join(state, "sandscope", "token")
	if err := os.MkdirAll(filepath.Dir(tok), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tok, []byte(b.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := localbridge.WriteDiscovery(filepath.Join(state, "sandscope", "serve.json"), localbridge.Discovery{URL: b.URL, TokenFile: tok, PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	startProc(t, b, "sleep", "5")
	r := runSandscope(t, []string{"XDG_STATE_HOME=" + state}, "ls", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	var list []client.SandboxInfo
	if err := json.Unmarshal(r.stdout, &list); err != nil || len(list) != 1 || list[0].ID != "local" {
		t.Fatalf("%s %v", r.stdout, err)
	}
}
