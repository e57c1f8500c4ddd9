package common

import (
	"context"
	"sandscope/vocab"
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

// OpenLogsMsg asks the root to open the log view on one or more processes. With All set (a
// sandbox), the view follows every process of that sandbox: Targets are those known now, and
// processes that start later join.
type OpenLogsMsg struct {
	Targets []LogTarget
	All     string
}

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

// PushScreenMsg asks the root to open a screen a screen made (the stable run view).
type PushScreenMsg struct{ Screen Screen }

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

// SignalTerminal is the command that interrupts (SIGINT) or terminates (SIGTERM, then SIGKILL) a
// terminal's process tree through the bridge and reports the outcome in the status area; after a
// terminate, endHint says where its ending will show.
func SignalTerminal(c *Context, sandbox, terminal string, interrupt bool, endHint string) tea.Cmd {
	br, base := c.Bridge, c.BaseCtx()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, CallTimeout)
		defer cancel()
		if interrupt {
			if err := br.InterruptTerminal(ctx, sandbox, terminal); err != nil {
				return StatusMsg{Level: Error, Text: Describe("interrupt terminal "+terminal, err)}
			}
			return StatusMsg{Level: Info, Text: "sent SIGINT to terminal " + terminal}
		}
		if err := br.TerminateTerminal(ctx, sandbox, terminal); err != nil {
			return StatusMsg{Level: Error, Text: Describe("terminate terminal "+terminal, err)}
		}
		// the bridge sends TERM, then KILL after 0.5 s: an interactive shell ignores TERM, so it ends KILLED KILL
		return StatusMsg{Level: Info, Text: "terminating terminal " + vocab.Text(terminal) + " (TERM, then KILL after 0.5 s if still running); " + endHint}
	}
}
