// Package uitest holds what sandscope's UI tests share: fake drivers whose streams the test
// feeds (Bridge, a preview-like driver with every optional interface but sessions; Waking, a
// driver that offers only what a stable bridge does), a fixed clock, plain (ASCII) styles and
// golden-file comparison with an -update flag.
package uitest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/keymap"
	"sandscope/themes"
	"sandscope/ui/common"
)

// T0 is the fixed "now" of UI tests.
var T0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// Bridge is a fake preview driver: driver.Driver with Statuses, Killer, Lifecycle, Terminals,
// Shells and Pool. Calls are recorded; streams are channels the test feeds.
type Bridge struct {
	mu sync.Mutex
	// Caps is what the bridge's document said (zero: the preview API).
	Caps      client.Capabilities
	Calls     []string
	Sandboxes []client.SandboxInfo
	ListErr   error
	RunningOf map[string]client.RunningStatus
	RunErr    error
	Started   []client.ExecRequest
	StartErr  error
	Sessions  []string // the session of each start ("" none)
	Killed    []int
	Terminals []client.TerminalRequest
	Follows   map[string]chan client.LogEvent
	Watches   map[string]chan client.SandboxEvent
	NextID    string
	TermConns map[string]*TermConn
	// Pool answers PoolStats (PoolErr first; neither: client.ErrUnsupported, as the local bridge).
	Pool    *client.PoolStats
	PoolErr error
}

// NewBridge makes an empty fake.
func NewBridge() *Bridge {
	return &Bridge{RunningOf: map[string]client.RunningStatus{}, Follows: map[string]chan client.LogEvent{}, Watches: map[string]chan client.SandboxEvent{},
		Caps: client.Capabilities{ListPath: ListPath}}
}

// ListPath is where the fakes say their sandbox list is (as sandscope's local bridge does).
const ListPath = "/v1/x-sandscope/sandboxes"

func (b *Bridge) rec(s string) {
	b.mu.Lock()
	b.Calls = append(b.Calls, s)
	b.mu.Unlock()
}

