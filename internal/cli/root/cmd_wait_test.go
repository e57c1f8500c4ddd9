package root

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/internal/cli/wait"
)

// TestWaitExitsWithTheProcessCode runs the real binary against a local bridge: a process that
// exits 5 makes wait exit 5 once the ending is confirmed; --timeout gives up with 75.
func TestWaitExitsWithTheProcessCode(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "echo working; sleep 0.5; exit 5")
	r := runSandscope(t, nil, append(flags, "wait", "local", p.ID[:8])...)
	if r.code != 5 || len(r.stdout) != 0 {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.HasSuffix(string(r.stderr), "sandscope: process "+p.ID+" ended: EXITED 5\n") {
		t.Fatalf("stderr %q", r.stderr)
	}
	// Already ended: the same answer at once.
	if r = runSandscope(t, nil, append(flags, "wait", "local", p.ID)...); r.code != 5 {
		t.Fatalf("second wait: exit %d stderr %q", r.code, r.stderr)
	}
	ok := startProc(t, b, "true")
	if r = runSandscope(t, nil, append(flags, "wait", "local", ok.ID, "--notify")...); r.code != 0 || bytes.Contains(r.stderr, []byte{'\a'}) {
		t.Fatalf("exit 0: exit %d stderr %q (no bell when stderr is not a terminal)", r.code, r.stderr)
	}
	slow := startProc(t, b, "sleep", "30")
	start := time.Now()
	r = runSandscope(t, nil, append(flags, "wait", "local", slow.ID, "--timeout", "700ms")...)
	if r.code != wait.ExitWaitTimeout || !strings.Contains(string(r.stderr), "timed out after 700ms") || time.Since(start) > 20*time.Second {
		t.Fatalf("timeout: exit %d stderr %q", r.code, r.stderr)
	}
	if r = runSandscope(t, nil, append(flags, "wait", "local", "no-such-process")...); r.code != cmdutil.ExitUsage {
		t.Fatalf("not found: exit %d stderr %q", r.code, r.stderr)
	}
	if r = runSandscope(t, nil, append(flags, "wait", "local")...); r.code != cmdutil.ExitUsage {
		t.Fatalf("usage: exit %d", r.code)
	}
}

// TestWaitExitsThreeWhenLost replaces the sandbox's container under a waiting binary.
func TestWaitExitsThreeWhenLost(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "echo started; sleep 60")
	bin := sandscopeBinary(t) // built before the command's time limit starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(flags, "wait", "local", p.ID)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Replace only once the waiter holds the stream (the bridge counts the reader).
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if st, err := c.GetProcess(ctx, "local", p.ID); err != nil || st.State != "running" {
		t.Fatalf("process before the replacement: %+v %v", st, err)
	}
	if err := b.Server.ReplaceSandbox("local"); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cmdutil.ExitLost {
		t.Fatalf("exit %v, stderr %q", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "sandscope: lost: ") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

// TestWaitRingsTheBell checks --notify's writer gets exactly one BEL and nothing else.
func TestWaitRingsTheBell(t *testing.T) {
	b, _ := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "exit 7")
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	var stderr, bell bytes.Buffer
	err = wait.RunWait(context.Background(), driver.NewPreview(c, client.Capabilities{}), nil, "local", p.ID, 0, &stderr, &bell)
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != 7 || bell.String() != "\a" || bytes.Contains(stderr.Bytes(), []byte{'\a'}) {
		t.Fatalf("err %v bell %q stderr %q", err, bell.String(), stderr.String())
	}
}
