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
	ErrWrongAPI // a bridge speaking the stable API: the client sends it no sandbox calls
)

// WrongAPIText is how screens name a stable-API bridge in their headers.
const WrongAPIText = "this bridge speaks another API: sandscope sends it nothing"

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
	case errors.As(err, new(*client.StableBridgeError)):
		return ErrWrongAPI
	case errors.Is(err, client.ErrUnsupported):
		return ErrUnsupported
	}
	return ErrOther
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
		s = "unauthorized: the bridge rejected the token (check SANDBOX_API_KEY or --token-file)"
	case ErrUnreachable:
		s = "bridge unreachable: " + err.Error()
	case ErrCapacity:
		s = "no capacity: the bridge could not start a container (503 capacity_exceeded); try again later"
	case ErrUnsupported, ErrWrongAPI:
		s = "not supported by this bridge: " + err.Error()
	default:
		s = err.Error()
	}
	if op != "" && !strings.HasPrefix(s, op) {
		s = fmt.Sprintf("%s: %s", op, s)
	}
	return SanitizeText(s)
}
