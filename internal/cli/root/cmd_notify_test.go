package root

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// runOnTTYStderr runs the binary with stderr on a pseudo-terminal (stdout a pipe) and returns
// both and the exit status.
func runOnTTYStderr(t *testing.T, args ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	bin := sandscopeBinary(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	defer ptmx.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(), "NO_COLOR=1"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var errOut bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&errOut, ptmx); close(done) }()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	<-done // the pty reports EIO once the last writer is gone
	return out.Bytes(), errOut.Bytes(), code
}

// TestLogsNotifyRingsOnTheTerminal: logs -f --notify and logs --all -f --notify write BEL to a
// terminal stderr once per followed ending, after the notice, and never pass on the process's own
// BEL there; without a terminal they write none.
func TestLogsNotifyRingsOnTheTerminal(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", `sleep 0.3; printf 'out\007\n'; printf 'err\007\n' >&2; exit 0`)
	stdout, stderr, code := runOnTTYStderr(t, append(flags, "logs", "-f", "--notify", "local", p.ID)...)
	if code != 0 || string(stdout) != "out\a\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	// the process's stderr bytes pass as they are (logs copies output exactly): one BEL is its own
	if n := bytes.Count(stderr, []byte{'\a'}); n != 2 || !bytes.HasSuffix(stderr, []byte("EXITED 0\r\n\a")) {
		t.Fatalf("want the process's BEL and one bell after the ending notice, got %d in %q", n, stderr)
	}

	q1 := startProc(t, b, "sh", "-c", "sleep 0.5; exit 3")
	q2 := startProc(t, b, "sh", "-c", "sleep 0.8")
	_, stderr, code = runOnTTYStderr(t, append(flags, "logs", "local", "--all", "-f", "--notify", "--state", "running")...)
	if code != 0 || bytes.Count(stderr, []byte{'\a'}) != 2 {
		t.Fatalf("--all: exit %d stderr %q (want two bells: %s and %s)", code, stderr, q1.ID, q2.ID)
	}
	if strings.Count(string(stderr), "ended: EXITED") != 2 {
		t.Fatalf("--all notices: %q", stderr)
	}

	// no terminal, no bell
	ok := startProc(t, b, "true")
	r := runSandscope(t, nil, append(flags, "logs", "-f", "--notify", "local", ok.ID)...)
	if r.code != 0 || bytes.Contains(r.stderr, []byte{'\a'}) {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}
