package localbridge

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"sandscope/localbridge/seqlog"
)

// stableClearOnce is the PROMPT_COMMAND new stable shells start with: clear the screen once.
const stableClearOnce = `printf '\033[H\033[2J'; unset PROMPT_COMMAND`

// jsNumberParam parses a query value as JavaScript's Number() does for the common spellings
// (whitespace trimmed, "" is 0, decimal, exponent, 0x/0o/0b, Infinity); ok is false for NaN.
func jsNumberParam(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, true
	}
	for _, p := range []struct {
		prefix string
		base   int
	}{{"0x", 16}, {"0X", 16}, {"0o", 8}, {"0O", 8}, {"0b", 2}, {"0B", 2}} {
		if rest, ok := strings.CutPrefix(t, p.prefix); ok {
			n, err := strconv.ParseUint(rest, p.base, 64)
			return float64(n), err == nil
		}
	}
	switch t {
	case "Infinity", "+Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	for _, c := range t {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	return f, err == nil
}

// handleStablePTY: GET /pty (already allocated). Checks in the bridge's order, then attaches to
// the session's one PTY (created on first use) over a WebSocket.
func (s *Server) handleStablePTY(w http.ResponseWriter, r *http.Request, inc *incarnation) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeError(w, http.StatusBadRequest, "WebSocket upgrade required", "invalid_request")
		return
	}
	q := r.URL.Query()
	size := [2]float64{80, 24}
	for i, name := range []string{"cols", "rows"} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		n, ok := jsNumberParam(v)
		if !ok {
			writeError(w, http.StatusBadRequest, "cols and rows must be valid numbers", "invalid_request")
			return
		}
		size[i] = n
	}
	sessionID := r.Header.Get("Session-Id")
	if sessionID == "" {
		sessionID = q.Get("session")
	}
	if sessionID != "" && !validStableSessionID(sessionID) {
		writeError(w, http.StatusBadRequest, "Invalid session ID format", "invalid_request")
		return
	}
	shell := q.Get("shell")
	if shell == "" {
		shell = "bash"
	}
	cols, rows := dim(size[0], termDefaultCols), dim(size[1], termDefaultRows)

	rt := inc.stableState()
	key := sessionID
	if key == "" {
		key = "sandbox-" + rt.uuid
	}
	var createErr error
	rt.mu.Lock()
	term := rt.ptys[key]
	rt.mu.Unlock()
	if term == nil {
		spec := termSpec{argv: []string{shell}, cols: cols, rows: rows,
			env: map[string]string{"PROMPT_COMMAND": stableClearOnce, "SANDSCOPE_WORKSPACE": inc.workspace}}
		if sessionID != "" {
			if sess, err := s.stableSession(inc, sessionID, "", nil); err == nil {
				if b, err := os.ReadFile(filepath.Join(sess.dir, "cwd")); err == nil {
					if rel, err := filepath.Rel(inc.workspace, strings.TrimSpace(string(b))); err == nil && !strings.HasPrefix(rel, "..") {
						spec.cwd = filepath.Join("/workspace", rel)
					}
				}
			}
		}
		t, err := inc.terms.create(spec)
		if err != nil {
			createErr = err
		} else {
			rt.mu.Lock()
			if existing := rt.ptys[key]; existing != nil {
				rt.mu.Unlock()
				_ = t.terminate()
				t = existing
			} else {
				rt.ptys[key] = t
				rt.mu.Unlock()
			}
			term = t
		}
	}
	ws, err := termUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	_ = ws.NetConn().SetDeadline(time.Time{})
	ws.SetReadLimit(termReadLimit)
	if createErr != nil {
		msg, _ := json.Marshal(map[string]string{"type": "error", "message": "Failed to create PTY: " + createErr.Error()})
		_ = ws.WriteMessage(websocket.TextMessage, msg)
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "Failed to create PTY"), time.Now().Add(time.Second))
		_ = ws.Close()
		return
	}
	(&stablePTYConn{term: term, ws: ws}).run()
}

