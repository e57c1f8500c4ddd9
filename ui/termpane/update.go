package termpane

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// Update handles the pane's own messages and, while focused, keys and mouse events.
func (m *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	switch msg := msg.(type) {
	case statusMsg:
		if msg.id != m.id {
			return m, nil
		}
		for _, ev := range msg.events {
			m.apply(ev)
		}
		if msg.closed {
			m.statusDone = true
			if !m.state.Final() && !m.closed {
				m.state, m.reason = Errored, "the connection ended without an exit, loss or failure"
			}
			return m, nil
		}
		return m, waitForStatus(m.id, m.w.status)
	case frameMsg:
		if msg.id != m.id || m.closed {
			return m, nil
		}
		m.snap = m.w.Snapshot()
		m.clampScroll()
		if m.statusDone && m.w.idle() && m.snap.Rendered == m.snap.Received {
			return m, nil // the last bytes are on screen; nothing will change any more
		}
		return m, m.tick()
	case tea.KeyMsg:
		if !m.focused {
			return m, m.unfocusedKey(msg)
		}
		if key.Matches(msg, m.leave) {
			m.focused = false
			id := m.id
			return m, func() tea.Msg { return FocusLeftMsg{ID: id} }
		}
		if in, ok := encodeKey(msg); ok {
			m.input(in)
		}
		return m, nil
	case tea.MouseMsg:
		if !m.focused {
			return m, nil
		}
		x, y := msg.X-m.ox, msg.Y-m.oy-headerLines
		cols, rows := m.innerSize()
		if x < 0 || y < 0 || x >= cols || y >= rows {
			return m, nil
		}
		if ev, ok := encodeMouse(msg, x, y); ok {
			m.input(input{mouse: ev})
		}
		return m, nil
	}
	return m, nil
}

// unfocusedKey handles the keys that act on the pane while the TUI has the keyboard.
func (m *Model) unfocusedKey(msg tea.KeyMsg) tea.Cmd {
	cmd, ok := m.actions().Handle(msg)
	if !ok && m.opts.NoSignals && key.Matches(msg, m.ctx.Keys.Interrupt, m.ctx.Keys.Terminate) {
		// not offered (not in the help); pressed, they say why nothing happens
		return common.Unsupported("interrupting or ending this shell (exit it, or esc closes the pane)")
	}
	return cmd
}

// actions are the keys of the unfocused pane: one table for dispatch and help.
func (m *Model) actions() components.KeyActions {
	k := m.ctx.Keys
	ask := func(a Action) func() tea.Cmd {
		id := m.id
		return func() tea.Cmd { return func() tea.Msg { return ActionMsg{ID: id, Action: a} } }
	}
	var acts components.KeyActions
	if !m.closed && !m.state.Final() {
		acts = append(acts, components.Act(k.FocusPane, func() tea.Cmd { m.Focus(); return nil }))
	}
	// the scrollback, read while the pane is not focused (offered once rows have scrolled off)
	if m.hasScrollback() {
		page := func(to scrollTo) func() tea.Cmd { return func() tea.Cmd { m.page(to); return nil } }
		acts = append(acts,
			components.Act(k.PageUp, page(pageUp)),
			components.Act(k.PageDown, page(pageDown)),
			components.Act(k.Top, page(oldest)),
			components.Act(k.Bottom, page(live)))
	}
	acts = append(acts, components.Act(k.Attach, ask(AttachAction)))
	if m.opts.NoSignals {
		return acts
	}
	return append(acts,
		components.Act(k.Interrupt, ask(InterruptAction)),
		components.Act(k.Terminate, ask(TerminateAction)))
}

// hasScrollback reports whether rows have scrolled off the top (or the view is scrolled back).
func (m *Model) hasScrollback() bool {
	if m.scrolled {
		return true
	}
	if m.w == nil || m.w.hist == nil {
		return false
	}
	n, _ := m.w.hist.Len()
	return n > 0
}

// scrollTo is where a paging key moves the scrollback view.
type scrollTo int

const (
	pageUp scrollTo = iota
	pageDown
	oldest
	live
)

