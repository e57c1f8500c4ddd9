package common

import (
	"errors"
	"fmt"
	"strings"

	"sandscope/client"
)

// ErrKind says what kind of trouble an error is, for the status area.
type ErrKind int

const (
	ErrOther ErrKind = iota
	ErrUnauthorized
	ErrUnreachable
	ErrCapacity
	ErrNotFound
	ErrInvalid
	ErrUnsupported
)

// UnauthorizedHint is what to do about a rejected token, in the TUI and on the command line.
const UnauthorizedHint = "the bridge rejected the token (check SANDBOX_API_KEY or --token-file)"

// SandboxIDRule is the bridge's sandbox ID format in words: hints, errors and help say it alike.
const SandboxIDRule = "1-128 characters of a-z and 2-7"

// BadSandboxID is the one wording for an ID that is not a sandbox ID (the client's says the same).
func BadSandboxID(id string) string {
	return fmt.Sprintf("sandbox ID %q: must be %s", SanitizeText(id), SandboxIDRule)
}

// ConnProblem names, for a screen's header, why the bridge's answers are missing: a rejected token
// is not a bridge that does not answer.
func ConnProblem(err error) string {
	switch Classify(err) {
	case ErrUnauthorized:
		return "the bridge rejected the token"
	}
	if ae := new(client.APIError); errors.As(err, &ae) {
		return "the bridge answered with an error"
	}
	return "bridge not answering"
}

// WatchFailure is a sandbox watcher's failure as the error screens report (ConnMsg): the cause
// itself when this run saw it, so every screen classifies the same refused connection alike
// (UNREACHABLE, not a bare BRIDGE ERROR), else the words the record kept.
func WatchFailure(sandbox, text string, cause error) error {
	if cause != nil {
		return fmt.Errorf("watch %s: %w", sandbox, cause)
	}
	return fmt.Errorf("watch %s: %s", sandbox, text)
}

// Classify sorts an error from the client.
func Classify(err error) ErrKind {
	switch {
	case err == nil:
		return ErrOther
	case errors.Is(err, client.ErrUnauthorized):
		return ErrUnauthorized
	case errors.Is(err, client.ErrTransport):
		return ErrUnreachable
	case errors.Is(err, client.ErrCapacity):
		return ErrCapacity
	case errors.Is(err, client.ErrNotFound):
		return ErrNotFound
	case errors.Is(err, client.ErrInvalidRequest):
		return ErrInvalid
	case errors.Is(err, client.ErrUnsupported):
		return ErrUnsupported
	}
	return ErrOther
}

// CapacityText says what a 503 capacity_exceeded means and what the user can do about it, with the
// numbers the bridge gave ("instance limit reached (N/M)").
func CapacityText(err error) string {
	what := "no capacity: the bridge's container pool is at its instance limit (503 capacity_exceeded)"
	if used, limit, ok := client.CapacityLimit(err); ok {
		what = fmt.Sprintf("no capacity: the bridge's container pool is at its instance limit, %d of %d containers in use (503 capacity_exceeded)", used, limit)
	}
	return what + "; stop or delete sandboxes you no longer need, raise max_instances in the Worker's configuration, or try again later (the bridge panel shows the pool)"
}

// Remedy is what the user can do about err, to show after Describe's line ("" when Describe
// already says it: a rejected token, no capacity, an unsupported call). retry says how this
// screen tries again ("ctrl+r tries again", "sandscope retries on its own").
func Remedy(err error, retry string) string {
	switch Classify(err) {
	case ErrUnauthorized, ErrCapacity, ErrUnsupported:
		return ""
	case ErrUnreachable:
		return "check that the bridge is running and that its URL is right (--url, the context); " + retry
	case ErrNotFound:
		return "the bridge no longer knows it; " + retry
	}
	return "the bridge failed to answer (its own log says why); " + retry
}

// Describe turns an error into one line for the status area: what happened and what to do. The
// text is sanitised (bridge messages are untrusted).
func Describe(op string, err error) string {
	if err == nil {
		return ""
	}
	var s string
	switch Classify(err) {
	case ErrUnauthorized:
		s = "unauthorized: " + UnauthorizedHint
	case ErrUnreachable:
		s = err.Error()
		if !strings.Contains(s, "unreachable") { // the client's own words say it already
			s = "bridge unreachable: " + s
		}
	case ErrCapacity:
		s = CapacityText(err)
	case ErrUnsupported:
		s = "not supported by this bridge: " + err.Error()
	default:
		s = err.Error()
	}
	if op != "" && !strings.HasPrefix(s, op) {
		s = fmt.Sprintf("%s: %s", op, s)
	}
	return SanitizeText(s)
}

// WakeQuestion is a driver's wake notice as the confirm dialog asks it: the notice (without the
// command line's "sandscope: " lead), then whether to go on.
func WakeQuestion(notice string) string {
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(notice), "sandscope: "))
	if s != "" && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return SanitizeText(s) + " Continue?"
}
