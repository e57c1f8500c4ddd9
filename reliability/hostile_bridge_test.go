package reliability

// A hostile bridge: every string it controls — sandbox, process and terminal IDs, states, argv,
// cwd, log cursors, error codes and the messages it wraps into {error, code} — carries escape
// sequences (window title, clipboard write, screen wipe, terminal queries whose answers arrive as
// input, hyperlinks), C1 controls, bidi overrides, or a megabyte of text. The real sandscope binary
// is driven against it through every screen of the TUI and every command, in tmux, and then:
//
//   - the pane title is still sandscope's (no OSC 0/2 took effect),
//   - tmux holds no paste buffer (no OSC 52 clipboard write took effect),
//   - the TUI's header is on the first line (nothing wiped or moved the frame),
//   - the raw bytes written to the terminal (tmux pipe-pane) hold none of the hostile sequences:
//     no title, clipboard or hyperlink OSC, no DSR/DA/DECRQSS query (whose answers would arrive
//     as typed input), no raw C1 control, no raw bidi override.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sandscope/internal/e2e"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// hostileStrings are the values the hostile bridge puts in every field, one run each.
var hostileStrings = []struct{ name, s string }{
	{"escape sequences", "X\x1b]2;PWNED-TITLE\x07\x1b]52;c;UFdORUQtQ0xJUA==\x07\x1b[?1049h\x1b[2J\x1b[H\x1b[6n\x1b[c\x1bP$qm\x1b\\\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\Y"},
	{"C1 controls and bidi overrides", "X\u009b2J\u009d0;PWNED-TITLE\u009c\u202eevil\u202c\u2066Y\u2069"},
	// Shortened "first 8…last 8" this would join into an OSC 52 clipboard write.
	{"split clipboard write", "\x1b]52;c;" + strings.Repeat("A", 200) + "UFdORUQtQ0xJUA==\x07"},
	{"megabyte line", strings.Repeat("M", 1<<20) + "\x1b]2;PWNED-TITLE\x07"},
}

// forbidden are byte strings that must never reach the terminal, with what they would do.
var forbidden = []struct{ seq, what string }{
	{"\x1b]2;PWNED", "OSC 2 window title"},
	{"\x1b]0;PWNED", "OSC 0 window title"},
	{"\x1b]52;", "OSC 52 clipboard write"},
	{"\x1b]8;", "OSC 8 hyperlink"},
	{"\x1b[6n", "DSR cursor position query"},
	{"\x1b[c", "DA device attributes query"},
	{"\x1bP$q", "DECRQSS query"},
	{"\u009b", "raw C1 CSI"},
	{"\u009d", "raw C1 OSC"},
	{"\u202e", "raw bidi override"},
	{"\u2066", "raw bidi isolate"},
	{"PWNED-TITLE\x07", "terminated title payload"},
}

