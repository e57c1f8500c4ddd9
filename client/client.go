package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"sandscope/internal/buildinfo"
)

// DefaultUserAgent is sent when no WithUserAgent option is given: sandscope/ and this build's
// version.
var DefaultUserAgent = "sandscope/" + buildinfo.Version()

// Client is a bridge client. It is safe for concurrent use.
type Client struct {
	base      string // scheme://host[:port][/prefix], no trailing slash
	token     string
	http      *http.Client
	userAgent string
	timeout   time.Duration // per non-streaming call
	answer    time.Duration // the wait for an answer's headers, streams included (≤ timeout)

	capsMu     sync.Mutex
	caps       *Capabilities
	capsFailed time.Time // when the last capability read failed (zero: none failed)
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token sent on every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient replaces the HTTP client. Its Timeout should be zero: streams are bounded by their
// context, not by a whole-body deadline.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent header (default DefaultUserAgent).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRequestTimeout bounds each non-streaming call (default 30s).
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithAnswerTimeout bounds the wait for the bridge to answer any request, a stream's included:
// past it the call fails with a *TransportError holding a *NoAnswerError (ErrNoAnswer), which
// names the bridge and the wait. Default: the request timeout.
func WithAnswerTimeout(d time.Duration) Option { return func(c *Client) { c.answer = d } }

type answerWaitKey struct{}

// WithAnswerWait returns a context whose requests wait at most d for the bridge's answer (when d
// is shorter than the client's own answer timeout): a follower that retries asks for less than a
// command that tries once.
func WithAnswerWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, answerWaitKey{}, d)
}

// answerWait is how long a request made with ctx waits for the bridge's answer.
func (c *Client) answerWait(ctx context.Context) time.Duration {
	w := c.timeout
	if c.answer > 0 && c.answer < w {
		w = c.answer
	}
	if d, ok := ctx.Value(answerWaitKey{}).(time.Duration); ok && d > 0 && d < w {
		w = d
	}
	return w
}

// AnswerWait is how long a request made with ctx waits for the bridge to answer.
func (c *Client) AnswerWait(ctx context.Context) time.Duration { return c.answerWait(ctx) }

// New returns a client for the bridge at baseURL (e.g. "http://127.0.0.1:7681").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("bridge URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("bridge URL %q: scheme must be http or https", u.Redacted())
	}
	if u.Host == "" {
		return nil, fmt.Errorf("bridge URL %q: no host", u.Redacted())
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("bridge URL %q: must not carry credentials, a query or a fragment", u.Redacted())
	}
	c := &Client{
		base:      strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"),
		http:      &http.Client{Transport: defaultTransport},
		userAgent: DefaultUserAgent,
		timeout:   30 * time.Second,
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Transport: defaultTransport}
	}
	if c.timeout <= 0 {
		c.timeout = 30 * time.Second
	}
	return c, nil
}

// defaultTransport is shared by clients that bring no HTTP client of their own. No proxy from the
// environment: the bridge token must not travel through an unexpected hop.
var defaultTransport = &http.Transport{
	Proxy:                 nil,
	DialContext:           dialBridge,
	MaxIdleConnsPerHost:   16,
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
	ResponseHeaderTimeout: 0,
	ForceAttemptHTTP2:     true,
	// Log streams read the socket straight into their own large buffers: net/http's reader
	// buffer only holds chunk headers and small answers. A large one took whole chunks of a
	// stream in, to be copied out again (7% of logs -f's CPU on a fast replay).
	ReadBufferSize: 16 << 10,
}

// BaseURL is the bridge URL the client talks to.
func (c *Client) BaseURL() string { return c.base }

