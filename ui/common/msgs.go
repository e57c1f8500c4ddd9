package common

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/vocab"
)

// OpenSandboxMsg asks the root to open the sandbox screen; with Terminal set, on the Terminals
// tab with that terminal selected.
type OpenSandboxMsg struct {
	ID       string
	Terminal string
}

// LogTarget is one process to follow in the log view.
type LogTarget struct {
	Sandbox     string
	Process     client.Process
	Incarnation int  // the incarnation the process belongs to (0 unknown)
	Stale       bool // it belongs to an earlier incarnation
	Lost        bool
	// Background follows only what the driver already receives, sending nothing (a log opened
	// without the user agreeing to start the sandbox's container: see driver.Waker).
	Background bool
}

// OpenLogsMsg asks the root to open the log view on one or more processes. With All set (a
// sandbox), the view follows every process of that sandbox: Targets are those known now, and
// processes that start later join.
type OpenLogsMsg struct {
	Targets []LogTarget
	All     string
	// Told says the user already agreed that reading these logs starts the sandbox's container
	// (driver.Waker); otherwise the root asks first where it would.
	Told bool
}

// NeedsRead reports whether opening the logs reads from the sandbox: a target followed in the
// foreground whose container is not known gone (a LOST or STALE one is read from the record).
func (o OpenLogsMsg) NeedsRead() bool {
	for _, t := range o.Targets {
		if !t.Lost && !t.Stale && !t.Background {
			return true
		}
	}
	return false
}

// OpenTerminalMsg asks the root to open a terminal pane.
type OpenTerminalMsg struct {
	Sandbox  string
	Terminal client.Terminal
	// Shell opens a shell through driver.Shells (in Session; "" none) rather than connecting to
	// Terminal by ID: Terminal only names it in the pane, and a reconnect opens the shell again.
	Shell   bool
	Session string
}

// AttachTerminalMsg asks the root to hand the whole screen to a terminal (full-screen attach); the
// TUI comes back, on the same screen, when the user detaches or the terminal ends.
type AttachTerminalMsg struct {
	Sandbox  string
	Terminal client.Terminal
	Shell    bool   // as OpenTerminalMsg
	Session  string // as OpenTerminalMsg
}

// PushScreenMsg asks the root to open a screen a screen made.
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

// Unsupported is the status a key answers with when the bridge cannot do what it asks (the key
// is not in the help then, but may still be pressed).
func Unsupported(what string) tea.Cmd {
	return Status(Info, "not offered by this bridge: "+what)
}

// Send is a command that yields msg.
func Send(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

// Status is a command that puts text in the status area at level l.
func Status(l Level, text string) tea.Cmd { return Send(StatusMsg{Level: l, Text: text}) }

// SignalTerminal is the command that interrupts (SIGINT) or terminates (SIGTERM, then SIGKILL) a
// terminal's process tree through the bridge and reports the outcome in the status area; after a
// terminate, endHint says where its ending will show.
func SignalTerminal(c *Context, sandbox, terminal string, interrupt bool, endHint string) tea.Cmd {
	br, ok := c.Driver.(driver.Terminals)
	if !ok {
		return Unsupported("signalling a terminal")
	}
	base := c.BaseCtx()
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

// Ending a terminal. The bridge's terminate sends TERM and, 0.5 s later, KILL: an interactive shell
// ignores TERM, so terminate always ends a shell KILLED KILL. The gentler end the bridge allows is
// input: ctrl-D (end of input) written through the PTY makes a shell at an empty prompt exit by
// itself, EXITED 0. Neither is sure to end every program, so the dialog says what each does.

// EndTerminalID is the ID of the dialog NewEndTerminal makes.
const EndTerminalID = "end-terminal"

// End-terminal choices, in the dialog's order.
const (
	EndByEOF       = iota // ctrl-D through the PTY
	EndByTerminate        // the bridge's terminate: TERM, then KILL after 0.5 s
)

// NewEndTerminal is the dialog T opens on a running terminal: ctrl-D first (the default), or the
// bridge's terminate, each with what it does to a shell. data is carried to the answer.
func NewEndTerminal(terminal string, data any) *Dialog {
	d := NewPick(EndTerminalID, "End terminal "+vocab.Text(terminal),
		"How should it end? The bridge's terminate sends TERM, then KILL after 0.5 s: an interactive shell ignores TERM, so it ends KILLED KILL.",
		[]string{
			"ctrl-D (end of input): a shell at its prompt exits by itself, EXITED 0",
			"terminate: TERM, then KILL after 0.5 s",
		})
	d.Data = data
	return d
}

// EndTerminalInput sends ctrl-D (end of input) to a terminal through a short connection of its
// own, for when no pane holds one. The connection asks for no size, so the PTY keeps its own; it
// waits until the bridge says ready (input written before would only be queued) and is closed
// once the byte is sent.
func EndTerminalInput(c *Context, sandbox, terminal string, endHint string) tea.Cmd {
	br, ok := c.Driver.(driver.Terminals)
	if !ok {
		return Unsupported("ending a terminal's input")
	}
	base := c.BaseCtx()
	what := "end input of terminal " + vocab.Text(terminal)
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, CallTimeout)
		defer cancel()
		conn, err := br.ConnectTerminal(ctx, sandbox, terminal, client.ConnectOptions{})
		if err != nil {
			return StatusMsg{Level: Error, Text: Describe(what, err)}
		}
		defer conn.Close()
		for {
			select {
			case ev, ok := <-conn.Events():
				if !ok {
					return StatusMsg{Level: Error, Text: what + ": the connection ended before the bridge was ready; nothing was sent"}
				}
				switch ev.Kind {
				case client.TermReady, client.TermResumed:
					if _, err := conn.Write([]byte{0x04}); err != nil {
						return StatusMsg{Level: Error, Text: Describe(what, err)}
					}
					return StatusMsg{Level: Info, Text: "sent ctrl-D (end of input) to terminal " + vocab.Text(terminal) +
						": a shell at its prompt exits by itself; " + endHint + "; if it keeps running, " + c.Keys.Terminate.Help().Key + " offers terminate"}
				case client.TermExited, client.TermLost, client.TermFailed:
					return StatusMsg{Level: Info, Text: "terminal " + vocab.Text(terminal) + " has already ended; nothing was sent"}
				}
			case <-ctx.Done():
				return StatusMsg{Level: Error, Text: what + ": the bridge did not answer in time; nothing was sent"}
			}
		}
	}
}

// Drain waits for the next value of ch, then takes whatever ch already holds, up to limit values
// in all, so a stream reaches the UI as one message per frame instead of one per value. closed
// reports that ch was closed (batch then holds what came before the close, possibly nothing).
func Drain[T any](ch <-chan T, limit int) (batch []T, closed bool) {
	return DrainInto(ch, nil, limit)
}

// DrainInto is Drain appending to batch, an earlier batch the caller no longer reads cut to length
// 0, so that a stream of batches needs no new slice each.
func DrainInto[T any](ch <-chan T, batch []T, limit int) ([]T, bool) {
	v, ok := <-ch
	if !ok {
		return nil, true
	}
	batch = append(batch, v)
	for len(batch) < limit {
		select {
		case v, ok := <-ch:
			if !ok {
				return batch, true
			}
			batch = append(batch, v)
		default:
			return batch, false
		}
	}
	return batch, false
}
