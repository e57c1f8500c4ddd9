package client

// The terminal connection: one WebSocket to GET /v1/sandbox/{id}/terminals/{tid}/connect at a time,
// resumed from the last fully consumed chunk cursor whenever it drops, so the bytes a caller sees
// are exactly the terminal's output with nothing repeated or missing (gaps the bridge reports are
// delivered as TermGap, never hidden).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// ConnectOptions tunes a terminal connection.
type ConnectOptions struct {
	Cursor      string // resume strictly after this cursor; "" = full retained replay
	Cols, Rows  int    // initial size; sent only while the terminal is running
	RetryBudget int    // reconnect attempts before TermFailed (default 10)

	// DialTimeout bounds each WebSocket handshake and status lookup (default 10s).
	DialTimeout time.Duration
	// KeepAlive is how often a ping goes out on a quiet connection (default 20s; negative: never).
	// A connection that answers nothing, not even a pong, for three intervals counts as dropped:
	// a terminal may be silent for hours, a dead link must not look like one.
	KeepAlive time.Duration
	// MinBackoff and MaxBackoff bound the exponential reconnect backoff (defaults 250ms and 8s);
	// up to 10% jitter is added to each wait.
	MinBackoff, MaxBackoff time.Duration
	// QuietCheck is how long the connection may stay silent before the terminal's status is looked
	// up (default 2s; negative: never). Pings alone cannot catch a link that a middlebox keeps
	// answering while nothing is relayed: when the bridge says the terminal has ended (or is gone)
	// yet no message byte arrived for QuietCheck (pongs do not count), the link counts as stalled
	// and is resumed from the cursor. While the terminal runs, the interval doubles up to 32× (a
	// terminal may be silent for hours) and starts over with the next message.
	QuietCheck time.Duration
}

// Errors a terminal connection reports; callers branch with errors.Is.
var (
	// ErrTerminalProtocol marks a frame sequence that breaks the terminal protocol (a binary frame
	// without a chunk header, a length that disagrees with byteLength, unparseable control JSON).
	ErrTerminalProtocol = errors.New("terminal protocol violation")
	// ErrTerminalDisconnected is returned by Write and the control calls while no connection is up
	// (between a drop and the next resume) or after the connection ended.
	ErrTerminalDisconnected = errors.New("terminal not connected")
	// ErrTerminalStalled marks a connection dropped on purpose because it stayed silent although the
	// bridge says the terminal has ended or is gone (the exit message could not be coming).
	ErrTerminalStalled = errors.New("terminal connection stalled")
)

const maxTerminalFrame = 16 << 20 // a hostile server cannot make us buffer more than this per frame

// TerminalConn is a live, self-resuming connection to a terminal. Its methods are safe for
// concurrent use. Events is closed after a final event (TermExited, TermLost, TermFailed, a final
// TermError) or after Close.
type TerminalConn struct {
	c        *Client
	sandbox  string
	terminal string
	opts     ConnectOptions

	events chan TermEvent
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex // guards ws, pending, ended, cursor, cols, rows, incarnation
	ws          *websocket.Conn
	pending     []byte // input written while reconnecting, sent after the resume
	ended       bool   // no connection will come any more
	cursor      string
	cols, rows  int
	incarnation int
	command     []string

	wmu sync.Mutex // serialises frames written to ws
}

// Events delivers what happens on the connection, in order.
func (t *TerminalConn) Events() <-chan TermEvent { return t.events }

// Cursor is the cursor of the last output chunk delivered (or the one the connection started from).
func (t *TerminalConn) Cursor() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cursor
}

// Terminal is the terminal ID this connection is attached to.
func (t *TerminalConn) Terminal() string { return t.terminal }

// Sandbox is the sandbox ID this connection belongs to.
func (t *TerminalConn) Sandbox() string { return t.sandbox }

// Command is the terminal's argv as the bridge reported it when the connection opened.
func (t *TerminalConn) Command() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.command...)
}

// maxPendingInput bounds the input held while reconnecting.
const maxPendingInput = 64 << 10

