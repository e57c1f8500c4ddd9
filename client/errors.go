package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Sentinel kinds of failure. Callers branch with errors.Is; the concrete error is an *APIError for
// bridge answers or a *TransportError when no answer arrived.
var (
	// ErrUnauthorized: the bridge rejected the token (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNotFound: the bridge says the sandbox object (process, terminal, file) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidRequest: the bridge rejected the request as malformed (400, or 403 for paths
	// outside /workspace, or 413).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrCapacity: the bridge could not start a container for lack of capacity (503
	// capacity_exceeded). Retry with backoff.
	ErrCapacity = errors.New("capacity exceeded")
	// ErrTransport: no answer from the bridge (unreachable, reset, cut body, timeout).
	ErrTransport = errors.New("bridge unreachable")
	// ErrServerText: the bridge answered a bare text 500 (an SDK error escaped a handler: invalid
	// cursor, stale handle, interrupted runtime, transport loss).
	ErrServerText = errors.New("bridge internal error")
	// ErrUnsupported: the route or extension does not exist on this bridge (Hono's text 404, a 501,
	// or a capability the bridge's OpenAPI document lacks).
	ErrUnsupported = errors.New("not supported by this bridge")
	// ErrResumeIgnored: a log follower stopped because the bridge kept replaying output already
	// shown instead of resuming after the cursor it was given.
	ErrResumeIgnored = errors.New("bridge ignores the resume cursor")
)

// APIError is an answer from the bridge that is not a success: JSON {"error","code"} or plain text.
// Message keeps the bridge's own text (with the token removed, should it ever be echoed).
type APIError struct {
	Status  int
	Code    string // the bridge's stable code ("not_found", "capacity_exceeded"…); "" for text answers
	Message string // the bridge's human text
	Text    bool   // true when the body was not the bridge's JSON error shape
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bridge answered %d", e.Status)
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Is maps the answer to the sentinel kinds.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrNotFound:
		return e.Status == http.StatusNotFound && !e.Text
	case ErrUnsupported:
		// Hono answers unknown routes with a text 404 (and there is no 405); sandscope's local
		// bridge answers routes it does not implement (pool, mounts, tunnels) with 501.
		return (e.Status == http.StatusNotFound && e.Text) || e.Status == http.StatusNotImplemented
	case ErrInvalidRequest:
		return e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge ||
			(e.Status == http.StatusForbidden && e.Code == "invalid_request")
	case ErrCapacity:
		return e.Status == http.StatusServiceUnavailable && e.Code == "capacity_exceeded"
	case ErrServerText:
		return e.Status == http.StatusInternalServerError && e.Text
	}
	return false
}

// Retryable reports whether the same request may succeed later (capacity, pool and transport
// trouble, text 500s, gateway errors).
func (e *APIError) Retryable() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// TransportError says the bridge did not answer (or its answer broke off).
type TransportError struct {
	Op  string
	Err error
}

func (e *TransportError) Error() string {
	return e.Op + ": " + ErrTransport.Error() + ": " + e.Err.Error()
}
func (e *TransportError) Unwrap() error   { return e.Err }
func (e *TransportError) Is(t error) bool { return t == ErrTransport }

// IsRetryable reports whether err is worth retrying with backoff: transport failures and 5xx answers.
func IsRetryable(err error) bool {
	if errors.Is(err, ErrTransport) {
		return true
	}
	var ae *APIError
	return errors.As(err, &ae) && ae.Retryable()
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// readAPIError turns a non-success response into an *APIError, scrubbing secret from its text.
func readAPIError(resp *http.Response, secret string) *APIError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Status: resp.StatusCode}
	var j struct {
		Error *string `json:"error"`
		Code  string  `json:"code"`
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") && json.Unmarshal(body, &j) == nil && j.Error != nil {
		e.Code = j.Code
		e.Message = *j.Error
	} else {
		e.Text = true
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 512 {
			e.Message = e.Message[:512] + "…"
		}
	}
	e.Message = scrub(e.Message, secret)
	e.Code = scrub(e.Code, secret)
	return e
}

// scrub removes secret from s.
func scrub(s, secret string) string {
	if secret == "" || !strings.Contains(s, secret) {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// scrubErr wraps err so its text never contains secret.
func scrubErr(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &scrubbedError{msg: scrub(err.Error(), secret), err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
