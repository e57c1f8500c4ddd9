package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// PTYOptions configure a stable /pty connection.
type PTYOptions struct {
	Cols, Rows int    // the size (only applied when the PTY is created; a resize follows every connect)
	Session    string // "" = the container's one session-less PTY
	Shell      string // "" = bash (only when the PTY is created)
	// Probe is how often an idle connection sends an empty input frame to learn whether the shell
	// still lives: stable never says that a shell ended, and closes the socket (1011 "Internal
	// error") at the next input after it did. Default 2 s; negative disables probing.
	Probe time.Duration
	// RetryBudget bounds reconnect attempts in a row (default 5). Each reconnect is a new /pty
	// request: it starts the container again if it had stopped (and then finds a fresh shell).
	RetryBudget int
	DialTimeout time.Duration // default 10 s
}

// PTYConn is a stable /pty connection. Events: TermReplayed (the ring buffer the bridge replays on
// every connect: clear the screen and paint it) or TermReady, TermOutput, TermError (the bridge's
// error messages), TermInterrupted/TermReconnecting on drops, and one final event: TermEnded (the
// shell ended; its exit code is unknown) or TermFailed.
type PTYConn struct {
	s      *Stable
	box    string
	opts   PTYOptions
	events chan TermEvent
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	ws         *websocket.Conn
	cols, rows int
	lastRecv   time.Time
	lastProbe  time.Time
	hadOutput  bool // some output arrived on an earlier connection
	// tail is the last bytes of output received: a reconnect whose replay lacks them replays
	// another shell's buffer (a new shell may print its prompt before sandscope reconnects).
	tail []byte
	wmu  sync.Mutex
}

