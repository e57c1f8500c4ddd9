package localbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"sandscope/localbridge/bridgetest"
)

// Terminal routes over real HTTP against a started bridge.

type termResp struct {
	status int
	ctype  string
	body   string
}

func termCall(t *testing.T, b *bridgetest.Bridge, method, path, body string, hdr ...string) termResp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.Token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return termResp{res.StatusCode, res.Header.Get("Content-Type"), string(data)}
}

func termErrJSON(msg, code string) string {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
	return string(b)
}

type snapshotJSON struct {
	ID          string   `json:"id"`
	PID         int      `json:"pid"`
	Command     []string `json:"command"`
	Cwd         string   `json:"cwd"`
	Status      string   `json:"status"`
	Incarnation int      `json:"incarnation"`
	Exit        *struct {
		Code   int  `json:"code"`
		Signal *int `json:"signal"`
	} `json:"exit"`
}

func TestTerminalRoutesValidation(t *testing.T) {
	b := bridgetest.Start(t)
	base := "/v1/sandbox/termroutes/terminals"
	bad := func(body, msg string) {
		t.Helper()
		r := termCall(t, b, "POST", base, body, "Content-Type", "application/json")
		if r.status != 400 || r.body != termErrJSON(msg, "invalid_request") || r.ctype != "application/json" {
			t.Errorf("POST %s → %d %s %s, want 400 %q", body, r.status, r.ctype, r.body, msg)
		}
	}
	bad(`{`, "Invalid JSON body")
	bad(``, "Invalid JSON body")
	bad(`[1]`, "Request body must be an object")
	bad(`null`, "Request body must be an object")
	bad(`{}`, "argv must be a non-empty string array")
	bad(`{"argv":[]}`, "argv must be a non-empty string array")
	bad(`{"argv":"sh"}`, "argv must be a non-empty string array")
	bad(`{"argv":["sh",1]}`, "argv must be a non-empty string array")
	bad(`{"argv":["sh"],"cwd":5}`, "cwd must be a string")
	bad(`{"argv":["sh"],"env":[]}`, "env must be an object")
	bad(`{"argv":["sh"],"env":{"A":1}}`, "env values must be strings")
	bad(`{"argv":["sh"],"cols":0}`, "cols must be a positive integer")
	bad(`{"argv":["sh"],"cols":1.5}`, "cols must be a positive integer")
	bad(`{"argv":["sh"],"rows":"24"}`, "rows must be a positive integer")

	r := termCall(t, b, "POST", base, `{"argv":["sh"],"cwd":"/definitely/not/here"}`)
	if r.status != 502 || !strings.Contains(r.body, `"error":"terminal failed: `) || !strings.Contains(r.body, `"code":"exec_transport_error"`) {
		t.Errorf("nonexistent cwd → %d %s", r.status, r.body)
	}
	r = termCall(t, b, "POST", base, `{"argv":[""]}`)
	if r.status != 502 || !strings.Contains(r.body, "terminal failed: ") {
		t.Errorf("empty executable → %d %s", r.status, r.body)
	}

	// Per-terminal routes: bad ID, unknown ID, Hono 404s.
	for _, path := range []string{base + "/a..b", base + "/bad%20id", base + "/a..b/interrupt"} {
		method := "GET"
		if strings.HasSuffix(path, "interrupt") {
			method = "POST"
		}
		if r := termCall(t, b, method, path, ""); r.status != 400 || r.body != termErrJSON("Invalid terminal ID format", "invalid_request") {
			t.Errorf("%s %s → %d %s", method, path, r.status, r.body)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", base + "/nope"}, {"POST", base + "/nope/interrupt"}, {"POST", base + "/nope/terminate"},
		{"GET", base + "/nope/connect"},
	} {
		hdr := []string{}
		if strings.HasSuffix(tc.path, "connect") {
			hdr = []string{"Upgrade", "websocket"}
		}
		if r := termCall(t, b, tc.method, tc.path, "", hdr...); r.status != 404 || r.body != termErrJSON("Terminal not found", "not_found") {
			t.Errorf("%s %s → %d %s", tc.method, tc.path, r.status, r.body)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", base + "/"}, {"PUT", base}, {"DELETE", base + "/x"}, {"GET", base + "/x/interrupt"},
		{"POST", base + "/x/connect"}, {"GET", base + "/x/y/z"},
	} {
		if r := termCall(t, b, tc.method, tc.path, ""); r.status != 404 || r.body != "404 Not Found" {
			t.Errorf("%s %s → %d %q, want text 404", tc.method, tc.path, r.status, r.body)
		}
	}

	// A sandbox with no container: list is [], lookups are 404 JSON (before any other check).
	empty := "/v1/sandbox/nocontainer/terminals"
	if r := termCall(t, b, "GET", empty, ""); r.status != 200 || r.body != "[]" {
		t.Errorf("list without container → %d %s", r.status, r.body)
	}
	for _, p := range []string{empty + "/a..b", empty + "/x/connect"} {
		if r := termCall(t, b, "GET", p, ""); r.status != 404 || r.body != termErrJSON("Terminal not found", "not_found") {
			t.Errorf("GET %s without container → %d %s", p, r.status, r.body)
		}
	}
}

func TestTerminalRoutesLifecycle(t *testing.T) {
	b := bridgetest.Start(t)
	base := "/v1/sandbox/termlife/terminals"
	r := termCall(t, b, "POST", base, `{"argv":["sh"],"cols":90,"rows":20,"env":{"X":"y"}}`)
	if r.status != 200 || r.ctype != "application/json" {
		t.Fatalf("create → %d %s %s", r.status, r.ctype, r.body)
	}
	var snap snapshotJSON
	if err := json.Unmarshal([]byte(r.body), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.ID == "" || snap.PID <= 0 || snap.Status != "running" || snap.Cwd != "/workspace" ||
		snap.Incarnation != 1 || len(snap.Command) != 1 || snap.Command[0] != "sh" || snap.Exit != nil {
		t.Fatalf("snapshot %s", r.body)
	}
	if !strings.Contains(r.body, `"incarnation":1`) {
		t.Fatalf("snapshot lacks the incarnation: %s", r.body)
	}
	if r := termCall(t, b, "GET", base, ""); r.status != 200 || !strings.Contains(r.body, snap.ID) {
		t.Fatalf("list → %d %s", r.status, r.body)
	}
	if r := termCall(t, b, "GET", base+"/"+snap.ID, ""); r.status != 200 || !strings.Contains(r.body, `"status":"running"`) {
		t.Fatalf("get → %d %s", r.status, r.body)
	}
	// Connect checks, in order, before upgrading.
	conn := base + "/" + snap.ID + "/connect"
	if r := termCall(t, b, "GET", conn, ""); r.status != 400 || r.body != termErrJSON("WebSocket upgrade required", "invalid_request") {
		t.Fatalf("connect without upgrade → %d %s", r.status, r.body)
	}
	if r := termCall(t, b, "GET", conn+"?cols=0&rows=5", "", "Upgrade", "websocket"); r.status != 400 || r.body != termErrJSON("cols must be a positive integer", "invalid_request") {
		t.Fatalf("connect bad cols → %d %s", r.status, r.body)
	}
	if r := termCall(t, b, "GET", conn+"?rows=x", "", "Upgrade", "websocket"); r.status != 400 || r.body != termErrJSON("rows must be a positive integer", "invalid_request") {
		t.Fatalf("connect bad rows → %d %s", r.status, r.body)
	}
	// Without the token the upgrade is refused.
	wsURL := "ws" + strings.TrimPrefix(b.URL, "http") + conn
	if _, resp, err := websocket.DefaultDialer.Dial(wsURL, nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("unauthenticated upgrade: %v %v", err, resp)
	}
	ws := dialTerm(t, b, wsURL+"?cols=100&rows=30")
	readUntilText(t, ws, "# ", "$ ")
	termSend(t, ws, websocket.BinaryMessage, "echo got-$X-$(stty size)\n")
	readUntilText(t, ws, "got-y-30 100")

	// HTTP interrupt (no-op for an idle shell) and terminate.
	if r := termCall(t, b, "POST", base+"/"+snap.ID+"/interrupt", ""); r.status != 204 {
		t.Fatalf("interrupt → %d %s", r.status, r.body)
	}
	if r := termCall(t, b, "POST", base+"/"+snap.ID+"/terminate", ""); r.status != 204 {
		t.Fatalf("terminate → %d %s", r.status, r.body)
	}
	closeErr := readUntilClose(t, ws)
	var ce *websocket.CloseError
	if !errors.As(closeErr, &ce) || ce.Code != 1000 || ce.Text != "Terminal exited" {
		t.Fatalf("after terminate: %v", closeErr)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := termCall(t, b, "GET", base+"/"+snap.ID, "")
		if strings.Contains(r.body, `"status":"exited"`) {
			if err := json.Unmarshal([]byte(r.body), &snap); err != nil || snap.Exit == nil || snap.Exit.Code < 128 || snap.Exit.Signal == nil {
				t.Fatalf("exited snapshot %s", r.body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal never exited: %s", r.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Reconnecting to an exited terminal with a size fails; without one it replays and exits.
	ws2 := dialTerm(t, b, wsURL+"?cols=100&rows=30")
	if err := readUntilClose(t, ws2); !errors.As(err, &ce) || ce.Code != 1011 || ce.Text != "PTY is closed" {
		t.Fatalf("exited + size: %v", err)
	}
	ws3 := dialTerm(t, b, wsURL)
	if err := readUntilClose(t, ws3); !errors.As(err, &ce) || ce.Code != 1000 || ce.Text != "Terminal exited" {
		t.Fatalf("exited replay: %v", err)
	}
}

func TestTerminalRoutesReplaceAndStop(t *testing.T) {
	b := bridgetest.Start(t)
	for _, replace := range []bool{true, false} {
		sb := "termstop"
		if replace {
			sb = "termreplace"
		}
		base := "/v1/sandbox/" + sb + "/terminals"
		r := termCall(t, b, "POST", base, `{"argv":["sh","-c","echo up; sleep 60"]}`)
		var snap snapshotJSON
		if r.status != 200 || json.Unmarshal([]byte(r.body), &snap) != nil {
			t.Fatalf("create → %d %s", r.status, r.body)
		}
		ws := dialTerm(t, b, "ws"+strings.TrimPrefix(b.URL, "http")+base+"/"+snap.ID+"/connect")
		readUntilText(t, ws, "up")
		var err error
		if replace {
			err = b.Server.ReplaceSandbox(sb)
		} else {
			err = b.Server.StopSandbox(sb)
		}
		if err != nil {
			t.Fatal(err)
		}
		err = readUntilClose(t, ws)
		var ce *websocket.CloseError
		switch {
		case replace && (!errors.As(err, &ce) || ce.Code != 1012 || ce.Text != "Runtime replaced"):
			t.Fatalf("replace: %v", err)
		case !replace && (!errors.As(err, &ce) || ce.Code != websocket.CloseAbnormalClosure):
			t.Fatalf("stop: %v (want an abrupt drop)", err)
		}
		if r := termCall(t, b, "GET", base+"/"+snap.ID, ""); r.status != 404 || r.body != termErrJSON("Terminal not found", "not_found") {
			t.Fatalf("old terminal after %v → %d %s", replace, r.status, r.body)
		}
	}
}

func dialTerm(t *testing.T, b *bridgetest.Bridge, u string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + b.Token}})
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", u, err, resp)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func termSend(t *testing.T, ws *websocket.Conn, typ int, s string) {
	t.Helper()
	_ = ws.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if err := ws.WriteMessage(typ, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

// readUntilText reads frames until the binary output so far contains one of subs.
func readUntilText(t *testing.T, ws *websocket.Conn, subs ...string) {
	t.Helper()
	var out strings.Builder
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		mt, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for %q: %v (output %q)", subs, err, out.String())
		}
		if mt == websocket.BinaryMessage {
			out.Write(data)
		}
		for _, s := range subs {
			if strings.Contains(out.String(), s) {
				return
			}
		}
	}
}

func readUntilClose(t *testing.T, ws *websocket.Conn) error {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			return err
		}
	}
}
