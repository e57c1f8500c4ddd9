package root

// Command tests of the command line's behaviour at the edges: a bridge that accepts connections
// and never answers (the timeout policy of timeouts.go), SIGHUP, scripted input to shell, and the
// wording of errors (HTML pages, cursors, URLs, unknown commands, serve's address, tokens).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/cli/cmdutil"
	"sandscope/internal/cli/shell"
)

// silentBridge listens on 127.0.0.1, accepts every connection and never answers (nor closes).
func silentBridge(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

// TestOneShotCommandsGiveUpOnASilentBridge: ls, ls SANDBOX, logs and exec against a bridge that
// never answers give up saying so (the bridge named, what was waited for) with their documented
// status, within a bound well above the policy's 12 s (the machine may be loaded).
func TestOneShotCommandsGiveUpOnASilentBridge(t *testing.T) {
	url := silentBridge(t)
	sandscopeBinary(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"ls"}, cmdutil.ExitFailure},
		{[]string{"ls", "abc"}, cmdutil.ExitFailure},
		{[]string{"logs", "abc", "p1"}, cmdutil.ExitFailure},
		{[]string{"exec", "abc", "--", "true"}, cmdutil.ExitExecUnsure},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			r := runSandscope(t, []string{"SANDBOX_API_KEY=tok", "SANDSCOPE_URL=" + url}, c.args...)
			took := time.Since(start)
			if r.code != c.code || !strings.Contains(string(r.stderr), "no answer from the bridge at "+url+" within 12s") {
				t.Errorf("exit %d, stderr %q; want %d and the bridge named", r.code, r.stderr, c.code)
			}
			if strings.Contains(string(r.stderr), "context deadline exceeded") {
				t.Errorf("stderr %q", r.stderr)
			}
			if took > 3*cmdutil.OneShotAnswerWait {
				t.Errorf("took %v", took)
			}
		})
	}
}

// stderrLines starts the binary and sends its stderr lines, with when they came, to a channel.
type timedLine struct {
	at   time.Duration
	text string
}

func startWithStderr(t *testing.T, env []string, args ...string) (*exec.Cmd, <-chan timedLine, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(sandscopeBinary(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}, env...)
	stdout := &syncBuffer{} // exec's copying goroutine writes it while the test reads it
	cmd.Stdout = stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan timedLine, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- timedLine{time.Since(start), sc.Text()}
		}
	}()
	return cmd, lines, stdout
}

// waitLine waits for a stderr line containing want.
func waitLine(t *testing.T, lines <-chan timedLine, want string, within time.Duration) timedLine {
	t.Helper()
	deadline := time.After(within)
	var seen []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stderr ended without %q; saw %q", want, seen)
			}
			seen = append(seen, l.text)
			if strings.Contains(l.text, want) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q within %v; saw %q", want, within, seen)
		}
	}
}

func exitCode(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("still running after %v", within)
	}
	return -1
}

// TestFollowersSayTheBridgeDoesNotAnswer: logs -f, wait and logs --all -f against a bridge that
// never answers say so on stderr early (the policy: 8 s), then keep retrying visibly (which
// attempt of how many, when the next one is); Ctrl-C still ends them at once.
func TestFollowersSayTheBridgeDoesNotAnswer(t *testing.T) {
	url := silentBridge(t)
	sandscopeBinary(t)
	for _, args := range [][]string{{"logs", "-f", "abc", "p1"}, {"wait", "abc", "p1"}, {"logs", "--all", "-f", "abc"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			cmd, lines, _ := startWithStderr(t, []string{"SANDBOX_API_KEY=tok", "SANDSCOPE_URL=" + url}, args...)
			first := waitLine(t, lines, "no answer from the bridge at "+url+" within 8s", 3*cmdutil.FollowAnswerWait)
			if !strings.HasPrefix(first.text, "sandscope: ") || !strings.Contains(first.text, "still trying") {
				t.Errorf("first notice %q", first.text)
			}
			retry := waitLine(t, lines, "retrying in ", 6*cmdutil.FollowAnswerWait)
			if !strings.Contains(retry.text, "(attempt 1 of 10") {
				t.Errorf("retry notice %q", retry.text)
			}
			_ = cmd.Process.Signal(os.Interrupt)
			if code := exitCode(t, cmd, 30*time.Second); code != cmdutil.ExitInterrupt {
				t.Errorf("after Ctrl-C: exit %d", code)
			}
		})
	}
}

