package reliability

// Fuzz targets that exercise whole paths rather than single decoders (those have their own targets
// in client/, sanitize/, config/ and localbridge/seqlog): a follower fed an arbitrary log stream, a
// terminal connection fed arbitrary WebSocket frames, and the local bridge's file routes fed
// arbitrary paths. Seeds live in testdata/fuzz/<Target>/ and run in every `go test`.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"sandscope/client"
	"sandscope/localbridge"
)

// streamTransport answers a follower's requests from memory: the first log request gets the fuzzed
// body, later ones an empty stream, and the process's status says it exited 0.
type streamTransport struct {
	body []byte
	logs atomic.Int32
}

func (s *streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	p := req.URL.Path
	switch {
	case strings.HasSuffix(p, "/logs"):
		resp.Header.Set("Content-Type", "text/event-stream")
		var b []byte
		if s.logs.Add(1) == 1 {
			b = s.body
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
	case strings.HasSuffix(p, "/running"):
		resp.Header.Set("Content-Type", "application/json")
		resp.Body = io.NopCloser(strings.NewReader(`{"running":true}`))
	default:
		resp.Header.Set("Content-Type", "application/json")
		resp.Body = io.NopCloser(strings.NewReader(`{"id":"p1","pid":1,"command":["x"],"state":"exited","startedAt":"2026-11-29T10:00:00.000Z","exit":{"code":0,"timedOut":false}}`))
	}
	return resp, nil
}

// FuzzFollowStream: whatever a bridge sends as a log stream, the follower neither panics nor hangs,
// shows no more bytes than the stream could carry, and stamps every Data event with a cursor.
func FuzzFollowStream(f *testing.F) {
	f.Add([]byte("data: {\"type\":\"stdout\",\"cursor\":\"djEuY0RFLjE\",\"data\":\"aGVsbG8K\"}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		rt := &streamTransport{body: body}
		c, err := client.New("http://fuzz.invalid", client.WithHTTPClient(&http.Client{Transport: rt}), client.WithRequestTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		running := client.Process{ID: "p1", State: "running"}
		fl := c.Follow(ctx, "fuzz", "p1", client.FollowOptions{Status: &running, QuietAfter: 200 * time.Millisecond,
			MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, RetryBudget: 3})
		total := 0
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		for {
			select {
			case ev, ok := <-fl.Events():
				if !ok {
					if limit := len(body)*3/4 + 3; total > limit {
						t.Fatalf("delivered %d bytes from a %d-byte stream", total, len(body))
					}
					return
				}
				if ev.Kind == client.Data {
					total += len(ev.Data)
					if ev.Cursor == "" {
						t.Fatal("Data event without a cursor")
					}
				}
			case <-timer.C:
				t.Fatal("follower did not finish within 10s")
			}
		}
	})
}

// frames decodes fuzz input into WebSocket messages: [kind byte][length uint16][payload]… where an
// even kind is a text frame and an odd one binary.
func frames(in []byte) (out []struct {
	text bool
	p    []byte
}) {
	for len(in) >= 3 && len(out) < 64 {
		kind := in[0]
		n := int(binary.BigEndian.Uint16(in[1:3]))
		in = in[3:]
		n = min(n, len(in))
		out = append(out, struct {
			text bool
			p    []byte
		}{kind%2 == 0, in[:n]})
		in = in[n:]
	}
	return out
}

// FuzzTerminalFrames: whatever a bridge sends on a terminal socket, the connection neither panics
// nor hangs, shows no more bytes than the binary frames held, and stamps output with a cursor.
func FuzzTerminalFrames(f *testing.F) {
	hdr := []byte(`{"type":"chunk","cursor":"djEuY0RFLjE","byteLength":5}`)
	seed := append([]byte{0, 0, byte(len(hdr))}, hdr...)
	seed = append(seed, 1, 0, 5, 'h', 'e', 'l', 'l', 'o')
	f.Add(seed)
	var current atomic.Pointer[[]byte]
	var lookups atomic.Int32
	up := websocket.Upgrader{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sandbox/{sb}/terminals/{tid}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		status := `"exited","exit":{"code":0,"timedOut":false}`
		if lookups.Add(1) == 1 {
			status = `"running"`
		}
		fmt.Fprintf(w, `{"id":"t1","pid":1,"command":["sh"],"status":%s}`, status)
	})
	var connects atomic.Int32
	mux.HandleFunc("GET /v1/sandbox/{sb}/terminals/{tid}/connect", func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		_ = ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if connects.Add(1) == 1 {
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"ready"}`))
			for _, fr := range frames(*current.Load()) {
				mt := websocket.BinaryMessage
				if fr.text {
					mt = websocket.TextMessage
				}
				if ws.WriteMessage(mt, fr.p) != nil {
					return
				}
			}
		} else {
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"exit","exit":{"code":0,"timedOut":false}}`))
		}
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(1000, "Terminal output complete"), time.Now().Add(time.Second))
		_ = ws.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	f.Cleanup(srv.Close)
	f.Fuzz(func(t *testing.T, in []byte) {
		current.Store(&in)
		lookups.Store(0)
		connects.Store(0)
		binTotal := 0
		for _, fr := range frames(in) {
			if !fr.text {
				binTotal += len(fr.p)
			}
		}
		c, err := client.New(srv.URL, client.WithToken("t"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tc, err := c.ConnectTerminal(ctx, "fuzz", "t1", client.ConnectOptions{RetryBudget: 2, DialTimeout: 2 * time.Second,
			MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer tc.Close()
		total := 0
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		for {
			select {
			case ev, ok := <-tc.Events():
				if !ok {
					if total > binTotal {
						t.Fatalf("delivered %d bytes from %d bytes of binary frames", total, binTotal)
					}
					return
				}
				if ev.Kind == client.TermOutput {
					total += len(ev.Data)
					if ev.Cursor == "" {
						t.Fatal("output without a cursor")
					}
				}
			case <-timer.C:
				t.Fatal("terminal connection did not finish within 10s")
			}
		}
	})
}

// FuzzBridgeFilePath: no request path makes the local bridge's file routes read or write outside the
// sandbox's workspace, whatever the encoding, dot segments or symlinks in it.
func FuzzBridgeFilePath(f *testing.F) {
	for _, s := range []string{"workspace/a.txt", "../secret", "%2e%2e/secret", "linkdir/secret", "linkfile", "a/../../secret", "workspace/%2E%2E%2F..%2Fsecret", "dangling"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	const secret = "FUZZ-SECRET-OUTSIDE"
	root := f.TempDir()
	outside := f.TempDir()
	tok := "fuzz-token-0123456789abcdef"
	srv, err := localbridge.New(localbridge.Config{Root: root, Token: tok})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close(context.Background()) })
	const sb = "fuzzsandbox"
	h := srv.Handler()
	do := func(method, rawPath string, body []byte) *httptest.ResponseRecorder {
		u, err := url.Parse("http://127.0.0.1/v1/sandbox/" + sb + "/file/" + rawPath)
		if err != nil {
			return nil
		}
		req := httptest.NewRequest(method, "http://127.0.0.1/", bytes.NewReader(body))
		req.URL = u
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := do("PUT", "workspace/a.txt", []byte("inside")); rec == nil || rec.Code != 200 {
		f.Fatalf("set-up write failed: %+v", rec)
	}
	if rec := do("GET", "workspace/a.txt", nil); rec == nil || rec.Body.String() != "inside" {
		f.Fatalf("set-up read failed: %+v", rec)
	}
	ws := filepath.Join(root, sb, "workspace")
	must := func(err error) {
		if err != nil {
			f.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte(secret), 0o600))
	must(os.WriteFile(filepath.Join(root, "secret"), []byte(secret), 0o600))
	must(os.WriteFile(filepath.Join(root, sb, "secret"), []byte(secret), 0o600))
	must(os.Symlink(outside, filepath.Join(ws, "linkdir")))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "linkfile")))
	must(os.Symlink(filepath.Join(outside, "new"), filepath.Join(ws, "dangling")))
	listing := func() string {
		var names []string
		for _, d := range []string{outside, root, filepath.Join(root, sb)} {
			ents, _ := os.ReadDir(d)
			for _, e := range ents {
				names = append(names, d+"/"+e.Name())
			}
		}
		return strings.Join(names, "\n")
	}
	before := listing()
	f.Fuzz(func(t *testing.T, p string, write bool) {
		if write {
			do("PUT", p, []byte("FUZZ"))
			if after := listing(); after != before {
				t.Fatalf("PUT %q created something outside the workspace:\n%s", p, after)
			}
			return
		}
		rec := do("GET", p, nil)
		if rec != nil && strings.Contains(rec.Body.String(), secret) {
			t.Fatalf("GET %q read a file outside the workspace", p)
		}
	})
}
