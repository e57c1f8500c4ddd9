package main

import (
	"context"
	"fmt"
	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/buildinfo"
)

// version is sandscope's version as internal/buildinfo resolves it (set by the linker at release,
// else what the Go toolchain stamped; never empty). Every place that names the version uses it: the
// --version output, the TUI and its reports, the record's runs, `sandscope report`, the user agent.
var version = buildinfo.Version()

// globalOptions are the flags every subcommand shares.
type globalOptions struct {
	url       string // --url or SANDSCOPE_URL
	tokenFile string // --token-file
	context   string // --context

	// the bridge this command resolved (newBridgeClient), kept so that the record asks the same
	// bridge who it is
	bridge *client.Client
	target BridgeTarget

	// openDriver opens the driver of a bridge's client (nil: driver.Open); connectHook replaces
	// the whole resolution (connect). Tests set them to inject a driver.
	openDriver  func(ctx context.Context, c *client.Client, opts driver.Options) (driver.Driver, error)
	connectHook func(ctx context.Context, o connectOptions) (*conn, error)
}

// ExitError carries a specific exit status out of a command.
type ExitError struct {
	code int
	err  error
}

func (e *ExitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *ExitError) Unwrap() error { return e.err }
