package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// Tab is one of the screen's tabs. A screen shows the tabs its driver offers (tabsFor).
type Tab int

const (
	ProcessesTab Tab = iota // every driver: its runs
	TerminalsTab            // driver.Terminals
	SessionsTab             // driver.Sessions
	TimelineTab             // every driver: incarnations, reported or inferred
	tabCount
)

func (t Tab) String() string {
	switch t {
	case ProcessesTab:
		return "Processes"
	case TerminalsTab:
		return "Terminals"
	case SessionsTab:
		return "Sessions"
	}
	return "Incarnations"
}

// tabsFor is the tabs a driver's capabilities give the screen, in order: the page is built
// from the tabs it is given, and a tab whose actions the bridge lacks is not there at all.
func tabsFor(d driver.Driver) []Tab {
	tabs := []Tab{ProcessesTab}
	if _, ok := d.(driver.Terminals); ok {
		tabs = append(tabs, TerminalsTab)
	}
	if _, ok := d.(driver.Sessions); ok {
		tabs = append(tabs, SessionsTab)
	}
	return append(tabs, TimelineTab)
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

	tab   Tab   // the active tab
	kinds []Tab // the tabs shown, in order (the driver's: tabsFor)
	// ages are the live ages the last View drew (NextChange)
	ages common.Ages
	// hidden: another screen is on top (SetFocus(false)); acting on the sandbox does not focus
	// its watcher then
	hidden bool
	tabs   *components.Tabs
	lists  [tabCount]*components.List // cursor, paging, filter, sort (and the processes' selection) per tab
	// preview shows the selected process's details and the tail of its output beside the list
	preview *preview
	// viewLen is the length of the last View's text (the next one reserves it)
	viewLen int
	// the title, the tab strip and the detail lines as last drawn (View draws them again only
	// when what they are drawn from changed)
	titleLine, stripLine lastFit
	detailView           lastDetail
	// procFixed keeps the process rows' cells that do not move with the clock, across redraws
	procFixed rowCells
	// st is what the record knows of the sandbox (a copy, refreshed when the record changes);
	// without a record, the fold of this screen's own watcher.
	st *record.State

	dialog *common.Dialog

	// sessions are the driver's sessions (driver.Sessions: what sandscope created or used), read
	// in a command; session is the one exec and shell use ("" none).
	sessions    []driver.Session
	sessionsErr error
	session     string
	// declined is the wake notice the user said no to: asked again next time (the driver says
	// its notice once).
	declined string

	watch    common.WatchHandle
	cancel   context.CancelFunc
	watchGen int
	closed   bool
	changes  <-chan string // the record's change notices
}

// New makes the screen for one sandbox. Init starts its watcher.
func New(ctx *common.Context, id string) *Model {
	m := &Model{ctx: ctx, id: id, st: record.NewState(id), kinds: tabsFor(ctx.Driver)}
	m.tabs = components.NewTabs(ctx.Keys, len(m.kinds))
	if ctx.Record != nil {
		m.st = ctx.Record.State(id)
	}
	for t := range m.lists {
		m.lists[t] = components.NewList(ctx.Keys)
	}
	m.lists[ProcessesTab].Selectable(true).SetSorts([]components.Sort{
		{Name: "state", Less: func(a, b int) bool {
			return stateOrder(m.st.Processes[a].Process.State) < stateOrder(m.st.Processes[b].Process.State)
		}},
		{Name: "started", Less: func(a, b int) bool {
			return m.st.Processes[a].Process.StartedAt.Before(m.st.Processes[b].Process.StartedAt)
		}},
		{Name: "command", Less: func(a, b int) bool {
			return m.procFixed.get(m.st.Processes[a]).argv < m.procFixed.get(m.st.Processes[b]).argv
		}},
	})
	m.lists[TerminalsTab].SetSorts([]components.Sort{
		{Name: "state", Less: func(a, b int) bool {
			return stateOrder(m.st.Terminals[a].Terminal.Status) < stateOrder(m.st.Terminals[b].Terminal.Status)
		}},
	})
	m.lists[TimelineTab].SetSorts([]components.Sort{
		{Name: "first seen", Less: func(a, b int) bool {
			return m.st.Incarnations[a].FirstSeen.Before(m.st.Incarnations[b].FirstSeen)
		}},
		{Name: "last seen", Less: func(a, b int) bool {
			return m.st.Incarnations[a].LastSeen.Before(m.st.Incarnations[b].LastSeen)
		}},
	})
	m.syncLists()
	return m
}

// ID is the sandbox shown.
func (m *Model) ID() string { return m.id }

// Title is the screen's crumb in the header: the sandbox ID.
func (m *Model) Title() string { return m.id }

// Back clears the current tab's active filter; otherwise esc is the root's.
func (m *Model) Back() bool { return m.lists[m.tab].Back() }

// list is the current tab's list.
func (m *Model) list() *components.List { return m.lists[m.tab] }

