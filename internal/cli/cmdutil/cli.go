package cmdutil

// Command-line helpers shared by the subcommands: exit statuses and how bridge errors map to them
// (with the same hint the TUI gives), and unique-prefix lookup of process and terminal IDs.

import (
	"errors"
	"fmt"
	"strings"

	"sandscope/client"
	"sandscope/ui/common"
)

// Exit statuses (a stable contract: scripts rely on them; the README lists them per command).
const (
	exitOK         = 0
	ExitFailure    = 1 // the bridge is unreachable or failed (ls, logs without -f, config)
	ExitUsage      = 2 // usage, authentication or not-found errors
	ExitLost       = 3
	ExitNoResume   = 4
	ExitInterrupt  = 130 // Ctrl-C or SIGTERM
	ExitHangup     = 129 // SIGHUP: the terminal that ran the command closed
	ExitExecUnsure = 255
)

// UsageKind reports errors that are the caller's to fix: exit status 2 in every command.
func UsageKind(err error) bool {
	return errors.Is(err, client.ErrUnauthorized) || errors.Is(err, client.ErrNotFound) ||
		errors.Is(err, client.ErrInvalidRequest) || errors.Is(err, client.ErrUnsupported)
}

// BridgeExit turns a bridge call's error into the command's exit: status 2 (usage, authentication,
// not found) or other, with op as context. A rejected token gets the hint the TUI shows.
func BridgeExit(op string, err error, other int) error {
	code := other
	if UsageKind(err) {
		code = ExitUsage
	}
	if errors.Is(err, client.ErrUnauthorized) {
		err = fmt.Errorf("%w; %s", err, common.UnauthorizedHint)
	}
	if op != "" {
		err = fmt.Errorf("%s: %w", op, err)
	}
	return &ExitError{Code: code, Err: err}
}

// ErrAmbiguous and ErrNoMatch are the outcomes of a prefix lookup that found no single ID.
var (
	ErrAmbiguous = errors.New("ambiguous ID prefix")
	ErrNoMatch   = errors.New("no such ID")
)

// MatchPrefix returns the one id in ids that equals want or that want names as a person copies it
// from a screen (client.IDMatches: a prefix, or a prefix of a recorded run's random tail, which is
// what the screens show of it). What a person copies from the TUI must be enough.
func MatchPrefix(want string, ids []string) (string, error) {
	var found []string
	for _, id := range ids {
		if id == want {
			return id, nil
		}
		if client.IDMatches(id, want) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", ErrNoMatch
	}
	if len(found) > 4 {
		found = append(found[:4], "…")
	}
	return "", fmt.Errorf("%w %q: matches %s", ErrAmbiguous, want, strings.Join(found, ", "))
}

// ExpandPrefix expands a unique prefix of an ID of kind among ids (LookupProcess, lookupTerminal).
// A full ID that is listed is returned as is; an ID that is not is returned unchanged (the bridge
// answers for it, e.g. a process whose record is gone but whose log is still held); an ambiguous
// prefix is a usage error.
func ExpandPrefix(kind, id string, ids []string) (string, error) {
	full, err := MatchPrefix(id, ids)
	switch {
	case err == nil:
		return full, nil
	case errors.Is(err, ErrAmbiguous):
		return "", &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s %w", kind, err)}
	}
	return id, nil
}
