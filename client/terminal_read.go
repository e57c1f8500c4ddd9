package client

// Reading one terminal WebSocket: control frames are JSON text, output is a `chunk` header followed
// by exactly one binary frame of byteLength bytes. The cursor moves only after that binary frame.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// termControl is any text frame the bridge sends.
type termControl struct {
	Type       string `json:"type"`
	Cursor     string `json:"cursor"`
	ByteLength *int64 `json:"byteLength"`
	Exit       *Exit  `json:"exit"`
	Message    string `json:"message"`
	Code       string `json:"code"`
}

// DecodeTermControl parses one server→client control frame and checks the fields its type needs.
// It never panics on bad input.
func DecodeTermControl(p []byte) (typ, cursor string, byteLength int64, exit *Exit, message, code string, err error) {
	var m termControl
	if err := json.Unmarshal(p, &m); err != nil {
		return "", "", 0, nil, "", "", fmt.Errorf("%w: control frame is not JSON: %v", ErrTerminalProtocol, err)
	}
	switch m.Type {
	case "chunk":
		if m.ByteLength == nil || *m.ByteLength < 0 || *m.ByteLength > maxTerminalFrame {
			return "", "", 0, nil, "", "", fmt.Errorf("%w: chunk without a valid byteLength", ErrTerminalProtocol)
		}
		if m.Cursor == "" {
			return "", "", 0, nil, "", "", fmt.Errorf("%w: chunk without a cursor", ErrTerminalProtocol)
		}
		byteLength = *m.ByteLength
	case "exit":
		if m.Exit == nil {
			return "", "", 0, nil, "", "", fmt.Errorf("%w: exit without exit status", ErrTerminalProtocol)
		}
	case "ready", "truncated", "error":
	default:
		return "", "", 0, nil, "", "", fmt.Errorf("%w: unknown control type %q", ErrTerminalProtocol, m.Type)
	}
	return m.Type, m.Cursor, byteLength, m.Exit, m.Message, m.Code, nil
}

// readOutcome is how one WebSocket ended.
type readOutcome struct {
	final      bool // a final event was emitted (or the connection is closing)
	progressed bool // output flowed (or the link stayed up a while): the retry budget starts over
	code       int
	reason     string
	err        error
}

const (
	closeProtocolError = 1002
	stableLinkAfter    = 5 * time.Second
)