// dim is a requested dimension as the container applies it: 0 (and anything unusable) means the
// default.
func dim(v float64, def int) int {
	if v <= 0 || v > 65535 || math.IsNaN(v) {
		return def
	}
	return int(v)
}

// stablePTYConn is one WebSocket attached to a stable PTY: replay of the ring buffer as one binary
// frame, then {"type":"ready"}, then live output; input as binary frames; only resize acts among
// text messages. The end of the shell is never announced.
type stablePTYConn struct {
	term *terminal
	ws   *websocket.Conn
	wmu  sync.Mutex
}

func (c *stablePTYConn) write(kind int, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(termWriteTimeout))
	return c.ws.WriteMessage(kind, data)
}

func (c *stablePTYConn) closeWith(code int, reason string) {
	c.wmu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.ws.Close()
}

func (c *stablePTYConn) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer c.ws.Close()
	log := c.term.log
	// Replay: everything retained up to now, in one binary frame.
	head := log.Head()
	var replay []byte
	snap := log.Subscribe(0, false)
	for {
		evs, err := snap.NextBatch(ctx, nil, 256)
		for _, ev := range evs {
			if ev.Kind == seqlog.Stdout && ev.Seq <= head {
				replay = append(replay, ev.Data...)
			}
		}
		if err != nil || len(evs) == 0 {
			break
		}
		if last := evs[len(evs)-1]; last.Seq >= head || last.Kind == seqlog.Final {
			break
		}
	}
	if len(replay) > 0 {
		if c.write(websocket.BinaryMessage, replay) != nil {
			return
		}
	}
	if c.write(websocket.TextMessage, []byte(`{"type":"ready"}`)) != nil {
		return
	}
	var deadMu sync.Mutex
	dead := c.term.finished()
	isDead := func() bool { deadMu.Lock(); defer deadMu.Unlock(); return dead }

	// Live output.
	go func() {
		defer cancel()
		live := log.Subscribe(head, true)
		for {
			evs, err := live.NextBatch(ctx, nil, termBatch)
			for _, ev := range evs {
				switch ev.Kind {
				case seqlog.Stdout:
					if c.write(websocket.BinaryMessage, ev.Data) != nil {
						return
					}
				case seqlog.Final:
					// The shell ended: say nothing, keep the socket open.
					deadMu.Lock()
					dead = true
					deadMu.Unlock()
				}
			}
			if err == io.EOF {
				<-ctx.Done()
				return
			}
			if err != nil {
				if ctx.Err() == nil {
					// The container went away.
					_ = c.ws.Close()
				}
				return
			}
		}
	}()

	for {
		kind, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		switch kind {
		case websocket.BinaryMessage:
			if c.term.wasKilled() {
				// The container went away: the socket just breaks.
				return
			}
			if isDead() || c.term.finished() {
				c.closeWith(websocket.CloseInternalServerErr, "Internal error")
				return
			}
			c.term.write(data)
		case websocket.TextMessage:
			var m struct {
				Type string   `json:"type"`
				Cols *float64 `json:"cols"`
				Rows *float64 `json:"rows"`
			}
			if json.Unmarshal(data, &m) != nil {
				_ = c.write(websocket.TextMessage, []byte(`{"type":"error","message":"Invalid control message"}`))
				continue
			}
			if m.Type != "resize" {
				continue
			}
			if isDead() || c.term.finished() {
				_ = c.write(websocket.TextMessage, []byte(`{"type":"error","message":"Invalid control message"}`))
				continue
			}
			if m.Cols == nil || m.Rows == nil || *m.Cols <= 0 || *m.Rows <= 0 {
				_ = c.write(websocket.TextMessage, []byte(`{"type":"error","message":"Invalid dimensions: cols and rows must be positive"}`))
				continue
			}
			_ = c.term.resize(dim(*m.Cols, termDefaultCols), dim(*m.Rows, termDefaultRows))
		}
	}
}

// wasKilled reports whether the terminal ended with its incarnation (not by its shell exiting).
func (term *terminal) wasKilled() bool {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.killed
}
