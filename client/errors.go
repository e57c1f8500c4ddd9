package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
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
	// ErrNoAnswer: the bridge did not answer a request within the wait allowed for an answer (it
	// may have accepted the connection and then said nothing). It is also an ErrTransport.
	ErrNoAnswer = errors.New("no answer from the bridge")
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
	var na *NoAnswerError
	if errors.As(e.Err, &na) {
		return e.Op + ": " + na.Error()
	}
	return e.Op + ": " + ErrTransport.Error() + ": " + e.Err.Error()
}

// withoutURL keeps a failed request's *url.Error in err's chain but drops net/http's `Get "URL": `
// from its text: the call's Op already says what was asked, and the URL (a resume cursor in its
// query) filled three lines of a retry notice without telling more.
func withoutURL(err error) error {
	if ue, ok := err.(*url.Error); ok && ue.Err != nil {
		return &requestError{ue: ue}
	}
	return err
}

type requestError struct{ ue *url.Error }

func (e *requestError) Error() string { return e.ue.Err.Error() }
func (e *requestError) Unwrap() error { return e.ue }

// NoAnswerError says the bridge at Bridge gave no answer (not even its headers) within After.
// errors.Is(err, ErrNoAnswer) and errors.Is(err, ErrTransport) hold for it.
type NoAnswerError struct {
	Bridge string
	After  time.Duration
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("no answer from the bridge at %s within %v", e.Bridge, e.After.Round(time.Millisecond))
}
func (e *NoAnswerError) Is(t error) bool  { return t == ErrNoAnswer || t == ErrTransport }
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
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case strings.HasPrefix(ct, "application/json") && json.Unmarshal(body, &j) == nil && j.Error != nil:
		e.Code = j.Code
		e.Message = *j.Error
	case markup(mt, body):
		// an HTML page (a proxy's, a CDN's or a login page) says nothing a message can use: name it
		e.Text = true
		if mt == "" {
			mt = "an HTML page"
		}
		e.Message = fmt.Sprintf("a %s page (%d bytes, not shown): not the bridge's own answer, perhaps a proxy's or a login page in front of it", mt, len(body))
	default:
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

// markup says an error answer is a web page: its content type says HTML or XML, or, with none
// given, the body starts like one.
func markup(mediaType string, body []byte) bool {
	switch mediaType {
	case "text/html", "application/xhtml+xml", "text/xml", "application/xml":
		return true
	case "":
		head := strings.ToLower(strings.TrimSpace(string(body[:min(len(body), 64)])))
		return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html")
	}
	return false
}

// longSecret is the length from which a token is redacted wherever it appears: a run of that many
// characters matching it by chance is not plausible. A shorter token is redacted only where a
// bridge or a proxy could echo it (see echoed).
const longSecret = 8

// scrub removes secret from s: every occurrence of a long secret, and of its URL-escaped forms;
// a short one only where it stands as an echoed value (a header, a query parameter, a body field),
// so that a one-letter token does not eat the letter out of every word.
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	forms := []string{secret}
	for _, f := range []string{url.QueryEscape(secret), url.PathEscape(secret)} {
		if f != secret {
			forms = append(forms, f)
		}
	}
	for _, f := range forms {
		if !strings.Contains(s, f) {
			continue
		}
		if len(secret) >= longSecret {
			s = strings.ReplaceAll(s, f, "[redacted]")
			continue
		}
		s = replaceEchoed(s, f)
	}
	return s
}

// replaceEchoed replaces the occurrences of a short secret that stand alone as a value: not part
// of a longer word, and either the whole text or after a header name ("Bearer ", "Authorization:"),
// an "=" (a query or form parameter) or a quote or colon (a JSON field).
func replaceEchoed(s, secret string) string {
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, secret)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		before, after := rest[:i], rest[i+len(secret):]
		done := s[:len(s)-len(rest)] + before // everything before the occurrence
		if echoed(done, after) {
			b.WriteString(before)
			b.WriteString("[redacted]")
		} else {
			b.WriteString(before)
			b.WriteString(secret)
		}
		rest = after
	}
}

func echoed(before, after string) bool {
	word := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '~' || c == '+' || c == '/'
	}
	if before != "" && word(before[len(before)-1]) || after != "" && word(after[0]) {
		return false // inside a longer word: "x" in "/v1/sandbox"
	}
	if strings.TrimSpace(before) == "" && strings.TrimSpace(after) == "" {
		return true // the whole text
	}
	b := strings.ToLower(strings.TrimRight(before, " \t"))
	for _, ctx := range []string{"bearer", "authorization:", "=", `"`, "'", ":", "token"} {
		if strings.HasSuffix(b, ctx) {
			return true
		}
	}
	return false
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