func (t *TerminalConn) readLoop(ws *websocket.Conn, resumedAttempt int) (out readOutcome) {
	stop := context.AfterFunc(t.ctx, func() { _ = ws.Close() })
	defer stop()
	alive := t.keepAlive(ws)
	defer alive()
	quiet := &quietState{}
	watch := t.watchQuiet(ws, quiet)
	defer watch()

	var (
		pending    bool // a chunk header was read; its binary frame must come next
		pendCursor string
		pendLen    int64
		gotReady   time.Time
		termErr    *TermEvent // an error message with a code: the terminal itself failed
	)
	protocol := func(err error) readOutcome {
		t.emit(TermEvent{Kind: TermError, Cursor: t.Cursor(), Reason: err.Error(), Err: err})
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(closeProtocolError, "protocol error"), time.Now().Add(time.Second))
		return readOutcome{progressed: out.progressed, code: closeProtocolError, reason: "protocol error", err: err}
	}
	for {
		mt, p, err := quiet.readMessage(ws)
		if err == nil && t.opts.KeepAlive > 0 {
			_ = ws.SetReadDeadline(time.Now().Add(3 * t.opts.KeepAlive))
		}
		if err != nil {
			if t.ctx.Err() != nil {
				return readOutcome{final: true}
			}
			if !gotReady.IsZero() && time.Since(gotReady) >= stableLinkAfter {
				out.progressed = true
			}
			if why := quiet.stalled.Load(); why != nil {
				return readOutcome{progressed: out.progressed, code: websocket.CloseAbnormalClosure,
					reason: "connection stalled: " + *why,
					err:    fmt.Errorf("terminal %s: %w: %s", t.terminal, ErrTerminalStalled, *why)}
			}
			return t.closed(err, out.progressed, termErr)
		}
		switch mt {
		case websocket.BinaryMessage:
			if !pending {
				return protocol(fmt.Errorf("%w: binary frame (%d bytes) without a chunk header", ErrTerminalProtocol, len(p)))
			}
			if int64(len(p)) != pendLen {
				return protocol(fmt.Errorf("%w: chunk announced %d bytes, binary frame has %d", ErrTerminalProtocol, pendLen, len(p)))
			}
			pending = false
			t.mu.Lock()
			t.cursor = pendCursor
			t.mu.Unlock()
			out.progressed = true
			if len(p) > 0 && !t.emit(TermEvent{Kind: TermOutput, Cursor: pendCursor, Data: p}) {
				return readOutcome{final: true}
			}
		case websocket.TextMessage:
			typ, cursor, n, exit, msg, code, err := DecodeTermControl(p)
			if err != nil {
				return protocol(err)
			}
			if pending {
				return protocol(fmt.Errorf("%w: %s frame where the binary frame of a chunk was due", ErrTerminalProtocol, typ))
			}
			switch typ {
			case "ready":
				gotReady = time.Now()
				ev := TermEvent{Kind: TermReady, Cursor: t.Cursor()}
				if resumedAttempt > 0 {
					ev.Kind, ev.Attempt = TermResumed, resumedAttempt
				}
				if !t.emit(ev) {
					return readOutcome{final: true}
				}
			case "chunk":
				pending, pendCursor, pendLen = true, cursor, n
			case "truncated":
				if !t.emit(TermEvent{Kind: TermGap, Cursor: t.Cursor(), Reason: "the bridge evicted output before this point"}) {
					return readOutcome{final: true}
				}
			case "exit":
				if cursor != "" {
					t.mu.Lock()
					t.cursor = cursor
					t.mu.Unlock()
				}
				t.emit(TermEvent{Kind: TermExited, Cursor: t.Cursor(), Exit: exit})
				_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
				return readOutcome{final: true}
			case "error":
				if code != "" {
					// The terminal finished in the error state; the close that follows ends it.
					termErr = &TermEvent{Kind: TermError, Cursor: t.Cursor(), Reason: fmt.Sprintf("terminal error %s: %s", code, msg)}
					continue
				}
				if !t.emit(TermEvent{Kind: TermError, Cursor: t.Cursor(), Reason: msg}) {
					return readOutcome{final: true}
				}
			}
		}
	}
}

// keepAlive pings ws every KeepAlive and lets reads time out after three silent intervals; pongs
// (and any message) push the deadline back. The returned func stops the pinger.
func (t *TerminalConn) keepAlive(ws *websocket.Conn) (stop func()) {
	ka := t.opts.KeepAlive
	if ka <= 0 {
		return func() {}
	}
	_ = ws.SetReadDeadline(time.Now().Add(3 * ka))
	ws.SetPongHandler(func(string) error {
		return ws.SetReadDeadline(time.Now().Add(3 * ka))
	})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(ka)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				// WriteControl may run alongside other writes.
				if ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(ka)) != nil {
					return
				}
			case <-done:
				return
			case <-t.ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// quietState is shared between readLoop and its quiet watcher.
type quietState struct {
	// lastData is when readLoop began waiting for the next message or last received a byte of
	// one (unix nanoseconds); 0 while it handles a complete message: time spent handing output to
	// a slow consumer is not silence on the link. Control frames (pongs) do not move it.
	lastData atomic.Int64
	// stalled is set (with the reason) before the watcher closes the socket, so that readLoop
	// reports the drop as a stall rather than a plain connection loss.
	stalled atomic.Pointer[string]
}

// readMessage is ws.ReadMessage that records, for the quiet watcher, every moment a data
// message's bytes arrive (a large frame trickling in is not silence).
func (q *quietState) readMessage(ws *websocket.Conn) (int, []byte, error) {
	q.lastData.Store(time.Now().UnixNano())
	defer q.lastData.Store(0)
	mt, r, err := ws.NextReader()
	if err != nil {
		return mt, nil, err
	}
	q.lastData.Store(time.Now().UnixNano())
	p, err := io.ReadAll(&progressReader{r: r, q: q})
	return mt, p, err
}

type progressReader struct {
	r io.Reader
	q *quietState
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.q.lastData.Store(time.Now().UnixNano())
	}
	return n, err
}

// quietCheckGrowth bounds how far the interval between status lookups grows while a running
// terminal stays silent.
const quietCheckGrowth = 32

