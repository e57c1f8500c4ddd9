package client

// The terminal connection's own status lookups. They read the HTTP status exactly (a 404 decides
// between "resume" and "lost"), so they stay independent of the general API helpers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

func (c *Client) termAuthHeader() http.Header {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgent != "" {
		h.Set("User-Agent", c.userAgent)
	}
	return h
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

// termGet does one authenticated GET and decodes a 200 JSON answer into v. A non-200 answer is
// returned as status + *APIError (see errors.go) with a nil transport error.
func (c *Client) termGet(ctx context.Context, timeoutFrom *ConnectOptions, p string, v any) (int, *APIError, error) {
	if err := c.checkDialect(ctx); err != nil {
		return 0, nil, err
	}
	u, err := url.Parse(c.base)
	if err != nil {
		return 0, nil, fmt.Errorf("bridge URL: %w", err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + p
	rctx, cancel := context.WithTimeout(ctx, timeoutFrom.DialTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, nil, fmt.Errorf("request: %w", err)
	}
	req.Header = c.termAuthHeader()
	hc := c.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, &TransportError{Op: "GET " + p, Err: scrubErr(err, c.token)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, readAPIError(resp, c.token), nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("GET %s: decode: %w", p, err)
	}
	return resp.StatusCode, nil, nil
}

type termLookup struct {
	term Terminal
	err  *APIError
}

// lookup is GET /v1/sandbox/{id}/terminals/{tid}. err is a transport failure; a bridge answer
// other than 200 comes back as status + st.err.
func (t *TerminalConn) lookup(ctx context.Context) (st termLookup, status int, err error) {
	p := termJoinPath("", "v1", "sandbox", t.sandbox, "terminals", t.terminal)
	status, he, err := t.c.termGet(ctx, &t.opts, p, &st.term)
	if err != nil {
		return st, status, err
	}
	st.err = he
	return st, status, nil
}

// running is GET /v1/sandbox/{id}/running (a non-waking lookup).
func (t *TerminalConn) running(ctx context.Context) (RunningStatus, error) {
	var rs RunningStatus
	p := termJoinPath("", "v1", "sandbox", t.sandbox, "running")
	_, he, err := t.c.termGet(ctx, &t.opts, p, &rs)
	if err != nil {
		return rs, err
	}
	if he != nil {
		return rs, he
	}
	return rs, nil
}