// Write sends input bytes to the terminal as one binary frame. While the connection is being
// resumed, input is held (up to 64 KiB) and sent first thing after the resume; it is discarded if
// the terminal turns out lost or the budget runs out. Write fails with ErrTerminalDisconnected
// once the connection ended, or when the held input would exceed the bound.
func (t *TerminalConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	t.mu.Lock()
	if t.ws == nil && !t.ended && len(t.pending)+len(p) <= maxPendingInput {
		t.pending = append(t.pending, p...)
		t.mu.Unlock()
		return len(p), nil
	}
	t.mu.Unlock()
	if err := t.send(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize changes the PTY size. While disconnected the size is remembered and applied on resume.
func (t *TerminalConn) Resize(cols, rows int) error {
	if cols <= 0 || rows <= 0 {
		return fmt.Errorf("resize terminal %s: invalid size %dx%d", t.terminal, cols, rows)
	}
	t.mu.Lock()
	t.cols, t.rows = cols, rows
	connected := t.ws != nil
	t.mu.Unlock()
	if !connected {
		return nil
	}
	msg := fmt.Sprintf(`{"type":"resize","cols":%d,"rows":%d}`, cols, rows)
	return t.send(websocket.TextMessage, []byte(msg))
}

// Interrupt sends SIGINT to the terminal's process tree (not a ^C byte).
func (t *TerminalConn) Interrupt() error {
	return t.send(websocket.TextMessage, []byte(`{"type":"interrupt"}`))
}

// Terminate sends SIGTERM to the terminal's process tree (SIGKILL follows after 500 ms).
func (t *TerminalConn) Terminate() error {
	return t.send(websocket.TextMessage, []byte(`{"type":"terminate"}`))
}

func (t *TerminalConn) send(mt int, p []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	ws := t.ws
	t.mu.Unlock()
	if ws == nil {
		return fmt.Errorf("terminal %s: %w", t.terminal, ErrTerminalDisconnected)
	}
	_ = ws.SetWriteDeadline(time.Now().Add(t.opts.DialTimeout))
	if err := ws.WriteMessage(mt, p); err != nil {
		// The read side notices the broken connection and resumes; the caller learns this frame
		// may not have arrived.
		return fmt.Errorf("terminal %s: send: %w", t.terminal, err)
	}
	return nil
}

// Close ends the connection and its goroutine. Events is closed when Close returns.
func (t *TerminalConn) Close() error {
	t.cancel()
	<-t.done
	return nil
}

// ConnectTerminal opens a terminal connection that reconnects from its cursor on drops. It fails
// without starting anything when the terminal cannot be looked up or the first handshake fails.
func (c *Client) ConnectTerminal(ctx context.Context, sandbox, terminal string, opts ConnectOptions) (*TerminalConn, error) {
	if err := validTermIDs(sandbox, terminal); err != nil {
		return nil, fmt.Errorf("connect terminal: %w", err)
	}
	if opts.RetryBudget <= 0 {
		opts.RetryBudget = 10
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 20 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 8 * time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = opts.MinBackoff
	}
	if opts.QuietCheck == 0 {
		opts.QuietCheck = 2 * time.Second
	}
	cctx, cancel := context.WithCancel(ctx)
	t := &TerminalConn{
		c: c, sandbox: sandbox, terminal: terminal, opts: opts,
		events: make(chan TermEvent, 256),
		ctx:    cctx, cancel: cancel,
		done:   make(chan struct{}),
		cursor: opts.Cursor,
		cols:   opts.Cols, rows: opts.Rows,
	}
	term, err := t.lookup(cctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("connect terminal %s: %w", terminal, err)
	}
	t.incarnation = term.Incarnation
	t.command = term.Command
	ws, err := t.dial(cctx, term.Status == "running")
	if err != nil {
		cancel()
		return nil, fmt.Errorf("connect terminal %s: %w", terminal, err)
	}
	t.setWS(ws)
	go t.run(ws)
	return t, nil
}

func (t *TerminalConn) setWS(ws *websocket.Conn) {
	t.mu.Lock()
	t.ws = ws
	t.mu.Unlock()
}

// dial opens one WebSocket from the current cursor. Size parameters go only to a running terminal:
// the bridge fails a reconnect to an exited one that carries cols+rows ("PTY is closed").
func (t *TerminalConn) dial(ctx context.Context, running bool) (*websocket.Conn, error) {
	u, err := url.Parse(t.c.base)
	if err != nil {
		return nil, fmt.Errorf("bridge URL: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return nil, fmt.Errorf("bridge URL: unsupported scheme %q", u.Scheme)
	}
	u.Path = termJoinPath(u.Path, "v1", "sandbox", t.sandbox, "terminals", t.terminal, "connect")
	q := url.Values{}
	t.mu.Lock()
	if t.cursor != "" {
		q.Set("cursor", t.cursor)
	}
	if running && t.cols > 0 && t.rows > 0 {
		q.Set("cols", strconv.Itoa(t.cols))
		q.Set("rows", strconv.Itoa(t.rows))
	}
	t.mu.Unlock()
	u.RawQuery = q.Encode()

	d := websocket.Dialer{HandshakeTimeout: t.opts.DialTimeout}
	h := t.c.headers()
	dctx, cancel := context.WithTimeout(ctx, t.opts.DialTimeout)
	defer cancel()
	ws, resp, err := d.DialContext(dctx, u.String(), h)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			return nil, readAPIError(resp, t.c.token)
		}
		return nil, &TransportError{Op: "dial terminal", Err: scrubErr(err, t.c.token)}
	}
	ws.SetReadLimit(maxTerminalFrame)
	return ws, nil
}

// emit delivers an event unless the connection is being closed.
func (t *TerminalConn) emit(ev TermEvent) bool {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	select {
	case t.events <- ev:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// run owns the connection life: read until a drop, resume, repeat until a final event or Close.
func (t *TerminalConn) run(ws *websocket.Conn) {
	defer close(t.done)
	defer close(t.events)
	defer t.cancel()
	defer func() {
		t.mu.Lock()
		t.ws, t.ended, t.pending = nil, true, nil
		t.mu.Unlock()
	}()

	attempt := 0 // consecutive failed or unproductive resume attempts
	resumed := 0 // the attempt number that produced ws (0 for the first connection)
	var lastErr error
	violationAt, violations := "", 0 // cursor of the last protocol violation, and how often in a row
	for {
		out := t.readLoop(ws, resumed)
		t.setWS(nil)
		_ = ws.Close()
		if out.final || t.ctx.Err() != nil {
			return
		}
		if errors.Is(out.err, ErrTerminalProtocol) {
			// A violation that repeats at the same cursor is the bridge's, not the network's:
			// stop after the second and name it, instead of spending the whole retry budget.
			if cur := t.Cursor(); cur == violationAt && violations > 0 {
				t.emit(TermEvent{Kind: TermFailed, Cursor: cur, Attempt: attempt,
					Reason: "the bridge broke the terminal protocol twice at the same cursor: " + out.err.Error(),
					Err:    fmt.Errorf("terminal %s: %w", t.terminal, out.err)})
				return
			}
			violationAt, violations = t.Cursor(), 1
		} else if out.progressed {
			violations = 0
		}
		if out.progressed {
			attempt = 0
		}
		if !t.emit(TermEvent{Kind: TermInterrupted, Cursor: t.Cursor(), CloseCode: out.code, Reason: out.reason, Err: out.err}) {
			return
		}
		lastErr = out.err
		ws = nil
		for ws == nil {
			attempt++
			if attempt > t.opts.RetryBudget {
				t.emit(TermEvent{Kind: TermFailed, Cursor: t.Cursor(), Attempt: attempt - 1,
					Reason: fmt.Sprintf("gave up after %d reconnect attempts", attempt-1),
					Err:    fmt.Errorf("terminal %s: reconnect budget exhausted: %w", t.terminal, lastErr)})
				return
			}
			if !t.emit(TermEvent{Kind: TermReconnecting, Cursor: t.Cursor(), Attempt: attempt}) {
				return
			}
			if !t.sleep(t.backoff(attempt)) {
				return
			}
			var final bool
			ws, final, lastErr = t.reconnect(attempt)
			if final || t.ctx.Err() != nil {
				if ws != nil {
					_ = ws.Close()
				}
				return
			}
		}
		t.resume(ws)
		resumed = attempt
	}
}

// resume installs a new connection and sends the input held while reconnecting, before any
// later Write can go out.
func (t *TerminalConn) resume(ws *websocket.Conn) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	t.ws = ws
	pend := t.pending
	t.pending = nil
	t.mu.Unlock()
	if len(pend) > 0 {
		_ = ws.SetWriteDeadline(time.Now().Add(t.opts.DialTimeout))
		// On failure the read side sees the broken link and resumes again; this input is then
		// lost, as input sent into any dying connection would be.
		_ = ws.WriteMessage(websocket.BinaryMessage, pend)
	}
}

// reconnect looks the terminal up (a 404 means it is gone) and dials again from the cursor. An
// answer that no retry can change (a rejected token, a malformed request) ends the connection with
// TermFailed at once. final reports that a final event was emitted.
func (t *TerminalConn) reconnect(attempt int) (ws *websocket.Conn, final bool, err error) {
	term, err := t.lookup(t.ctx)
	switch {
	case errors.Is(err, ErrNotFound):
		t.emitLost(err)
		return nil, true, nil
	case err != nil && !termRetryable(err):
		t.emitRefused(attempt, "GET terminal", err)
		return nil, true, err
	case err != nil:
		return nil, false, err
	}
	ws, err = t.dial(t.ctx, term.Status == "running")
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			t.emitLost(err)
			return nil, true, nil
		}
		if !termRetryable(err) {
			t.emitRefused(attempt, "connect", err)
			return nil, true, err
		}
		return nil, false, err
	}
	return ws, false, nil
}

// termRetryable reports whether a failed lookup or handshake may succeed on a later attempt:
// transport trouble, 5xx and 429, and the 4xx answers that describe a passing state (408 timeout,
// 409 "Runtime incarnation mismatch" — the next lookup tells whether the terminal is gone — and
// 425). Any other bridge answer (400, 401, 403, a text 404 for a missing route…) will not change.
func termRetryable(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return true
	}
	switch ae.Status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return ae.Status >= 500 || ae.Status < 400
}

// emitRefused ends the connection because the bridge refused a reconnect for good.
func (t *TerminalConn) emitRefused(attempt int, op string, err error) {
	t.emit(TermEvent{Kind: TermFailed, Cursor: t.Cursor(), Attempt: attempt,
		Reason: fmt.Sprintf("bridge refused the reconnect (%s: %s)", op, termErrSummary(err)),
		Err:    fmt.Errorf("terminal %s: reconnect: %w", t.terminal, err)})
}

// emitLost reports the terminal gone with the evidence a follow-up GET /running gives.
func (t *TerminalConn) emitLost(cause error) {
	t.mu.Lock()
	previous := t.incarnation
	t.mu.Unlock()
	rs, err := t.running(t.ctx)
	ev := lossEvidence("GET terminal: "+termErrSummary(cause), previous, rs, err)
	reason := "terminal vanished with its container"
	switch {
	case ev.SandboxRunning != nil && !*ev.SandboxRunning:
		reason = "terminal gone: sandbox is stopped"
	case ev.Incarnation != 0 && ev.Previous != 0 && ev.Incarnation != ev.Previous:
		reason = fmt.Sprintf("terminal gone: sandbox now runs incarnation %d (was %d)", ev.Incarnation, ev.Previous)
	case ev.SandboxRunning != nil:
		reason = "terminal gone: sandbox runs a new container"
	}
	t.emit(TermEvent{Kind: TermLost, Cursor: t.Cursor(), Loss: ev, Reason: reason})
}

// backoff is the wait before reconnect attempt n, plus up to 10% jitter.
func (t *TerminalConn) backoff(attempt int) time.Duration {
	d := doubling(t.opts.MinBackoff, t.opts.MaxBackoff, attempt)
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}

func (t *TerminalConn) sleep(d time.Duration) bool { return sleepCtx(t.ctx, d) }
