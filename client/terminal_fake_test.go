package client

// A small in-test terminal server speaking the bridge's terminal protocol (BRIDGE.md A7) with
// fault hooks, so the connection's resume logic can be checked byte for byte without depending on
// the local bridge.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

type fakeChunk struct {
	seq  int
	data []byte
}

// connFault tells the fake what to do to one connection (by connection number, from 1).
type connFault struct {
	dropAfterChunks int    // close after sending this many chunks (0 = never)
	closeCode       int    // 0 = abrupt TCP close (1006)
	closeText       string // reason text
	badLength       bool   // announce a wrong byteLength for the first chunk
	noPong          bool   // ignore pings (a dead link that still holds the TCP connection)
	// stallAfterChunks > 0: after this many chunks, send nothing more (not even the exit) while the
	// socket stays open and pings are answered, like a middlebox that stopped relaying.
	stallAfterChunks int
}

type fakeTermServer struct {
	t     *testing.T
	srv   *httptest.Server
	token string

	mu          sync.Mutex
	cond        *sync.Cond
	log         []fakeChunk
	seq         int
	exited      *Exit
	exitSeq     int
	gone        bool // replaced: terminal lookups answer 404
	incarnation int
	conns       int
	faults      map[int]connFault
	queries     []string // raw query of each connect
	inputs      [][]byte
	controls    []string
	refuse      bool // handshake answers 503
	refuseWith  int  // handshake answers this status with a JSON error (0: off)
	lookups     int  // GET terminal calls
	dropGen     int  // bumping it cuts every open connection abruptly
}

// dropAll cuts every open WebSocket without a close frame.
func (f *fakeTermServer) dropAll() {
	f.mu.Lock()
	f.dropGen++
	f.cond.Broadcast()
	f.mu.Unlock()
}

func newFakeTermServer(t *testing.T) *fakeTermServer {
	f := &fakeTermServer{t: t, token: "s3cret-token", incarnation: 1, faults: map[int]connFault{}}
	f.cond = sync.NewCond(&f.mu)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.mu.Lock()
		f.gone = true
		f.cond.Broadcast()
		f.mu.Unlock()
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

func (f *fakeTermServer) client() *Client {
	c, _ := New(f.srv.URL, WithToken(f.token))
	return c
}

// output appends a chunk to the terminal's log.
func (f *fakeTermServer) output(p []byte) {
	f.mu.Lock()
	f.seq++
	f.log = append(f.log, fakeChunk{f.seq, append([]byte(nil), p...)})
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *fakeTermServer) exit(code int) {
	f.mu.Lock()
	f.seq++
	f.exitSeq = f.seq
	f.exited = &Exit{Code: code}
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *fakeTermServer) replace() {
	f.mu.Lock()
	f.gone = true
	f.incarnation++
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *fakeTermServer) setFault(conn int, fl connFault) {
	f.mu.Lock()
	f.faults[conn] = fl
	f.mu.Unlock()
}

func fakeCursor(seq int) string { return "c" + strconv.Itoa(seq) }

func (f *fakeTermServer) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeTermServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	token := f.token
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+token {
		f.writeJSON(w, 401, map[string]string{"error": "Unauthorized", "code": "unauthorized"})
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/sandbox/"), "/")
	f.mu.Lock()
	gone, inc, exited, refuse, refuseWith := f.gone, f.incarnation, f.exited, f.refuse, f.refuseWith
	if len(parts) == 3 && parts[1] == "terminals" {
		f.lookups++
	}
	f.mu.Unlock()
	switch {
	case len(parts) == 2 && parts[1] == "running":
		f.writeJSON(w, 200, map[string]any{"running": true, "incarnation": inc})
	case len(parts) == 3 && parts[1] == "terminals":
		if gone {
			f.writeJSON(w, 404, map[string]string{"error": "Terminal not found", "code": "not_found"})
			return
		}
		st := map[string]any{"id": parts[2], "pid": 7, "command": []string{"/bin/sh"}, "status": "running", "incarnation": inc}
		if exited != nil {
			st["status"], st["exit"] = "exited", exited
		}
		f.writeJSON(w, 200, st)
	case len(parts) == 4 && parts[3] == "connect":
		if gone {
			f.writeJSON(w, 404, map[string]string{"error": "Terminal not found", "code": "not_found"})
			return
		}
		if refuse {
			http.Error(w, "WebSocket upgrade failed", 503)
			return
		}
		if refuseWith != 0 {
			f.writeJSON(w, refuseWith, map[string]string{"error": "refused", "code": "invalid_request"})
			return
		}
		f.connect(w, r)
	default:
		http.Error(w, "404 Not Found", 404)
	}
}

func (f *fakeTermServer) connect(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	f.mu.Lock()
	f.conns++
	n := f.conns
	fl := f.faults[n]
	f.queries = append(f.queries, r.URL.RawQuery)
	exited := f.exited != nil
	gen := f.dropGen
	f.mu.Unlock()
	q := r.URL.Query()
	if exited && q.Get("cols") != "" && q.Get("rows") != "" {
		_ = ws.WriteJSON(map[string]any{"type": "error", "message": "PTY is closed"})
		_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1011, "PTY is closed"))
		return
	}
	next := 1
	if c := q.Get("cursor"); c != "" {
		s, err := strconv.Atoi(strings.TrimPrefix(c, "c"))
		if err != nil {
			_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1011, "Invalid byte log cursor"))
			return
		}
		next = s + 1
	}
	var wmu sync.Mutex
	if fl.noPong {
		ws.SetPingHandler(func(string) error { return nil })
	}
	ready := map[string]any{"type": "ready"}
	if c := q.Get("cursor"); c != "" {
		ready["cursor"] = c
	}
	wmu.Lock()
	_ = ws.WriteJSON(ready)
	wmu.Unlock()

	// reader: input echoes back as output, controls are recorded
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			mt, p, err := ws.ReadMessage()
			if err != nil {
				f.mu.Lock()
				f.cond.Broadcast()
				f.mu.Unlock()
				return
			}
			if mt == websocket.BinaryMessage {
				f.mu.Lock()
				f.inputs = append(f.inputs, p)
				f.mu.Unlock()
				f.output(p)
			} else {
				f.mu.Lock()
				f.controls = append(f.controls, string(p))
				f.mu.Unlock()
			}
		}
	}()
	sent := 0
	for {
		f.mu.Lock()
		for {
			closedReader := false
			select {
			case <-done:
				closedReader = true
			default:
			}
			if closedReader || f.gone || next <= f.seq || f.dropGen != gen {
				break
			}
			f.cond.Wait()
		}
		select {
		case <-done:
			f.mu.Unlock()
			return
		default:
		}
		if f.dropGen != gen {
			f.mu.Unlock()
			ws.UnderlyingConn().Close()
			return
		}
		if f.gone {
			f.mu.Unlock()
			_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1012, "Runtime replaced"))
			return
		}
		var ch *fakeChunk
		for i := range f.log {
			if f.log[i].seq == next {
				ch = &f.log[i]
			}
		}
		exitNow := ch == nil && f.exited != nil && next == f.exitSeq
		ex := f.exited
		f.mu.Unlock()
		if exitNow {
			wmu.Lock()
			_ = ws.WriteJSON(map[string]any{"type": "exit", "cursor": fakeCursor(next), "exit": ex})
			_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, "Terminal exited"))
			wmu.Unlock()
			time.Sleep(10 * time.Millisecond)
			return
		}
		if ch == nil {
			next++
			continue
		}
		if fl.stallAfterChunks > 0 && sent == fl.stallAfterChunks {
			<-done // the reader keeps answering pings until the client gives up on the socket
			return
		}
		if fl.dropAfterChunks > 0 && sent == fl.dropAfterChunks {
			if fl.closeCode == 0 {
				ws.UnderlyingConn().Close() // abnormal: no close frame
			} else {
				_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(fl.closeCode, fl.closeText))
			}
			return
		}
		n := len(ch.data)
		if fl.badLength && sent == 0 {
			n++
		}
		wmu.Lock()
		_ = ws.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"chunk","cursor":%q,"byteLength":%d}`, fakeCursor(ch.seq), n)))
		err := ws.WriteMessage(websocket.BinaryMessage, ch.data)
		wmu.Unlock()
		if err != nil {
			return
		}
		sent++
		next++
	}
}
