package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Stable is the adapter for bridges that speak the stable 0.12 API (POST /exec, GET /pty,
// sessions). It shares the preview client's connection, token and timeouts.
//
// Every /v1/sandbox/{id}/… request it sends allocates (starts) a container on a real stable
// bridge, so it sends them only for what the caller explicitly asks: it has no status, list or
// lookup call, and nothing in it polls.
type Stable struct {
	c *Client
}

// NewStable returns the stable adapter over c's connection. It refuses sandbox calls unless the
// bridge's OpenAPI document says it speaks the stable dialect (*WrongDialectError). Only the
// stable driver (package driver) uses it: everything else talks to a bridge through a driver.
func NewStable(c *Client) *Stable { return &Stable{c: c} }

// BaseURL is the bridge URL.
func (s *Stable) BaseURL() string { return s.c.base }

// Capabilities reads the bridge's document (no container is contacted).
func (s *Stable) Capabilities(ctx context.Context) (Capabilities, error) {
	return s.c.Capabilities(ctx)
}

// Health calls GET /health.
func (s *Stable) Health(ctx context.Context) error { return s.c.Health(ctx) }

// CreateSandbox mints a sandbox ID (POST /v1/sandbox; no container starts).
func (s *Stable) CreateSandbox(ctx context.Context) (string, error) { return s.c.CreateSandbox(ctx) }

// ListSandboxes lists sandboxes on the path the bridge's document announces (Client.ListSandboxes:
// an extension of sandscope's local bridge, or of any bridge announcing it; no container starts).
func (s *Stable) ListSandboxes(ctx context.Context) ([]SandboxInfo, error) {
	return s.c.ListSandboxes(ctx)
}

// WrongDialectError refuses a stable call to a bridge that does not speak the stable API.
type WrongDialectError struct{ Dialect Dialect }

func (e *WrongDialectError) Error() string {
	return fmt.Sprintf("this bridge speaks the %s API, not the stable one (exec, pty, session)", e.Dialect)
}

func (e *WrongDialectError) Is(target error) bool { return target == ErrUnsupported }

// request builds a stable sandbox request after checking the dialect (the document is read once
// and cached; reading it starts nothing).
func (s *Stable) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	caps, err := s.c.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	if caps.Dialect != DialectStable {
		return nil, &WrongDialectError{Dialect: caps.Dialect}
	}
	req, err := http.NewRequestWithContext(ctx, method, s.c.base+path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range s.c.headers() {
		req.Header[k] = v
	}
	return req, nil
}

// ValidSessionID reports whether id passes the stable bridge's Session-Id rule (1–128 of
// [a-zA-Z0-9._-], no "..").
func ValidSessionID(id string) bool {
	if len(id) < 1 || len(id) > 128 || strings.Contains(id, "..") {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ExecOptions is one stable /exec call.
type ExecOptions struct {
	Argv    []string
	Cwd     string // "" = /workspace (relative paths join /workspace)
	Session string // "" = stateless (fresh bash -c); else the session, created by first use
}

// ExecEventKind says what an ExecEvent is.
type ExecEventKind int

const (
	ExecStdout      ExecEventKind = iota + 1 // Text holds output, decoded by the container as UTF-8
	ExecStderr                               // Text holds error output
	ExecExit                                 // the stream reported an exit code (Code): reported, not confirmed
	ExecError                                // the bridge sent an error event (ErrCode, Message); final
	ExecInterrupted                          // the body ended without exit or error (Err): outcome unknown; final
)

func (k ExecEventKind) String() string {
	switch k {
	case ExecStdout:
		return "stdout"
	case ExecStderr:
		return "stderr"
	case ExecExit:
		return "exit"
	case ExecError:
		return "error"
	case ExecInterrupted:
		return "interrupted"
	}
	return "unknown"
}

// ExecEvent is one thing an /exec stream said, or how it ended.
type ExecEvent struct {
	Kind    ExecEventKind
	Time    time.Time
	Text    []byte // ExecStdout/ExecStderr: the output chunk (U+FFFD where the bytes were not UTF-8)
	Code    int    // ExecExit: the reported exit code
	ErrCode string // ExecError: "exec_error" (container side) or "exec_transport_error" (bridge → container)
	Message string // ExecError: the bridge's text
	Err     error  // ExecInterrupted: why the body ended
}

// ExecRun is one running /exec stream. Events ends after the final event (ExecExit, ExecError or
// ExecInterrupted); closing the run, or cancelling its context, stops reading — the process runs
// on in the sandbox either way (the stable API cannot stop it).
type ExecRun struct {
	events chan ExecEvent
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Events delivers the stream's events in order.
func (r *ExecRun) Events() <-chan ExecEvent { return r.events }

// Close stops reading and waits for the reader to end.
func (r *ExecRun) Close() error {
	r.once.Do(r.cancel)
	<-r.done
	return nil
}

// Exec starts argv through POST /v1/sandbox/{id}/exec (this starts the container when none runs)
// and streams its events. It fails without a run when the bridge refuses the request.
func (s *Stable) Exec(ctx context.Context, sandbox string, opts ExecOptions) (*ExecRun, error) {
	if err := checkSandbox(sandbox); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	if len(opts.Argv) == 0 {
		return nil, fmt.Errorf("exec: empty command: %w", ErrInvalidRequest)
	}
	if opts.Session != "" && !ValidSessionID(opts.Session) {
		return nil, fmt.Errorf("exec: session ID %q: %w", opts.Session, ErrInvalidRequest)
	}
	body := struct {
		Argv []string `json:"argv"`
		Cwd  string   `json:"cwd,omitempty"`
	}{opts.Argv, opts.Cwd}
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	op := "exec in " + sandbox
	// The header wait is bounded; the stream itself is not (commands may run for hours).
	hctx, hcancel := context.WithTimeout(rctx, s.c.timeout)
	req, err := s.request(rctx, http.MethodPost, sandboxPath(sandbox, "exec"), bytes.NewReader(payload))
	if err != nil {
		hcancel()
		cancel()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if opts.Session != "" {
		req.Header.Set("Session-Id", opts.Session)
	}
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := s.c.send(op, req)
		got <- answer{resp, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-hctx.Done():
		cancel()
		a = <-got
		if a.err == nil {
			a.resp.Body.Close()
			a.err = &TransportError{Op: op, Err: errors.New("no answer in time")}
		}
	}
	hcancel()
	if a.err != nil {
		cancel()
		return nil, a.err
	}
	run := &ExecRun{events: make(chan ExecEvent, 64), cancel: cancel, done: make(chan struct{})}
	go run.read(rctx, a.resp.Body)
	return run, nil
}

// read decodes the SSE body into events and classifies its ending.
func (r *ExecRun) read(ctx context.Context, body io.ReadCloser) {
	defer close(r.done)
	defer close(r.events)
	defer body.Close()
	go func() { <-ctx.Done(); body.Close() }()
	emit := func(ev ExecEvent) bool {
		ev.Time = time.Now()
		select {
		case r.events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	dec := NewSSEDecoder(body)
	for {
		ev, err := dec.Next()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the body ended without an exit or error event")
			}
			emit(ExecEvent{Kind: ExecInterrupted, Err: err})
			return
		}
		switch ev.Event {
		case "stdout", "stderr":
			text, derr := base64.StdEncoding.DecodeString(string(ev.Data))
			if derr != nil {
				emit(ExecEvent{Kind: ExecInterrupted, Err: fmt.Errorf("malformed %s event: %w", ev.Event, derr)})
				return
			}
			kind := ExecStdout
			if ev.Event == "stderr" {
				kind = ExecStderr
			}
			if !emit(ExecEvent{Kind: kind, Text: text}) {
				return
			}
		case "exit":
			var x struct {
				ExitCode *int `json:"exit_code"`
			}
			if json.Unmarshal(ev.Data, &x) != nil || x.ExitCode == nil {
				emit(ExecEvent{Kind: ExecInterrupted, Err: fmt.Errorf("malformed exit event %q", clipBytes(ev.Data))})
				return
			}
			emit(ExecEvent{Kind: ExecExit, Code: *x.ExitCode})
			return
		case "error":
			var x struct {
				Error string `json:"error"`
				Code  string `json:"code"`
			}
			_ = json.Unmarshal(ev.Data, &x)
			if x.Error == "" && x.Code == "" {
				x.Error = string(clipBytes(ev.Data))
			}
			emit(ExecEvent{Kind: ExecError, ErrCode: x.Code, Message: x.Error})
			return
		default:
			// Unknown events are ignored (none exist in 0.12).
		}
	}
}

func clipBytes(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// SessionOptions creates a stable session.
type SessionOptions struct {
	ID  string            `json:"id,omitempty"` // "" = the bridge picks session-<epoch ms>
	Cwd string            `json:"cwd,omitempty"`
	Env map[string]string `json:"env,omitempty"`
}

// CreateSession creates a session (POST /v1/sandbox/{id}/session; starts the container).
func (s *Stable) CreateSession(ctx context.Context, sandbox string, opts SessionOptions) (string, error) {
	if err := checkSandbox(sandbox); err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	if opts.ID != "" && !ValidSessionID(opts.ID) {
		// The bridge would create it, but no later call could name it.
		return "", fmt.Errorf("create session: session ID %q cannot be used in a Session-Id header: %w", opts.ID, ErrInvalidRequest)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := s.do(ctx, "create session in "+sandbox, http.MethodPost, sandboxPath(sandbox, "session"), opts, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("create session in %s: the bridge answered no ID", sandbox)
	}
	return out.ID, nil
}

// DeleteSession deletes a session (DELETE /v1/sandbox/{id}/session/{sid}; starts the container
// when none runs — a slept sandbox has no sessions left, and the answer is then session_error).
func (s *Stable) DeleteSession(ctx context.Context, sandbox, session string) error {
	if err := checkSandbox(sandbox); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	if session == "" {
		return fmt.Errorf("delete session: empty ID: %w", ErrInvalidRequest)
	}
	return s.do(ctx, "delete session "+session, http.MethodDelete, sandboxPath(sandbox, "session", session), nil, nil)
}

// ErrFileUnreadable is a stable file read whose body broke off: on 0.12 that is how a missing file
// is answered (200, then the body aborts), and it is also what a cut connection looks like.
var ErrFileUnreadable = errors.New("file missing or read cut off")

// ReadFile reads a workspace file byte for byte (GET …/file/…; starts the container).
func (s *Stable) ReadFile(ctx context.Context, sandbox, path string) ([]byte, error) {
	return s.c.readFile(ctx, s.request, true, sandbox, path)
}

// WriteFile writes a workspace file (PUT …/file/…; starts the container).
func (s *Stable) WriteFile(ctx context.Context, sandbox, path string, data []byte) error {
	return s.c.writeFile(ctx, s.request, sandbox, path, data)
}

// do is a bounded JSON exchange on a stable sandbox route (answers up to 1 MiB).
func (s *Stable) do(ctx context.Context, op, method, path string, in, out any) error {
	return s.c.exchange(ctx, s.request, 1<<20, op, method, path, in, out)
}