// ValidSandboxID reports whether id has the bridge's sandbox ID format (lowercase base32 alphabet,
// 1–128 characters). A loop, not a regular expression: `{1,128}` compiles to 128 copies of the
// class, about 0.5 ms at every start of every command.
func ValidSandboxID(id string) bool {
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

func checkSandbox(id string) error {
	if !ValidSandboxID(id) {
		return fmt.Errorf("sandbox ID %q: must be 1-128 characters of a-z and 2-7: %w", id, ErrInvalidRequest)
	}
	return nil
}

// sandboxPath is /v1/sandbox/{id}/{parts…} with each part path-escaped.
func sandboxPath(sandbox string, parts ...string) string {
	var b strings.Builder
	b.WriteString("/v1/sandbox/")
	b.WriteString(sandbox)
	for _, p := range parts {
		b.WriteString("/")
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}

// newRequest builds a request to the bridge with the token and user agent set. path is already
// escaped.
func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Request, error) {
	if strings.HasPrefix(path, "/v1/sandbox/") {
		if err := c.checkDialect(ctx); err != nil {
			return nil, err
		}
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range c.headers() {
		req.Header[k] = v
	}
	return req, nil
}

// headers are the ones every request to the bridge carries (also used for WebSocket upgrades).
func (c *Client) headers() http.Header {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	h.Set("User-Agent", c.userAgent)
	return h
}

// send performs req; any failure to get an answer becomes a *TransportError, and no answer within
// the answer wait (answerWait) one holding a *NoAnswerError. Non-2xx answers become *APIError
// (the body is consumed and closed). A response's body stays readable until it is closed.
func (c *Client) send(op string, req *http.Request) (*http.Response, error) {
	parent := req.Context()
	noAnswer := &NoAnswerError{Bridge: c.base, After: c.answerWait(parent)}
	ctx, cancel := context.WithCancelCause(parent)
	timer := time.AfterFunc(noAnswer.After, func() { cancel(noAnswer) })
	resp, err := c.http.Do(req.WithContext(ctx))
	inTime := timer.Stop()
	if err == nil && !inTime {
		resp.Body.Close()
		err = context.Cause(ctx)
	}
	if err != nil {
		cancel(nil)
		var na *NoAnswerError
		if errors.As(context.Cause(ctx), &na) || errors.As(context.Cause(parent), &na) {
			return nil, &TransportError{Op: op, Err: na}
		}
		if ctxErr := parent.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, fmt.Errorf("%s: %w", op, ctxErr)
		}
		return nil, &TransportError{Op: op, Err: scrubErr(withoutURL(err), c.token)}
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ae := readAPIError(resp, c.token)
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", op, ae)
	}
	return resp, nil
}

// cancelOnClose releases a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// requestFunc builds a request on one dialect's routes; the dialect gate lives in it, so the
// exchanges below serve both dialects.
type requestFunc func(ctx context.Context, method, path string, body io.Reader) (*http.Request, error)

// previewRequest is the preview dialect's requestFunc.
func (c *Client) previewRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	return c.newRequest(ctx, method, path, nil, body)
}

// call is a bounded request/response exchange. in (if non-nil) is sent as JSON; out (if non-nil)
// receives the JSON answer.
func (c *Client) call(ctx context.Context, op, method, path string, in, out any) error {
	return c.exchange(ctx, c.previewRequest, 0, op, method, path, in, out)
}

// exchange is call on any dialect's routes; maxAnswer > 0 bounds the JSON answer read.
func (c *Client) exchange(ctx context.Context, mk requestFunc, maxAnswer int64, op, method, path string, in, out any) error {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: encode request: %w", op, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := mk(ctx, method, path, body)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.send(op, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	var answer io.Reader = resp.Body
	if maxAnswer > 0 {
		answer = io.LimitReader(resp.Body, maxAnswer)
	}
	if err := json.NewDecoder(answer).Decode(out); err != nil {
		var na *NoAnswerError
		if ctx.Err() != nil && errors.As(context.Cause(ctx), &na) {
			return &TransportError{Op: op, Err: na}
		}
		if ctx.Err() != nil || isTransportRead(err) {
			return &TransportError{Op: op, Err: err}
		}
		return fmt.Errorf("%s: decode answer: %w", op, err)
	}
	return nil
}