func (b *Bridge) ListSandboxes(ctx context.Context) ([]client.SandboxInfo, error) {
	b.rec("list")
	return b.Sandboxes, b.ListErr
}
func (b *Bridge) CreateSandbox(ctx context.Context) (string, error) {
	b.rec("create")
	if b.NextID == "" {
		return "newsandboxaaaaaaaaaaaaaa", nil
	}
	return b.NextID, nil
}
func (b *Bridge) DeleteSandbox(ctx context.Context, s string) error { b.rec("delete " + s); return nil }
func (b *Bridge) StopSandbox(ctx context.Context, s string) error   { b.rec("stop " + s); return nil }
func (b *Bridge) ReplaceSandbox(ctx context.Context, s string) error {
	b.rec("replace " + s)
	return nil
}
func (b *Bridge) Running(ctx context.Context, s string) (client.RunningStatus, error) {
	b.rec("running " + s)
	return b.RunningOf[s], b.RunErr
}
func (b *Bridge) BaseURL() string                   { return "http://127.0.0.1:7681" }
func (b *Bridge) Capabilities() client.Capabilities { return b.Caps }
func (b *Bridge) Features() driver.Features         { return b.Caps.Features() }
func (b *Bridge) Health(ctx context.Context) error  { return nil }
func (b *Bridge) Close() error                      { b.rec("close"); return nil }
func (b *Bridge) Runs(ctx context.Context, s string) ([]driver.Run, error) {
	b.rec("runs " + s)
	return nil, nil
}
func (b *Bridge) Run(ctx context.Context, s, id string) (driver.Run, error) {
	b.rec("run " + id)
	return driver.Run{}, client.ErrNotFound
}
func (b *Bridge) ListTerminals(ctx context.Context, s string) ([]client.Terminal, error) {
	return nil, nil
}
func (b *Bridge) Start(ctx context.Context, s string, req driver.StartRequest) (driver.Run, error) {
	r := req.ExecRequest
	b.rec("start " + s + " " + strings.Join(r.Argv, " "))
	b.mu.Lock()
	b.Started = append(b.Started, r)
	b.Sessions = append(b.Sessions, req.Session)
	b.mu.Unlock()
	if b.StartErr != nil {
		return client.Process{}, b.StartErr
	}
	return client.Process{ID: "p9", PID: 99, Command: r.Argv, Cwd: r.Cwd, State: "running", StartedAt: T0}, nil
}
func (b *Bridge) Kill(ctx context.Context, s, p string, sig int) error {
	b.rec("kill " + p)
	b.mu.Lock()
	b.Killed = append(b.Killed, sig)
	b.mu.Unlock()
	return nil
}
func (b *Bridge) Follow(ctx context.Context, s, p string, o driver.FollowOptions) <-chan client.LogEvent {
	if o.Background {
		b.rec("follow-background " + p)
	} else {
		b.rec("follow " + p)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	ch, ok := b.Follows[p]
	if !ok {
		ch = make(chan client.LogEvent, 1024)
		b.Follows[p] = ch
	}
	return ch
}
func (b *Bridge) Watch(ctx context.Context, s string, o client.WatchOptions) driver.WatchHandle {
	b.rec("watch " + s)
	b.mu.Lock()
	defer b.mu.Unlock()
	ch, ok := b.Watches[s]
	if !ok {
		ch = make(chan client.SandboxEvent, 1024)
		b.Watches[s] = ch
	}
	return driver.WatchHandle{Events: ch, SetFocused: func(bool) {}}
}

// CreateTerminal returns terminal t9.
func (b *Bridge) CreateTerminal(ctx context.Context, s string, r client.TerminalRequest) (client.Terminal, error) {
	b.rec("terminal " + s)
	b.mu.Lock()
	b.Terminals = append(b.Terminals, r)
	b.mu.Unlock()
	return client.Terminal{ID: "t9", PID: 9, Command: r.Argv, Status: "running"}, nil
}

func (b *Bridge) InterruptTerminal(ctx context.Context, s, t string) error {
	b.rec("interrupt " + s + " " + t)
	return nil
}
func (b *Bridge) TerminateTerminal(ctx context.Context, s, t string) error {
	b.rec("terminate " + s + " " + t)
	return nil
}

// ConnectTerminal returns the connection TermConns holds for t, or fails (terminal panes are
// tested in their own package).
func (b *Bridge) ConnectTerminal(ctx context.Context, s, t string, o client.ConnectOptions) (client.TermConn, error) {
	b.rec(fmt.Sprintf("connect %s %dx%d", t, o.Cols, o.Rows))
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.TermConns[t]; ok {
		return c, nil
	}
	return nil, errors.New("no terminals in the fake bridge")
}

// OpenShell creates terminal t9 and connects to it, as the preview driver does.
func (b *Bridge) OpenShell(ctx context.Context, s string, r driver.ShellRequest) (client.TermConn, error) {
	t, err := b.CreateTerminal(ctx, s, client.TerminalRequest{Cols: r.Cols, Rows: r.Rows})
	if err != nil {
		return nil, err
	}
	return b.ConnectTerminal(ctx, s, t.ID, client.ConnectOptions{Cols: r.Cols, Rows: r.Rows})
}

// TermConn is a fake terminal connection: the test feeds Ch; writes and closing are recorded.
type TermConn struct {
	Ch     chan client.TermEvent
	mu     sync.Mutex
	wrote  []byte
	closed bool
}

// NewTermConn makes a connection whose events the test sends on Ch.
func NewTermConn() *TermConn { return &TermConn{Ch: make(chan client.TermEvent, 16)} }

func (c *TermConn) Events() <-chan client.TermEvent { return c.Ch }
func (c *TermConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, errors.New("closed")
	}
	c.wrote = append(c.wrote, p...)
	return len(p), nil
}
func (c *TermConn) Resize(cols, rows int) error { return nil }
func (c *TermConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

// Written is what was written, and whether the connection was closed.
func (c *TermConn) Written() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.wrote), c.closed
}

// PoolStats answers from Pool and PoolErr.
func (b *Bridge) PoolStats(ctx context.Context) (client.PoolStats, error) {
	b.rec("pool stats")
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.PoolErr != nil:
		return client.PoolStats{}, b.PoolErr
	case b.Pool == nil:
		return client.PoolStats{}, &client.APIError{Status: 501, Code: "not_supported", Message: "the local bridge does not support the warm pool"}
	}
	return *b.Pool, nil
}

var (
	_ driver.Driver    = (*Bridge)(nil)
	_ driver.Statuses  = (*Bridge)(nil)
	_ driver.Killer    = (*Bridge)(nil)
	_ driver.Lifecycle = (*Bridge)(nil)
	_ driver.Terminals = (*Bridge)(nil)
	_ driver.Shells    = (*Bridge)(nil)
	_ driver.Pool      = (*Bridge)(nil)
)

// CallList is a copy of the calls made so far: a background watcher records its calls from its
// own goroutine, so a test reads them under the lock.
func (b *Bridge) CallList() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.Calls...)
}

// Called reports whether a call with this prefix was made.
func (b *Bridge) Called(prefix string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.Calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

// Context returns a shared context at w×h with plain styles, default keys, the fixed clock and
// temporary state and cache directories.
func Context(t testing.TB, br driver.Driver, w, h int) *common.Context {
	p, err := themes.Builtin("dark")
	if err != nil {
		t.Fatal(err)
	}
	return &common.Context{
		Width: w, Height: h,
		Styles:      themes.New(p, themes.AsciiRenderer()),
		Keys:        keymap.New(),
		Driver:      br,
		BridgeLabel: "http://127.0.0.1:7681",
		BridgeURL:   "http://127.0.0.1:7681",
		Local:       true,
		StateDir:    t.TempDir(),
		CacheDir:    t.TempDir(),
		Ctx:         context.Background(),
		Now:         func() time.Time { return T0 },
	}
}

// Golden compares got with testdata/<name>.golden, rewriting it when update is set. Trailing
// spaces are kept: the view's exact width matters.
func Golden(t testing.TB, name, got string, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run with -update to create it)", path, err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update after checking):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("%s: view holds escape sequences under the ASCII profile", name)
	}
}

