package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sandscope/client"

	"github.com/charmbracelet/x/term"
)

// Terminal checks of the full-screen commands.

// SetupError maps a failure before the attachment started to an exit status: 4 when the bridge
// did not answer, else 2 (usage, auth, not found, refused).
func SetupError(err error) error {
	if errors.Is(err, client.ErrTransport) {
		return &ExitError{Code: ExitNoResume, Err: err}
	}
	return BridgeExit("", err, ExitUsage)
}

// NeedTerminal refuses a full-screen command (shell, attach) whose input is neither a terminal nor
// scripted input (a pipe or a file, which ends with ^D): with /dev/null or a socket it would wait
// for input that never comes. Exit 2.
func NeedTerminal(what string, in io.Reader) error {
	f, ok := in.(*os.File)
	if !ok || term.IsTerminal(f.Fd()) {
		return nil // a terminal, or input the caller feeds itself
	}
	if fi, err := f.Stat(); err == nil && (fi.Mode()&os.ModeNamedPipe != 0 || fi.Mode().IsRegular()) {
		return nil
	}
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s is a full-screen command and needs a terminal: stdin is not one (scripted input works from a pipe: printf 'ls\\nexit\\n' | sandscope %s ...)", what, what)}
}

// IsTerminalReader says whether r is a terminal.
func IsTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// LocalSize is the size of the user's terminal, or 0×0 (the bridge default) when not a terminal.
func LocalSize() (cols, rows int) {
	for _, f := range []*os.File{os.Stdout, os.Stdin, os.Stderr} {
		if term.IsTerminal(f.Fd()) {
			if w, h, err := term.GetSize(f.Fd()); err == nil && w > 0 && h > 0 {
				return w, h
			}
		}
	}
	return 0, 0
}
