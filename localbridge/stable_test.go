package localbridge_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

type sseEv struct{ name, data string }

// stableCall sends one request to a stable bridge and returns status, content type and body.
func stableCall(t *testing.T, b *bridgetest.Bridge, method, path, body string, hdr map[string]string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, b.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+b.Token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Content-Type"), string(data)
}

func parseStableSSE(t *testing.T, body string) []sseEv {
	t.Helper()
	var out []sseEv
	sc := bufio.NewScanner(strings.NewReader(body))
	var cur sseEv
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			cur.name = l[7:]
		case strings.HasPrefix(l, "data: "):
			cur.data = l[6:]
		case l == "":
			if cur.name != "" {
				out = append(out, cur)
			}
			cur = sseEv{}
		default:
			t.Fatalf("unexpected SSE line %q", l)
		}
	}
	return out
}

// outputs joins the decoded stdout and stderr of the events.
func outputs(t *testing.T, evs []sseEv) (stdout, stderr string, ending sseEv) {
	t.Helper()
	var o, e strings.Builder
	for _, ev := range evs {
		switch ev.name {
		case "stdout", "stderr":
			d, err := base64.StdEncoding.DecodeString(ev.data)
			if err != nil {
				t.Fatalf("bad base64 %q", ev.data)
			}
			if ev.name == "stdout" {
				o.Write(d)
			} else {
				e.Write(d)
			}
		default:
			ending = ev
		}
	}
	return o.String(), e.String(), ending
}

func TestStableExecOutputAndExitCode(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	st, ct, body := stableCall(t, b, "POST", "/v1/sandbox/abc/exec",
		`{"argv":["sh","-c","printf 'hi\\n'; printf 'oops' >&2; printf '\\377ok'; exit 3"]}`, nil)
	if st != 200 || ct != "text/event-stream" {
		t.Fatalf("exec: %d %s %s", st, ct, body)
	}
	evs := parseStableSSE(t, body)
	out, errOut, end := outputs(t, evs)
	if out != "hi\n\uFFFDok" || errOut != "oops" {
		t.Errorf("stdout %q stderr %q", out, errOut)
	}
	if end.name != "exit" || end.data != `{"exit_code":3}` {
		t.Errorf("ending %+v", end)
	}
	if n := b.Server.Allocations("abc"); n != 1 {
		t.Errorf("allocations %d, want 1", n)
	}
}

func TestStableEveryRequestAllocates(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/sandbox/abc/running"}, {"GET", "/v1/sandbox/abc/processes"}, {"GET", "/v1/sandbox/abc/nope"},
		{"POST", "/v1/sandbox/abc/exec"}, {"GET", "/v1/sandbox/abc/pty"}, {"DELETE", "/v1/sandbox/abc"},
	} {
		stableCall(t, b, r.method, r.path, "", nil)
	}
	if n := b.Server.Allocations("abc"); n != 6 {
		t.Errorf("allocations %d, want 6", n)
	}
	// Neither the list extension, a bad ID, nor a 401 allocates.
	stableCall(t, b, "GET", "/v1/sandbox", "", nil)
	stableCall(t, b, "GET", "/v1/sandbox/BAD/running", "", nil)
	req, _ := http.NewRequest("GET", b.URL+"/v1/sandbox/abc/running", nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
	}
	if n := b.Server.TotalAllocations(); n != 6 {
		t.Errorf("total allocations %d, want 6", n)
	}
	st, _, body := stableCall(t, b, "POST", "/v1/sandbox", "", nil)
	var id struct{ ID string }
	_ = json.Unmarshal([]byte(body), &id)
	if st != 200 || len(id.ID) != 26 {
		t.Errorf("minted %d %q, want a 26-char ID", st, body)
	}
}

