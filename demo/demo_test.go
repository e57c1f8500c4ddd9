package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
)

func TestAgentScriptIsStreamJSON(t *testing.T) {
	for _, resumed := range []bool{false, true} {
		lines := AgentScript(resumed)
		if len(lines) < 20 {
			t.Fatalf("only %d lines", len(lines))
		}
		uses := map[string]string{}
		results := map[string]bool{}
		tools := map[string]bool{}
		for i, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l.Text), &m); err != nil {
				t.Fatalf("line %d is not JSON: %v: %s", i, err, l.Text)
			}
			if strings.Contains(l.Text, "\n") {
				t.Fatalf("line %d holds a raw newline", i)
			}
			if m["session_id"] != agentSession {
				t.Fatalf("line %d lacks the session id", i)
			}
			msg, _ := m["message"].(map[string]any)
			content, _ := msg["content"].([]any)
			for _, c := range content {
				block := c.(map[string]any)
				switch block["type"] {
				case "tool_use":
					uses[block["id"].(string)] = block["name"].(string)
					tools[block["name"].(string)] = true
				case "tool_result":
					results[block["tool_use_id"].(string)] = true
				}
			}
		}
		var first, last map[string]any
		_ = json.Unmarshal([]byte(lines[0].Text), &first)
		_ = json.Unmarshal([]byte(lines[len(lines)-1].Text), &last)
		if first["type"] != "system" || first["subtype"] != "init" {
			t.Fatalf("first line %s", lines[0].Text)
		}
		if last["type"] != "result" || last["subtype"] != "success" || last["is_error"] != false {
			t.Fatalf("last line %s", lines[len(lines)-1].Text)
		}
		for id, name := range uses {
			if !results[id] {
				t.Fatalf("tool_use %s (%s) has no tool_result", id, name)
			}
		}
		for _, want := range []string{"Read", "Edit", "Bash"} {
			if !tools[want] {
				t.Fatalf("no %s tool use", want)
			}
		}
	}
	if d := AgentDuration(false); d < 2*time.Minute || d > 5*time.Minute {
		t.Fatalf("agent runs %s; want a few minutes", d)
	}
	if strings.Contains(AgentScript(false)[1].Text, "container went away") || !strings.Contains(AgentScript(true)[1].Text, "container went away") {
		t.Fatal("only the resumed run mentions the lost container")
	}
}

func expectedAgentOutput(resumed bool) string {
	var b strings.Builder
	for _, l := range AgentScript(resumed) {
		b.WriteString(l.Text + "\n")
	}
	return b.String()
}

func needSh(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("sh is needed to run the demo scripts")
	}
	return sh
}

// The sh form must print exactly the same bytes as the Go form: quoting of quotes, backslashes,
// %, newlines escaped inside JSON, non-ASCII text.
func TestAgentShellScriptPrintsTheSameLines(t *testing.T) {
	sh := needSh(t)
	for _, resumed := range []bool{false, true} {
		cmd := exec.Command(sh, "-c", AgentShellScript(10000, resumed), "claude")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("agent script: %v: %s", err, stderr.String())
		}
		if got, want := stdout.String(), expectedAgentOutput(resumed); got != want {
			t.Fatalf("sh agent output differs:\n got %q\nwant %q", got[:min(len(got), 400)], want[:min(len(want), 400)])
		}
	}
}

