package common

import (
	"context"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// Bridge is the part of the client the screens use. *client.Client satisfies it through
// FromClient; tests use fakes. Streams come back as channels so fakes can feed them.
type Bridge interface {
	ListSandboxes(ctx context.Context) ([]client.SandboxInfo, error)
	CreateSandbox(ctx context.Context) (string, error)
	DeleteSandbox(ctx context.Context, sandbox string) error
	StopSandbox(ctx context.Context, sandbox string) error
	ReplaceSandbox(ctx context.Context, sandbox string) error
	Running(ctx context.Context, sandbox string) (client.RunningStatus, error)
	ListProcesses(ctx context.Context, sandbox string) ([]client.Process, error)
	ListTerminals(ctx context.Context, sandbox string) ([]client.Terminal, error)
	StartProcess(ctx context.Context, sandbox string, req client.ExecRequest) (client.Process, error)
	KillProcess(ctx context.Context, sandbox, process string, signal int) error
	Follow(ctx context.Context, sandbox, process string, opts client.FollowOptions) <-chan client.LogEvent
	Watch(ctx context.Context, sandbox string, opts client.WatchOptions) WatchHandle
	CreateTerminal(ctx context.Context, sandbox string, req client.TerminalRequest) (client.Terminal, error)
	ConnectTerminal(ctx context.Context, sandbox, terminal string, cols, rows int) (TermConn, error)
	InterruptTerminal(ctx context.Context, sandbox, terminal string) error
	TerminateTerminal(ctx context.Context, sandbox, terminal string) error
	// PoolStats reads the container pool (an error matching client.ErrUnsupported where the
	// bridge has no pool routes).
	PoolStats(ctx context.Context) (client.PoolStats, error)
}

// TermConn is a live terminal connection: client.TermConn, the one type that preview terminals
// (*client.TerminalConn) and stable PTYs (*client.PTYConn) share with full-screen attach.
type TermConn = client.TermConn

// WatchHandle is a running sandbox watcher.
type WatchHandle struct {
	Events     <-chan client.SandboxEvent
	SetFocused func(bool)
	SetSlow    func(time.Duration) // nil: the slow rate is fixed
}

// RecordBridge adapts a Bridge to the record's background watcher.
func RecordBridge(b Bridge) record.Bridge { return recordBridge{b} }

type recordBridge struct{ b Bridge }

func (r recordBridge) Watch(ctx context.Context, s string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	h := r.b.Watch(ctx, s, o)
	return h.Events, h.SetFocused, h.SetSlow
}

func (r recordBridge) Follow(ctx context.Context, s, p string, o client.FollowOptions) <-chan client.LogEvent {
	return r.b.Follow(ctx, s, p, o)
}

// FromClient adapts a client to Bridge.
func FromClient(c *client.Client) Bridge { return clientBridge{c} }

type clientBridge struct{ c *client.Client }

func (b clientBridge) ListSandboxes(ctx context.Context) ([]client.SandboxInfo, error) {
	return b.c.ListSandboxes(ctx)
}
func (b clientBridge) CreateSandbox(ctx context.Context) (string, error) {
	return b.c.CreateSandbox(ctx)
}
func (b clientBridge) DeleteSandbox(ctx context.Context, s string) error {
	return b.c.DeleteSandbox(ctx, s)
}
func (b clientBridge) StopSandbox(ctx context.Context, s string) error {
	return b.c.StopSandbox(ctx, s)
}
func (b clientBridge) ReplaceSandbox(ctx context.Context, s string) error {
	return b.c.ReplaceSandbox(ctx, s)
}
func (b clientBridge) Running(ctx context.Context, s string) (client.RunningStatus, error) {
	return b.c.Running(ctx, s)
}
func (b clientBridge) ListProcesses(ctx context.Context, s string) ([]client.Process, error) {
	return b.c.ListProcesses(ctx, s)
}
func (b clientBridge) ListTerminals(ctx context.Context, s string) ([]client.Terminal, error) {
	return b.c.ListTerminals(ctx, s)
}
func (b clientBridge) StartProcess(ctx context.Context, s string, r client.ExecRequest) (client.Process, error) {
	return b.c.StartProcess(ctx, s, r)
}
func (b clientBridge) KillProcess(ctx context.Context, s, p string, sig int) error {
	return b.c.KillProcess(ctx, s, p, sig)
}
func (b clientBridge) Follow(ctx context.Context, s, p string, o client.FollowOptions) <-chan client.LogEvent {
	return b.c.Follow(ctx, s, p, o).Events()
}
func (b clientBridge) Watch(ctx context.Context, s string, o client.WatchOptions) WatchHandle {
	w := b.c.Watch(ctx, s, o)
	return WatchHandle{Events: w.Events(), SetFocused: w.SetFocused, SetSlow: w.SetSlowInterval}
}

func (b clientBridge) CreateTerminal(ctx context.Context, s string, r client.TerminalRequest) (client.Terminal, error) {
	return b.c.CreateTerminal(ctx, s, r)
}
func (b clientBridge) ConnectTerminal(ctx context.Context, s, t string, cols, rows int) (TermConn, error) {
	c, err := b.c.ConnectTerminal(ctx, s, t, client.ConnectOptions{Cols: cols, Rows: rows})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (b clientBridge) InterruptTerminal(ctx context.Context, s, t string) error {
	return b.c.InterruptTerminal(ctx, s, t)
}
func (b clientBridge) TerminateTerminal(ctx context.Context, s, t string) error {
	return b.c.TerminateTerminal(ctx, s, t)
}

func (b clientBridge) PoolStats(ctx context.Context) (client.PoolStats, error) {
	return b.c.PoolStats(ctx)
}

// CallTimeout bounds every one-shot bridge call made from the UI.
const CallTimeout = 30 * time.Second
