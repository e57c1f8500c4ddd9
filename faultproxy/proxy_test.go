package faultproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

const waitTimeout = 20 * time.Second // bound on waits for things that must happen

// upstream is a small target: fixed bodies, an SSE stream paced by the test, and a WebSocket echo.
type upstream struct {
	srv   *httptest.Server
	hits  atomic.Int64
	step  chan struct{} // each receive lets /sse send one more event
	close chan [2]any   // /ws: tells the echo server to close with (code, reason)
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{step: make(chan struct{}), close: make(chan [2]any, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, strings.Repeat("0123456789", 100)) // 1000 bytes, Content-Length
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, "%s %s %s", r.URL.RawQuery, r.Header.Get("Authorization"), b)
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		for range 10 {
			_, _ = io.WriteString(w, strings.Repeat("x", 100))
			http.NewResponseController(w).Flush()
		}
	})
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		for i := 1; ; i++ {
			if r.URL.Query().Get("paced") != "" {
				select {
				case <-u.step:
				case <-r.Context().Done():
					return
				}
			} else if i > 5 {
				return
			}
			_, err := fmt.Fprintf(w, "data: {\"type\":\"stdout\",\"cursor\":\"c%d\",\"data\":\"aGkK\"}\n\n", i)
			if err != nil {
				return
			}
			http.NewResponseController(w).Flush()
		}
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("refuse") != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"Terminal not found","code":"not_found"}`)
			return
		}
		up := websocket.Upgrader{}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		go func() {
			cl := <-u.close
			_ = c.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(cl[0].(int), cl[1].(string)), time.Now().Add(time.Second))
		}()
		// Greeting: three messages, then echo.
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"ready"}`))
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"chunk","cursor":"c1","byteLength":3}`))
		_ = c.WriteMessage(websocket.BinaryMessage, []byte("abc"))
		for {
			mt, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, data); err != nil {
				return
			}
		}
	})
	u.srv = httptest.NewServer(mux)
	t.Cleanup(u.srv.Close)
	return u
}

func newPair(t *testing.T) (*upstream, *Proxy) {
	u := newUpstream(t)
	p := New(u.srv.URL)
	t.Cleanup(p.Close)
	return u, p
}

func get(t *testing.T, url string) (*http.Response, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

func TestTransparentHTTP(t *testing.T) {
	_, p := newPair(t)
	res, b, err := get(t, p.URL()+"/text")
	if err != nil || res.StatusCode != 200 || len(b) != 1000 {
		t.Fatalf("GET /text: %v %v %d", err, res, len(b))
	}
	req, _ := http.NewRequest("POST", p.URL()+"/echo?x=1", strings.NewReader("body!"))
	req.Header.Set("Authorization", "Bearer secret")
	res2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(res2.Body)
	res2.Body.Close()
	if res2.StatusCode != 201 || res2.Header.Get("X-Method") != "POST" || string(b2) != "x=1 Bearer secret body!" {
		t.Fatalf("POST /echo: %d %q", res2.StatusCode, b2)
	}
	st := p.Stats()
	if st.Requests != 2 || st.BytesDown != int64(1000+len(b2)) || st.Faults != 0 {
		t.Fatalf("stats %+v", st)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[1].Path != "/echo" || reqs[1].Query != "x=1" || reqs[1].Status != 201 {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestSSEIsNotBuffered(t *testing.T) {
	u, p := newPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.URL()+"/sse?paced=1", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	// Each event must arrive while the upstream is still waiting to send the next one.
	for i := 1; i <= 3; i++ {
		u.step <- struct{}{}
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, fmt.Sprintf(`"c%d"`, i)) {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		if blank, _ := br.ReadString('\n'); blank != "\n" {
			t.Fatalf("event %d not terminated: %q", i, blank)
		}
	}
}

func TestCutAfter(t *testing.T) {
	for _, path := range []string{"/text", "/chunked"} {
		t.Run(path, func(t *testing.T) {
			_, p := newPair(t)
			r := p.Add(Rule{Path: path, Times: 1, Fault: CutAfter(250)})
			res, b, err := get(t, p.URL()+path)
			if err == nil || res == nil || res.StatusCode != 200 || len(b) != 250 {
				t.Fatalf("want 250 bytes then an error: %v %d", err, len(b))
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("error %v is not an abrupt end", err)
			}
			if r.Hits() != 1 {
				t.Fatalf("hits %d", r.Hits())
			}
			// Used up: the next request is whole.
			if _, b, err := get(t, p.URL()+path); err != nil || len(b) != 1000 {
				t.Fatalf("after the rule: %v %d", err, len(b))
			}
		})
	}
}

func TestCutAfterZeroKeepsHeaders(t *testing.T) {
	_, p := newPair(t)
	p.Add(Rule{Path: "/sse", Fault: CutAfter(0)})
	res, b, err := get(t, p.URL()+"/sse")
	if err == nil || res == nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || len(b) != 0 {
		t.Fatalf("%v %v %q", err, res, b)
	}
}

func TestCutAfterRandom(t *testing.T) {
	_, p := newPair(t)
	p.Add(Rule{Path: "/text", Fault: CutAfterRandom(rand.New(rand.NewPCG(1, 2)), 999)})
	ref := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		want := ref.Int64N(1000)
		_, b, err := get(t, p.URL()+"/text")
		if err == nil || int64(len(b)) != want {
			t.Fatalf("got %d bytes (%v), want %d then a cut", len(b), err, want)
		}
	}
}

func TestCannedResponses(t *testing.T) {
	u, p := newPair(t)
	cases := []struct {
		fault  Fault
		status int
		ctype  string
		body   string
	}{
		{InternalError(), 500, "text/plain; charset=UTF-8", "Internal Server Error"},
		{PoolError("Failed to start container"), 502, "application/json", `{"error":"pool error: Failed to start container","code":"pool_error"}`},
		{CapacityExceeded(), 503, "application/json", ""},
		{Unauthorized(), 401, "application/json", `{"error":"Unauthorized","code":"unauthorized"}`},
	}
	for _, tc := range cases {
		r := p.Add(Rule{PathRegexp: regexp.MustCompile(`^/te.t$`), Times: 1, Fault: tc.fault})
		res, b, err := get(t, p.URL()+"/text")
		if err != nil || res.StatusCode != tc.status || res.Header.Get("Content-Type") != tc.ctype ||
			(tc.body != "" && string(b) != tc.body) {
			t.Fatalf("%v: %v %v %q", tc.fault, err, res, b)
		}
		if tc.status == 503 && !strings.Contains(string(b), `"code":"capacity_exceeded"`) {
			t.Fatalf("503 body %s", b)
		}
		if r.Hits() != 1 {
			t.Fatal("rule not hit")
		}
	}
	if u.hits.Load() != 0 {
		t.Fatalf("upstream contacted %d times for canned answers", u.hits.Load())
	}
}

func TestScopeAndTimes(t *testing.T) {
	_, p := newPair(t)
	r := p.Add(Rule{Path: "/text", Method: "GET", Times: 2, Fault: InternalError()})
	if _, b, _ := get(t, p.URL()+"/chunked"); len(b) != 1000 {
		t.Fatal("non-matching path affected")
	}
	for range 2 {
		if res, _, _ := get(t, p.URL()+"/text"); res.StatusCode != 500 {
			t.Fatal("rule not applied")
		}
	}
	if res, _, _ := get(t, p.URL()+"/text"); res.StatusCode != 200 || r.Hits() != 2 {
		t.Fatalf("rule applied beyond Times: %d hits", r.Hits())
	}
	// Until removed.
	r2 := p.Add(Rule{Path: "/text", Fault: InternalError()})
	for range 3 {
		if res, _, _ := get(t, p.URL()+"/text"); res.StatusCode != 500 {
			t.Fatal("open-ended rule not applied")
		}
	}
	r2.Remove()
	if res, _, _ := get(t, p.URL()+"/text"); res.StatusCode != 200 {
		t.Fatal("removed rule still applied")
	}
	if st := p.Stats(); st.Faults != 5 {
		t.Fatalf("faults %d", st.Faults)
	}
}

func TestStallUntilRemoved(t *testing.T) {
	u, p := newPair(t)
	r := p.Add(Rule{Path: "/text", Fault: Stall(0)})
	done := make(chan int, 1)
	go func() {
		_, b, _ := get(t, p.URL()+"/text")
		done <- len(b)
	}()
	waitFor(t, func() bool { return r.Hits() == 1 })
	select {
	case <-done:
		t.Fatal("stalled request completed")
	default:
	}
	if u.hits.Load() != 0 {
		t.Fatal("stalled request reached the upstream")
	}
	r.Remove()
	select {
	case n := <-done:
		if n != 1000 {
			t.Fatalf("after the stall got %d bytes", n)
		}
	case <-time.After(waitTimeout):
		t.Fatal("request still stalled after Remove")
	}
}

func TestStallAfterBytes(t *testing.T) {
	u, p := newPair(t)
	p.Add(Rule{Path: "/sse", Fault: StallAfter(10, 0)})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.URL()+"/sse", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	buf := make([]byte, 10)
	if _, err := io.ReadFull(res.Body, buf); err != nil || string(buf) != "data: {\"ty" {
		t.Fatalf("first bytes %q %v", buf, err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(res.Body)
		got <- b
	}()
	waitFor(t, func() bool { return u.hits.Load() == 1 })
	select {
	case b := <-got:
		t.Fatalf("stream continued during the stall: %q", b)
	case <-time.After(50 * time.Millisecond):
	}
	p.Clear()
	select {
	case b := <-got:
		if !strings.HasSuffix(string(b), "\"c5\",\"data\":\"aGkK\"}\n\n") {
			t.Fatalf("rest %q", b)
		}
	case <-time.After(waitTimeout):
		t.Fatal("stream still stalled after Clear")
	}
}

// A response that starts before its request body has ended is relayed at once, and the body still
// reaches the target whole: while the response is relayed the request body is the transport's to
// read. (Without full duplex, net/http's server drains and closes an unfinished request body when
// the response's header is written. Here that holds the header back until the body has come; with
// a body already sent, as on a stable /exec, the transport's last read for EOF could meet the closed
// body, and the transport then closed the upstream connection: under load the stable matrix's
// streams broke off now and then with "unexpected EOF", INTERRUPTED with no fault applied.)
func TestResponseBeforeRequestBodyEnds(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex() // the target's own server must leave the body alone too
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		b, err := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "data: got %q %v\n\n", b, err)
	}))
	t.Cleanup(target.Close)
	p := New(target.URL)
	t.Cleanup(p.Close)

	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /exec HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\n", strings.TrimPrefix(p.URL(), "http://")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the target's answer was held back until the request body ended: %v", err)
	}
	if _, err := io.WriteString(conn, "hello"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	b, err := io.ReadAll(res.Body)
	if want := "data: got \"hello\" <nil>\n\n"; err != nil || string(b) != want {
		t.Fatalf("body %q (%v), want %q and a clean end", b, err, want)
	}
}

func readSSE(t *testing.T, url string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var data []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	return data, sc.Err()
}

func TestGarbleSSE(t *testing.T) {
	_, p := newPair(t)
	p.Add(Rule{Path: "/sse", Fault: GarbleSSE(2)})
	data, err := readSSE(t, p.URL()+"/sse")
	if err != nil || len(data) != 5 {
		t.Fatalf("%d events, %v", len(data), err)
	}
	for i, d := range data {
		valid := json.Valid([]byte(d))
		if valid == (i == 1) {
			t.Fatalf("event %d valid=%v: %q", i+1, valid, d)
		}
	}
}

func TestForgedExit(t *testing.T) {
	u, p := newPair(t)
	p.Add(Rule{Path: "/sse", Fault: ForgedExit(2, 0)})
	// The upstream would keep streaming (paced); the proxy ends the stream cleanly after the forgery.
	go func() {
		for range 2 {
			select {
			case u.step <- struct{}{}:
			case <-time.After(waitTimeout):
			}
		}
	}()
	data, err := readSSE(t, p.URL()+"/sse?paced=1")
	if err != nil || len(data) != 3 {
		t.Fatalf("events %q err %v", data, err)
	}
	var ev struct {
		Type, State, Cursor string
		Exit                struct{ Code int }
	}
	if err := json.Unmarshal([]byte(data[2]), &ev); err != nil || ev.Type != "terminal" || ev.State != "exited" ||
		ev.Cursor != "c2" || ev.Exit.Code != 0 {
		t.Fatalf("forged event %q (%v)", data[2], err)
	}
	p.Clear()
	p.Add(Rule{Path: "/sse", Fault: InjectSSE(0, `{"type":"truncated"}`)})
	data, err = readSSE(t, p.URL()+"/sse")
	if err != nil || len(data) != 1 || data[0] != `{"type":"truncated"}` {
		t.Fatalf("inject at start: %q %v", data, err)
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

func dialWS(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, resp, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(url, "http"), nil)
	if err != nil {
		t.Fatalf("dial: %v %v", err, resp)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	return c
}

func readN(t *testing.T, c *websocket.Conn, n int) []string {
	t.Helper()
	var out []string
	for range n {
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		out = append(out, string(data))
	}
	return out
}

func closeOf(err error) (int, string) {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code, ce.Text
	}
	return 0, err.Error()
}

func TestWebSocketRelay(t *testing.T) {
	u, p := newPair(t)
	c := dialWS(t, p.URL()+"/ws")
	got := readN(t, c, 3)
	if got[2] != "abc" {
		t.Fatalf("greeting %q", got)
	}
	_ = c.WriteMessage(websocket.BinaryMessage, []byte{0, 1, 2})
	_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"resize"}`))
	mt, b, err := c.ReadMessage()
	if err != nil || mt != websocket.BinaryMessage || string(b) != "\x00\x01\x02" {
		t.Fatalf("echo: %d %q %v", mt, b, err)
	}
	if mt, b, _ := c.ReadMessage(); mt != websocket.TextMessage || string(b) != `{"type":"resize"}` {
		t.Fatalf("echo text: %d %q", mt, b)
	}
	// The server's close code and reason reach the client.
	u.close <- [2]any{1000, "Terminal exited"}
	_, _, err = c.ReadMessage()
	if code, reason := closeOf(err); code != 1000 || reason != "Terminal exited" {
		t.Fatalf("close %d %q", code, reason)
	}
	st := p.Stats()
	if st.WebSockets != 1 || st.MsgsDown != 5 || st.MsgsUp != 2 || st.BytesUp != 3+17 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWebSocketHandshakeRefusalPassesThrough(t *testing.T) {
	_, p := newPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, resp, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(p.URL(), "http")+"/ws?refuse=1", nil)
	if err == nil || resp == nil || resp.StatusCode != 404 {
		t.Fatalf("%v %v", err, resp)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != `{"error":"Terminal not found","code":"not_found"}` {
		t.Fatalf("body %q", b)
	}
	// Canned answers apply to handshakes too.
	p.Add(Rule{Path: "/ws", Times: 1, Fault: CapacityExceeded()})
	_, resp, err = websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(p.URL(), "http")+"/ws", nil)
	if err == nil || resp == nil || resp.StatusCode != 503 {
		t.Fatalf("canned handshake: %v %v", err, resp)
	}
}

