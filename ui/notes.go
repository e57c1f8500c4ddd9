package ui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/notify"
)

// TerminalWriter writes bytes to the terminal the program draws on, never in the middle of a
// frame (the program's own output writer, serialised with the renderer): the bell and desktop
// notifications go through it.
type TerminalWriter func(p []byte) error

// alertsMsg says the record changed: read its new alerts (ch is the subscription it came from).
type alertsMsg struct{ ch <-chan string }

// signalDoneMsg is the outcome of writing a notification's signal to the terminal.
type signalDoneMsg struct{ err error }

// subscribeAlerts starts listening for the record's alerts from now on (earlier ones, e.g. of a
// previous run, are history, not news).
func (m *Model) subscribeAlerts() {
	m.unsubscribeAlerts()
	rec := m.ctx.Record
	if rec == nil {
		return
	}
	m.alertSeq = rec.LastAlert()
	m.alertCh, m.alertCancel = rec.Subscribe()
}

func (m *Model) unsubscribeAlerts() {
	if m.alertCancel != nil {
		m.alertCancel()
	}
	m.alertCh, m.alertCancel = nil, nil
}

// waitAlerts waits for the record to change (draining what is already queued: many changes are
// one message).
func waitAlerts(ch <-chan string) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		if _, ok := <-ch; !ok {
			return nil
		}
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return alertsMsg{ch}
				}
			default:
				return alertsMsg{ch}
			}
		}
	}
}

// takeAlerts reads the record's new alerts into the notification list, tells the newest in the
// status area, and writes the configured signals to the terminal.
func (m *Model) takeAlerts(msg alertsMsg) tea.Cmd {
	if msg.ch != m.alertCh || m.ctx.Record == nil {
		return nil // a subscription of a record since closed
	}
	as, last, missed := m.ctx.Record.Alerts(m.alertSeq)
	m.alertSeq = last
	items := m.notes.Add(as, missed)
	var seq []byte
	for _, it := range items {
		seq = append(seq, notify.Sequence(m.opts.Notify[it.Kind], notify.Title(it), notify.Body(it))...)
	}
	if n := len(items); n > 0 {
		it := items[n-1]
		text := notify.StatusText(it)
		if n > 1 {
			text = fmt.Sprintf("%s (+%d more: %s)", text, n-1, m.ctx.Keys.Notifications.Help().Key)
		}
		badge, head := notify.Head(it)
		m.showNote(text, notify.Level(it), head, badge)
		if m.notesOpen {
			m.notes.Opened()
		}
	}
	cmd := waitAlerts(m.alertCh)
	if len(seq) > 0 && m.opts.Terminal != nil {
		w := m.opts.Terminal
		cmd = tea.Batch(cmd, func() tea.Msg { return signalDoneMsg{w(seq)} })
	}
	return cmd
}

// togglePanel opens the bridge panel (reading the pool afresh) or closes it.
func (m *Model) togglePanel() tea.Cmd {
	m.panelOpen = !m.panelOpen
	m.notesOpen = false
	if !m.panelOpen {
		return nil
	}
	m.sizeNotes()
	return m.panel.Load()
}

// panelKey handles a key while the bridge panel is open.
func (m *Model) panelKey(msg tea.KeyMsg) tea.Cmd {
	k := m.ctx.Keys
	if key.Matches(msg, k.BridgePanel, k.Back) {
		m.panelOpen = false
		return nil
	}
	_, cmd := m.panel.Update(msg)
	return cmd
}

// showNote puts a notification's line in the status area at once: news of a process must not wait
// behind a message (a LOST held back by a warning is told late). A message it pushes aside comes
// back when the notification fades; the list and the header's unread count have it too.
func (m *Model) showNote(text string, level common.Level, head string, badge themes.Badge) {
	if m.status != "" && m.status != m.noteStatus {
		m.displaced, m.displacedLevel = m.status, m.statusLevel
	}
	m.status, m.statusLevel, m.statusAt = text, level, m.ctx.Clock()
	m.noteStatus, m.noteHead, m.noteBadge = text, head, badge
}

// expireStatus clears the status area when its message fades; when a notification fades, the
// message it pushed aside comes back (reported true: it is a new message, with its own fade).
func (m *Model) expireStatus() bool {
	back := m.status == m.noteStatus && m.displaced != ""
	m.status = ""
	if back {
		m.status, m.statusLevel, m.statusAt = m.displaced, m.displacedLevel, m.ctx.Clock()
	}
	m.displaced = ""
	return back
}

// toggleNotes opens or closes the notification list.
func (m *Model) toggleNotes() {
	m.panelOpen = false
	m.notesOpen = !m.notesOpen
	if m.notesOpen {
		m.notes.Opened()
		m.sizeNotes()
	}
}

func (m *Model) sizeNotes() {
	w, h := m.bodySize()
	m.notes.SetSize(max(w-4, 20), max(h-2, 6))
	m.panel.SetSize(max(w-4, 20), max(h-2, 6))
}

// notesKey handles a key while the list is open: its own keys, and the keys that close it.
func (m *Model) notesKey(msg tea.KeyMsg) tea.Cmd {
	k := m.ctx.Keys
	if key.Matches(msg, k.Notifications, k.Back) {
		m.notesOpen = false
		return nil
	}
	if key.Matches(msg, k.Open) {
		m.notesOpen = false
	}
	_, cmd := m.notes.Update(msg)
	return cmd
}

// Notifications exposes the notification list (tests).
func (m *Model) Notifications() []notify.Item { return m.notes.Items() }
