package localbridge_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/localbridge/bridgetest"
)

func TestProcessValidation(t *testing.T) {
	b := bridgetest.Start(t)
	const inv = "invalid_request"
	cases := []struct {
		name   string
		body   string
		status int
		msg    string // "" = text 500
		code   string
	}{
		{"not json", `{argv`, 400, "Invalid JSON body", inv},
		{"empty body", ``, 400, "Invalid JSON body", inv},
		{"null body", `null`, 500, "", ""},
		{"array body", `[]`, 400, "argv must be a non-empty array", inv},
		{"no argv", `{}`, 400, "argv must be a non-empty array", inv},
		{"argv empty", `{"argv":[]}`, 400, "argv must be a non-empty array", inv},
		{"argv string", `{"argv":"sh"}`, 400, "argv must be a non-empty array", inv},
		{"argv number item", `{"argv":["sh",1]}`, 400, "argv items must be strings", inv},
		{"argv first before timeout", `{"argv":[1],"timeout":-1}`, 400, "argv items must be strings", inv},
		{"empty executable", `{"argv":[""]}`, 400, "argv executable must be non-empty", inv},
		{"timeout zero", `{"argv":["true"],"timeout":0}`, 400, "timeout must be a positive finite number", inv},
		{"timeout negative", `{"argv":["true"],"timeout":-5}`, 400, "timeout must be a positive finite number", inv},
		{"timeout null", `{"argv":["true"],"timeout":null}`, 400, "timeout must be a positive finite number", inv},
		{"timeout string", `{"argv":["true"],"timeout":"1000"}`, 400, "timeout must be a positive finite number", inv},
		{"timeout huge", `{"argv":["true"],"timeout":1e999}`, 400, "timeout must be a positive finite number", inv},
		{"timeout before cwd", `{"argv":["true"],"timeout":0,"cwd":"/etc"}`, 400, "timeout must be a positive finite number", inv},
		{"cwd outside", `{"argv":["true"],"cwd":"/etc"}`, 403, "cwd must resolve to a location within /workspace", inv},
		{"cwd dotdot", `{"argv":["true"],"cwd":"../x"}`, 403, "cwd must resolve to a location within /workspace", inv},
		{"cwd sneaky", `{"argv":["true"],"cwd":"/workspace/../etc"}`, 403, "cwd must resolve to a location within /workspace", inv},
		{"cwd prefix trick", `{"argv":["true"],"cwd":"/workspacex"}`, 403, "cwd must resolve to a location within /workspace", inv},
		{"cwd before env", `{"argv":["true"],"cwd":"/","env":5}`, 403, "cwd must resolve to a location within /workspace", inv},
		{"env number", `{"argv":["true"],"env":{"A":1}}`, 400, "env must be an object of strings", inv},
		{"env null", `{"argv":["true"],"env":null}`, 400, "env must be an object of strings", inv},
		{"env array", `{"argv":["true"],"env":["A=1"]}`, 400, "env must be an object of strings", inv},
		{"env bad name", `{"argv":["true"],"env":{"A=B":"1"}}`, 502, "process launch failed: *", "process_error"},
		{"missing cwd", `{"argv":["true"],"cwd":"nope/deeper"}`, 502, "process launch failed: *", "process_error"},
		{"missing executable", `{"argv":["definitely-not-a-command-xyz"]}`, 502, "process launch failed: *", "process_error"},
		{"fractional timeout", `{"argv":["true"],"timeout":0.5}`, 502, "process launch failed: *", "process_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := call(t, b, "POST", "/v1/sandbox/"+sb+"/processes", c.body, true, "Content-Type", "application/json")
			if r.Status != c.status {
				t.Fatalf("got %s, want %d", r, c.status)
			}
			if c.msg == "" {
				if r.Type != "text/plain; charset=UTF-8" || string(r.Body) != "Internal Server Error" {
					t.Fatalf("got %s, want text 500", r)
				}
				return
			}
			want := `{"error":"` + c.msg + `","code":"` + c.code + `"}`
			if p, ok := strings.CutSuffix(c.msg, "*"); ok {
				if !strings.HasPrefix(string(r.Body), `{"error":"`+p) || !strings.HasSuffix(string(r.Body), `","code":"`+c.code+`"}`) {
					t.Fatalf("got %s, want %s…", r, p)
				}
				return
			}
			if string(r.Body) != want {
				t.Fatalf("got %s, want %s", r, want)
			}
		})
	}
	// Non-string cwd is ignored; unknown fields too.
	st := launch(t, b, sb, map[string]any{"argv": []string{"pwd"}, "cwd": 5, "other": true})
	if st.Cwd != "/workspace" {
		t.Fatalf("cwd = %q", st.Cwd)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestProcessLifecycle(t *testing.T) {
	t.Setenv("SANDBOX_API_KEY", "secret-that-must-not-leak")
	b := bridgetest.Start(t)

	t.Run("exit code and output", func(t *testing.T) {
		st := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "printf out; printf err >&2; exit 3"}})
		if !uuidRE.MatchString(st.ID) || st.PID <= 0 || st.Incarnation != 1 || st.Cwd != "/workspace" {
			t.Fatalf("status %+v", st)
		}
		end := waitExit(t, b, sb, st.ID)
		if end.State != "exited" || end.Exit == nil || end.Exit.Code != 3 || end.Exit.Signal != 0 || end.Exit.TimedOut || end.EndedAt == "" {
			t.Fatalf("end %+v %+v", end, end.Exit)
		}
		_, evs, err := readSSE(t, b, "/v1/sandbox/"+sb+"/processes/"+st.ID+"/logs")
		if err != nil {
			t.Fatal(err)
		}
		var out, errb string
		for _, e := range evs {
			switch e.Type {
			case "stdout":
				out += string(e.bytes(t))
			case "stderr":
				errb += string(e.bytes(t))
			}
		}
		last := evs[len(evs)-1]
		if out != "out" || errb != "err" || last.Type != "terminal" || last.State != "exited" ||
			string(last.Exit) != `{"code":3,"timedOut":false}` {
			t.Fatalf("logs %q %q %s", out, errb, last.raw)
		}
	})

	t.Run("a command the kernel cannot start", func(t *testing.T) {
		// found and executable, so the supervisor's own exec is what fails, and says why
		st := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "printf 'not a program' > notexec; chmod +x notexec"}})
		waitExit(t, b, sb, st.ID)
		r := call(t, b, "POST", "/v1/sandbox/"+sb+"/processes", map[string]any{"argv": []string{"./notexec"}}, true)
		if r.Status != 502 || !strings.Contains(string(r.Body), "process launch failed: exec format error") {
			t.Fatalf("launch of a file that is no program: %s", r)
		}
	})

	t.Run("clean env", func(t *testing.T) {
		st := launch(t, b, sb, map[string]any{"argv": []string{"env"}, "env": map[string]string{"EXTRA": "yes"}})
		waitExit(t, b, sb, st.ID)
		_, evs, _ := readSSE(t, b, "/v1/sandbox/"+sb+"/processes/"+st.ID+"/logs")
		var out string
		for _, e := range evs {
			if e.Type == "stdout" {
				out += string(e.bytes(t))
			}
		}
		if strings.Contains(out, "secret-that-must-not-leak") || strings.Contains(out, b.Token) || strings.Contains(out, "SANDBOX_API_KEY") {
			t.Fatalf("secret leaked into the child environment:\n%s", out)
		}
		if !strings.Contains(out, "EXTRA=yes\n") || !strings.Contains(out, "HOME=") || !strings.Contains(out, "PATH=") {
			t.Fatalf("env:\n%s", out)
		}
	})

	t.Run("kill default signal to the group", func(t *testing.T) {
		st := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "sleep 30 & sleep 30"}})
		r := call(t, b, "POST", "/v1/sandbox/"+sb+"/processes/"+st.ID+"/kill", "garbage ignored without content type", true)
		if r.Status != 204 {
			t.Fatalf("kill: %s", r)
		}
		end := waitExit(t, b, sb, st.ID)
		if end.Exit.Code != 143 || end.Exit.Signal != 15 {
			t.Fatalf("exit %+v", end.Exit)
		}
		if groupAlive(st.PID) {
			t.Fatal("process group still alive")
		}
		// Killing an exited process is a no-op.
		if r := call(t, b, "POST", "/v1/sandbox/"+sb+"/processes/"+st.ID+"/kill", nil, true); r.Status != 204 {
			t.Fatalf("kill exited: %s", r)
		}
	})

	t.Run("kill body rules", func(t *testing.T) {
		st := launch(t, b, sb, map[string]any{"argv": []string{"sleep", "30"}})
		path := "/v1/sandbox/" + sb + "/processes/" + st.ID + "/kill"
		bad := []struct{ body, msg string }{
			{"", "Invalid JSON body"},
			{"x", "Invalid JSON body"},
			{"[]", "Request body must be an object"},
			{"null", "Request body must be an object"},
			{`{"signal":0}`, "signal must be an integer between 1 and 64"},
			{`{"signal":65}`, "signal must be an integer between 1 and 64"},
			{`{"signal":1.5}`, "signal must be an integer between 1 and 64"},
			{`{"signal":"9"}`, "signal must be an integer between 1 and 64"},
			{`{"signal":null}`, "signal must be an integer between 1 and 64"},
		}
		for _, c := range bad {
			r := call(t, b, "POST", path, c.body, true, "Content-Type", "application/json")
			if r.Status != 400 || string(r.Body) != `{"error":"`+c.msg+`","code":"invalid_request"}` {
				t.Errorf("kill %q: %s", c.body, r)
			}
		}
		if r := call(t, b, "POST", path, `{"signal":9}`, true, "Content-Type", "text/plain"); r.Status != 204 {
			t.Fatalf("kill 9: %s", r)
		}
		end := waitExit(t, b, sb, st.ID)
		if end.Exit.Code != 137 || end.Exit.Signal != 9 || end.Exit.TimedOut {
			t.Fatalf("exit %+v", end.Exit)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		st := launch(t, b, sb, map[string]any{"argv": []string{"sleep", "30"}, "timeout": 100})
		end := waitExit(t, b, sb, st.ID)
		if !end.Exit.TimedOut || end.Exit.Code != 143 || end.Exit.Signal != 15 {
			t.Fatalf("exit %+v", end.Exit)
		}
	})

	t.Run("timeout escalates to SIGKILL", func(t *testing.T) {
		st := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}, "timeout": 50})
		end := waitExit(t, b, sb, st.ID)
		if !end.Exit.TimedOut || end.Exit.Code != 137 || end.Exit.Signal != 9 {
			t.Fatalf("exit %+v", end.Exit)
		}
	})

	t.Run("running until the whole group is gone", func(t *testing.T) {
		dir := filepath.Join(b.Root, sb, "workspace")
		st := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "(sleep 0.4; echo late > late.txt) & echo root-done > root.txt"}})
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(dir, "root.txt")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("root never ran")
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		if cur, _ := getProc(t, b, sb, st.ID); cur.State != "running" {
			if _, err := os.Stat(filepath.Join(dir, "late.txt")); err != nil {
				t.Fatalf("state %q while a group member still runs", cur.State)
			}
		}
		end := waitExit(t, b, sb, st.ID)
		if _, err := os.Stat(filepath.Join(dir, "late.txt")); err != nil || end.Exit.Code != 0 {
			t.Fatalf("ended before the background job: %v %+v", err, end.Exit)
		}
	})

	t.Run("relative cwd and symlink escape", func(t *testing.T) {
		dir := filepath.Join(b.Root, sb, "workspace")
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		st := launch(t, b, sb, map[string]any{"argv": []string{"pwd"}, "cwd": "sub"})
		if st.Cwd != "/workspace/sub" {
			t.Fatalf("cwd %q", st.Cwd)
		}
		if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
			t.Fatal(err)
		}
		r := call(t, b, "POST", "/v1/sandbox/"+sb+"/processes", map[string]any{"argv": []string{"pwd"}, "cwd": "/workspace/out"}, true)
		if r.Status != 403 {
			t.Fatalf("symlinked cwd: %s", r)
		}
	})

	t.Run("JSON written like JSON.stringify", func(t *testing.T) {
		r := call(t, b, "POST", "/v1/sandbox/"+sb+"/processes", `{"argv":["sh","-c","true && echo '<x>'"]}`, true)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"command":["sh","-c","true && echo '<x>'"]`) {
			t.Fatalf("launch: %s", r)
		}
	})

	t.Run("list and percent-decoded id", func(t *testing.T) {
		st := launch(t, b, sb, map[string]any{"argv": []string{"true"}})
		enc := strings.ReplaceAll(st.ID, "-", "%2D")
		if _, code := getProc(t, b, sb, enc); code != 200 {
			t.Fatalf("percent-encoded id: %d", code)
		}
		r := call(t, b, "GET", "/v1/sandbox/"+sb+"/processes", nil, true)
		if r.Status != 200 || !strings.Contains(string(r.Body), st.ID) {
			t.Fatalf("list: %s", r)
		}
	})
}

// TestFinishedRetention: at most 64 finished processes are kept; the oldest by endedAt go.
func TestFinishedRetention(t *testing.T) {
	b := bridgetest.Start(t)
	var ids []string
	for i := 0; i < 66; i++ {
		st := launch(t, b, sb, map[string]any{"argv": []string{"true"}})
		waitExit(t, b, sb, st.ID)
		ids = append(ids, st.ID)
	}
	running := launch(t, b, sb, map[string]any{"argv": []string{"sleep", "30"}})
	for i, id := range ids {
		_, code := getProc(t, b, sb, id)
		if want := map[bool]int{true: 404, false: 200}[i < 2]; code != want {
			t.Errorf("process %d: status %d, want %d", i, code, want)
		}
	}
	if _, code := getProc(t, b, sb, running.ID); code != 200 {
		t.Fatal("running process evicted")
	}
}
