package driver

import (
	"context"

	"sandscope/client"
)

// Stable is the driver of the stable 0.12 API. (Being written: see the stable driver work.)
type Stable struct {
	c    *client.Client
	s    *client.Stable
	caps client.Capabilities
	opts Options
}

// NewStable makes the stable driver over c.
func NewStable(c *client.Client, caps client.Capabilities, opts Options) *Stable {
	return &Stable{c: c, s: c.Stable(), caps: caps, opts: opts}
}

var _ Driver = (*Stable)(nil)

func (d *Stable) BaseURL() string                   { return d.c.BaseURL() }
func (d *Stable) Capabilities() client.Capabilities { return d.caps }
func (d *Stable) Features() Features                { return d.caps.Features() }
func (d *Stable) Health(ctx context.Context) error  { return d.c.Health(ctx) }
func (d *Stable) Close() error                      { return nil }
func (d *Stable) ListSandboxes(ctx context.Context) ([]client.SandboxInfo, error) {
	return d.c.ListSandboxes(ctx)
}
func (d *Stable) CreateSandbox(ctx context.Context) (string, error) { return d.c.CreateSandbox(ctx) }
func (d *Stable) Runs(context.Context, string) ([]Run, error)       { return nil, client.ErrUnsupported }
func (d *Stable) Run(context.Context, string, string) (Run, error) {
	return Run{}, client.ErrUnsupported
}
func (d *Stable) Start(context.Context, string, StartRequest) (Run, error) {
	return Run{}, client.ErrUnsupported
}
func (d *Stable) Follow(context.Context, string, string, FollowOptions) <-chan client.LogEvent {
	ch := make(chan client.LogEvent)
	close(ch)
	return ch
}
func (d *Stable) Watch(context.Context, string, client.WatchOptions) WatchHandle {
	ch := make(chan client.SandboxEvent)
	close(ch)
	return WatchHandle{Events: ch, SetFocused: func(bool) {}}
}