// Waking is a fake driver offering what a stable bridge offers: the core (Runs answered from
// what it started), Sessions, Shells and Waker; no kill, no terminals, no status lookups, no
// pool. Its calls go to the embedded fake's log (B.Calls), sessions and wake notices included.
type Waking struct {
	B *Bridge
	// SessionList answers Sessions; Notice is what WakeNotice says (once per sandbox, "" after).
	SessionList []driver.Session
	Notice      string
	told        map[string]bool
	Shells      []driver.ShellRequest
	ShellConn   *TermConn
}

// NewWaking makes a fake stable driver whose capabilities say the stable dialect.
func NewWaking() *Waking {
	b := NewBridge()
	b.Caps = client.Capabilities{Dialect: client.DialectStable, ListPath: ListPath}
	return &Waking{B: b, Notice: "this starts the container of the sandbox", told: map[string]bool{}}
}

var (
	_ driver.Driver   = (*Waking)(nil)
	_ driver.Sessions = (*Waking)(nil)
	_ driver.Shells   = (*Waking)(nil)
	_ driver.Waker    = (*Waking)(nil)
)

func (s *Waking) BaseURL() string                   { return s.B.BaseURL() }
func (s *Waking) Capabilities() client.Capabilities { return s.B.Capabilities() }
func (s *Waking) Features() driver.Features         { return s.B.Features() }
func (s *Waking) Health(ctx context.Context) error  { return nil }
func (s *Waking) Close() error                      { return s.B.Close() }
func (s *Waking) ListSandboxes(ctx context.Context) ([]client.SandboxInfo, error) {
	return s.B.ListSandboxes(ctx)
}
func (s *Waking) CreateSandbox(ctx context.Context) (string, error) { return s.B.CreateSandbox(ctx) }
func (s *Waking) Runs(ctx context.Context, sb string) ([]driver.Run, error) {
	return s.B.Runs(ctx, sb)
}
func (s *Waking) Run(ctx context.Context, sb, id string) (driver.Run, error) {
	return s.B.Run(ctx, sb, id)
}
func (s *Waking) Start(ctx context.Context, sb string, req driver.StartRequest) (driver.Run, error) {
	return s.B.Start(ctx, sb, req)
}
func (s *Waking) Follow(ctx context.Context, sb, id string, o driver.FollowOptions) <-chan client.LogEvent {
	return s.B.Follow(ctx, sb, id, o)
}
func (s *Waking) Watch(ctx context.Context, sb string, o client.WatchOptions) driver.WatchHandle {
	return s.B.Watch(ctx, sb, o)
}

// Sessions answers SessionList (no request: the record's answer on stable).
func (s *Waking) Sessions(ctx context.Context, sb string) ([]driver.Session, error) {
	s.B.rec("sessions " + sb)
	s.B.mu.Lock()
	defer s.B.mu.Unlock()
	return append([]driver.Session(nil), s.SessionList...), nil
}

// CreateSession adds the session (ID "session-1" when none is asked for).
func (s *Waking) CreateSession(ctx context.Context, sb string, o client.SessionOptions) (string, error) {
	id := o.ID
	if id == "" {
		id = "session-1"
	}
	s.B.rec("create-session " + sb + " " + id)
	s.B.mu.Lock()
	s.SessionList = append(s.SessionList, driver.Session{ID: id, Created: true, Seen: T0})
	s.B.mu.Unlock()
	return id, nil
}

// DeleteSession drops the session.
func (s *Waking) DeleteSession(ctx context.Context, sb, id string) error {
	s.B.rec("delete-session " + sb + " " + id)
	s.B.mu.Lock()
	defer s.B.mu.Unlock()
	for i, x := range s.SessionList {
		if x.ID == id {
			s.SessionList = append(s.SessionList[:i], s.SessionList[i+1:]...)
			break
		}
	}
	return nil
}

// OpenShell records the request and returns ShellConn (or fails when there is none).
func (s *Waking) OpenShell(ctx context.Context, sb string, r driver.ShellRequest) (client.TermConn, error) {
	s.B.rec("shell " + sb + " " + r.Session)
	s.B.mu.Lock()
	defer s.B.mu.Unlock()
	s.Shells = append(s.Shells, r)
	if s.ShellConn == nil {
		return nil, errors.New("no shell in the fake bridge")
	}
	return s.ShellConn, nil
}

// WakeNotice says Notice once per sandbox, as the stable driver does.
func (s *Waking) WakeNotice(sb, what string) string {
	s.B.rec("wake-notice " + sb)
	s.B.mu.Lock()
	defer s.B.mu.Unlock()
	if s.told[sb] {
		return ""
	}
	s.told[sb] = true
	return what + ": " + s.Notice
}
