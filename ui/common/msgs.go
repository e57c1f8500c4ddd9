package common

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
)

// OpenSandboxMsg asks the root to open the sandbox screen.
type OpenSandboxMsg struct{ ID string }

// LogTarget is one process to follow in the log view.
type LogTarget struct {
	Sandbox     string
	Process     client.Process
	Incarnation int  // the incarnation the process belongs to (0 unknown)
	Stale       bool // it belongs to an earlier incarnation
	Lost        bool
}

// OpenLogsMsg asks the root to open the log view on one or more processes.
type OpenLogsMsg struct{ Targets []LogTarget }

// OpenTerminalMsg asks the root to open a terminal pane.
type OpenTerminalMsg struct {
	Sandbox  string
	Terminal client.Terminal
}

// AttachTerminalMsg asks the root to hand the whole screen to a terminal (full-screen attach); the
// TUI comes back, on the same screen, when the user detaches or the terminal ends.
type AttachTerminalMsg struct {
	Sandbox  string
	Terminal client.Terminal
}

// BackMsg asks the root to close the current screen.
type BackMsg struct{}

// Level grades a status message.
type Level int

const (
	Info Level = iota
	Warn
	Error
)

// StatusMsg puts a message in the status area.
type StatusMsg struct {
	Level Level
	Text  string
}

// KnownMsg says a sandbox was created or opened here: the sandboxes list keeps it.
type KnownMsg struct {
	ID     string
	Source string // "created", "opened", "added"
}

// ConnMsg reports the bridge's reachability as the last call saw it; the root shows it in the
// status area. Err nil means reachable.
type ConnMsg struct {
	Err      error
	RetryAt  time.Time // when the next automatic retry happens (zero = none scheduled)
	Attempts int
}

// Send is a command that yields msg.
func Send(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

// Status is a command that puts text in the status area at level l.
func Status(l Level, text string) tea.Cmd { return Send(StatusMsg{Level: l, Text: text}) }