func TestStableSessionFramingAndState(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	st, _, body := stableCall(t, b, "POST", "/v1/sandbox/abc/session", `{"id":"work","env":{"GREETING":"hello there"}}`, nil)
	if st != 200 || body != `{"id":"work"}` {
		t.Fatalf("create: %d %s", st, body)
	}
	st, _, body = stableCall(t, b, "POST", "/v1/sandbox/abc/session", `{"id":"work"}`, nil)
	if st != 502 || !strings.Contains(body, "session_error") {
		t.Errorf("duplicate create: %d %s", st, body)
	}
	hdr := map[string]string{"Session-Id": "work"}
	_, _, body = stableCall(t, b, "POST", "/v1/sandbox/abc/exec", `{"argv":["sh","-c","mkdir -p sub && cd sub && export X=1 && printf 'a\\nb\\000c'"]}`, hdr)
	evs := parseStableSSE(t, body)
	var chunks []string
	for _, ev := range evs {
		if ev.name == "stdout" {
			d, _ := base64.StdEncoding.DecodeString(ev.data)
			chunks = append(chunks, string(d))
		}
	}
	if strings.Join(chunks, "|") != "a\n|bc\n" {
		t.Errorf("session framing: %q", chunks)
	}
	// sh -c ran in a child: its cd and export do not persist; a bash builtin in the session does.
	_, _, body = stableCall(t, b, "POST", "/v1/sandbox/abc/exec", `{"argv":["cd","sub"]}`, hdr)
	if _, _, end := outputs(t, parseStableSSE(t, body)); end.data != `{"exit_code":0}` {
		t.Fatalf("cd: %s", body)
	}
	_, _, body = stableCall(t, b, "POST", "/v1/sandbox/abc/exec", `{"argv":["sh","-c","basename \"$PWD\"; echo \"$GREETING\""]}`, hdr)
	if out, _, _ := outputs(t, parseStableSSE(t, body)); out != "sub\nhello there\n" {
		t.Errorf("session state: %q", out)
	}
	st, _, body = stableCall(t, b, "DELETE", "/v1/sandbox/abc/session/work", "", nil)
	if st != 200 || !strings.Contains(body, `"success":true`) || !strings.Contains(body, `"sessionId":"work"`) {
		t.Errorf("delete: %d %s", st, body)
	}
	st, _, body = stableCall(t, b, "DELETE", "/v1/sandbox/abc/session/work", "", nil)
	if st != 502 || !strings.Contains(body, "session delete failed: Session 'work' not found") {
		t.Errorf("delete again: %d %s", st, body)
	}
}

// A stable exec stream open while the bridge closes is cut: neither a clean end nor the "Network
// connection lost." event a stopped container gives (the bridge went away, not the container).
func TestStableExecStreamCutWhenTheBridgeCloses(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	res, br := startLongExec(t, b)
	defer res.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Server.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err == nil || strings.Contains(string(rest), "event: ") {
		t.Errorf("the stream ended cleanly or with an event: %v %q", err, rest)
	}
}

// startLongExec starts a stable exec stream of sandbox abc running for 30 s, read past its first
// output line.
func startLongExec(t *testing.T, b *bridgetest.Bridge) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequest("POST", b.URL+"/v1/sandbox/abc/exec",
		strings.NewReader(`{"argv":["sh","-c","echo started; sleep 30"]}`))
	req.Header.Set("Authorization", "Bearer "+b.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(res.Body)
	if l, _ := br.ReadString('\n'); l != "event: stdout\n" {
		res.Body.Close()
		t.Fatalf("first line %q", l)
	}
	return res, br
}

