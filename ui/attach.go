package ui

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/attach"
	"sandscope/client"
	"sandscope/driver"
	"sandscope/ui/common"
	"sandscope/ui/termpane"
)

// Full-screen attach: the TUI hands the whole terminal to a sandbox terminal (tea.Exec leaves the
// alternate screen and raw mode to the attachment) and comes back on the same screen when the
// user detaches or the terminal ends. Its bytes go straight to the user's terminal, so it has none
// of the embedded pane's emulator limits.

// attachConnMsg is the answer to connecting for a full-screen attach.
type attachConnMsg struct {
	open common.OpenTerminalMsg
	conn common.TermConn
	err  error
}

// attachDoneMsg says a full-screen attach returned.
type attachDoneMsg struct {
	sandbox, terminal string
	res               attach.Result
	err               error
}

// attachFull connects to a terminal (or opens the shell again) for a full-screen attach.
func (m *Model) attachFull(open common.OpenTerminalMsg) tea.Cmd {
	br, base := m.ctx.Driver, m.ctx.BaseCtx()
	cols, rows := max(m.width, 1), max(m.height, 1)
	m.status, m.statusLevel = "attaching to terminal "+common.SanitizeText(open.Terminal.ID)+"…", common.Info
	return func() tea.Msg {
		conn, err := connectTerm(base, br, open, cols, rows)
		return attachConnMsg{open: open, conn: conn, err: err}
	}
}

func (m *Model) runAttach(msg attachConnMsg) tea.Cmd {
	sandbox := msg.open.Sandbox
	id := common.SanitizeText(msg.open.Terminal.ID)
	if msg.err != nil {
		m.status, m.statusLevel = common.Describe("attach terminal "+id, msg.err), common.Error
		return nil
	}
	// No reattach hint: a detach comes back to the TUI, and the attachment's screen is cleared.
	cmd := attach.NewCommand(m.ctx.BaseCtx(), msg.conn, attach.Options{
		DetachKey: m.detachKey,
		Label:     "sandbox " + sandbox + " terminal " + id,
		OwnScreen: true,
	})
	conn := msg.conn
	// The attachment sized the terminal to the whole screen; an embedded pane on the same terminal
	// gets its own size back when the attachment ends (the pane's emulator never changed size, so
	// the pane would not resend it).
	paneCols, paneRows, pane := m.paneSize(sandbox, msg.open.Terminal.ID)
	return tea.Exec(cmd, func(err error) tea.Msg {
		if pane {
			_ = conn.Resize(paneCols, paneRows)
		}
		_ = conn.Close()
		return attachDoneMsg{sandbox: sandbox, terminal: id, res: cmd.Result, err: err}
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
		return m.attachFull(open)
	case termpane.InterruptAction:
		return common.SignalTerminal(m.ctx, open.Sandbox, open.Terminal.ID, true, "the pane shows its ending")
	case termpane.TerminateAction:
		if p.pane.State().Final() {
			m.status, m.statusLevel = "terminal "+common.SanitizeText(open.Terminal.ID)+" has already ended", common.Info
			return nil
		}
		m.dialog = common.NewEndTerminal(open.Terminal.ID, msg.ID)
	}
	return nil
}

// endTerminal acts on the answer of the end-terminal dialog a pane's T opened.
func (m *Model) endTerminal(res *common.DialogResult) tea.Cmd {
	id, _ := res.Data.(int64)
	p, ok := m.panes[id]
	if !res.OK || !ok {
		return nil
	}
	if res.Choice == common.EndByTerminate {
		return common.SignalTerminal(m.ctx, p.open.Sandbox, p.open.Terminal.ID, false, "the pane shows its ending")
	}
	if !p.pane.EndInput() {
		m.status, m.statusLevel = "terminal "+common.SanitizeText(p.open.Terminal.ID)+" has already ended; nothing was sent", common.Info
		return nil
	}
	m.status, m.statusLevel = "sent ctrl-D (end of input) to terminal "+common.SanitizeText(p.open.Terminal.ID)+
		": a shell at its prompt exits by itself and the pane shows its ending; if it keeps running, "+m.ctx.Keys.Terminate.Help().Key+" offers terminate", common.Info
	return nil
}

// connectTerm connects to what open names: a shell the driver opens (driver.Shells, in open's
// session; opening it again reaches the same shell where the bridge keeps one per session), or a
// terminal by ID (driver.Terminals).
func connectTerm(ctx context.Context, d driver.Driver, open common.OpenTerminalMsg, cols, rows int) (common.TermConn, error) {
	if open.Shell {
		sh, ok := d.(driver.Shells)
		if !ok {
			return nil, fmt.Errorf("shell: %w", client.ErrUnsupported)
		}
		return sh.OpenShell(ctx, open.Sandbox, driver.ShellRequest{Cols: cols, Rows: rows, Session: open.Session})
	}
	ts, ok := d.(driver.Terminals)
	if !ok {
		return nil, fmt.Errorf("terminal %s: %w", open.Terminal.ID, client.ErrUnsupported)
	}
	return ts.ConnectTerminal(ctx, open.Sandbox, open.Terminal.ID, client.ConnectOptions{Cols: cols, Rows: rows})
}
