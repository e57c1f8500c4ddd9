package localbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// termHarness runs one incarnation's terminal table behind a minimal HTTP server that serves
// only the WebSocket endpoint, so the PTY and socket protocol are tested on their own.
type termHarness struct {
	t     *testing.T
	inc   *incarnation
	terms *terminalTable
	srv   *httptest.Server
}

func newTermHarness(t *testing.T) *termHarness {
	t.Helper()
	inc := &incarnation{number: 1, sandbox: "abc", workspace: t.TempDir()}
	inc.terms = newTerminalTable(inc)
	h := &termHarness{t: t, inc: inc, terms: inc.terms}
	h.srv = newSocketServer(inc)
	t.Cleanup(func() {
		inc.terms.shutdown(false)
		h.srv.Close()
	})
	return h
}

// newSocketServer serves only /connect/{id}?cursor=&cols=&rows= for inc's terminals.
func newSocketServer(inc *incarnation) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/connect/")
		term := inc.terms.get(id)
		if term == nil {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		cols, _ := positiveInt(q.Get("cols"))
		rows, _ := positiveInt(q.Get("rows"))
		serveTerminalSocket(w, r, term, q.Get("cursor"), cols, rows)
	}))
}

func (h *termHarness) create(argv ...string) *terminal {
	h.t.Helper()
	term, err := h.terms.create(termSpec{argv: argv})
	if err != nil {
		h.t.Fatalf("create %v: %v", argv, err)
	}
	return term
}

// wsClient is a test client that reads frames on its own goroutine, so tests can wait for
// conditions without blocking the socket.
type wsClient struct {
	t      *testing.T
	conn   *websocket.Conn
	frames chan wsFrame
}

type wsFrame struct {
	typ  int
	data []byte
	err  error // set on the last frame: the read error (close frame or drop)
}

func (h *termHarness) dial(id string, query url.Values) *wsClient {
	h.t.Helper()
	u := "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/connect/" + id
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, u, nil)
	if err != nil {
		h.t.Fatalf("dial: %v", err)
	}
	c := &wsClient{t: h.t, conn: conn, frames: make(chan wsFrame, 1<<16)}
	go func() {
		for {
			typ, data, err := conn.ReadMessage()
			if err != nil {
				c.frames <- wsFrame{err: err}
				close(c.frames)
				return
			}
			c.frames <- wsFrame{typ: typ, data: data}
		}
	}()
	h.t.Cleanup(func() { _ = conn.Close() })
	return c
}

// waitTimeout bounds waits for things that must happen; reaching it is a failure, not a measurement.
const waitTimeout = 20 * time.Second

// next returns the next frame; failing the test if none arrives in time.
func (c *wsClient) next() wsFrame {
	c.t.Helper()
	select {
	case f, ok := <-c.frames:
		if !ok {
			c.t.Fatal("connection already ended")
		}
		return f
	case <-time.After(waitTimeout):
		c.t.Fatal("timed out waiting for a frame")
	}
	return wsFrame{}
}

type ctrlMsg struct {
	Type       string          `json:"type"`
	Cursor     string          `json:"cursor"`
	ByteLength int             `json:"byteLength"`
	Message    string          `json:"message"`
	Code       string          `json:"code"`
	Exit       json.RawMessage `json:"exit"`
}

// stream collects what a connection delivered, checking the chunk/binary pairing as it goes.
type stream struct {
	ready     *ctrlMsg
	out       bytes.Buffer
	cursors   []string
	offsets   []int // output length after each chunk
	truncated int
	errors    []ctrlMsg
	exit      *ctrlMsg
	closeErr  error
}

// readUntil reads frames until stop returns true or the connection ends.
func (c *wsClient) readUntil(s *stream, stop func(*stream) bool) {
	c.t.Helper()
	for {
		if stop != nil && stop(s) {
			return
		}
		f := c.next()
		if f.err != nil {
			s.closeErr = f.err
			return
		}
		if f.typ != websocket.TextMessage {
			c.t.Fatalf("unexpected binary frame without a chunk header (%d bytes)", len(f.data))
		}
		var m ctrlMsg
		if err := json.Unmarshal(f.data, &m); err != nil {
			c.t.Fatalf("bad control JSON %q: %v", f.data, err)
		}
		switch m.Type {
		case "ready":
			if s.ready != nil {
				c.t.Fatal("second ready")
			}
			s.ready = &m
		case "chunk":
			b := c.next()
			if b.err != nil || b.typ != websocket.BinaryMessage {
				c.t.Fatalf("chunk header not followed by a binary frame: %+v", b)
			}
			if len(b.data) != m.ByteLength {
				c.t.Fatalf("byteLength %d but binary frame has %d bytes", m.ByteLength, len(b.data))
			}
			s.out.Write(b.data)
			s.cursors = append(s.cursors, m.Cursor)
			s.offsets = append(s.offsets, s.out.Len())
		case "truncated":
			s.truncated++
		case "error":
			s.errors = append(s.errors, m)
		case "exit":
			mm := m
			s.exit = &mm
		default:
			c.t.Fatalf("unknown server message %q", f.data)
		}
	}
}

