package runs

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// Update handles the record's change notices, the refresh tick and keys.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	switch msg := msg.(type) {
	case changeMsg:
		if msg.owner != m || msg.gen != m.gen || m.closed {
			return m, nil
		}
		m.refresh(msg.sbs)
		if msg.closed {
			return m, nil
		}
		return m, waitForChange(m, m.changes, m.gen)
	case tickMsg:
		if msg.owner != m || msg.gen != m.gen || m.closed {
			return m, nil
		}
		// a sandbox added or forgotten elsewhere, ages and last output times: read in a command
		return m, tea.Batch(m.tick(), m.loadKnown(), m.reloadLater())
	case reloadMsg:
		if msg.owner != m {
			return m, nil
		}
		m.reloading = false
		if msg.gen != m.gen || m.closed {
			return m, nil
		}
		m.reloaded(msg)
		return m, nil
	case readMsg:
		if msg.owner != m || m.closed {
			return m, nil
		}
		return m, m.took(msg)
	case knownMsg:
		if msg.owner != m || m.closed {
			return m, nil
		}
		m.known = msg.sbs
		m.reload()
		return m, nil
	case tea.MouseMsg:
		m.readAll() // the rows it moves to
		switch {
		case msg.Button == tea.MouseButtonWheelUp:
			m.list.Move(-3)
		case msg.Button == tea.MouseButtonWheelDown:
			m.list.Move(3)
		case msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft:
			m.list.ClickRow(msg.Y - 2) // title, table head
		}
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// key handles a key: the table's own first, then the screen's.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	// a key needs every row (filtering, sorting, narrowing, moving): the sandboxes readRest has not
	// answered for yet are read now
	m.readAll()
	if ok, cmd := m.list.Update(msg); ok {
		return cmd
	}
	cmd, _ := m.actions().Handle(msg)
	return cmd
}

// actions are the screen's own keys: one table for dispatch and help.
func (m *Model) actions() components.KeyActions {
	k := m.ctx.Keys
	return components.KeyActions{
		components.Act(components.Relabel(k.Open, "open its log or terminal"), m.open),
		components.Act(k.Attention, func() tea.Cmd {
			m.setAttention(!m.attention)
			if m.attention {
				m.list.Move(-m.list.Len()) // the first run needing attention
			}
			return nil
		}),
	}
}

// selected is the row under the cursor (nil when none).
func (m *Model) selected() *row {
	if i := m.list.Cursor(); i >= 0 && i < m.rowCount() {
		return m.rowAt(i)
	}
	return nil
}

// open opens the selected process's log (a LOST or STALE one with what the record captured) or
// the selected terminal in the pane.
func (m *Model) open() tea.Cmd {
	r := m.selected()
	if r == nil {
		return nil
	}
	if r.e.Kind == record.Process {
		return common.Send(common.OpenLogsMsg{Targets: []common.LogTarget{{Sandbox: r.sandbox, Process: r.e.Process,
			Incarnation: r.e.Incarnation, Stale: r.cond == common.Stale, Lost: r.cond == common.Lost}}})
	}
	t := r.e.Terminal
	switch {
	case r.cond == common.Stale || r.cond == common.Lost:
		return common.Status(common.Warn, fmt.Sprintf("refused: terminal %s belonged to incarnation #%d; its container is gone and the handle is stale",
			common.SanitizeText(t.ID), r.e.Incarnation))
	case t.Status != "" && t.Status != "running":
		return common.Status(common.Info, fmt.Sprintf("terminal %s already ended (%s); nothing to attach to", common.SanitizeText(t.ID), r.label))
	}
	return common.Send(common.OpenTerminalMsg{Sandbox: r.sandbox, Terminal: t})
}
