// Package attach runs a full-screen, raw-mode attachment of the user's own terminal to a sandbox
// terminal connection: keystrokes go to the remote PTY, output bytes go straight to stdout, window
// size changes become resizes, and a detach key (ctrl-] by default, or a two-key prefix) returns.
// It is used by `sandscope shell`, `sandscope attach` and, through tea.Exec, by the TUI.
//
// It must never leave the user's terminal in raw mode: modes are restored on detach, remote exit,
// loss, errors, signals and panics. It never interprets output bytes (the user's terminal does), and
// its own notices go to stderr as lines starting "sandscope: ".
package attach
