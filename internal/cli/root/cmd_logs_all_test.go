package root

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/demo"
	"sandscope/followall"
	"sandscope/internal/cli/cmdutil"
)

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, buf *syncBuffer, re *regexp.Regexp) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !re.MatchString(buf.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q not seen in %q", what, re, buf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLogsAllFollowsTheSandbox runs the real binary on a scripted scene: two processes, one ends,
// the container is replaced (the other is LOST), a relaunch appears and ends. Every line carries
// its process's prefix, partial lines stay whole, and the exit status is 3.
func TestLogsAllFollowsTheSandbox(t *testing.T) {
	// built before the processes start: on a busy machine the build may outlast beta's sleep
	bin := sandscopeBinary(t)
	b, flags := bridgeArgs(t)
	alpha := startProc(t, b, "sh", "-c", "echo a1; echo a-err >&2; printf 'par'; sleep 0.4; printf 'tial\\n'; sleep 0.4; printf 'a-end'; exit 0", "alpha")
	beta := startProc(t, b, "sh", "-c", "echo b1; printf 'b-'; sleep 0.3; printf 'partial\\n'; sleep 60", "beta")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(flags, "logs", "local", "--all", "-f")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	an, bn := "alpha-"+alpha.ID[:8], "beta-"+beta.ID[:8]
	waitFor(t, "beta's output", &stdout, regexp.MustCompile(regexp.QuoteMeta(bn+" | b-partial\n")))
	waitFor(t, "alpha's ending", &stderr, regexp.MustCompile(regexp.QuoteMeta("sandscope: "+an+" | process "+alpha.ID+" ended: EXITED 0\n")))
	if err := b.Server.ReplaceSandbox("local"); err != nil {
		t.Fatal(err)
	}
	gamma := startProc(t, b, "sh", "-c", "echo g1; sleep 0.5; exit 4", "gamma")
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cmdutil.ExitLost {
		t.Fatalf("exit %v\nstdout %q\nstderr %q", err, stdout.String(), stderr.String())
	}
	gn := "gamma-" + gamma.ID[:8]
	out, errs := stdout.String(), stderr.String()
	for _, want := range []string{an + " | a1\n", an + " | partial\n", an + " | a-end\n", bn + " | b1\n", bn + " | b-partial\n", gn + " | g1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		an + " | a-err\n",
		"sandscope: " + bn + " | LOST: process gone",
		"sandscope: " + gn + " | following sh -c … gamma (",
		"sandscope: " + gn + " | process " + gamma.ID + " ended: EXITED 4\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	// Every line of stdout belongs to one process; nothing from stderr leaked into it.
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(l, an+" | ") && !strings.HasPrefix(l, bn+" | ") && !strings.HasPrefix(l, gn+" | ") {
			t.Errorf("stdout line without a process prefix: %q", l)
		}
	}
	if strings.Contains(out, "\x1b[") || strings.Contains(out, "err") {
		t.Errorf("colour or stderr bytes on a piped stdout: %q", out)
	}
}

func TestLogsAllUsage(t *testing.T) {
	_, flags := bridgeArgs(t)
	for _, args := range [][]string{
		{"logs", "local", "p", "--all"},
		{"logs", "local", "--all", "--state", "sleeping"},
		{"logs", "local", "--all", "--command", "("},
		{"logs", "local", "--all", "--since", "abc"},
		{"logs", "local"},
	} {
		if r := runSandscope(t, nil, append(flags, args...)...); r.code != cmdutil.ExitUsage {
			t.Errorf("%q: exit %d stderr %q", args, r.code, r.stderr)
		}
	}
	// Without -f: what the bridge holds of each process, then exit 0.
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "echo one; exit 0", "one")
	q := startProc(t, b, "sh", "-c", "echo two; exit 0", "two")
	time.Sleep(500 * time.Millisecond)
	r := runSandscope(t, nil, append(flags, "logs", "local", "--all", "--command", "two")...)
	if r.code != 0 || string(r.stdout) != "two-"+q.ID[:8]+" | two\n" || strings.Contains(string(r.stderr), p.ID[:8]) {
		t.Fatalf("snapshot: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestLogsAllDuringTheDemoScene follows the demo sandbox with the real binary while the scene
// plays (sped up): every process shows with its prefix, the agent of the replaced container is
// reported LOST, the relaunched one is picked up and followed to its end, and the exit status is 3.
func TestLogsAllDuringTheDemoScene(t *testing.T) {
	b, flags := bridgeArgs(t)
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	bin := sandscopeBinary(t) // built before the command's time limit starts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(flags, "logs", "demo", "--all", "-f")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the waiting notice", &stderr, regexp.MustCompile("no process of demo matches yet"))
	sc, err := demo.RunScene(ctx, c, demo.Options{Sandbox: "demo", Speed: 20, ReplaceAfter: time.Minute, Log: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Replaced {
		t.Fatal("the local bridge must support the replacement")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cmdutil.ExitLost {
		t.Fatalf("exit %v\nstderr %q", err, stderr.String())
	}
	out, errs := stdout.String(), stderr.String()
	name := func(p client.Process) string { return followall.Name(p) + " | " }
	for _, p := range []client.Process{sc.Build, sc.Tests, sc.Agent, sc.Agent2} {
		if !strings.Contains(out, "\n"+name(p)) && !strings.HasPrefix(out, name(p)) {
			t.Errorf("no stdout line of %s", name(p))
		}
	}
	for _, want := range []string{
		"sandscope: " + name(sc.Build) + "process " + sc.Build.ID + " ended: EXITED 0\n",
		"sandscope: " + name(sc.Tests) + "process " + sc.Tests.ID + " ended: EXITED 2\n",
		"sandscope: " + name(sc.Agent) + "LOST: ",
		"sandscope: sandbox demo: incarnation 2 replaced incarnation 1",
		"sandscope: " + name(sc.Agent2) + "following ",
		"sandscope: " + name(sc.Agent2) + "process " + sc.Agent2.ID + " ended: EXITED 0\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}