// syncLists gives each tab's list the record's current rows (cursors stay on their rows). The
// filter looks in what each row shows, state words included ("lost", "stale").
func (m *Model) syncLists() {
	now := m.ctx.Clock()
	m.lists[ProcessesTab].SetRows(components.Rows{N: len(m.st.Processes),
		Key: func(i int) string { return entryKey(m.st.Processes[i]) },
		Text: func(i int) string {
			e := m.st.Processes[i]
			return strings.Join(m.procCells(e, m.procWord(e, now), now), " ")
		}})
	m.lists[TerminalsTab].SetRows(components.Rows{N: len(m.st.Terminals),
		Key: func(i int) string { return m.st.Terminals[i].Terminal.ID },
		Text: func(i int) string {
			e := m.st.Terminals[i]
			return strings.Join(m.termCells(e, m.termWord(e, now)), " ")
		}})
	m.lists[TimelineTab].SetRows(components.Rows{N: len(m.st.Incarnations),
		Key:  func(i int) string { return fmt.Sprint(m.st.Incarnations[i].Number) },
		Text: func(i int) string { return strings.Join(m.incCells(i), " ") }})
	m.lists[SessionsTab].SetRows(components.Rows{N: len(m.sessions),
		Key:  func(i int) string { return m.sessions[i].ID },
		Text: func(i int) string { return strings.Join(m.sessionCells(i, now), " ") }})
	m.tabs.SetActive(m.tabIndex(m.tab))
}

// has reports whether the screen shows tab t.
func (m *Model) has(t Tab) bool { return m.tabIndex(t) >= 0 }

// tabIndex is t's place in the strip (-1: not shown).
func (m *Model) tabIndex(t Tab) int {
	for i, k := range m.kinds {
		if k == t {
			return i
		}
	}
	return -1
}

// selectLast puts the cursor of tab t on its last row (a process or terminal just started).
func (m *Model) selectLast(t Tab) {
	m.tab = t
	m.syncLists()
	m.lists[t].SelectIndex(m.lists[t].Total() - 1)
}

// ShowTerminal puts the screen on the Terminals tab with the cursor on terminal id (a notification
// about it was opened).
func (m *Model) ShowTerminal(id string) {
	if !m.has(TerminalsTab) {
		return
	}
	m.tab = TerminalsTab
	m.syncLists()
	m.lists[TerminalsTab].Select(id)
}

// stateOrder sorts running first, then ended, then the rest.
func stateOrder(s string) int {
	switch s {
	case "running":
		return 0
	case "exited":
		return 1
	}
	return 2
}

// Init starts watching: through the record's background watcher when there is a record (the
// screen then re-reads the record when it changes), else with a watcher of its own.
func (m *Model) Init() tea.Cmd {
	if m.ctx.Driver == nil {
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
		return tea.Batch(waitForChange(ch, m.id, m.watchGen), m.loadSessions())
	}
	m.watch = m.ctx.Driver.Watch(ctx, m.id, client.WatchOptions{FastInterval: m.ctx.WatchFast, SlowInterval: m.ctx.WatchSlow,
		SettledInterval: client.SettledInterval(m.ctx.WatchFast, m.ctx.WatchSlow)})
	m.SetFocus(true)
	return tea.Batch(waitForWatch(m.watch.Events, m.id, m.watchGen), m.loadSessions())
}

// Close stops the watcher.
func (m *Model) Close() {
	m.closed = true
	m.stopPreview()
	if m.cancel != nil {
		m.cancel()
	}
}

// SetFocus switches the watcher between its fast (shown) and slow (hidden) rate.
func (m *Model) SetFocus(focused bool) {
	m.hidden = !focused
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

// NextChange is when the screen's text next changes with the clock alone (a running process's
// duration, an age): zero when the last view drew none.
func (m *Model) NextChange(now time.Time) time.Time { return m.ages.Next(now) }

// stir says the user acted on the sandbox: its watcher, slowed while nothing changed, polls at
// its fast rate again (see client.WatchOptions).
func (m *Model) stir() {
	if m.closed || m.hidden {
		return
	}
	if w := m.ctx.Watch; w != nil && m.changes != nil {
		w.Nudge(m.id)
		return
	}
	if m.watch.SetFocused != nil {
		m.watch.SetFocused(true)
	}
}

// SetSize sets the screen's area.
func (m *Model) SetSize(w, h int) { m.width, m.height = w, h }

// Capturing reports whether a dialog or a filter being typed takes every key.
func (m *Model) Capturing() bool { return m.dialog != nil || m.list().Capturing() }

// Prompting reports an open dialog.
func (m *Model) Prompting() bool { return m.dialog != nil }

// Attached counts live streams (the watcher).
func (m *Model) Attached() int {
	n := 0
	if m.cancel != nil && !m.closed {
		n++
	}
	if m.preview != nil && m.preview.cancel != nil {
		n++ // the preview's follower
	}
	return n
}

// ShortHelp is the one-line help: the tab's first keys, switching tabs, back and help.
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	var own []key.Binding
	for _, b := range m.actions().Bindings() {
		switch b.Help() {
		case k.FollowAll.Help(), k.Report.Help(): // the full help has them; the line has no room
			continue
		}
		own = append(own, b)
		if m.tab == ProcessesTab && b.Help() == k.Relaunch.Help() {
			own = append(own, k.Select) // marking rows for multi-follow (the list's key)
		}
	}
	return append(own, k.NextTab, k.Back, k.Help)
}

// FullHelp is the help overlay: the tab's keys, the tab strip's, then the table's, from the
// tables that dispatch them.
func (m *Model) FullHelp() [][]key.Binding {
	return m.ctx.Keys.HelpColumns(m.actions().Bindings(), append(m.tabs.Bindings(), m.list().Bindings()...))
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
		batch, closed := common.Drain(ch, 1024)
		return watchMsg{sb: sb, gen: gen, events: batch, closed: closed}
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