// callContext bounds one non-streaming call by the request timeout; when that ends the wait for
// the answer, the call fails as a *NoAnswerError.
func (c *Client) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, c.timeout, &NoAnswerError{Bridge: c.base, After: c.timeout})
}

// isTransportRead reports whether a body read error means the connection broke.
func isTransportRead(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe") ||
		strings.Contains(s, "use of closed network connection") || strings.Contains(s, "stream error")
}

// Health calls GET /health (unauthenticated on the bridge).
func (c *Client) Health(ctx context.Context) error {
	var out struct {
		OK bool `json:"ok"`
	}
	if err := c.call(ctx, "health", http.MethodGet, "/health", nil, &out); err != nil {
		return err
	}
	if !out.OK {
		return fmt.Errorf("health: bridge says not ok")
	}
	return nil
}

// CreateSandbox asks the bridge to mint a sandbox ID (POST /v1/sandbox). No container starts.
func (c *Client) CreateSandbox(ctx context.Context) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	if err := c.call(ctx, "create sandbox", http.MethodPost, "/v1/sandbox", nil, &out); err != nil {
		return "", err
	}
	if !ValidSandboxID(out.ID) {
		return "", fmt.Errorf("create sandbox: bridge returned a malformed ID %q", out.ID)
	}
	return out.ID, nil
}

// DeleteSandbox destroys a sandbox's container (DELETE /v1/sandbox/{id}).
func (c *Client) DeleteSandbox(ctx context.Context, sandbox string) error {
	if err := checkSandbox(sandbox); err != nil {
		return fmt.Errorf("delete sandbox: %w", err)
	}
	return c.call(ctx, "delete sandbox "+sandbox, http.MethodDelete, sandboxPath(sandbox), nil, nil)
}

// legacyListPath is where older local bridges list sandboxes (their documents announce it).
const legacyListPath = "/v1/sandbox"

// defaultListPath is where sandscope's local bridge lists sandboxes in both dialects.
const defaultListPath = "/v1/x-sandscope/sandboxes"

