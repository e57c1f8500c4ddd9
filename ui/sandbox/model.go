package sandbox

import (
	"context"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/common"
)

// Tab is one of the screen's tabs.
type Tab int

const (
	ProcessesTab Tab = iota
	TerminalsTab
	TimelineTab
	tabCount
)

func (t Tab) String() string {
	switch t {
	case ProcessesTab:
		return "Processes"
	case TerminalsTab:
		return "Terminals"
	}
	return "Incarnations"
}

// procEntry, termEntry and incEntry are what the record knows of a process, a terminal and an
// incarnation: the screen renders them, it does not keep history of its own.
type (
	procEntry = record.Entry
	termEntry = record.Entry
	incEntry  = record.Inc
)

// Model is the sandbox screen.
type Model struct {
	ctx    *common.Context
	id     string
	width  int
	height int

	tab    Tab
	cursor [tabCount]int
	offset [tabCount]int
	// st is what the record knows of the sandbox (a copy, refreshed when the record changes);
	// without a record, the fold of this screen's own watcher.
	st     *record.State
	marked map[string]bool // process IDs picked for multi-follow

	dialog *common.Dialog

	watch    common.WatchHandle
	cancel   context.CancelFunc
	watchGen int
	closed   bool
	changes  <-chan string // the record's change notices
}

// New makes the screen for one sandbox. Init starts its watcher.
func New(ctx *common.Context, id string) *Model {
	m := &Model{ctx: ctx, id: id, marked: map[string]bool{}, st: record.NewState(id)}
	if ctx.Record != nil {
		m.st = ctx.Record.State(id)
	}
	return m
}

// ID is the sandbox shown.
func (m *Model) ID() string { return m.id }

// Title is the screen's crumb in the header: the sandbox ID.
func (m *Model) Title() string { return m.id }

// Back leaves esc to the root.
func (m *Model) Back() bool { return false }

// Init starts watching: through the record's background watcher when there is a record (the
// screen then re-reads the record when it changes), else with a watcher of its own.
func (m *Model) Init() tea.Cmd {
	if m.ctx.Bridge == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx.BaseCtx())
	m.cancel = cancel
	m.watchGen++
	if m.ctx.Record != nil && m.ctx.Watch != nil {
		ch, unsubscribe := m.ctx.Record.Subscribe()
		go func() {
			<-ctx.Done()
			unsubscribe()
		}()
		m.changes = ch
		m.SetFocus(true)
		m.st = m.ctx.Record.State(m.id)
		return waitForChange(ch, m.id, m.watchGen)
	}
	m.watch = m.ctx.Bridge.Watch(ctx, m.id, client.WatchOptions{FastInterval: m.ctx.WatchFast, SlowInterval: m.ctx.WatchSlow})
	m.SetFocus(true)
	return waitForWatch(m.watch.Events, m.id, m.watchGen)
}

// Close stops the watcher.
func (m *Model) Close() {
	m.closed = true
	if m.cancel != nil {
		m.cancel()
	}
}

// SetFocus switches the watcher between its fast (shown) and slow (hidden) rate.
func (m *Model) SetFocus(focused bool) {
	if w := m.ctx.Watch; w != nil && m.changes != nil {
		if focused {
			w.Focus(m.id)
		} else {
			w.Blur(m.id)
		}
		return
	}
	if m.watch.SetFocused != nil {
		m.watch.SetFocused(focused)
	}
}

// SetSize sets the screen's area.
func (m *Model) SetSize(w, h int) { m.width, m.height = w, h }

// Capturing reports whether a dialog takes every key.
func (m *Model) Capturing() bool { return m.dialog != nil }

// Attached counts live streams (the watcher).
func (m *Model) Attached() int {
	if m.cancel != nil && !m.closed {
		return 1
	}
	return 0
}

// tabKeys are the keys that act on the current tab, and only those (help never offers a key
// that does nothing where the user is).
func (m *Model) tabKeys() []key.Binding {
	k := m.ctx.Keys
	open := func(desc string) key.Binding {
		b := k.Open
		b.SetHelp(b.Help().Key, desc)
		return b
	}
	switch m.tab {
	case ProcessesTab:
		return []key.Binding{open("open its log"), k.Exec, k.Kill, k.Relaunch, k.Select, k.Shell}
	case TerminalsTab:
		return []key.Binding{open("open in the pane"), k.Shell, k.Attach, k.Interrupt, k.Terminate, k.Exec}
	}
	return []key.Binding{k.Exec, k.Shell}
}

// ShortHelp is the one-line help: the tab's keys, switching tabs, back and help.
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	return append(m.tabKeys(), k.NextTab, k.Back, k.Help)
}

// FullHelp is the help overlay: the tab's keys, the tab keys, then the global ones.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.ctx.Keys
	return k.HelpColumns(m.tabKeys(), []key.Binding{k.NextTab, k.PrevTab})
}

// watchMsg carries a batch of watcher events.
type watchMsg struct {
	sb     string
	gen    int
	events []client.SandboxEvent
	closed bool
}

// waitForWatch drains the watcher: everything already queued becomes one message.
func waitForWatch(ch <-chan client.SandboxEvent, sb string, gen int) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return watchMsg{sb: sb, gen: gen, closed: true}
		}
		batch := []client.SandboxEvent{ev}
		for len(batch) < 1024 {
			select {
			case ev, ok := <-ch:
				if !ok {
					return watchMsg{sb: sb, gen: gen, events: batch, closed: true}
				}
				batch = append(batch, ev)
			default:
				return watchMsg{sb: sb, gen: gen, events: batch}
			}
		}
		return watchMsg{sb: sb, gen: gen, events: batch}
	}
}

// changeMsg says the record of a sandbox changed.
type changeMsg struct {
	sb     string
	gen    int
	closed bool
}

// waitForChange waits for the record to change for sandbox sb (notices of other sandboxes are
// skipped; repeats queued meanwhile are drained into one message).
func waitForChange(ch <-chan string, sb string, gen int) tea.Cmd {
	return func() tea.Msg {
		for s := range ch {
			if s != sb {
				continue
			}
			for {
				select {
				case _, ok := <-ch:
					if !ok {
						return changeMsg{sb: sb, gen: gen, closed: true}
					}
					continue
				default:
				}
				break
			}
			return changeMsg{sb: sb, gen: gen}
		}
		return changeMsg{sb: sb, gen: gen, closed: true}
	}
}

// execMsg is the answer to a launch (exec or relaunch).
type execMsg struct {
	req      client.ExecRequest
	p        client.Process
	relaunch string // the process relaunched ("" for exec)
	known    bool   // the request is the original one (env included)
	err      error
}

// killMsg is the answer to a kill.
type killMsg struct {
	process string
	signal  int
	err     error
}

// termMsg is the answer to creating a terminal.
type termMsg struct {
	t   client.Terminal
	req client.TerminalRequest
	err error
}

// The root holds it as a common.Screen.
var _ common.Screen = (*Model)(nil)