func TestStableCompletionWithoutExitCodeAndCut(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	res, br := startLongExec(t, b)
	if n := b.Server.CompleteWithoutExit("abc"); n != 1 {
		t.Fatalf("fabricated %d streams", n)
	}
	rest, _ := io.ReadAll(br)
	res.Body.Close()
	if !strings.HasSuffix(string(rest), "event: exit\ndata: {\"exit_code\":0}\n\n") {
		t.Errorf("fabricated ending: %q", rest)
	}
	res, br = startLongExec(t, b)
	if n := b.Server.CutExecStreams("abc"); n != 1 {
		t.Fatalf("cut %d streams", n)
	}
	rest, err := io.ReadAll(br)
	res.Body.Close()
	if err == nil || strings.Contains(string(rest), "event: exit") {
		t.Errorf("cut stream ended cleanly or with an exit: %v %q", err, rest)
	}
	// A replaced container ends the stream with an error event.
	res, br = startLongExec(t, b)
	if err := b.Server.ReplaceSandbox("abc"); err != nil {
		t.Fatal(err)
	}
	rest, _ = io.ReadAll(br)
	res.Body.Close()
	if !strings.Contains(string(rest), "event: error\ndata: {\"error\":\"Network connection lost.\",\"code\":\"exec_error\"}") {
		t.Errorf("replaced: %q", rest)
	}
}

func TestStableExecFakeCompletionOption(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable), bridgetest.WithConfig(func(c *localbridge.Config) {
		c.StableFakeCompletionAfter = 200 * time.Millisecond
	}))
	_, _, body := stableCall(t, b, "POST", "/v1/sandbox/abc/exec", `{"argv":["sh","-c","sleep 5; exit 7"]}`, nil)
	if _, _, end := outputs(t, parseStableSSE(t, body)); end.name != "exit" || end.data != `{"exit_code":0}` {
		t.Errorf("ending %+v", end)
	}
}

func TestStablePTYReplayAndSilentEnd(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	url := "ws" + strings.TrimPrefix(b.URL, "http") + "/v1/sandbox/abc/pty?cols=100&rows=30"
	hdr := http.Header{"Authorization": {"Bearer " + b.Token}}
	dial := func() *websocket.Conn {
		c, res, err := websocket.DefaultDialer.Dial(url, hdr)
		if err != nil {
			t.Fatalf("dial: %v %v", err, res)
		}
		return c
	}
	readUntil := func(c *websocket.Conn, want string) (got string, sawReady bool) {
		deadline := time.Now().Add(10 * time.Second)
		_ = c.SetReadDeadline(deadline)
		for !strings.Contains(got, want) {
			kind, data, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("read (have %q): %v", got, err)
			}
			if kind == websocket.TextMessage {
				if string(data) == `{"type":"ready"}` {
					sawReady = true
				}
				continue
			}
			got += string(data)
		}
		return got, sawReady
	}
	c := dial()
	_ = c.WriteMessage(websocket.BinaryMessage, []byte("echo mark-$((40+2))\n"))
	readUntil(c, "mark-42")
	c.Close()

	// A reconnect replays the buffer as one binary frame, before ready.
	c = dial()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	kind, data, err := c.ReadMessage()
	if err != nil || kind != websocket.BinaryMessage || !strings.Contains(string(data), "mark-42") {
		t.Fatalf("first frame: %v %d %q", err, kind, data)
	}
	if _, data, _ = c.ReadMessage(); string(data) != `{"type":"ready"}` {
		t.Fatalf("second frame %q, want ready", data)
	}
	_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"resize","cols":0,"rows":5}`))
	// the shell's own output (a prompt) may come first: the answer is the next text frame
	for {
		kind, data, err = c.ReadMessage()
		if err != nil || kind == websocket.TextMessage {
			break
		}
	}
	if err != nil || !strings.Contains(string(data), "Invalid dimensions") {
		t.Errorf("bad resize answer %q (%v)", data, err)
	}
	_ = c.WriteMessage(websocket.BinaryMessage, []byte("exit\n"))
	// The shell ends; nothing says so. The next input closes the socket with 1011. How long the
	// shell takes to end depends on the machine, so input is sent every 300 ms until the socket
	// closes (input before the end only reaches the ending shell's terminal).
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				readErr <- err
				return
			}
		}
	}()
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for err = nil; err == nil; {
		select {
		case err = <-readErr:
		case <-tick.C:
			_ = c.WriteMessage(websocket.BinaryMessage, []byte("x"))
		}
	}
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseInternalServerErr || ce.Text != "Internal error" {
		t.Errorf("after the shell ended: %v, want close 1011 Internal error", err)
	}
}
