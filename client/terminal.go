package client

// Terminal connection: skeleton fixed so the UI and the client can be built side by side; its owner
// replaces these stubs with the real WebSocket connection.

import "context"

// ConnectOptions tunes a terminal connection.
type ConnectOptions struct {
	Cursor      string // resume strictly after this cursor; "" = full retained replay
	Cols, Rows  int    // initial size; sent only while the terminal is running
	RetryBudget int    // reconnect attempts before TermFailed (default 10)
}

// TerminalConn is a live, self-resuming connection to a terminal.
type TerminalConn struct {
	events chan TermEvent
}

func (t *TerminalConn) Events() <-chan TermEvent    { return t.events }
func (t *TerminalConn) Write(p []byte) (int, error) { return 0, errNotBuilt }
func (t *TerminalConn) Resize(cols, rows int) error { return errNotBuilt }
func (t *TerminalConn) Interrupt() error            { return errNotBuilt }
func (t *TerminalConn) Terminate() error            { return errNotBuilt }
func (t *TerminalConn) Cursor() string              { return "" }
func (t *TerminalConn) Close() error                { return nil }

// ConnectTerminal opens a terminal connection that reconnects from its cursor on drops.
func (c *Client) ConnectTerminal(ctx context.Context, sandbox, terminal string, opts ConnectOptions) (*TerminalConn, error) {
	return nil, errNotBuilt
}