// ConnectPTY opens the sandbox's PTY (GET /v1/sandbox/{id}/pty: starts the container when none
// runs, creates the shell when the session has none).
func (s *Stable) ConnectPTY(ctx context.Context, sandbox string, opts PTYOptions) (*PTYConn, error) {
	if err := checkSandbox(sandbox); err != nil {
		return nil, fmt.Errorf("connect pty: %w", err)
	}
	if opts.Session != "" && !ValidSessionID(opts.Session) {
		return nil, fmt.Errorf("connect pty: session ID %q: %w", opts.Session, ErrInvalidRequest)
	}
	if opts.Probe == 0 {
		opts.Probe = 2 * time.Second
	}
	if opts.RetryBudget <= 0 {
		opts.RetryBudget = 5
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	cctx, cancel := context.WithCancel(ctx)
	p := &PTYConn{s: s, box: sandbox, opts: opts, events: make(chan TermEvent, 256), ctx: cctx, cancel: cancel,
		done: make(chan struct{}), cols: opts.Cols, rows: opts.Rows}
	ws, err := p.dial(cctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("connect pty in %s: %w", sandbox, err)
	}
	p.ws = ws
	go p.run(ws)
	return p, nil
}

// Events delivers the connection's events; it is closed after the final one.
func (p *PTYConn) Events() <-chan TermEvent { return p.events }

// Write sends input bytes.
func (p *PTYConn) Write(b []byte) (int, error) {
	p.mu.Lock()
	ws := p.ws
	p.mu.Unlock()
	if ws == nil {
		return 0, errors.New("pty: not connected")
	}
	if err := p.send(ws, websocket.BinaryMessage, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Resize sends the new size (and remembers it for reconnects).
func (p *PTYConn) Resize(cols, rows int) error {
	if cols <= 0 || rows <= 0 {
		return fmt.Errorf("pty resize %dx%d: %w", cols, rows, ErrInvalidRequest)
	}
	p.mu.Lock()
	p.cols, p.rows = cols, rows
	ws := p.ws
	p.mu.Unlock()
	if ws == nil {
		return nil
	}
	msg, _ := json.Marshal(map[string]any{"type": "resize", "cols": cols, "rows": rows})
	return p.send(ws, websocket.TextMessage, msg)
}

// Close ends the connection (the shell lives on in the container).
func (p *PTYConn) Close() error {
	p.cancel()
	p.mu.Lock()
	ws := p.ws
	p.mu.Unlock()
	if ws != nil {
		_ = ws.Close()
	}
	<-p.done
	return nil
}

// ptyTail is how much of the last output a reconnect looks for in the replay.
const ptyTail = 32

// keepTail keeps the last ptyTail bytes of output (p.mu held).
func (p *PTYConn) keepTail(b []byte) {
	p.tail = append(p.tail, b...)
	if n := len(p.tail); n > ptyTail {
		p.tail = append(p.tail[:0], p.tail[n-ptyTail:]...)
	}
}

func (p *PTYConn) send(ws *websocket.Conn, kind int, data []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_ = ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return ws.WriteMessage(kind, data)
}

func (p *PTYConn) dial(ctx context.Context) (*websocket.Conn, error) {
	caps, err := p.s.c.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	if caps.Dialect != DialectStable {
		return nil, &WrongDialectError{Dialect: caps.Dialect}
	}
	u, err := url.Parse(p.s.c.base)
	if err != nil {
		return nil, fmt.Errorf("bridge URL: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	u.Path = termJoinPath(u.Path, "v1", "sandbox", p.box, "pty")
	q := url.Values{}
	p.mu.Lock()
	if p.cols > 0 && p.rows > 0 {
		q.Set("cols", strconv.Itoa(p.cols))
		q.Set("rows", strconv.Itoa(p.rows))
	}
	p.mu.Unlock()
	if p.opts.Shell != "" {
		q.Set("shell", p.opts.Shell)
	}
	u.RawQuery = q.Encode()
	h := p.s.c.headers()
	if p.opts.Session != "" {
		h.Set("Session-Id", p.opts.Session)
	}
	d := websocket.Dialer{HandshakeTimeout: p.opts.DialTimeout}
	dctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
	defer cancel()
	ws, resp, err := d.DialContext(dctx, u.String(), h)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			return nil, readAPIError(resp, p.s.c.token)
		}
		return nil, &TransportError{Op: "dial pty", Err: scrubErr(err, p.s.c.token)}
	}
	ws.SetReadLimit(maxTerminalFrame)
	return ws, nil
}

func (p *PTYConn) emit(ev TermEvent) bool {
	ev.Time = time.Now()
	select {
	case p.events <- ev:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// run serves connections until the shell ends, the budget runs out or Close.
func (p *PTYConn) run(ws *websocket.Conn) {
	defer close(p.done)
	defer close(p.events)
	attempt := 0
	for {
		p.mu.Lock()
		p.ws = ws
		p.mu.Unlock()
		ended, code, reason, err := p.serve(ws, attempt)
		p.mu.Lock()
		p.ws = nil
		p.mu.Unlock()
		_ = ws.Close()
		if p.ctx.Err() != nil {
			return
		}
		if ended {
			p.emit(TermEvent{Kind: TermEnded, CloseCode: code, Reason: "the shell ended (the stable bridge does not report exit codes: unknown)"})
			return
		}
		if !p.emit(TermEvent{Kind: TermInterrupted, CloseCode: code, Reason: reason, Err: err}) {
			return
		}
		for {
			attempt++
			if attempt > p.opts.RetryBudget {
				p.emit(TermEvent{Kind: TermFailed, Attempt: attempt - 1, Reason: "gave up reconnecting", Err: err})
				return
			}
			if !p.emit(TermEvent{Kind: TermReconnecting, Attempt: attempt}) {
				return
			}
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(time.Duration(attempt) * 300 * time.Millisecond):
			}
			ws, err = p.dial(p.ctx)
			if err == nil {
				break
			}
			var ae *APIError
			if errors.As(err, &ae) && !ae.Retryable() {
				p.emit(TermEvent{Kind: TermFailed, Attempt: attempt, Reason: "reconnect refused", Err: err})
				return
			}
		}
	}
}

// serve reads one connection: the replay before ready, then output. ended reports that the shell
// is known to have ended (the bridge closed 1011 "Internal error" after an input).
func (p *PTYConn) serve(ws *websocket.Conn, attempt int) (ended bool, code int, reason string, err error) {
	var replay []byte
	ready := false
	p.mu.Lock()
	p.lastRecv = time.Now()
	cols, rows := p.cols, p.rows
	p.mu.Unlock()
	stopProbe := make(chan struct{})
	defer close(stopProbe)
	if p.opts.Probe > 0 {
		go p.probeLoop(ws, stopProbe)
	}
	for {
		kind, data, rerr := ws.ReadMessage()
		if rerr != nil {
			var ce *websocket.CloseError
			if errors.As(rerr, &ce) {
				// The bridge closes 1011 "Internal error" at the first input after the shell ended;
				// a probe is such an input.
				if ce.Code == websocket.CloseInternalServerErr && ce.Text == "Internal error" {
					return true, ce.Code, ce.Text, rerr
				}
				return false, ce.Code, ce.Text, rerr
			}
			return false, 0, "connection lost", rerr
		}
		p.mu.Lock()
		p.lastRecv = time.Now()
		p.mu.Unlock()
		switch kind {
		case websocket.BinaryMessage:
			if !ready {
				replay = append(replay, data...)
				continue
			}
			p.mu.Lock()
			p.hadOutput = true
			p.keepTail(data)
			p.mu.Unlock()
			if !p.emit(TermEvent{Kind: TermOutput, Data: append([]byte(nil), data...)}) {
				return false, 0, "", nil
			}
		case websocket.TextMessage:
			var m struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			}
			if json.Unmarshal(data, &m) != nil {
				continue
			}
			switch m.Type {
			case "ready":
				if ready {
					continue
				}
				ready = true
				ev := TermEvent{Kind: TermReady, Attempt: attempt}
				if attempt > 0 {
					ev.Kind = TermResumed
				}
				p.mu.Lock()
				// A new shell: nothing replayed where output was seen before, or a replay without
				// the last output seen (the new shell's prompt came first).
				fresh := attempt > 0 && p.hadOutput && (len(replay) == 0 || len(p.tail) > 0 && !bytes.Contains(replay, p.tail))
				if len(replay) > 0 {
					p.hadOutput = true
					p.tail = p.tail[:0]
					p.keepTail(replay)
				}
				p.mu.Unlock()
				if len(replay) > 0 {
					ev = TermEvent{Kind: TermReplayed, Attempt: attempt, Data: replay}
					replay = nil
				}
				if !p.emit(ev) {
					return false, 0, "", nil
				}
				if fresh && !p.emit(TermEvent{Kind: TermError, Attempt: attempt,
					Reason: "a new shell: the previous one and its screen are gone (the container slept or was replaced; inferred from the empty replay)"}) {
					return false, 0, "", nil
				}
				if cols > 0 && rows > 0 {
					msg, _ := json.Marshal(map[string]any{"type": "resize", "cols": cols, "rows": rows})
					_ = p.send(ws, websocket.TextMessage, msg)
				}
			case "error":
				if !p.emit(TermEvent{Kind: TermError, Reason: m.Message}) {
					return false, 0, "", nil
				}
			case "exit":
				// Declared by the protocol, never sent by 0.12; honour it should a bridge send it.
				var x struct {
					Code *int `json:"exitCode"`
				}
				_ = json.Unmarshal(data, &x)
				if x.Code != nil {
					p.emit(TermEvent{Kind: TermExited, Exit: &Exit{Code: *x.Code}})
					return false, 0, "", nil
				}
				return true, 0, "exit message without a code", nil
			}
		}
	}
}

// probeLoop sends an empty input frame every Probe while the connection is silent.
func (p *PTYConn) probeLoop(ws *websocket.Conn, stop <-chan struct{}) {
	t := time.NewTicker(p.opts.Probe / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		due := time.Since(p.lastRecv) >= p.opts.Probe && time.Since(p.lastProbe) >= p.opts.Probe
		if due {
			p.lastProbe = time.Now()
		}
		p.mu.Unlock()
		if due {
			_ = p.send(ws, websocket.BinaryMessage, nil)
		}
	}
}
