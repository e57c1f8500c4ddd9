package cmdutil

import (
	"context"
	"fmt"
	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/buildinfo"
)

// Version is sandscope's version as internal/buildinfo resolves it (set by the linker at release,
// else what the Go toolchain stamped; never empty). Every place that names the version uses it: the
// --version output, the TUI and its reports, the record's runs, `sandscope report`, the user agent.
var Version = buildinfo.Version()

// Factory is what every command is made from: the flags they share, and the one place that
// resolves a command's bridge, client, driver, record and I/O streams (Connect). A test injects a
// driver through OpenDriver, or a whole Conn through ConnectHook.
type Factory struct {
	URL       string // --url or SANDSCOPE_URL
	TokenFile string // --token-file
	Context   string // --context

	// the bridge this command resolved (NewBridgeClient), kept so that the record asks the same
	// bridge who it is
	bridge *client.Client
	target BridgeTarget

	// OpenDriver opens the driver of a bridge's client (nil: driver.Open); ConnectHook replaces
	// the whole resolution (Connect). Tests set them to inject a driver.
	OpenDriver  func(ctx context.Context, c *client.Client, opts driver.Options) (driver.Driver, error)
	ConnectHook func(ctx context.Context, o ConnectOptions) (*Conn, error)
}

// ExitError carries a specific exit status out of a command.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }
