package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// The command line on a stable bridge: exec exits with the command's own code only when the
// recorder confirms it, the exit-code-less completion is never success, logs reads the recorder's
// files, and ls answers from what sandscope recorded without a single sandbox request.
func TestStableCommandLine(t *testing.T) {
	b, args := e2e.BridgeArgs(t, bridgetest.WithDialect(localbridge.DialectStable), bridgetest.WithConfig(func(c *localbridge.Config) {
		c.StableFakeCompletionAfter = 700 * time.Millisecond
	}))
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	run := func(a ...string) e2e.Result {
		t.Helper()
		return e2e.Run(t, env, append(append([]string{}, args...), a...)...)
	}
	r := run("exec", "box", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if r.Code != 3 || string(r.Stdout) != "out\n" || !strings.Contains(string(r.Stderr), "err\n") {
		t.Fatalf("exec: code %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(string(r.Stderr), "starts the container of sandbox box") {
		t.Errorf("the first action did not say it starts the container: %q", r.Stderr)
	}
	// The bridge ends this stream with {"exit_code":0} while the command runs on: the recorder's
	// status decides, and the output the stream missed comes from its file.
	r = run("exec", "box", "--", "sh", "-c", "echo begin; sleep 2; echo end; exit 6")
	if r.Code != 6 || string(r.Stdout) != "begin\nend\n" {
		t.Fatalf("exec with a fabricated completion: code %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(string(r.Stderr), "not confirmed") || !strings.Contains(string(r.Stderr), "EXITED 6 (confirmed") {
		t.Errorf("notices: %q", r.Stderr)
	}
	if strings.Contains(string(r.Stderr), "starts the container") {
		t.Errorf("the wake notice repeated: %q", r.Stderr)
	}
	m := e2e.RunID.FindStringSubmatch(string(r.Stderr))
	if m == nil {
		t.Fatalf("no run ID in %q", r.Stderr)
	}
	// named as the screens show it (the random tail): a prefix of the launch time can match
	// another run started in the same second
	r = run("logs", "-f", "box", client.ShortID(m[1]))
	if r.Code != 0 || string(r.Stdout) != "begin\nend\n" {
		t.Errorf("logs -f: code %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
	}

	before := b.Server.TotalAllocations()
	r = run("ls", "box")
	if r.Code != 0 || !strings.Contains(string(r.Stdout), "EXITED 6") || !strings.Contains(string(r.Stdout), "EXITED 3") {
		t.Errorf("ls box: code %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r = run("ls"); r.Code != 0 || !strings.Contains(string(r.Stdout), "box") {
		t.Errorf("ls: code %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if after := b.Server.TotalAllocations(); after != before {
		t.Errorf("ls made %d sandbox requests on a stable bridge, want 0", after-before)
	}

	// wait and logs --all cover the runs sandscope started. A run the record settled is answered
	// from the record, without a request.
	before = b.Server.TotalAllocations()
	if r = run("wait", "box", m[1]); r.Code != 6 || !strings.Contains(string(r.Stderr), "from the record") {
		t.Errorf("wait on a settled run: %d %q", r.Code, r.Stderr)
	}
	if after := b.Server.TotalAllocations(); after != before {
		t.Errorf("wait on a run the record settled made %d sandbox requests, want 0", after-before)
	}
	if r = run("logs", "box", "--all"); r.Code != 0 || !strings.Contains(string(r.Stdout), "| out\n") || !strings.Contains(string(r.Stdout), "| begin\n") ||
		!strings.Contains(string(r.Stdout), "| end\n") || !strings.Contains(string(r.Stderr), "ended: EXITED 6\n") {
		t.Errorf("logs --all: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	// A run still going: wait reads the recorder until its status file settles it; logs --all -f
	// follows it to its end.
	bg := exec.Command(e2e.Binary(t), append(append([]string{}, args...), "exec", "box", "--", "sh", "-c", "echo slow; sleep 3; echo late; exit 9")...)
	bg.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bg.Wait() }()
	var running string
	for deadline := time.Now().Add(time.Minute); running == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, l := range strings.Split(string(run("ls", "box").Stdout), "\n") {
			// KIND ID STATE …: the one table ls prints on every bridge
			if f := strings.Fields(l); len(f) > 2 && f[0] == "process" && f[2] == "RUNNING" {
				running = f[1]
			}
		}
	}
	if running == "" {
		t.Fatal("the background exec's run never showed as RUNNING in ls")
	}
	if r = run("wait", "box", running); r.Code != 9 || !strings.Contains(string(r.Stderr), "ended: EXITED 9\n") {
		t.Errorf("wait on a running run: %d %q", r.Code, r.Stderr)
	}
	if r = run("logs", "box", "--all", "-f", "--command", "slow"); r.Code != 0 || !strings.Contains(string(r.Stdout), "| late\n") {
		t.Errorf("logs --all -f: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r = run("wait", "box", "nosuch"); r.Code != 2 || !strings.Contains(string(r.Stderr), "only runs sandscope started are known") {
		t.Errorf("wait on an unknown run: %d %q", r.Code, r.Stderr)
	}

	// Sessions: create, use, list, delete.
	if r = run("session", "create", "box", "dev", "--env", "GREETING=hello"); r.Code != 0 || strings.TrimSpace(string(r.Stdout)) != "dev" {
		t.Fatalf("session create: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r = run("exec", "--session", "dev", "box", "--", "sh", "-c", `echo "$GREETING"`); r.Code != 0 || string(r.Stdout) != "hello\n" {
		t.Errorf("exec in session: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r = run("session", "ls", "box"); !strings.Contains(string(r.Stdout), "dev") {
		t.Errorf("session ls: %q", r.Stdout)
	}
	if r = run("session", "rm", "box", "dev"); r.Code != 0 {
		t.Errorf("session rm: %d %q", r.Code, r.Stderr)
	}
	if r = run("session", "rm", "box", "dev"); r.Code == 0 || !strings.Contains(string(r.Stderr), "not found") {
		t.Errorf("session rm again: %d %q", r.Code, r.Stderr)
	}
}

// Starting the TUI on a stable bridge, the sandbox list, opening a sandbox, its runs and sessions
// lists, and `ls` send no sandbox request (each would start a container there). Then the exec
// prompt asks before its first request and runs the command under the recorder; the stream's
// completion without an exit code is never shown as EXITED 0, and the ending settled from the
// recorder's files shows in the runs list (from the record) and in the run's log.
func TestE2EStableZeroWake(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable), bridgetest.WithConfig(func(c *localbridge.Config) {
		c.StableFakeCompletionAfter = 1500 * time.Millisecond
	}))
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := client.NewStable(c).Exec(ctx, "e2e", client.ExecOptions{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	for range run.Events() {
	}
	before := b.Server.TotalAllocations()

	dir := t.TempDir()
	env := e2e.Env(t, dir)
	tok := e2e.TokenFile(t, b)
	s := e2e.LaunchTUI(t, tmuxPath, dir, env, "--url", b.URL, "--token-file", tok)
	s.WaitFor("the sandboxes screen", "sandscope │", "e2e")
	s.Keys("Enter")
	s.WaitFor("the sandbox screen", "Sandbox e2e", "not asked", "Runs (0)", "no runs started by sandscope here")
	s.Keys("Tab")
	s.WaitFor("the sessions list", "no sessions created or used here")
	s.Keys("BTab")
	s.WaitFor("the runs list", "no runs started by sandscope here")
	time.Sleep(3 * time.Second) // long enough for any watcher, lookup or record re-read to have gone out
	for _, a := range [][]string{{"ls"}, {"ls", "e2e"}} {
		r := e2e.Run(t, env, append([]string{"--url", b.URL, "--token-file", tok}, a...)...)
		if r.Code != 0 {
			t.Errorf("%v: %d %q", a, r.Code, r.Stderr)
		}
	}
	if after := b.Server.TotalAllocations(); after != before {
		t.Fatalf("the TUI, its sandbox list, opening a sandbox, its runs and sessions lists and ls made %d sandbox requests on a stable bridge, want 0", after-before)
	}

	// The exec prompt: the first action says it starts the container, and asks.
	s.Keys("e")
	s.WaitFor("the exec prompt", "Run a process in e2e")
	s.Type(`sh -c "echo one; sleep 3; echo two; exit 5"`)
	s.Keys("Enter")
	s.WaitFor("the wake question", "Start the container of e2e?", "starts the container of sandbox e2e")
	if after := b.Server.TotalAllocations(); after != before {
		t.Fatalf("the exec prompt sent %d requests before the user confirmed", after-before)
	}
	s.Keys("y")
	s.WaitUntil("the run's ending, settled from the recorder", func(sc string) bool {
		if strings.Contains(sc, "EXITED 0") {
			t.Fatalf("the fabricated completion showed as EXITED 0:\n%s", sc)
		}
		return strings.Contains(sc, "Runs (1)") && strings.Contains(sc, "EXITED 5")
	})
	if b.Server.TotalAllocations() == before {
		t.Error("the exec sent no request")
	}
	// The record holds it for the command line too.
	r := e2e.Run(t, env, "--url", b.URL, "--token-file", tok, "ls", "e2e")
	if !strings.Contains(string(r.Stdout), "EXITED 5") {
		t.Errorf("ls e2e after the TUI's run: %q %q", r.Stdout, r.Stderr)
	}
	// Opening the run follows its log from the recorder's files (told already: no question).
	s.Keys("Enter")
	s.WaitFor("the run's log", "Logs · e2e", "one", "two", "EXITED 5")
	s.Keys("Escape")
	s.WaitFor("the runs list", "Runs (1)")

	// Sessions: create one, choose it for the shell; the PTY pane replays the ring buffer on a
	// reconnect (said) and detects the end with the exit code unknown.
	s.Keys("Tab")
	s.WaitFor("the sessions list", "Sessions (0)")
	s.Keys("c")
	s.WaitFor("the session form", "New session in e2e")
	s.Type("dev")
	s.Keys("Enter")
	s.WaitFor("the created session", "Sessions (1)", "dev")
	s.Keys("Space")
	s.WaitFor("the chosen session", "use session dev")
	s.Keys("s")
	s.WaitFor("the PTY pane", "LIVE", "term dev")
	s.Type("echo pane-$((40+2))")
	s.Keys("Enter")
	s.WaitFor("the shell's output", "pane-42")
	s.Keys("C-]")
	s.Keys("Escape")
	s.WaitFor("back on the sandbox screen", "Sessions (1)")
	s.Keys("s")
	s.WaitFor("the replayed pane", "REPLAYED", "pane-42")
	s.Type("exit")
	s.Keys("Enter")
	s.WaitFor("the detected end", "ENDED · exit code unknown")
	s.Keys("C-]")
	s.Keys("Escape")
	s.WaitFor("back on the sandbox screen", "Sessions (1)")
	s.QuitAndWait()
}
