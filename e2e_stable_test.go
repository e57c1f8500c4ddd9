package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

var reRunID = regexp.MustCompile(`run (\d{8}T\d{6}Z-[0-9a-f]{8})`)

// The command line on a stable bridge: exec exits with the command's own code only when the
// recorder confirms it, the exit-code-less completion is never success, logs reads the recorder's
// files, and ls answers from what sandscope recorded without a single sandbox request.
func TestStableCommandLine(t *testing.T) {
	b, args := bridgeArgs(t, bridgetest.WithStable(), bridgetest.WithConfig(func(c *localbridge.Config) {
		c.StableFakeCompletionAfter = 700 * time.Millisecond
	}))
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	run := func(a ...string) runResult {
		t.Helper()
		return runSandscope(t, env, append(append([]string{}, args...), a...)...)
	}
	r := run("exec", "box", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if r.code != 3 || string(r.stdout) != "out\n" || !strings.Contains(string(r.stderr), "err\n") {
		t.Fatalf("exec: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(string(r.stderr), "starts the container of sandbox box") {
		t.Errorf("the first action did not say it starts the container: %q", r.stderr)
	}
	// The bridge ends this stream with {"exit_code":0} while the command runs on: the recorder's
	// status decides, and the output the stream missed comes from its file.
	r = run("exec", "box", "--", "sh", "-c", "echo begin; sleep 2; echo end; exit 6")
	if r.code != 6 || string(r.stdout) != "begin\nend\n" {
		t.Fatalf("exec with a fabricated completion: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(string(r.stderr), "not confirmed") || !strings.Contains(string(r.stderr), "EXITED 6 (confirmed") {
		t.Errorf("notices: %q", r.stderr)
	}
	if strings.Contains(string(r.stderr), "starts the container") {
		t.Errorf("the wake notice repeated: %q", r.stderr)
	}
	m := reRunID.FindStringSubmatch(string(r.stderr))
	if m == nil {
		t.Fatalf("no run ID in %q", r.stderr)
	}
	r = run("logs", "-f", "box", m[1][:18])
	if r.code != 0 || string(r.stdout) != "begin\nend\n" {
		t.Errorf("logs -f: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	before := b.Server.TotalAllocations()
	r = run("ls", "box")
	if r.code != 0 || !strings.Contains(string(r.stdout), "EXITED 6") || !strings.Contains(string(r.stdout), "EXITED 3") {
		t.Errorf("ls box: code %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r = run("ls"); r.code != 0 || !strings.Contains(string(r.stdout), "box") {
		t.Errorf("ls: code %d %q %q", r.code, r.stdout, r.stderr)
	}
	if after := b.Server.TotalAllocations(); after != before {
		t.Errorf("ls made %d sandbox requests on a stable bridge, want 0", after-before)
	}

	// wait and logs --all cover the runs sandscope started. A run the record settled is answered
	// from the record, without a request.
	before = b.Server.TotalAllocations()
	if r = run("wait", "box", m[1]); r.code != 6 || !strings.Contains(string(r.stderr), "from the record") {
		t.Errorf("wait on a settled run: %d %q", r.code, r.stderr)
	}
	if after := b.Server.TotalAllocations(); after != before {
		t.Errorf("wait on a run the record settled made %d sandbox requests, want 0", after-before)
	}
	if r = run("logs", "box", "--all"); r.code != 0 || !strings.Contains(string(r.stdout), "| out\n") || !strings.Contains(string(r.stdout), "| begin\n") ||
		!strings.Contains(string(r.stdout), "| end\n") || !strings.Contains(string(r.stderr), "EXITED 6 (confirmed") {
		t.Errorf("logs --all: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// A run still going: wait reads the recorder until its status file settles it; logs --all -f
	// follows it to its end.
	bg := exec.Command(sandscopeBinary(t), append(append([]string{}, args...), "exec", "box", "--", "sh", "-c", "echo slow; sleep 3; echo late; exit 9")...)
	bg.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bg.Wait() }()
	var running string
	for deadline := time.Now().Add(time.Minute); running == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, l := range strings.Split(string(run("ls", "box").stdout), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == "RUNNING" {
				running = f[0]
			}
		}
	}
	if running == "" {
		t.Fatal("the background exec's run never showed as RUNNING in ls")
	}
	if r = run("wait", "box", running); r.code != 9 || !strings.Contains(string(r.stderr), "EXITED 9 (confirmed") {
		t.Errorf("wait on a running run: %d %q", r.code, r.stderr)
	}
	if r = run("logs", "box", "--all", "-f", "--command", "slow"); r.code != 0 || !strings.Contains(string(r.stdout), "| late\n") {
		t.Errorf("logs --all -f: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r = run("wait", "box", "nosuch"); r.code != 2 || !strings.Contains(string(r.stderr), "only runs started here are known") {
		t.Errorf("wait on an unknown run: %d %q", r.code, r.stderr)
	}

	// Sessions: create, use, list, delete.
	if r = run("session", "create", "box", "dev", "--env", "GREETING=hello"); r.code != 0 || strings.TrimSpace(string(r.stdout)) != "dev" {
		t.Fatalf("session create: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r = run("exec", "--session", "dev", "box", "--", "sh", "-c", `echo "$GREETING"`); r.code != 0 || string(r.stdout) != "hello\n" {
		t.Errorf("exec in session: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r = run("session", "ls", "box"); !strings.Contains(string(r.stdout), "dev") {
		t.Errorf("session ls: %q", r.stdout)
	}
	if r = run("session", "rm", "box", "dev"); r.code != 0 {
		t.Errorf("session rm: %d %q", r.code, r.stderr)
	}
	if r = run("session", "rm", "box", "dev"); r.code == 0 || !strings.Contains(string(r.stderr), "not found") {
		t.Errorf("session rm again: %d %q", r.code, r.stderr)
	}
}

// Starting the TUI on a stable bridge, the sandbox list, opening a sandbox, its runs and sessions
// lists, and `ls` send no sandbox request (each would start a container there). Then the exec
// prompt asks before its first request, runs the command under the recorder, shows the stream's
// unconfirmed ending as such and settles it from the recorder's files; the runs list shows it
// from the record, and opening the run follows its log from the files.
func TestE2EStableZeroWake(t *testing.T) {
	tmuxPath := needTmux(t)
	b := bridgetest.Start(t, bridgetest.WithStable(), bridgetest.WithConfig(func(c *localbridge.Config) {
		c.StableFakeCompletionAfter = 1500 * time.Millisecond
	}))
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.Stable().Exec(ctx, "e2e", client.ExecOptions{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	for range run.Events() {
	}
	before := b.Server.TotalAllocations()

	dir := t.TempDir()
	env := tuiEnv(t, dir)
	tok := tokenFile(t, b)
	s := launchTUI(t, tmuxPath, dir, env, "--url", b.URL, "--token-file", tok)
	s.waitFor("the sandboxes screen", "sandscope │", "e2e")
	s.keys("Enter")
	s.waitFor("the sandbox screen", "Sandbox e2e", "stable bridge", "Runs (0)", "no runs recorded")
	s.keys("Tab")
	s.waitFor("the sessions list", "no sessions created or used here")
	s.keys("Tab")
	s.waitFor("the runs list", "no runs recorded")
	time.Sleep(3 * time.Second) // long enough for any watcher, lookup or record re-read to have gone out
	for _, a := range [][]string{{"ls"}, {"ls", "e2e"}} {
		r := runSandscope(t, env, append([]string{"--url", b.URL, "--token-file", tok}, a...)...)
		if r.code != 0 {
			t.Errorf("%v: %d %q", a, r.code, r.stderr)
		}
	}
	if after := b.Server.TotalAllocations(); after != before {
		t.Fatalf("the TUI, its sandbox list, opening a sandbox, its runs and sessions lists and ls made %d sandbox requests on a stable bridge, want 0", after-before)
	}

	// The exec prompt: the first action says it starts the container, and asks.
	s.keys("e")
	s.waitFor("the exec prompt", "Run a command in e2e")
	s.typeText(`sh -c "echo one; sleep 3; echo two; exit 5"`)
	s.keys("Enter")
	s.waitFor("the wake question", "Start the container of e2e?", "starts its container")
	if after := b.Server.TotalAllocations(); after != before {
		t.Fatalf("the exec prompt sent %d requests before the user confirmed", after-before)
	}
	s.keys("y")
	sc := s.waitFor("the run's ending, settled from the recorder", "EXITED 5 (confirmed", "two")
	if !strings.Contains(sc, "not confirmed") || !strings.Contains(sc, "one") {
		t.Errorf("the stream's exit-code-less completion was not shown as unconfirmed:\n%s", sc)
	}
	if strings.Contains(sc, "EXITED 0") {
		t.Errorf("the fabricated completion showed as EXITED 0:\n%s", sc)
	}
	if b.Server.TotalAllocations() == before {
		t.Error("the exec sent no request")
	}
	s.keys("Escape")
	s.waitFor("the runs list from the record", "Runs (1)", "EXITED 5")
	// The record holds it for the command line too.
	r := runSandscope(t, env, "--url", b.URL, "--token-file", tok, "ls", "e2e")
	if !strings.Contains(string(r.stdout), "EXITED 5") {
		t.Errorf("ls e2e after the TUI's run: %q %q", r.stdout, r.stderr)
	}
	// Opening the run follows its log from the recorder's files (told already: no question).
	s.keys("Enter")
	s.waitFor("the run's log from the files", "output from the recorder's files", "one", "two", "EXITED 5 (confirmed")
	s.keys("Escape")
	s.waitFor("the runs list", "Runs (1)")

	// Sessions: create one, choose it for the shell; the PTY pane replays the ring buffer on a
	// reconnect (said) and detects the end with the exit code unknown.
	s.keys("Tab")
	s.waitFor("the sessions list", "Sessions (0)")
	s.keys("c")
	s.waitFor("the session form", "New session in e2e")
	s.typeText("dev")
	s.keys("Enter")
	s.waitFor("the created session", "Sessions (1)", "dev")
	s.keys("Space")
	s.waitFor("the chosen session", "use session dev")
	s.keys("s")
	s.waitFor("the PTY pane", "LIVE", "pty session dev")
	s.typeText("echo pane-$((40+2))")
	s.keys("Enter")
	s.waitFor("the shell's output", "pane-42")
	s.keys("C-]")
	s.keys("Escape")
	s.waitFor("back on the sandbox screen", "Sessions (1)")
	s.keys("s")
	s.waitFor("the replayed pane", "REPLAYED", "pane-42")
	s.typeText("exit")
	s.keys("Enter")
	s.waitFor("the detected end", "ENDED · exit code unknown")
	s.keys("C-]")
	s.keys("Escape")
	s.waitFor("back on the sandbox screen", "Sessions (1)")
	s.quitAndWait()
}