// hostileBridge serves the preview API with h in every string field. Sandbox "evil" exists (its
// ID must be valid for the client to ask about it); the list also names a sandbox whose ID is h.
func hostileBridge(t *testing.T, h, token string, openapi []byte) *httptest.Server {
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	proc := func(id, state string) map[string]any {
		p := map[string]any{"id": id, "pid": 4242, "command": []string{h, "--flag=" + h}, "cwd": h,
			"state": state, "startedAt": now, "incarnation": 1}
		switch state {
		case "exited":
			p["endedAt"] = now
			p["exit"] = map[string]any{"code": 143, "signal": 15, "timedOut": false}
		case "error":
			p["endedAt"] = now
			p["error"] = map[string]any{"code": h, "message": h}
		}
		return p
	}
	procs := []map[string]any{proc("p1", "running"), proc(h, "running"), proc("p3", h), proc("p4", "error"), proc("p5", "exited")}
	terms := []map[string]any{
		{"id": "t1", "pid": 77, "command": []string{h}, "cwd": h, "status": "running"},
		{"id": h, "pid": 78, "command": []string{"bash"}, "cwd": "/workspace", "status": h},
	}
	fail := func(w http.ResponseWriter, status int, prefix string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": prefix + h, "code": h})
	}
	send := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			fail(w, 401, "unauthorized: ")
			return
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		switch {
		case r.URL.Path == "/v1/openapi.json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(openapi)
		case r.URL.Path == "/health":
			send(w, map[string]any{"status": "ok"})
		case r.Method == "GET" && (r.URL.Path == localbridge.ListPath || r.URL.Path == "/v1/sandbox"):
			send(w, []map[string]any{
				{"id": "evil", "running": true, "incarnation": 1, "processes": len(procs), "terminals": len(terms), "createdAt": now, "lastActiveAt": now},
				{"id": "zz" + h, "running": false, "processes": 0, "terminals": 0, "createdAt": now, "lastActiveAt": now},
			})
		case len(parts) == 4 && parts[3] == "running":
			send(w, map[string]any{"running": true, "incarnation": 1})
		case len(parts) == 4 && parts[3] == "processes" && r.Method == "GET":
			send(w, procs)
		case len(parts) == 4 && parts[3] == "processes":
			fail(w, 502, "process launch failed: ")
		case len(parts) == 5 && parts[3] == "processes" && r.Method == "GET":
			for _, p := range procs {
				if p["id"] == parts[4] {
					send(w, p)
					return
				}
			}
			fail(w, 404, "process not found: ")
		case len(parts) == 6 && parts[3] == "processes" && parts[5] == "logs":
			w.Header().Set("Content-Type", "text/event-stream")
			data := base64.StdEncoding.EncodeToString([]byte("log line from the hostile bridge\n"))
			evs := []map[string]any{
				{"type": "stdout", "cursor": h, "timestamp": now, "data": data},
				{"type": "stderr", "cursor": h + "2", "timestamp": now, "data": data},
			}
			// a resume from the last output cursor gets only what follows it (a bridge that
			// ignored the cursor would make the follower replay forever; see RELIABILITY.md)
			if r.URL.Query().Get("since") == h+"2" {
				evs = evs[:0]
			}
			// the ending agrees with the process's status, so only the strings are hostile
			switch parts[4] {
			case "p4":
				evs = append(evs, map[string]any{"type": "terminal", "state": "error", "cursor": h + "3", "timestamp": now, "error": map[string]any{"code": h, "message": h}})
			case "p5":
				evs = append(evs, map[string]any{"type": "terminal", "state": "exited", "cursor": h + "3", "timestamp": now, "exit": map[string]any{"code": 143, "signal": 15, "timedOut": false}})
			}
			for _, ev := range evs {
				b, _ := json.Marshal(ev)
				fmt.Fprintf(w, "data: %s\n\n", b)
			}
			if parts[4] != "p4" && parts[4] != "p5" { // running: the stream stays open
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
		case len(parts) == 4 && parts[3] == "terminals" && r.Method == "GET":
			send(w, terms)
		case len(parts) == 4 && parts[3] == "terminals":
			fail(w, 502, "terminal failed: ")
		case len(parts) == 5 && parts[3] == "terminals" && r.Method == "GET":
			for _, tm := range terms {
				if tm["id"] == parts[4] {
					send(w, tm)
					return
				}
			}
			fail(w, 404, "terminal not found: ")
		default:
			fail(w, 500, "pool error: ")
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// hostileTmux is a private tmux server whose one pane's raw output is copied to a file.
type hostileTmux struct {
	*e2e.Session
	raw string
	n   atomic.Int64
	// stderr is where the TUI's stderr goes ("" before it runs): on a timeout the TUI is asked for
	// a goroutine dump (SIGQUIT) and the test shows what it was doing
	stderr string
}

// dump asks the TUI for a goroutine dump and returns its sandscope frames.
func (s *hostileTmux) dump() string {
	if s.stderr == "" {
		return ""
	}
	pid, err := s.Run("display-message", "-p", "-t", "h", "#{pane_pid}")
	if err != nil {
		return ""
	}
	_ = exec.Command("kill", "-QUIT", strings.TrimSpace(pid)).Run()
	time.Sleep(time.Second)
	b, _ := os.ReadFile(s.stderr)
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "goroutine ") || strings.Contains(l, "sandscope/") {
			keep = append(keep, l)
		}
	}
	return "\nthe TUI's goroutines:\n" + strings.Join(keep, "\n")
}

// command runs a shell command line in the pane and waits until it finished.
func (s *hostileTmux) command(line string) {
	s.T.Helper()
	mark := fmt.Sprintf("DONE-%d", s.n.Add(1))
	s.Line(line + "; echo " + mark + "-$?")
	s.WaitFor(line, mark+"-")
	s.Keys("clear", "Enter")
}

func TestHostileBridgeEveryScreenAndCommand(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	dir := t.TempDir()
	bin := e2e.Binary(t)
	// The local bridge's API document, so sandscope treats the hostile bridge as one that lists
	// its sandboxes (the most strings on screen).
	real := bridgetest.Start(t)
	req, _ := http.NewRequest("GET", real.URL+"/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+real.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	openapi, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	const token = "hostile-bridge-token"
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, hs := range hostileStrings {
		t.Run(hs.name, func(t *testing.T) {
			srv := hostileBridge(t, hs.s, token, openapi)
			run := filepath.Join(dir, strconv.Itoa(i))
			env := append(e2e.Env(t, run), "PS1=$ ")
			s := &hostileTmux{Session: e2e.NewSession(t, tmuxPath, run, "h", env), raw: filepath.Join(run, "raw")}
			s.Wait, s.Poll, s.Diagnose = 60*time.Second, 100*time.Millisecond, s.dump
			s.Start(160, 48, "sh")
			// OSC 52 from programs creates tmux paste buffers; titles set the pane title
			s.Must("set-option", "-g", "set-clipboard", "on")
			s.Must("set-option", "-g", "allow-rename", "on")
			s.Must("set-option", "-g", "allow-passthrough", "off")
			s.Must("set-option", "-g", "remain-on-exit", "on")
			s.PipePane(s.raw)
			titleBefore := s.Display("#{pane_title}")

			sc := fmt.Sprintf("%s --url %s --token-file %s", bin, srv.URL, tok)
			// Every command that shows bridge strings.
			for _, c := range []string{"ls", "ls evil", "ls evil --json", "logs evil p4", "logs evil p5", "exec evil -- true",
				"shell evil", "logs evil nosuch", "attach evil nosuch"} {
				s.command("timeout 30 " + sc + " " + c + " </dev/tty")
			}
			// Every screen of the TUI.
			time.Sleep(500 * time.Millisecond) // let clear finish before typing
			s.stderr = filepath.Join(run, "tui.stderr")
			s.Line("exec " + sc + " 2>" + s.stderr)
			// the row itself, not only the title: an Enter sent while the list is still empty
			// (a loaded machine) opens nothing
			first := s.WaitFor("the sandboxes screen", "Sandboxes (1)", " evil ")
			checkHeader(t, "sandboxes", first)
			s.Keys("Down")
			s.Keys("Up")
			s.Keys("Enter")
			// the whole list, not only its title: keys sent while it loads would move nothing
			checkHeader(t, "sandbox", s.WaitFor("the sandbox screen", "Processes (5)", " p5 "))
			s.Keys("Down")
			s.Keys("Down")
			s.Keys("Up")
			s.Keys("Up")
			s.Keys("Enter") // the log view of p1: cursors, markers, the error ending
			checkHeader(t, "log view", s.WaitFor("the log view", "Logs"))
			s.Keys("y") // copy the cursor: shown, never copied
			time.Sleep(500 * time.Millisecond)
			checkHeader(t, "log view after copy", s.Screen())
			s.Keys("Escape")
			s.WaitFor("the sandbox screen", "Processes (")
			s.Keys("e")
			s.Type("true")
			s.Keys("Enter") // the launch fails with the hostile message
			time.Sleep(500 * time.Millisecond)
			checkHeader(t, "exec failure", s.Screen())
			s.Keys("Tab") // terminals
			time.Sleep(500 * time.Millisecond)
			checkHeader(t, "terminals", s.Screen())
			s.Keys("s")
			time.Sleep(300 * time.Millisecond)
			s.Keys("Enter") // the terminal creation fails with the hostile message
			time.Sleep(500 * time.Millisecond)
			checkHeader(t, "terminal failure", s.Screen())
			s.Keys("Escape")
			s.Keys("Escape")
			s.Keys("q")
			time.Sleep(300 * time.Millisecond)
			_, _ = s.Run("send-keys", "-t", "h", "y") // a quit confirmation, if one is asked
			time.Sleep(500 * time.Millisecond)

			if title := s.Display("#{pane_title}"); strings.Contains(title, "PWNED") || (title != titleBefore && !strings.Contains(title, "sandscope")) {
				t.Errorf("the pane title changed to %q", title)
			}
			if bufs, _ := s.Run("list-buffers"); strings.TrimSpace(bufs) != "" {
				t.Errorf("a clipboard write took effect: tmux paste buffers:\n%s", bufs)
			}
			s.StopPipe() // stop copying (the pane may have closed with sandscope)
			time.Sleep(200 * time.Millisecond)
			raw, err := os.ReadFile(s.raw)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) == 0 {
				t.Fatal("nothing was captured from the pane")
			}
			for _, f := range forbidden {
				if i := strings.Index(string(raw), f.seq); i >= 0 {
					lo, hi := max(0, i-60), min(len(raw), i+60)
					t.Errorf("%s reached the terminal: …%q…", f.what, raw[lo:hi])
				}
			}
			if !t.Failed() {
				t.Logf("%s: %d bytes written to the terminal, none hostile", hs.name, len(raw))
			}
		})
	}
}

// checkHeader checks sandscope's header is on the first line of a TUI screen.
func checkHeader(t *testing.T, where, screen string) {
	t.Helper()
	if !strings.HasPrefix(screen, " sandscope │") {
		first, _, _ := strings.Cut(screen, "\n")
		t.Errorf("%s: the first line is not sandscope's header: %q", where, first)
	}
}