// page moves the view through the scrollback: a page up or down, to the oldest row kept, or back
// to live (a page down past the screen's top row returns there too).
func (m *Model) page(to scrollTo) {
	_, rows := m.innerSize()
	m.w.hist.Window(0, 0) // render the rows not rendered yet: row numbers are final after it
	n, base := m.w.hist.Len()
	liveTop := base + int64(n) // the row number of the screen's top row
	top := liveTop
	if m.scrolled {
		top = m.scrollTop
	}
	switch to {
	case pageUp:
		top -= int64(rows)
	case pageDown:
		top += int64(rows)
	case oldest:
		top = base
	case live:
		top = liveTop
	}
	m.scrollTop = max(top, base)
	m.scrolled = m.scrollTop < liveTop
}

// clampScroll keeps a scrolled view on rows still kept (the oldest go as new ones arrive).
func (m *Model) clampScroll() {
	if !m.scrolled {
		return
	}
	n, base := m.w.hist.Len()
	m.scrollTop = max(m.scrollTop, base)
	if m.scrollTop >= base+int64(n) {
		m.scrolled = false
	}
}

// EndInput sends ctrl-D (end of input) to the terminal, as typing it in the focused pane would:
// a shell at an empty prompt exits by itself. It reports false when the pane can send nothing (it
// is closed or its terminal ended).
func (m *Model) EndInput() bool {
	if m.closed || m.state.Final() {
		return false
	}
	m.input(input{raw: []byte{0x04}})
	return true
}

// input hands one input to the worker without ever blocking the UI: if the worker cannot take it
// (the link is stalled and 256 inputs are waiting) the input is dropped and the header says so.
func (m *Model) input(in input) {
	if m.closed || m.state.Final() {
		return
	}
	select {
	case m.w.inputs <- in:
	default:
		m.reason = "input dropped: the terminal is not taking input"
	}
}

func (m *Model) apply(ev client.TermEvent) {
	switch ev.Kind {
	case client.TermReady, client.TermResumed:
		m.state, m.attempt, m.reason = Live, ev.Attempt, ""
	case client.TermGap:
		m.gaps++
	case client.TermInterrupted:
		m.state = Reconnecting
		m.reason = fmt.Sprintf("interrupted %d %s", ev.CloseCode, ev.Reason)
	case client.TermReconnecting:
		m.state, m.attempt = Reconnecting, ev.Attempt
	case client.TermReplayed:
		// a stable PTY resent its whole buffer: the worker cleared the screen and repainted it
		m.state, m.attempt, m.reason, m.replayed = Live, ev.Attempt, "", len(ev.Data)
	case client.TermEnded:
		// stable PTYs send no exit message: the end was detected, the code is unknown
		m.state, m.endedUnknown = Exited, true
	case client.TermExited:
		m.state, m.exit = Exited, ev.Exit
	case client.TermError:
		if ev.CloseCode != 0 {
			m.state = Errored
		}
		m.reason = ev.Reason
	case client.TermLost:
		m.state, m.loss, m.reason = Lost, ev.Loss, ev.Reason
	case client.TermFailed:
		m.state, m.reason = Failed, ev.Reason
	}
}

// component adapts the pane to the root's common.Component contract (Update returning the
// interface); the pane itself returns its concrete type.
type component struct{ *Model }

// AsScreen wraps the pane for the root, which holds screens as common.Screen values.
func (m *Model) AsScreen() common.Screen { return component{m} }

// Title is the pane's crumb in the header.
func (c component) Title() string { return "terminal" }

// SetFocus does nothing: the root focuses the pane's keys explicitly (Focus, the leave key).
func (c component) SetFocus(bool) {}

// Back returns a scrolled view to live; otherwise it leaves esc to the root (while focused the
// pane takes every key, esc included).
func (c component) Back() bool {
	if c.scrolled {
		c.scrolled = false
		return true
	}
	return false
}

func (c component) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	m, cmd := c.Model.Update(msg)
	return component{m}, cmd
}

// The root holds it as a common.Screen.
var _ common.Screen = component{}