// ListSandboxes lists sandboxes on the path the bridge's document announces (Capabilities.ListPath,
// an extension; no container starts). On a bridge that announces none the error matches
// ErrUnsupported and nothing is sent. When the document cannot be read, the local bridge's path
// is tried, then the older one.
func (c *Client) ListSandboxes(ctx context.Context) ([]SandboxInfo, error) {
	const op = "list sandboxes"
	caps, err := c.Capabilities(ctx)
	if errors.Is(err, ErrNoAnswer) {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	paths := []string{caps.ListPath}
	switch {
	case err != nil:
		paths = []string{defaultListPath, legacyListPath}
	case caps.ListPath == "":
		return nil, fmt.Errorf("%s: %w (the bridge announces no sandbox list)", op, ErrUnsupported)
	}
	for i, p := range paths {
		var out []SandboxInfo
		err = c.call(ctx, op, http.MethodGet, p, nil, &out)
		if err == nil {
			return out, nil
		}
		if i+1 < len(paths) && !errors.Is(err, ErrUnsupported) {
			break
		}
	}
	return nil, err
}

// StopSandbox stops a sandbox's container like idle sleep (local bridge extension).
func (c *Client) StopSandbox(ctx context.Context, sandbox string) error {
	if err := checkSandbox(sandbox); err != nil {
		return fmt.Errorf("stop sandbox: %w", err)
	}
	if err := c.requireLocal(ctx, "stop sandbox"); err != nil {
		return err
	}
	return c.call(ctx, "stop sandbox "+sandbox, http.MethodPost, sandboxPath(sandbox, "stop"), nil, nil)
}

// ReplaceSandbox replaces a sandbox's container with a new incarnation (local bridge extension).
func (c *Client) ReplaceSandbox(ctx context.Context, sandbox string) error {
	if err := checkSandbox(sandbox); err != nil {
		return fmt.Errorf("replace sandbox: %w", err)
	}
	if err := c.requireLocal(ctx, "replace sandbox"); err != nil {
		return err
	}
	return c.call(ctx, "replace sandbox "+sandbox, http.MethodPost, sandboxPath(sandbox, "replace"), nil, nil)
}

// Running asks whether the sandbox's container runs (GET /running, non-waking on the preview bridge).
func (c *Client) Running(ctx context.Context, sandbox string) (RunningStatus, error) {
	var out RunningStatus
	if err := checkSandbox(sandbox); err != nil {
		return out, fmt.Errorf("running: %w", err)
	}
	err := c.call(ctx, "running "+sandbox, http.MethodGet, sandboxPath(sandbox, "running"), nil, &out)
	return out, err
}

// StartProcess launches a process (POST /processes; allocates a container if none runs).
func (c *Client) StartProcess(ctx context.Context, sandbox string, req ExecRequest) (Process, error) {
	var out Process
	if err := checkSandbox(sandbox); err != nil {
		return out, fmt.Errorf("start process: %w", err)
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return out, fmt.Errorf("start process: argv must be non-empty: %w", ErrInvalidRequest)
	}
	err := c.call(ctx, "start process in "+sandbox, http.MethodPost, sandboxPath(sandbox, "processes"), req, &out)
	return out, err
}

// ListProcesses lists a sandbox's processes (non-waking; [] when no container runs).
func (c *Client) ListProcesses(ctx context.Context, sandbox string) ([]Process, error) {
	if err := checkSandbox(sandbox); err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := []Process{}
	if err := c.call(ctx, "list processes in "+sandbox, http.MethodGet, sandboxPath(sandbox, "processes"), nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetProcess looks one process up (non-waking). A vanished process matches ErrNotFound.
func (c *Client) GetProcess(ctx context.Context, sandbox, process string) (Process, error) {
	var out Process
	if err := checkSandbox(sandbox); err != nil {
		return out, fmt.Errorf("get process: %w", err)
	}
	err := c.call(ctx, "get process "+process, http.MethodGet, sandboxPath(sandbox, "processes", process), nil, &out)
	return out, err
}

// KillProcess sends signal (1..64; 0 means the bridge default, SIGTERM) to the process tree. The
// request always carries a Content-Type so the bridge reads the body.
func (c *Client) KillProcess(ctx context.Context, sandbox, process string, signal int) error {
	if err := checkSandbox(sandbox); err != nil {
		return fmt.Errorf("kill process: %w", err)
	}
	if signal < 0 || signal > 64 {
		return fmt.Errorf("kill process %s: signal %d out of range 1..64: %w", process, signal, ErrInvalidRequest)
	}
	body := map[string]int{}
	if signal > 0 {
		body["signal"] = signal
	}
	return c.call(ctx, "kill process "+process, http.MethodPost, sandboxPath(sandbox, "processes", process, "kill"), body, nil)
}

// CreateTerminal creates a PTY terminal (allocates a container if none runs).
func (c *Client) CreateTerminal(ctx context.Context, sandbox string, req TerminalRequest) (Terminal, error) {
	var out Terminal
	if err := checkSandbox(sandbox); err != nil {
		return out, fmt.Errorf("create terminal: %w", err)
	}
	err := c.call(ctx, "create terminal in "+sandbox, http.MethodPost, sandboxPath(sandbox, "terminals"), req, &out)
	return out, err
}

// ListTerminals lists a sandbox's terminals (non-waking).
func (c *Client) ListTerminals(ctx context.Context, sandbox string) ([]Terminal, error) {
	if err := checkSandbox(sandbox); err != nil {
		return nil, fmt.Errorf("list terminals: %w", err)
	}
	out := []Terminal{}
	if err := c.call(ctx, "list terminals in "+sandbox, http.MethodGet, sandboxPath(sandbox, "terminals"), nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetTerminal looks one terminal up (non-waking).
func (c *Client) GetTerminal(ctx context.Context, sandbox, terminal string) (Terminal, error) {
	var out Terminal
	if err := checkSandbox(sandbox); err != nil {
		return out, fmt.Errorf("get terminal: %w", err)
	}
	err := c.call(ctx, "get terminal "+terminal, http.MethodGet, sandboxPath(sandbox, "terminals", terminal), nil, &out)
	return out, err
}

// InterruptTerminal sends SIGINT to the terminal's process tree.
func (c *Client) InterruptTerminal(ctx context.Context, sandbox, terminal string) error {
	if err := checkSandbox(sandbox); err != nil {
		return fmt.Errorf("interrupt terminal: %w", err)
	}
	return c.call(ctx, "interrupt terminal "+terminal, http.MethodPost, sandboxPath(sandbox, "terminals", terminal, "interrupt"), nil, nil)
}

// TerminateTerminal sends SIGTERM (then SIGKILL) to the terminal's process tree.
func (c *Client) TerminateTerminal(ctx context.Context, sandbox, terminal string) error {
	if err := checkSandbox(sandbox); err != nil {
		return fmt.Errorf("terminate terminal: %w", err)
	}
	return c.call(ctx, "terminate terminal "+terminal, http.MethodPost, sandboxPath(sandbox, "terminals", terminal, "terminate"), nil, nil)
}

// filePath turns a workspace path ("a.txt", "/workspace/a.txt") into the route's escaped tail.
func filePath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path: %w", ErrInvalidRequest)
	}
	if !strings.HasPrefix(p, "/") {
		p = "/workspace/" + p
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/"), nil
}

// maxFileSize is the bridge's body limit for file writes; reads are bounded the same way.
const maxFileSize = 32 << 20

// ReadFile reads a file from the workspace (relative paths are under /workspace).
func (c *Client) ReadFile(ctx context.Context, sandbox, path string) ([]byte, error) {
	return c.readFile(ctx, c.previewRequest, false, sandbox, path)
}

// readFile reads a workspace file through mk. cutMeansMissing is the stable dialect's answer to a
// missing file (200, then the body aborts): a body that breaks off is then ErrFileUnreadable
// rather than a transport error.
func (c *Client) readFile(ctx context.Context, mk requestFunc, cutMeansMissing bool, sandbox, path string) ([]byte, error) {
	if err := checkSandbox(sandbox); err != nil {
		return nil, fmt.Errorf("read file: %w", err)
	}
	fp, err := filePath(path)
	if err != nil {
		return nil, fmt.Errorf("read file: %w", err)
	}
	op := "read file " + path
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	req, err := mk(ctx, http.MethodGet, sandboxPath(sandbox)+"/file/"+fp, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	resp, err := c.send(op, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxFileSize+1))
	if err != nil {
		switch {
		case !cutMeansMissing:
			return nil, &TransportError{Op: op, Err: err}
		case ctx.Err() != nil:
			return nil, &TransportError{Op: op, Err: ctx.Err()}
		default:
			return nil, fmt.Errorf("%s: %w", op, ErrFileUnreadable)
		}
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", op, maxFileSize)
	}
	return data, nil
}

// WriteFile writes a file in the workspace (at most 32 MiB).
func (c *Client) WriteFile(ctx context.Context, sandbox, path string, data []byte) error {
	return c.writeFile(ctx, c.previewRequest, sandbox, path, data)
}

// writeFile writes a workspace file through mk.
func (c *Client) writeFile(ctx context.Context, mk requestFunc, sandbox, path string, data []byte) error {
	if err := checkSandbox(sandbox); err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	fp, err := filePath(path)
	if err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	op := "write file " + path
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	req, err := mk(ctx, http.MethodPut, sandboxPath(sandbox)+"/file/"+fp, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.send(op, req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	return nil
}
