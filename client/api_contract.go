package client

// This file fixes the client's public surface so the UI, the command line and the client can be
// built side by side. Each stub is replaced by its real implementation in its own file; signatures
// only change together with their callers.

import (
	"context"
	"errors"
	"net/http"
	"time"
)

var errNotBuilt = errors.New("not built yet")

// Client is a bridge client. It is safe for concurrent use.
type Client struct {
	base      string
	token     string
	http      *http.Client
	userAgent string
	timeout   time.Duration
}

// Option configures a Client.
type Option func(*Client)

func WithToken(token string) Option             { return func(c *Client) { c.token = token } }
func WithHTTPClient(h *http.Client) Option      { return func(c *Client) { c.http = h } }
func WithUserAgent(ua string) Option            { return func(c *Client) { c.userAgent = ua } }
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// New returns a client for the bridge at baseURL (e.g. "http://127.0.0.1:7681").
func New(baseURL string, opts ...Option) (*Client, error) {
	c := &Client{base: baseURL, http: http.DefaultClient, timeout: 30 * time.Second}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL is the bridge URL the client talks to.
func (c *Client) BaseURL() string { return c.base }

// Dialect names the bridge API a bridge speaks.
type Dialect string

const (
	DialectPreview Dialect = "v1-preview"
	DialectStable  Dialect = "stable"
	DialectUnknown Dialect = "unknown"
)

// Capabilities is what GET /v1/openapi.json says the bridge can do.
type Capabilities struct {
	Dialect Dialect
	// Local is true for sandscope's local bridge: it lists sandboxes, stops and replaces them, and
	// reports incarnations explicitly.
	Local bool
}

func (c *Client) Capabilities(ctx context.Context) (Capabilities, error) {
	return Capabilities{}, errNotBuilt
}
func (c *Client) Health(ctx context.Context) error { return errNotBuilt }

func (c *Client) CreateSandbox(ctx context.Context) (string, error)        { return "", errNotBuilt }
func (c *Client) DeleteSandbox(ctx context.Context, sandbox string) error  { return errNotBuilt }
func (c *Client) ListSandboxes(ctx context.Context) ([]SandboxInfo, error) { return nil, errNotBuilt }
func (c *Client) StopSandbox(ctx context.Context, sandbox string) error    { return errNotBuilt }
func (c *Client) ReplaceSandbox(ctx context.Context, sandbox string) error { return errNotBuilt }
func (c *Client) Running(ctx context.Context, sandbox string) (RunningStatus, error) {
	return RunningStatus{}, errNotBuilt
}

func (c *Client) StartProcess(ctx context.Context, sandbox string, req ExecRequest) (Process, error) {
	return Process{}, errNotBuilt
}
func (c *Client) ListProcesses(ctx context.Context, sandbox string) ([]Process, error) {
	return nil, errNotBuilt
}
func (c *Client) GetProcess(ctx context.Context, sandbox, process string) (Process, error) {
	return Process{}, errNotBuilt
}

// KillProcess sends signal (1..64; 0 means the bridge default, SIGTERM) to the process tree.
func (c *Client) KillProcess(ctx context.Context, sandbox, process string, signal int) error {
	return errNotBuilt
}

func (c *Client) CreateTerminal(ctx context.Context, sandbox string, req TerminalRequest) (Terminal, error) {
	return Terminal{}, errNotBuilt
}
func (c *Client) ListTerminals(ctx context.Context, sandbox string) ([]Terminal, error) {
	return nil, errNotBuilt
}
func (c *Client) GetTerminal(ctx context.Context, sandbox, terminal string) (Terminal, error) {
	return Terminal{}, errNotBuilt
}
func (c *Client) InterruptTerminal(ctx context.Context, sandbox, terminal string) error {
	return errNotBuilt
}
func (c *Client) TerminateTerminal(ctx context.Context, sandbox, terminal string) error {
	return errNotBuilt
}

func (c *Client) ReadFile(ctx context.Context, sandbox, path string) ([]byte, error) {
	return nil, errNotBuilt
}
func (c *Client) WriteFile(ctx context.Context, sandbox, path string, data []byte) error {
	return errNotBuilt
}

// FollowOptions tunes a Follower. Zero values mean sensible defaults.
type FollowOptions struct {
	Since       string        // resume strictly after this cursor; "" = from the oldest retained byte
	QuietAfter  time.Duration // no data for this long triggers a status check (default 5s)
	RetryBudget int           // reconnect attempts before Failed (default 10)
	MaxBackoff  time.Duration // cap of the exponential backoff (default 10s)
	NoFollow    bool          // snapshot only: deliver what exists now, then end without waiting
}

// Follower follows one process's log. Events is closed after a final event (Ended, Lost, Failed) or
// when the context is cancelled.
type Follower struct {
	events chan LogEvent
}

func (f *Follower) Events() <-chan LogEvent { return f.events }

// Follow starts following a process's log.
func (c *Client) Follow(ctx context.Context, sandbox, process string, opts FollowOptions) *Follower {
	f := &Follower{events: make(chan LogEvent)}
	close(f.events)
	return f
}

// WatchOptions tunes a Watcher.
type WatchOptions struct {
	FastInterval time.Duration // while focused (default 1s)
	SlowInterval time.Duration // otherwise (default 10s)
	MaxBackoff   time.Duration // on errors (default 30s)
}

// Watcher polls a sandbox with non-waking lookups and reports changes.
type Watcher struct {
	events chan SandboxEvent
}

func (w *Watcher) Events() <-chan SandboxEvent { return w.events }

// SetFocused switches between the fast and the slow poll rate.
func (w *Watcher) SetFocused(focused bool) {}

// Watch starts watching a sandbox. Events is closed when the context is cancelled.
func (c *Client) Watch(ctx context.Context, sandbox string, opts WatchOptions) *Watcher {
	w := &Watcher{events: make(chan SandboxEvent)}
	close(w.events)
	return w
}
