package driver

import (
	"context"

	"sandscope/client"
)

// Preview is the driver of the 1.0 preview API: a thin layer over the client, which already turns
// the protocol into neutral events.
type Preview struct {
	c    *client.Client
	caps client.Capabilities
}

// NewPreview wraps c. caps is what the bridge's document said (the zero value for a bridge
// without one: the preview API, as the client always assumed).
func NewPreview(c *client.Client, caps client.Capabilities) *Preview {
	return &Preview{c: c, caps: caps}
}

var (
	_ Driver    = (*Preview)(nil)
	_ Statuses  = (*Preview)(nil)
	_ Killer    = (*Preview)(nil)
	_ Lifecycle = (*Preview)(nil)
	_ Terminals = (*Preview)(nil)
	_ Shells    = (*Preview)(nil)
	_ Pool      = (*Preview)(nil)
)

// Client is the preview client underneath (for the few callers that speak the preview protocol
// itself: attach's raw terminal, the demo scene).
func (p *Preview) Client() *client.Client { return p.c }

func (p *Preview) BaseURL() string                   { return p.c.BaseURL() }
func (p *Preview) Capabilities() client.Capabilities { return p.caps }
func (p *Preview) Features() Features                { return p.caps.Features() }
func (p *Preview) Health(ctx context.Context) error  { return p.c.Health(ctx) }
func (p *Preview) Close() error                      { return nil }

func (p *Preview) ListSandboxes(ctx context.Context) ([]client.SandboxInfo, error) {
	return p.c.ListSandboxes(ctx)
}
func (p *Preview) CreateSandbox(ctx context.Context) (string, error) { return p.c.CreateSandbox(ctx) }

func (p *Preview) Runs(ctx context.Context, sandbox string) ([]Run, error) {
	return p.c.ListProcesses(ctx, sandbox)
}
func (p *Preview) Run(ctx context.Context, sandbox, id string) (Run, error) {
	return p.c.GetProcess(ctx, sandbox, id)
}

// Start starts a process. A session is refused: the preview API has none.
func (p *Preview) Start(ctx context.Context, sandbox string, req StartRequest) (Run, error) {
	if req.Session != "" {
		return Run{}, client.ErrUnsupported
	}
	return p.c.StartProcess(ctx, sandbox, req.ExecRequest)
}

// Follow follows a process from its cursor (Background changes nothing: preview reads wake nothing).
func (p *Preview) Follow(ctx context.Context, sandbox, run string, opts FollowOptions) <-chan client.LogEvent {
	return p.c.Follow(ctx, sandbox, run, opts.FollowOptions).Events()
}

func (p *Preview) Watch(ctx context.Context, sandbox string, opts client.WatchOptions) WatchHandle {
	w := p.c.Watch(ctx, sandbox, opts)
	return WatchHandle{Events: w.Events(), SetFocused: w.SetFocused, SetSlow: w.SetSlowInterval}
}

func (p *Preview) Running(ctx context.Context, sandbox string) (client.RunningStatus, error) {
	return p.c.Running(ctx, sandbox)
}
func (p *Preview) Kill(ctx context.Context, sandbox, run string, signal int) error {
	return p.c.KillProcess(ctx, sandbox, run, signal)
}
func (p *Preview) DeleteSandbox(ctx context.Context, sandbox string) error {
	return p.c.DeleteSandbox(ctx, sandbox)
}
func (p *Preview) StopSandbox(ctx context.Context, sandbox string) error {
	return p.c.StopSandbox(ctx, sandbox)
}
func (p *Preview) ReplaceSandbox(ctx context.Context, sandbox string) error {
	return p.c.ReplaceSandbox(ctx, sandbox)
}
func (p *Preview) ListTerminals(ctx context.Context, sandbox string) ([]client.Terminal, error) {
	return p.c.ListTerminals(ctx, sandbox)
}
func (p *Preview) CreateTerminal(ctx context.Context, sandbox string, req client.TerminalRequest) (client.Terminal, error) {
	return p.c.CreateTerminal(ctx, sandbox, req)
}
func (p *Preview) ConnectTerminal(ctx context.Context, sandbox, terminal string, opts client.ConnectOptions) (client.TermConn, error) {
	conn, err := p.c.ConnectTerminal(ctx, sandbox, terminal, opts)
	if err != nil {
		return nil, err // a nil *TerminalConn must not become a non-nil interface
	}
	return conn, nil
}
func (p *Preview) InterruptTerminal(ctx context.Context, sandbox, terminal string) error {
	return p.c.InterruptTerminal(ctx, sandbox, terminal)
}
func (p *Preview) TerminateTerminal(ctx context.Context, sandbox, terminal string) error {
	return p.c.TerminateTerminal(ctx, sandbox, terminal)
}

// OpenShell creates a terminal running the bridge's default shell and connects to it.
func (p *Preview) OpenShell(ctx context.Context, sandbox string, req ShellRequest) (client.TermConn, error) {
	if req.Session != "" {
		return nil, client.ErrUnsupported
	}
	// The preview API wants an argv: the default is a login shell, bash where the image has it.
	treq := client.TerminalRequest{Cols: req.Cols, Rows: req.Rows, Argv: loginShellArgv}
	if req.Shell != "" {
		treq.Argv = []string{req.Shell}
	}
	t, err := p.c.CreateTerminal(ctx, sandbox, treq)
	if err != nil {
		return nil, err
	}
	return p.ConnectTerminal(ctx, sandbox, t.ID, client.ConnectOptions{Cols: req.Cols, Rows: req.Rows})
}

func (p *Preview) PoolStats(ctx context.Context) (client.PoolStats, error) { return p.c.PoolStats(ctx) }

// loginShellArgv starts a login shell: bash when the sandbox has it, else sh (as `sandscope shell`).
var loginShellArgv = []string{"/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi"}