// watchQuiet looks the terminal up whenever ws stays silent (no data message byte) for the quiet
// interval. A terminal the bridge reports ended (exited or error) or gone (404) has nothing left to
// send but its final messages, which a healthy link would have delivered by then: the socket is
// closed as stalled and readLoop resumes from the cursor like after any drop (the resume then
// delivers the rest and the exit, or decides lost). The returned func stops the watcher and waits.
func (t *TerminalConn) watchQuiet(ws *websocket.Conn, q *quietState) (stop func()) {
	base := t.opts.QuietCheck
	if base <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(t.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		interval := base
		var lastWait int64 // the lastData value the current interval belongs to
		next := time.Now().Add(base)
		tm := time.NewTimer(base)
		defer tm.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tm.C:
			}
			w := q.lastData.Load()
			now := time.Now()
			switch {
			case w == 0:
				// A message is being handled; look again one base interval later.
				next = now.Add(base)
			case w != lastWait:
				// Data arrived since the last look: the silence starts over.
				lastWait, interval = w, base
				next = time.Unix(0, w).Add(base)
			}
			if w == 0 || now.Before(next) {
				tm.Reset(max(time.Until(next), time.Millisecond))
				continue
			}
			why := t.quietVerdict(ctx, base)
			if ctx.Err() != nil {
				return
			}
			if why != "" && q.lastData.Load() == w {
				q.stalled.Store(&why)
				_ = ws.Close()
				return
			}
			if why == "" && interval < base*quietCheckGrowth {
				interval *= 2
			}
			next = time.Now().Add(interval)
			if why != "" {
				next = time.Now().Add(base) // data came in during the lookup: judge afresh
			}
			tm.Reset(max(time.Until(next), time.Millisecond))
		}
	}()
	return func() { cancel(); <-done }
}

// quietVerdict asks the bridge about a silent terminal. It returns why the link counts as stalled,
// or "" when the silence is explained (the terminal runs) or the bridge could not be asked (the
// pings decide about a dead bridge).
func (t *TerminalConn) quietVerdict(ctx context.Context, base time.Duration) string {
	term, err := t.lookup(ctx)
	switch {
	case errors.Is(err, ErrNotFound):
		return "silent while the bridge no longer knows the terminal"
	case err != nil:
		return ""
	case term.Status == "exited" || term.Status == "error":
		return fmt.Sprintf("silent for %v although the bridge says the terminal %s", base, term.Status)
	}
	return ""
}

// closed decides what a read error means: a drop to resume from, or an end.
func (t *TerminalConn) closed(err error, progressed bool, termErr *TermEvent) readOutcome {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		reason := "connection lost"
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			reason = "connection timed out"
		}
		return readOutcome{progressed: progressed, code: websocket.CloseAbnormalClosure, reason: reason, err: fmt.Errorf("terminal %s: %w", t.terminal, err)}
	}
	if termErr != nil {
		termErr.CloseCode, termErr.Err = ce.Code, fmt.Errorf("terminal %s: %s", t.terminal, termErr.Reason)
		t.emit(*termErr)
		return readOutcome{final: true}
	}
	out := readOutcome{progressed: progressed, code: ce.Code, reason: ce.Text, err: fmt.Errorf("terminal %s: closed %d %s", t.terminal, ce.Code, ce.Text)}
	switch ce.Code {
	case websocket.CloseNormalClosure, websocket.ClosePolicyViolation:
		// 1000 without an exit message ("Terminal output complete") or 1008 ("Terminal not found"):
		// the status decides between ended, lost and "keep going".
		return t.settle(out)
	}
	return out
}

// settle asks the bridge what became of the terminal after the socket closed without an exit
// message. A terminal still running is resumed like a drop.
func (t *TerminalConn) settle(out readOutcome) readOutcome {
	term, err := t.lookup(t.ctx)
	switch {
	case errors.Is(err, ErrNotFound):
		t.emitLost(err)
		out.final = true
		return out
	case err != nil:
		out.err = err
		return out
	}
	switch term.Status {
	case "exited":
		t.emit(TermEvent{Kind: TermExited, Cursor: t.Cursor(), Exit: term.Exit, CloseCode: out.code})
		out.final = true
	case "error":
		reason := "terminal ended in error"
		if term.Error != nil {
			reason = fmt.Sprintf("terminal error %s: %s", term.Error.Code, term.Error.Message)
		}
		t.emit(TermEvent{Kind: TermError, Cursor: t.Cursor(), CloseCode: out.code, Reason: reason, Err: fmt.Errorf("terminal %s: %s", t.terminal, reason)})
		out.final = true
	}
	return out
}
