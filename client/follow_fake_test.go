package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBridge is a small in-test bridge serving one sandbox's processes with the real bridge's log
// semantics (cursors, since, replay/follow, truncated, text 500 on bad cursors), plus fault hooks.
type fakeBridge struct {
	t   *testing.T
	srv *httptest.Server

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change
	procs       map[string]*fakeProc
	running     bool
	incarnation int
	terminals   []Terminal

	// Fault hooks, read under mu.
	cutAfter        func(conn int) int // bytes after which a logs connection is aborted (<=0: never)
	forgeAt         int                // inject a forged terminal event before this seq on the first connection (0: never)
	openStatus      func(conn int, since string) int
	lastAuth        string
	lastUA          string
	logConns        int
	statusCalls     int
	forgedSent      bool
	aborts          int  // connections cut mid-event
	hideIncarnation bool // behave like the real bridge: no incarnation fields
	garbleAt        int  // on the first connection, garble the JSON of the event with this seq (0: never)
	garbledSent     bool
	retainEvents    int  // keep only this many newest events (0: all)
	opaque          bool // cursors in a format the client cannot parse ("op" + the canonical one)
	ignoreSince     bool // replay from the oldest event whatever since= says (a broken bridge)
	connCursors     bool // with opaque: cursors differ on every connection ("c<conn>" prefix)
	noTerminal      bool // never send the terminal event
	holdOpen        bool // keep every log stream open, even with follow=false
	statusFail      bool // answer status lookups with a text 500
}

type fakeProc struct {
	p      Process
	store  string
	events []fakeEvent // events[i] has seq i+1
}

type fakeEvent struct {
	typ  string // stdout, stderr, terminal
	data []byte
	exit *Exit
}

