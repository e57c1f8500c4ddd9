package ui

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/attach"
	"sandscope/client"
	"sandscope/ui/common"
	"sandscope/ui/termpane"
)

// Full-screen attach: the TUI hands the whole terminal to a sandbox terminal (tea.Exec leaves the
// alternate screen and raw mode to the attachment) and comes back on the same screen when the
// user detaches or the terminal ends. Its bytes go straight to the user's terminal, so it has none
// of the embedded pane's emulator limits.

// attachConnMsg is the answer to connecting for a full-screen attach.
type attachConnMsg struct {
	sandbox  string
	terminal client.Terminal
	conn     common.TermConn
	err      error
}

// attachDoneMsg says a full-screen attach returned.
type attachDoneMsg struct {
	sandbox, terminal string
	res               attach.Result
	err               error
}

// attachFull connects to a terminal for a full-screen attach.
func (m *Model) attachFull(sandbox string, t client.Terminal) tea.Cmd {
	br, base, stable := m.ctx.Bridge, m.ctx.BaseCtx(), m.ctx.Stable
	cols, rows := max(m.width, 1), max(m.height, 1)
	m.status, m.statusLevel = "attaching to terminal "+common.SanitizeText(t.ID)+"…", common.Info
	return func() tea.Msg {
		conn, err := connectTerm(base, br, stable, sandbox, t.ID, cols, rows)
		return attachConnMsg{sandbox: sandbox, terminal: t, conn: conn, err: err}
	}
}

func (m *Model) runAttach(msg attachConnMsg) tea.Cmd {
	id := common.SanitizeText(msg.terminal.ID)
	if msg.err != nil {
		m.status, m.statusLevel = common.Describe("attach terminal "+id, msg.err), common.Error
		return nil
	}
	// No reattach hint: a detach comes back to the TUI, and the attachment's screen is cleared.
	cmd := attach.NewCommand(m.ctx.BaseCtx(), msg.conn, attach.Options{
		DetachKey: m.detachKey,
		Label:     "sandbox " + msg.sandbox + " terminal " + id,
		OwnScreen: true,
	})
	conn := msg.conn
	// The attachment sized the terminal to the whole screen; an embedded pane on the same terminal
	// gets its own size back when the attachment ends (the pane's emulator never changed size, so
	// the pane would not resend it).
	paneCols, paneRows, pane := m.paneSize(msg.sandbox, msg.terminal.ID)
	return tea.Exec(cmd, func(err error) tea.Msg {
		if pane {
			_ = conn.Resize(paneCols, paneRows)
		}
		_ = conn.Close()
		return attachDoneMsg{sandbox: msg.sandbox, terminal: id, res: cmd.Result, err: err}
	})
}

func (m *Model) attachDone(msg attachDoneMsg) {
	lvl := common.Info
	text := ""
	switch msg.res.Ending {
	case attach.Detached:
		text = fmt.Sprintf("detached from terminal %s; it keeps running", msg.terminal)
	case attach.Exited:
		text = fmt.Sprintf("terminal %s exited (%d)", msg.terminal, msg.res.ExitStatus())
	case attach.Lost:
		lvl, text = common.Warn, fmt.Sprintf("terminal %s is LOST: it vanished with its container", msg.terminal)
	case attach.Failed:
		lvl, text = common.Error, fmt.Sprintf("terminal %s: reconnecting failed; the bridge stayed unreachable", msg.terminal)
	default:
		lvl, text = common.Warn, fmt.Sprintf("attachment to terminal %s ended: %s", msg.terminal, msg.res.Ending)
	}
	if msg.err != nil {
		lvl, text = common.Error, common.Describe("attach terminal "+msg.terminal, msg.err)
	}
	m.status, m.statusLevel, m.statusAt = text, lvl, m.ctx.Clock()
}

// paneSize is the inner size of the open pane showing the terminal, if one is open.
func (m *Model) paneSize(sandbox, terminal string) (cols, rows int, ok bool) {
	for _, p := range m.panes {
		if p.open.Sandbox == sandbox && p.open.Terminal.ID == terminal {
			cols, rows = p.pane.InnerSize()
			return cols, rows, true
		}
	}
	return 0, 0, false
}

// paneAction acts on the terminal of an unfocused pane.
func (m *Model) paneAction(msg termpane.ActionMsg) tea.Cmd {
	p, ok := m.panes[msg.ID]
	if !ok {
		return nil
	}
	open := p.open
	switch msg.Action {
	case termpane.AttachAction:
		return m.attachFull(open.Sandbox, open.Terminal)
	case termpane.InterruptAction, termpane.TerminateAction:
		return common.SignalTerminal(m.ctx, open.Sandbox, open.Terminal.ID,
			msg.Action == termpane.InterruptAction, "the pane shows its ending")
	}
	return nil
}

// connectTerm connects to a terminal: a preview terminal through the bridge seam, or on a stable
// bridge the sandbox's PTY ("default": the session-less one; otherwise the session's).
func connectTerm(ctx context.Context, br common.Bridge, stable *client.Stable, sandbox, id string, cols, rows int) (common.TermConn, error) {
	if stable == nil {
		return br.ConnectTerminal(ctx, sandbox, id, cols, rows)
	}
	session := id
	if session == "default" {
		session = ""
	}
	conn, err := stable.ConnectPTY(ctx, sandbox, client.PTYOptions{Cols: cols, Rows: rows, Session: session})
	if err != nil {
		return nil, err
	}
	return conn, nil
}