func TestWebSocketDrop(t *testing.T) {
	for _, tc := range []struct {
		code   int
		reason string
	}{{1006, ""}, {1011, "Terminal send failed"}, {1012, "Runtime replaced"}, {1013, "Terminal client backpressure"}} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			_, p := newPair(t)
			p.Add(Rule{Path: "/ws", Times: 1, Fault: WSDrop(2, tc.code, tc.reason)})
			c := dialWS(t, p.URL()+"/ws")
			got := readN(t, c, 2)
			if got[1] != `{"type":"chunk","cursor":"c1","byteLength":3}` {
				t.Fatalf("got %q", got)
			}
			_, _, err := c.ReadMessage()
			if code, reason := closeOf(err); code != tc.code || reason != tc.reason && tc.code != 1006 {
				t.Fatalf("close %d %q, want %d %q", code, reason, tc.code, tc.reason)
			}
		})
	}
}

func TestWebSocketBadByteLengthAndStall(t *testing.T) {
	_, p := newPair(t)
	p.Add(Rule{Path: "/ws", Times: 1, Fault: WSBadByteLength(1, 5)})
	c := dialWS(t, p.URL()+"/ws")
	got := readN(t, c, 3)
	var m struct{ ByteLength int }
	if err := json.Unmarshal([]byte(got[1]), &m); err != nil || m.ByteLength != 8 || got[2] != "abc" {
		t.Fatalf("got %q", got)
	}

	r := p.Add(Rule{Path: "/ws", Times: 1, Fault: WSStall(1, 0)})
	c2 := dialWS(t, p.URL()+"/ws")
	readN(t, c2, 1)
	next := make(chan string, 2)
	go func() {
		for range 2 {
			_, b, err := c2.ReadMessage()
			if err != nil {
				return
			}
			next <- string(b)
		}
	}()
	select {
	case s := <-next:
		t.Fatalf("message %q forwarded during the stall", s)
	case <-time.After(50 * time.Millisecond):
	}
	r.Remove()
	for range 2 {
		select {
		case <-next:
		case <-time.After(waitTimeout):
			t.Fatal("stall not released")
		}
	}
}

func TestCloseEndsEverything(t *testing.T) {
	_, p := newPair(t)
	p.Add(Rule{Path: "/text", Fault: Stall(0)})
	errc := make(chan error, 1)
	go func() {
		_, _, err := get(t, p.URL()+"/text")
		errc <- err
	}()
	c := dialWS(t, p.URL()+"/ws")
	readN(t, c, 3)
	waitFor(t, func() bool { return len(p.Requests()) == 2 })
	p.Close()
	if _, _, err := c.ReadMessage(); err == nil {
		t.Fatal("WebSocket survived Close")
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("stalled request succeeded after Close")
		}
	case <-time.After(waitTimeout):
		t.Fatal("stalled request survived Close")
	}
}