func contains(sub string) func(*stream) bool {
	return func(s *stream) bool { return strings.Contains(s.out.String(), sub) }
}

func closeCode(err error) (int, string) {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code, ce.Text
	}
	return -1, ""
}

func (c *wsClient) send(typ int, data string) {
	c.t.Helper()
	_ = c.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
	if err := c.conn.WriteMessage(typ, []byte(data)); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func waitDone(t *testing.T, term *terminal) {
	t.Helper()
	select {
	case <-term.done:
	case <-time.After(waitTimeout):
		t.Fatalf("terminal %s did not complete", term.id)
	}
}

func TestTerminalEchoThroughShell(t *testing.T) {
	h := newTermHarness(t)
	term := h.create("sh")
	c := h.dial(term.id, nil)
	var s stream
	c.readUntil(&s, func(s *stream) bool { return s.ready != nil })
	if s.ready.Cursor != "" {
		t.Fatalf("ready without requested cursor carries %q", s.ready.Cursor)
	}
	c.readUntil(&s, func(s *stream) bool { return s.out.Len() > 0 }) // the prompt
	c.send(websocket.BinaryMessage, "echo hello-$((6*7))\n")
	c.readUntil(&s, contains("hello-42"))
	c.send(websocket.BinaryMessage, "exit 3\n")
	c.readUntil(&s, nil)
	if s.exit == nil {
		t.Fatalf("no exit message; output %q", s.out.String())
	}
	var exit termExit
	if err := json.Unmarshal(s.exit.Exit, &exit); err != nil || exit.Code != 3 || exit.Signal != nil {
		t.Fatalf("exit = %s (%v), want code 3", s.exit.Exit, err)
	}
	if code, reason := closeCode(s.closeErr); code != 1000 || reason != "Terminal exited" {
		t.Fatalf("close = %d %q, want 1000 Terminal exited", code, reason)
	}
	waitDone(t, term)
	snap := term.snapshot()
	if snap.Status != termExited || snap.Exit == nil || snap.Exit.Code != 3 {
		t.Fatalf("snapshot %+v", snap)
	}
	// The exit cursor is the one after the last chunk.
	if len(s.cursors) == 0 || s.exit.Cursor == s.cursors[len(s.cursors)-1] {
		t.Fatalf("exit cursor %q must follow the chunks' cursors", s.exit.Cursor)
	}
}

func TestTerminalEnvironmentAndCwd(t *testing.T) {
	h := newTermHarness(t)
	term, err := h.terms.create(termSpec{
		argv: []string{"sh", "-c", `printf '%s|%s|%s\n' "$TERM" "$FOO" "$(pwd)"`},
		env:  map[string]string{"FOO": "bar", "TERM": "dumb"},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, term)
	c := h.dial(term.id, nil)
	var s stream
	c.readUntil(&s, nil)
	want := "xterm-256color|bar|" + h.inc.workspace
	if h.inc.isolation().Namespaces {
		want = "xterm-256color|bar|/workspace" // the shell sees the sandbox's own path
	}
	if !strings.Contains(s.out.String(), want) {
		t.Fatalf("output %q lacks %q", s.out.String(), want)
	}
	if term.snapshot().Cwd != "/workspace" {
		t.Fatalf("cwd shown as %q", term.snapshot().Cwd)
	}
	if _, err := h.terms.create(termSpec{argv: []string{"sh"}, cwd: "/nonexistent-dir-xyz"}); err == nil {
		t.Fatal("nonexistent cwd accepted")
	}
	if _, err := h.terms.create(termSpec{argv: []string{""}}); err == nil {
		t.Fatal("empty executable accepted")
	}
}

func TestTerminalCursorResume(t *testing.T) {
	h := newTermHarness(t)
	// Output in several separate chunks.
	term := h.create("sh", "-c", "for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.05; done")
	waitDone(t, term)
	c := h.dial(term.id, nil)
	var full stream
	c.readUntil(&full, nil)
	if len(full.cursors) < 2 {
		t.Fatalf("want several chunks, got %d", len(full.cursors))
	}
	if code, _ := closeCode(full.closeErr); code != 1000 {
		t.Fatalf("close %v", full.closeErr)
	}
	for i, cur := range full.cursors[:len(full.cursors)-1] {
		c2 := h.dial(term.id, url.Values{"cursor": {cur}})
		var part stream
		c2.readUntil(&part, nil)
		if part.ready == nil || part.ready.Cursor != cur {
			t.Fatalf("ready must echo the cursor: %+v", part.ready)
		}
		want := full.out.Bytes()[full.offsets[i]:]
		if !bytes.Equal(part.out.Bytes(), want) {
			t.Fatalf("resume after chunk %d: got %q want %q", i, part.out.Bytes(), want)
		}
		if part.exit == nil {
			t.Fatal("resumed stream lacks the exit message")
		}
	}
	// Resuming from the exit cursor ends without an exit message.
	c3 := h.dial(term.id, url.Values{"cursor": {full.exit.Cursor}})
	var tail stream
	c3.readUntil(&tail, nil)
	if tail.out.Len() != 0 || tail.exit != nil {
		t.Fatalf("after exit cursor got output %q exit %v", tail.out.String(), tail.exit)
	}
	if code, reason := closeCode(tail.closeErr); code != 1000 || reason != "Terminal output complete" {
		t.Fatalf("close = %d %q, want 1000 Terminal output complete", code, reason)
	}
}

func TestTerminalBadCursorAndClosedPTY(t *testing.T) {
	h := newTermHarness(t)
	term := h.create("sh", "-c", "echo done")
	waitDone(t, term)
	other := h.create("sh", "-c", "echo other")
	waitDone(t, other)
	cases := []struct {
		name   string
		query  url.Values
		reason string
	}{
		{"garbage", url.Values{"cursor": {"not*a*cursor"}}, "Invalid byte log cursor"},
		{"other store", url.Values{"cursor": {other.log.Cursor(1)}}, "Byte log cursor belongs to another run or store"},
		{"future", url.Values{"cursor": {term.log.Cursor(999)}}, "Byte log cursor is from the future"},
		{"closed pty", url.Values{"cols": {"100"}, "rows": {"30"}}, "PTY is closed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := h.dial(term.id, tc.query)
			var s stream
			c.readUntil(&s, nil)
			if s.ready != nil || len(s.errors) != 1 || s.errors[0].Message != tc.reason {
				t.Fatalf("ready=%v errors=%+v", s.ready, s.errors)
			}
			if code, reason := closeCode(s.closeErr); code != 1011 || reason != tc.reason {
				t.Fatalf("close = %d %q, want 1011 %q", code, reason, tc.reason)
			}
		})
	}
}

func TestTerminalTruncatedAfterRetention(t *testing.T) {
	h := newTermHarness(t)
	// 400 KiB of output in a finished terminal: the log keeps only the last 256 KiB.
	term := h.create("sh", "-c", "head -c 409600 /dev/zero | tr '\\0' x; echo; echo END")
	waitDone(t, term)
	c := h.dial(term.id, nil)
	var s stream
	c.readUntil(&s, nil)
	if s.truncated != 1 {
		t.Fatalf("truncated %d times, want 1", s.truncated)
	}
	if s.out.Len() > termLogBytes || s.out.Len() < termLogBytes-termReadBuf {
		t.Fatalf("replayed %d bytes, want about %d", s.out.Len(), termLogBytes)
	}
	if !strings.HasSuffix(strings.TrimRight(s.out.String(), "\r\n"), "END") {
		t.Fatal("replay lacks the tail")
	}
	// A cursor from the evicted head resumes with truncated and the retained window.
	c2 := h.dial(term.id, url.Values{"cursor": {term.log.Cursor(1)}})
	var s2 stream
	c2.readUntil(&s2, nil)
	if s2.truncated != 1 || !bytes.Equal(s2.out.Bytes(), s.out.Bytes()) {
		t.Fatalf("expired cursor: truncated=%d, %d bytes vs %d", s2.truncated, s2.out.Len(), s.out.Len())
	}
}

func TestTerminalResize(t *testing.T) {
	h := newTermHarness(t)
	term := h.create("sh")
	c := h.dial(term.id, url.Values{"cols": {"101"}, "rows": {"33"}})
	var s stream
	c.readUntil(&s, func(s *stream) bool { return s.out.Len() > 0 }) // the prompt
	c.send(websocket.BinaryMessage, "echo size=$(stty size)\n")
	c.readUntil(&s, contains("size=33 101"))
	c.send(websocket.TextMessage, `{"type":"resize","cols":120,"rows":40}`)
	c.send(websocket.BinaryMessage, "echo size=$(stty size)\n")
	c.readUntil(&s, contains("size=40 120"))
	// Invalid control messages get an error and the socket stays open.
	for _, bad := range []string{`{"type":"resize","cols":0,"rows":10}`, `nonsense`, `{"type":"dance"}`, `{"type":"resize","cols":10}`} {
		c.send(websocket.TextMessage, bad)
		n := len(s.errors)
		c.readUntil(&s, func(s *stream) bool { return len(s.errors) > n })
		if s.errors[n].Message != "Invalid control message" {
			t.Fatalf("%s → %+v", bad, s.errors[n])
		}
	}
	c.send(websocket.BinaryMessage, "echo still-$((1+1))\n")
	c.readUntil(&s, contains("still-2"))
}

func TestTerminalInterruptAndTerminate(t *testing.T) {
	h := newTermHarness(t)
	// A foreground job that ignores nothing: SIGINT to the tree ends it; the shell keeps running.
	term := h.create("sh", "-c", "trap 'echo got-int; exit 5' INT; echo armed; while :; do sleep 0.05; done")
	c := h.dial(term.id, nil)
	var s stream
	c.readUntil(&s, contains("armed"))
	c.send(websocket.TextMessage, `{"type":"interrupt"}`)
	c.readUntil(&s, nil)
	if !strings.Contains(s.out.String(), "got-int") || s.exit == nil {
		t.Fatalf("interrupt: output %q exit %v", s.out.String(), s.exit)
	}
	var exit termExit
	_ = json.Unmarshal(s.exit.Exit, &exit)
	if exit.Code != 5 {
		t.Fatalf("exit %+v", exit)
	}

	// SIGTERM ignored: terminate escalates to SIGKILL.
	stubborn := h.create("sh", "-c", "trap '' TERM; echo armed; while :; do sleep 0.05; done")
	c2 := h.dial(stubborn.id, nil)
	var s2 stream
	c2.readUntil(&s2, contains("armed"))
	c2.send(websocket.TextMessage, `{"type":"terminate"}`)
	c2.readUntil(&s2, nil)
	if s2.exit == nil {
		t.Fatal("no exit after terminate")
	}
	_ = json.Unmarshal(s2.exit.Exit, &exit)
	if exit.Code != 137 || exit.Signal == nil || *exit.Signal != 9 {
		t.Fatalf("terminate exit %s, want 137/9", s2.exit.Exit)
	}

	// Plain terminate: SIGTERM is enough.
	plain := h.create("sleep", "60")
	if err := plain.terminate(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, plain)
	if e := plain.snapshot().Exit; e == nil || e.Code != 143 || e.Signal == nil || *e.Signal != 15 {
		t.Fatalf("terminate exit %+v", e)
	}
}

func TestTerminalRunningWhileDescendantHoldsPTY(t *testing.T) {
	h := newTermHarness(t)
	// The root exits at once; a background child keeps the PTY open until the test lets it go.
	// The background child is a program of its own, so the root is the only process whose command
	// line is the root's.
	rootScript := "trap '' HUP; sh -c \"trap '' HUP; while [ ! -e release ]; do sleep 0.02; done; echo late\" & echo early"
	term := h.create("sh", "-c", rootScript)
	c := h.dial(term.id, nil)
	var s stream
	c.readUntil(&s, contains("early"))
	// Root gone (reaped), PTY still held: still running. The root runs under the sandbox
	// supervisor (term.pid); it is gone when no process of the tree has its command line.
	waitFor(t, func() bool {
		for _, pid := range treePIDs(term.pid) {
			if readFileString(fmt.Sprintf("/proc/%d/cmdline", pid)) == "sh\x00-c\x00"+rootScript+"\x00" {
				return false
			}
		}
		return true
	})
	if st := term.snapshot().Status; st != termRunning {
		t.Fatalf("status %s while a descendant holds the PTY", st)
	}
	if err := os.WriteFile(filepath.Join(h.inc.workspace, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.readUntil(&s, nil)
	if !strings.Contains(s.out.String(), "late") || s.exit == nil {
		t.Fatalf("output %q exit %v", s.out.String(), s.exit)
	}
}

func TestTerminalTwoClients(t *testing.T) {
	h := newTermHarness(t)
	term := h.create("sh")
	a := h.dial(term.id, nil)
	b := h.dial(term.id, nil)
	var sa, sb stream
	// Wait for the prompt: input typed before the shell set up its terminal may be flushed.
	hasOutput := func(s *stream) bool { return s.out.Len() > 0 }
	a.readUntil(&sa, hasOutput)
	b.readUntil(&sb, hasOutput)
	a.send(websocket.BinaryMessage, "echo from-a-$((2*2))\n")
	a.readUntil(&sa, contains("from-a-4"))
	b.send(websocket.BinaryMessage, "echo from-b-$((3*3))\n")
	a.readUntil(&sa, contains("from-b-9"))
	b.readUntil(&sb, contains("from-b-9"))
	for _, s := range []*stream{&sa, &sb} {
		if !strings.Contains(s.out.String(), "from-a-4") {
			t.Fatalf("client missed the other's output: %q", s.out.String())
		}
	}
	if _, total := h.terms.counts(); total != 1 {
		t.Fatalf("counts total %d", total)
	}
}

func TestTerminalShutdownReplacedAndStopped(t *testing.T) {
	for _, replaced := range []bool{true, false} {
		t.Run(fmt.Sprintf("replaced=%v", replaced), func(t *testing.T) {
			h := newTermHarness(t)
			term := h.create("sh", "-c", "echo up; sleep 60")
			c := h.dial(term.id, nil)
			var s stream
			c.readUntil(&s, contains("up"))
			h.terms.shutdown(replaced)
			c.readUntil(&s, nil)
			code, reason := closeCode(s.closeErr)
			if replaced && (code != 1012 || reason != "Runtime replaced") {
				t.Fatalf("close = %d %q (%v), want 1012", code, reason, s.closeErr)
			}
			// gorilla reports a TCP close without a close frame as 1006.
			if !replaced && code != websocket.CloseAbnormalClosure {
				t.Fatalf("stop gave %d %q (%v); want an abrupt drop", code, reason, s.closeErr)
			}
			waitDone(t, term)
			if h.terms.get(term.id) != nil {
				t.Fatal("terminal still visible after shutdown")
			}
			if running, _ := h.terms.counts(); running != 0 {
				t.Fatalf("%d running after shutdown", running)
			}
		})
	}
}

func TestTerminalBackpressure(t *testing.T) {
	old := termSendQueueLimit
	termSendQueueLimit = 64 << 10
	t.Cleanup(func() { termSendQueueLimit = old })
	h := newTermHarness(t)
	before := termBackpressureCount.Load()
	// Output as fast as the PTY goes, until the test ends.
	term := h.create("yes", "backpressure-backpressure-backpressure")
	u := "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/connect/" + term.id
	// A small receive buffer so the server's writes block soon.
	dialer := websocket.Dialer{NetDialContext: (&net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}).DialContext}
	conn, _, err := dialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Do not read until the server gave up on this client.
	deadline := time.Now().Add(waitTimeout)
	for termBackpressureCount.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("server never hit backpressure")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		if _, _, err = conn.ReadMessage(); err != nil {
			break
		}
	}
	if code, reason := closeCode(err); code != 1013 || reason != "Terminal client backpressure" {
		t.Fatalf("close = %d %q (%v), want 1013", code, reason, err)
	}
	if st := term.snapshot().Status; st != termRunning {
		t.Fatalf("the terminal must outlive a slow client; status %s", st)
	}
}

func TestTerminalRetention(t *testing.T) {
	h := newTermHarness(t)
	var first *terminal
	for i := range maxRetainedTerminals + 3 {
		term := h.create("true")
		if i == 0 {
			first = term
		}
		waitDone(t, term)
	}
	if _, total := h.terms.counts(); total != maxRetainedTerminals {
		t.Fatalf("%d terminals retained, want %d", total, maxRetainedTerminals)
	}
	if h.terms.get(first.id) != nil {
		t.Fatal("oldest finished terminal still retained")
	}
}

func FuzzParseControl(f *testing.F) {
	for _, s := range []string{`{"type":"resize","cols":80,"rows":24}`, `{"type":"interrupt"}`, `{"type":"terminate"}`,
		`{"type":"resize","cols":"80","rows":24}`, `{"type":"resize","cols":1e3,"rows":2.0}`, `nope`, `{}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctl, ok := parseControl(data)
		if !ok {
			return
		}
		switch ctl.kind {
		case "resize":
			if ctl.cols < 1 || ctl.rows < 1 || ctl.cols > 65535 || ctl.rows > 65535 {
				t.Fatalf("accepted size %dx%d from %q", ctl.cols, ctl.rows, data)
			}
		case "interrupt", "terminate":
		default:
			t.Fatalf("accepted kind %q from %q", ctl.kind, data)
		}
	})
}

func FuzzParseTerminalSpec(f *testing.F) {
	for _, s := range []string{`{"argv":["sh"],"cols":80,"rows":24,"env":{"A":"b"},"cwd":"/tmp"}`, `{`, `null`, `{"argv":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, msg := parseTerminalSpec(data)
		if msg == "" && len(spec.argv) == 0 {
			t.Fatalf("accepted a spec without argv from %q", data)
		}
	})
}

func TestParseControl(t *testing.T) {
	for in, want := range map[string]bool{
		`{"type":"resize","cols":80,"rows":24}`:    true,
		`{"type":"resize","cols":80.0,"rows":24}`:  true,
		`{"type":"resize","cols":"80","rows":24}`:  false,
		`{"type":"resize","cols":80}`:              false,
		`{"type":"resize","cols":0,"rows":24}`:     false,
		`{"type":"resize","cols":-1,"rows":24}`:    false,
		`{"type":"resize","cols":70000,"rows":24}`: false,
		`{"type":"interrupt"}`:                     true,
		`{"type":"terminate","extra":1}`:           true,
		`{"type":"INTERRUPT"}`:                     false,
		`"interrupt"`:                              false,
		``:                                         false,
	} {
		if _, ok := parseControl([]byte(in)); ok != want {
			t.Errorf("parseControl(%s) = %v, want %v", in, ok, want)
		}
	}
}

// Connections opened while output is flowing replay what exists and then get live chunks; the
// chunk sequence must have no gap and no repeat across that hand-over.
func TestTerminalReplayToLiveHandoff(t *testing.T) {
	h := newTermHarness(t)
	term := h.create("sh", "-c", "i=0; while [ $i -lt 4000 ]; do i=$((i+1)); echo n-$i; done")
	a := h.dial(term.id, nil)
	var sa stream
	a.readUntil(&sa, contains("n-300\r\n"))
	// Several late joiners, each starting from a different point, while output continues.
	var late []*wsClient
	for i := 0; i < 3; i++ {
		q := url.Values{}
		if i > 0 && len(sa.cursors) > i {
			q.Set("cursor", sa.cursors[i])
		}
		late = append(late, h.dial(term.id, q))
	}
	a.readUntil(&sa, nil)
	checkContiguous(t, term, &sa)
	for i, c := range late {
		var s stream
		c.readUntil(&s, nil)
		if s.truncated != 0 || s.exit == nil {
			t.Fatalf("joiner %d: truncated %d exit %v", i, s.truncated, s.exit)
		}
		checkContiguous(t, term, &s)
		if !bytes.HasSuffix(sa.out.Bytes(), s.out.Bytes()) {
			t.Fatalf("joiner %d got bytes that are not a suffix of the full output", i)
		}
		if i == 0 && !bytes.Equal(s.out.Bytes(), sa.out.Bytes()) {
			t.Fatal("joiner without cursor did not get the full output")
		}
	}
	if !strings.Contains(sa.out.String(), "n-4000\r\n") {
		t.Fatal("output incomplete")
	}
}

// checkContiguous verifies that the chunk cursors of s count up by one, and the exit follows.
func checkContiguous(t *testing.T, term *terminal, s *stream) {
	t.Helper()
	var prev uint64
	for i, cur := range append(append([]string(nil), s.cursors...), s.exit.Cursor) {
		seq, err := term.log.ParseCursor(cur)
		if err != nil {
			t.Fatalf("cursor %d: %v", i, err)
		}
		if prev != 0 && seq != prev+1 {
			t.Fatalf("cursor %d: seq %d after %d", i, seq, prev)
		}
		prev = seq
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never became true")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readFileString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
