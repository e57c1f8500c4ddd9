package client

// The terminal connection's status lookups and ID checks. A 404 not_found from the lookup decides
// between "resume" and "lost".

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

func termErrSummary(err error) string {
	var he *APIError
	if errors.As(err, &he) {
		if he.Code != "" {
			return fmt.Sprintf("%d %s", he.Status, he.Code)
		}
		return fmt.Sprintf("%d", he.Status)
	}
	if err == nil {
		return "absent"
	}
	return err.Error()
}

// validTermIDs checks IDs before they go into a path: sandbox IDs are lowercase base32, terminal
// IDs letters, digits, '.', '_' and '-' without "..", as the bridge requires.
func validTermIDs(sandbox, terminal string) error {
	if !termIDOK(sandbox, false) {
		return fmt.Errorf("invalid sandbox ID %q", sandbox)
	}
	if !termIDOK(terminal, true) || strings.Contains(terminal, "..") {
		return fmt.Errorf("invalid terminal ID %q", terminal)
	}
	return nil
}

func termIDOK(s string, terminal bool) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', terminal && (r >= 'A' && r <= 'Z' || r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

func termJoinPath(base string, parts ...string) string {
	all := append([]string{strings.TrimSuffix(base, "/")}, parts...)
	return path.Clean(strings.Join(all, "/"))
}

// lookup is GET /v1/sandbox/{id}/terminals/{tid}, bounded by the dial timeout. A 404 not_found
// (errors.Is(err, ErrNotFound)) means the terminal is gone.
func (t *TerminalConn) lookup(ctx context.Context) (Terminal, error) {
	ctx, cancel := context.WithTimeout(ctx, t.opts.DialTimeout)
	defer cancel()
	return t.c.GetTerminal(ctx, t.sandbox, t.terminal)
}

// running is GET /v1/sandbox/{id}/running (a non-waking lookup), bounded likewise.
func (t *TerminalConn) running(ctx context.Context) (RunningStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, t.opts.DialTimeout)
	defer cancel()
	return t.c.Running(ctx, t.sandbox)
}