// TestSIGHUPEndsFollowersLikeCtrlC: closing the terminal that runs exec, logs -f or wait prints
// the notice Ctrl-C prints (the resume cursor, the process left running) and exits 129.
func TestSIGHUPEndsFollowersLikeCtrlC(t *testing.T) {
	b, flags := bridgeArgs(t)
	sandscopeBinary(t) // built before p starts: p's minute is the subtests' alone, not the build's
	p := startProc(t, b, "sh", "-c", "echo started; sleep 60")
	for _, c := range []struct {
		args   []string
		notice string
	}{
		{[]string{"logs", "-f", "local", p.ID}, "interrupted; resume with: sandscope logs -f --since "},
		{[]string{"exec", "local", "--", "sh", "-c", "echo started; sleep 60"}, "detached; process "},
		{[]string{"wait", "local", p.ID}, ""},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			cmd, lines, stdout := startWithStderr(t, nil, append(append([]string{}, flags...), c.args...)...)
			deadline := time.Now().Add(30 * time.Second)
			for c.args[0] != "wait" && !strings.Contains(stdout.String(), "started") {
				if time.Now().After(deadline) {
					t.Fatalf("no output; stdout %q", stdout.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if c.args[0] == "wait" {
				time.Sleep(time.Second) // following
			}
			_ = cmd.Process.Signal(syscall.SIGHUP)
			if c.notice != "" {
				waitLine(t, lines, c.notice, 30*time.Second)
			}
			if code := exitCode(t, cmd, 30*time.Second); code != cmdutil.ExitHangup {
				t.Errorf("exit %d after SIGHUP; want %d", code, cmdutil.ExitHangup)
			}
		})
	}
}

// TestShellWithScriptedInput: input piped to shell that does not end in exit ends the shell
// (its end delivered as ctrl-D once the shell is ready), and a terminal that does not end after
// its input ended is ended by the command that created it.
func TestShellWithScriptedInput(t *testing.T) {
	b, flags := bridgeArgs(t)
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	run := func(input string) (runResult, time.Duration) {
		cmd := exec.Command(sandscopeBinary(t), append(append([]string{}, flags...), "shell", "--no-record", "local", "--", "sh")...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
		cmd.Stdin = strings.NewReader(input)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		code := exitCode(t, cmd, 90*time.Second)
		return runResult{stdout.Bytes(), stderr.Bytes(), code}, time.Since(start)
	}
	for i := 0; i < 3; i++ {
		r, took := run("echo hi-$((40+2))\n")
		if r.code != 0 || !strings.Contains(string(r.stdout), "hi-42") {
			t.Fatalf("try %d: exit %d, stdout %q, stderr %q", i, r.code, r.stdout, r.stderr)
		}
		if took > 30*time.Second {
			t.Errorf("try %d took %v", i, took)
		}
	}
	// a shell busy with a silent command after its input ended: ended after the bounded wait
	r, took := run("sleep 300\n")
	if !strings.Contains(string(r.stderr), "did not end within 10s") || r.code == 0 {
		t.Errorf("silent terminal: exit %d, stderr %q", r.code, r.stderr)
	}
	if took > 3*shell.ScriptedEOFWait+20*time.Second {
		t.Errorf("silent terminal took %v", took)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ts, err := c.ListTerminals(context.Background(), "local")
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, tm := range ts {
			if tm.Status == "running" {
				running++
			}
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d terminal(s) the command created still run: %+v", running, ts)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMessagesSayWhatWentWrong: usage errors before any request, an HTML page named rather than
// pasted, a URL without its scheme, serve's non-loopback address, an unknown command, and a
// short token that must not eat letters out of the message.
func TestMessagesSayWhatWentWrong(t *testing.T) {
	silent := silentBridge(t)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("<!DOCTYPE html><html><head><title>Access denied</title></head><body>" + strings.Repeat("x", 2000) + "</body></html>"))
	}))
	defer html.Close()
	sandscopeBinary(t)
	env := []string{"SANDBOX_API_KEY=tok"}
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		code  int
		want  []string
		avoid []string
	}{
		{"since", append(env, "SANDSCOPE_URL="+silent), []string{"logs", "-f", "--since", "garbage", "abc", "p1"}, cmdutil.ExitUsage,
			[]string{"--since garbage is not a log cursor", "like djE"}, []string{"restarting", "no answer"}},
		{"html", append(env, "SANDSCOPE_URL="+html.URL), []string{"ls", "abc"}, cmdutil.ExitFailure,
			[]string{"bridge answered 403", "text/html page"}, []string{"<!DOCTYPE", "<html", "xxxx"}},
		{"url", env, []string{"--url", "127.0.0.1:41547", "ls"}, cmdutil.ExitUsage,
			[]string{"did you mean http://127.0.0.1:41547?"}, nil},
		{"serve", nil, []string{"serve", "--listen", "0.0.0.0:0"}, cmdutil.ExitUsage,
			[]string{"--allow-remote"}, []string{"AllowNonLoopback"}},
		{"unknown", nil, []string{"record", "--help"}, cmdutil.ExitUsage,
			[]string{`unknown command "record"`, "commands: "}, []string{"Usage:"}},
		{"unknown-run", nil, []string{"lss", "abc"}, cmdutil.ExitUsage,
			[]string{`unknown command "lss"`, "did you mean "}, nil},
		// a short token is not cut out of the words of a message (the sandbox "boxes" holds both)
		{"1-char token", []string{"SANDBOX_API_KEY=x", "SANDSCOPE_URL=http://127.0.0.1:1"}, []string{"ls", "boxes"}, cmdutil.ExitFailure,
			[]string{"running boxes: bridge unreachable: dial tcp 127.0.0.1:1"}, []string{"[redacted]", `Get "`}},
		{"3-char token", []string{"SANDBOX_API_KEY=box", "SANDSCOPE_URL=http://127.0.0.1:1"}, []string{"ls", "boxes"}, cmdutil.ExitFailure,
			[]string{"running boxes: bridge unreachable: dial tcp 127.0.0.1:1"}, []string{"[redacted]", `Get "`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r := runSandscope(t, c.env, c.args...)
			all := string(r.stdout) + string(r.stderr)
			if r.code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, c.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(string(r.stderr), w) {
					t.Errorf("stderr lacks %q: %q", w, r.stderr)
				}
			}
			for _, a := range c.avoid {
				if strings.Contains(all, a) {
					t.Errorf("output holds %q: %q", a, all)
				}
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %v", took) // usage errors come before any wait on a bridge
			}
		})
	}
}
