package driver

import (
	"context"
	"fmt"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// Sessions lists the sessions sandscope created or used in a sandbox and did not delete, from the
// index (nothing is sent: a slept sandbox has no sessions left, and asking would start it).
func (d *Stable) Sessions(_ context.Context, sandbox string) ([]Session, error) {
	sb, err := d.idx.get(sandbox)
	if err != nil {
		return nil, fmt.Errorf("sessions of %s: %w", sandbox, err)
	}
	var out []Session
	for _, s := range sb.LiveSessions() {
		out = append(out, Session{ID: s.ID, Created: s.Created, Seen: s.Seen})
	}
	return out, nil
}

// CreateSession creates a session (this starts the container) and records it.
func (d *Stable) CreateSession(ctx context.Context, sandbox string, opts client.SessionOptions) (string, error) {
	id, err := d.s.CreateSession(ctx, sandbox, opts)
	if err != nil {
		return "", err
	}
	_ = d.idx.update(sandbox, func(sb *record.StableSandbox) { sb.UseSession(id, true, time.Now()) })
	return id, nil
}

// DeleteSession deletes a session (this starts the container) and records that it is gone.
func (d *Stable) DeleteSession(ctx context.Context, sandbox, session string) error {
	if err := d.s.DeleteSession(ctx, sandbox, session); err != nil {
		return err
	}
	return d.idx.update(sandbox, func(sb *record.StableSandbox) { sb.DeleteSession(session, time.Now()) })
}

// OpenShell connects to the container's PTY: the session-less one, or a session's (this starts
// the container; saying so first, WakeNotice, is the caller's part). A reconnect replays the
// PTY's ring buffer.
func (d *Stable) OpenShell(ctx context.Context, sandbox string, req ShellRequest) (client.TermConn, error) {
	conn, err := d.s.ConnectPTY(ctx, sandbox, client.PTYOptions{Cols: req.Cols, Rows: req.Rows, Session: req.Session, Shell: req.Shell})
	if err != nil {
		return nil, err // a nil *PTYConn must not become a non-nil interface
	}
	if req.Session != "" {
		_ = d.idx.update(sandbox, func(sb *record.StableSandbox) { sb.UseSession(req.Session, false, time.Now()) })
	}
	return conn, nil
}