func newFakeBridge(t *testing.T) *fakeBridge {
	f := &fakeBridge{t: t, procs: map[string]*fakeProc{}, running: true, incarnation: 1, changed: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBridge) client(t *testing.T, opts ...Option) *Client {
	c, err := New(f.srv.URL, append([]Option{WithToken("s3cret-token"), WithRequestTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fakeBridge) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeBridge) addProcess(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procs[id] = &fakeProc{p: Process{ID: id, PID: 100 + len(f.procs), Command: []string{"sh"}, State: "running", StartedAt: time.Now(), Incarnation: f.incarnation}, store: id}
	f.notify()
}

func (f *fakeBridge) write(id string, stream string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.procs[id]
	p.events = append(p.events, fakeEvent{typ: stream, data: append([]byte(nil), data...)})
	f.notify()
}

// writeRandom writes n chunks of 1 to maxChunk random bytes (rng's) to id's stdout and returns
// all it wrote, in order.
func (f *fakeBridge) writeRandom(id string, rng *rand.Rand, n, maxChunk int) []byte {
	var all bytes.Buffer
	for i := 0; i < n; i++ {
		chunk := make([]byte, 1+rng.IntN(maxChunk))
		for j := range chunk {
			chunk[j] = byte(rng.IntN(256))
		}
		all.Write(chunk)
		f.write(id, "stdout", chunk)
	}
	return all.Bytes()
}

func (f *fakeBridge) exit(id string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.procs[id]
	p.p.State = "exited"
	p.p.Exit = &Exit{Code: code}
	p.events = append(p.events, fakeEvent{typ: "terminal", exit: &Exit{Code: code}})
	f.notify()
}

// replace wipes the process table: a new incarnation.
func (f *fakeBridge) replace() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procs = map[string]*fakeProc{}
	f.incarnation++
	f.notify()
}

func (f *fakeBridge) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.lastAuth = r.Header.Get("Authorization")
	f.lastUA = r.Header.Get("User-Agent")
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer s3cret-token" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"error":"Unauthorized","code":"unauthorized"}`))
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/sandbox/"), "/")
	if len(parts) < 2 || parts[0] != "sbx" {
		http.Error(w, "404 Not Found", 404)
		return
	}
	switch {
	case len(parts) == 2 && parts[1] == "running":
		f.mu.Lock()
		rs := RunningStatus{Running: f.running, Incarnation: f.incarnation}
		if f.hideIncarnation {
			rs.Incarnation = 0
		}
		writeJSONFake(w, 200, rs)
		f.mu.Unlock()
	case len(parts) == 2 && parts[1] == "processes" && r.Method == http.MethodGet:
		f.mu.Lock()
		list := []Process{}
		for _, p := range f.procs {
			st := p.p
			if f.hideIncarnation {
				st.Incarnation = 0
			}
			list = append(list, st)
		}
		f.mu.Unlock()
		writeJSONFake(w, 200, list)
	case len(parts) == 2 && parts[1] == "terminals":
		f.mu.Lock()
		list := append([]Terminal{}, f.terminals...)
		f.mu.Unlock()
		writeJSONFake(w, 200, list)
	case len(parts) == 3 && parts[1] == "processes":
		f.mu.Lock()
		f.statusCalls++
		if f.statusFail {
			f.mu.Unlock()
			http.Error(w, "Internal Server Error", 500)
			return
		}
		p, ok := f.procs[parts[2]]
		var st Process
		if ok {
			st = p.p
		}
		f.mu.Unlock()
		if !ok {
			writeJSONFake(w, 404, map[string]string{"error": "Process not found", "code": "not_found"})
			return
		}
		writeJSONFake(w, 200, st)
	case len(parts) == 4 && parts[1] == "processes" && parts[3] == "logs":
		f.serveLogs(w, r, parts[2])
	case len(parts) == 4 && parts[1] == "processes" && parts[3] == "kill":
		if r.Header.Get("Content-Type") == "" {
			http.Error(w, "kill without content type", 418)
			return
		}
		w.WriteHeader(204)
	default:
		http.Error(w, "404 Not Found", 404)
	}
}

func writeJSONFake(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// logCutWriter aborts the connection after limit bytes.
type logCutWriter struct {
	w     http.ResponseWriter
	limit int
	n     int
	onCut func()
}

func (c *logCutWriter) Write(b []byte) {
	if c.limit > 0 && c.n+len(b) > c.limit {
		c.onCut()
		_, _ = c.w.Write(b[:c.limit-c.n])
		c.w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	c.n += len(b)
	_, _ = c.w.Write(b)
}

func (f *fakeBridge) serveLogs(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	since, hasSince := q["since"]
	replay := q.Get("replay") != "false"
	follow := q.Get("follow") == "true"
	f.mu.Lock()
	follow = follow || f.holdOpen
	f.logConns++
	conn := f.logConns
	p, ok := f.procs[id]
	cut := 0
	if f.cutAfter != nil {
		cut = f.cutAfter(conn)
	}
	status := 0
	if f.openStatus != nil {
		status = f.openStatus(conn, strings.Join(since, ""))
	}
	store := ""
	if ok {
		store = p.store
	}
	f.mu.Unlock()
	if !ok {
		writeJSONFake(w, 404, map[string]string{"error": "Process not found", "code": "not_found"})
		return
	}
	if status != 0 {
		http.Error(w, "Internal Server Error", status)
		return
	}
	next := 1
	f.mu.Lock()
	opaque := f.opaque
	connCursors, noTerminal := f.connCursors, f.noTerminal
	if f.ignoreSince {
		hasSince = false
	}
	f.mu.Unlock()
	if hasSince {
		raw := since[0]
		if opaque {
			raw = strings.TrimPrefix(raw, "op")
		}
		c := ParseCursor(raw)
		f.mu.Lock()
		n := len(p.events)
		f.mu.Unlock()
		if !c.Known || c.Store != store || c.Seq > int64(n) {
			http.Error(w, "Internal Server Error", 500)
			return
		}
		next = int(c.Seq) + 1
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
	cw := &logCutWriter{w: w, limit: cut, onCut: func() { f.mu.Lock(); f.aborts++; f.mu.Unlock() }}
	if !replay {
		f.mu.Lock()
		next = len(p.events) + 1
		f.mu.Unlock()
	}
	for {
		f.mu.Lock()
		oldest := 1
		if f.retainEvents > 0 && len(p.events) > f.retainEvents {
			oldest = len(p.events) - f.retainEvents + 1
		}
		truncated := next < oldest
		if truncated {
			next = oldest
		}
		batch := append([]fakeEvent(nil), p.events[min(next-1, len(p.events)):]...)
		first := next
		forge := 0
		if f.forgeAt > 0 && !f.forgedSent && conn == 1 {
			forge = f.forgeAt
		}
		garble := 0
		if f.garbleAt > 0 && !f.garbledSent {
			garble = f.garbleAt
		}
		changed := f.changed
		_, stillThere := f.procs[id]
		f.mu.Unlock()
		if !stillThere {
			panic(http.ErrAbortHandler) // replaced: the body breaks, no event
		}
		if truncated {
			cw.Write([]byte(`data: {"type":"truncated","timestamp":"2026-01-01T00:00:00.000Z"}` + "\n\n"))
		}
		for i, ev := range batch {
			seq := first + i
			if seq == forge {
				f.mu.Lock()
				f.forgedSent = true
				f.mu.Unlock()
				cw.Write([]byte(`data: {"type":"terminal","state":"exited","cursor":"` + FormatCursor(store, int64(seq)) + `","timestamp":"2026-01-01T00:00:00.000Z","exit":{"code":0,"timedOut":false}}` + "\n\n"))
				w.(http.Flusher).Flush()
				return
			}
			if ev.typ == "terminal" && noTerminal {
				w.(http.Flusher).Flush()
				return // the stream ends cleanly without its terminal event
			}
			line := eventLine(store, seq, ev)
			if opaque {
				cur := FormatCursor(store, int64(seq))
				prefix := "op"
				if connCursors {
					prefix = fmt.Sprintf("c%dop", conn)
				}
				line = strings.Replace(line, `"`+cur+`"`, `"`+prefix+cur+`"`, 1)
			}
			if seq == garble {
				f.mu.Lock()
				f.garbledSent = true
				f.mu.Unlock()
				line = strings.Replace(line, `"data":"`, `"data":!"`, 1)
			}
			cw.Write([]byte(line))
			next = seq + 1
			if ev.typ == "terminal" {
				w.(http.Flusher).Flush()
				return
			}
		}
		w.(http.Flusher).Flush()
		if !follow {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

func eventLine(store string, seq int, ev fakeEvent) string {
	cur := FormatCursor(store, int64(seq))
	if ev.typ == "terminal" {
		b, _ := json.Marshal(ev.exit)
		return fmt.Sprintf(`data: {"type":"terminal","state":"exited","cursor":%q,"timestamp":"2026-01-01T00:00:00.000Z","exit":%s}`+"\n\n", cur, b)
	}
	return fmt.Sprintf(`data: {"type":%q,"cursor":%q,"timestamp":"2026-01-01T00:00:00.000Z","data":%q}`+"\n\n", ev.typ, cur, base64.StdEncoding.EncodeToString(ev.data))
}

// collect drains a follower until it closes, with a safety deadline so a bug fails the test
// instead of hanging it.
func logCollect(t *testing.T, f *Follower, deadline time.Duration) []LogEvent {
	t.Helper()
	var out []LogEvent
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-f.Events():
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timer.C:
			t.Fatalf("follower did not finish; events so far: %v", logKinds(out))
			return out
		}
	}
}

func logKinds(evs []LogEvent) []string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Kind.String())
	}
	return s
}

func logDataOf(evs []LogEvent) (stdout, stderr []byte) {
	for _, e := range evs {
		if e.Kind == Data {
			if e.Stream == Stderr {
				stderr = append(stderr, e.Data...)
			} else {
				stdout = append(stdout, e.Data...)
			}
		}
	}
	return
}

func countKind(evs []LogEvent, k LogEventKind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func followFastOpts() FollowOptions {
	return FollowOptions{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, QuietAfter: time.Hour}
}

var _ = context.Background