func TestWriteAgent(t *testing.T) {
	var out bytes.Buffer
	if err := WriteAgent(context.Background(), &out, 10000, false); err != nil {
		t.Fatal(err)
	}
	if out.String() != expectedAgentOutput(false) {
		t.Fatal("WriteAgent output differs from the script")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out.Reset()
	if err := WriteAgent(ctx, &out, 1, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled WriteAgent = %v", err)
	}
}

func TestBuildAndTestScripts(t *testing.T) {
	sh := needSh(t)
	run := func(script string) (string, string, int) {
		cmd := exec.Command(sh, "-c", script, "x")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	out, errOut, code := run(BuildScript(10000))
	if code != 0 || !strings.Contains(out, "build finished") || !strings.Contains(out, "compiling example.com/shop/internal/search") ||
		!strings.Contains(errOut, "warning:") || strings.Contains(out, "warning:") {
		t.Fatalf("build: code %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	out, errOut, code = run(TestScript(10000))
	if code != 2 || !strings.Contains(out, "1 failed | 23 passed") || !strings.Contains(errOut, "AssertionError") {
		t.Fatalf("tests: code %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// fakeBridge records the scene's calls.
type fakeBridge struct {
	mu          sync.Mutex
	calls       []string
	reqs        []client.ExecRequest
	n           int
	incarnation int
	replaceErr  error
}

func (f *fakeBridge) StartProcess(ctx context.Context, sandbox string, req client.ExecRequest) (client.Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.calls = append(f.calls, fmt.Sprintf("start %s %s", sandbox, req.Argv[len(req.Argv)-1]))
	f.reqs = append(f.reqs, req)
	return client.Process{ID: fmt.Sprintf("p%d", f.n), State: "running", Command: req.Argv, Incarnation: f.incarnation}, nil
}

func (f *fakeBridge) GetProcess(ctx context.Context, sandbox, process string) (client.Process, error) {
	return client.Process{ID: process, State: "running"}, nil
}

func (f *fakeBridge) CreateTerminal(ctx context.Context, sandbox string, req client.TerminalRequest) (client.Terminal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.calls = append(f.calls, "terminal "+sandbox+" "+strings.Join(req.Argv, " "))
	return client.Terminal{ID: fmt.Sprintf("t%d", f.n), Status: "running"}, nil
}

func (f *fakeBridge) ReplaceSandbox(ctx context.Context, sandbox string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "replace "+sandbox)
	if f.replaceErr != nil {
		return f.replaceErr
	}
	f.incarnation++
	return nil
}

func TestRunSceneOrder(t *testing.T) {
	f := &fakeBridge{incarnation: 1}
	var logs []string
	sc, err := RunScene(context.Background(), f, Options{
		Executable: "/opt/sandscope", Speed: 1000, ReplaceAfter: 5 * time.Second,
		Log: func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"start demo build", "start demo npm-test", "start demo 1000", "terminal demo sh",
		"replace demo", "start demo --resume", "terminal demo sh",
	}
	if strings.Join(f.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls\n got %q\nwant %q", f.calls, want)
	}
	if !sc.Replaced || sc.Agent.Incarnation != 1 || sc.Agent2.Incarnation != 2 {
		t.Fatalf("scene %+v", sc)
	}
	agent := f.reqs[2].Argv
	if agent[0] != "sandscope" || agent[1] != "demo" || agent[2] != "agent" || !strings.HasPrefix(f.reqs[2].Env["PATH"], "/opt:") {
		t.Fatalf("agent argv %q env %q: want the program's name found through PATH", agent, f.reqs[2].Env)
	}
	if len(logs) != 7 {
		t.Fatalf("logs %q", logs)
	}
}

func TestRunSceneWithoutExecutableUsesSh(t *testing.T) {
	f := &fakeBridge{}
	if _, err := RunScene(context.Background(), f, Options{Sandbox: "other", Speed: 1000, NoReplace: true}); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 4 || f.calls[2] != "start other claude" {
		t.Fatalf("calls %q", f.calls)
	}
	if argv := f.reqs[2].Argv; argv[0] != "sh" || argv[1] != "-c" || !strings.Contains(argv[2], `"type":"result"`) {
		t.Fatalf("agent argv %q", argv[:2])
	}
}

func TestRunSceneSkipsReplaceWhenUnsupported(t *testing.T) {
	f := &fakeBridge{replaceErr: fmt.Errorf("replace sandbox: %w", client.ErrUnsupported)}
	var logs []string
	sc, err := RunScene(context.Background(), f, Options{Speed: 1000, ReplaceAfter: time.Second,
		Log: func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Replaced || len(f.calls) != 5 || !strings.Contains(logs[len(logs)-1], "skipped") {
		t.Fatalf("calls %q logs %q", f.calls, logs)
	}
	f = &fakeBridge{replaceErr: errors.New("boom")}
	if _, err := RunScene(context.Background(), f, Options{Speed: 1000, ReplaceAfter: time.Second}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("replace failure: %v", err)
	}
}

func TestRunSceneCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeBridge{}
	go func() {
		for {
			f.mu.Lock()
			n := len(f.calls)
			f.mu.Unlock()
			if n >= 4 {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := RunScene(ctx, f, Options{ReplaceAfter: time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "replace") {
			t.Fatal("replaced after cancellation")
		}
	}
}
