package sandbox

import (
	"context"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
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

// procEntry is one process as sandscope knows it.
type procEntry struct {
	p           client.Process
	incarnation int       // the incarnation it belongs to (0 unknown)
	inferred    bool      // that incarnation number is inferred
	lastSeen    time.Time // last time the bridge confirmed its state
	lost        bool
	evidence    []string
	req         *client.ExecRequest // how sandscope launched it (env included), when it did
}

// termEntry is one terminal as sandscope knows it.
type termEntry struct {
	t           client.Terminal
	incarnation int
	inferred    bool
	lastSeen    time.Time
	lost        bool
}

// incEntry is one incarnation on the timeline.
type incEntry struct {
	number    int
	inferred  bool
	firstSeen time.Time
	lastSeen  time.Time
	evidence  []string // why sandscope believes this incarnation began
}

// Model is the sandbox screen.
type Model struct {
	ctx    *common.Context
	id     string
	width  int
	height int

	tab     Tab
	cursor  [tabCount]int
	offset  [tabCount]int
	procs   []*procEntry
	terms   []*termEntry
	incs    []*incEntry
	current client.Incarnation
	running *bool
	marked  map[string]bool // process IDs picked for multi-follow

	dialog *common.Dialog

	watch    common.WatchHandle
	cancel   context.CancelFunc
	watchGen int
	closed   bool
	events   int // events seen (0 = nothing heard yet)
	watchErr error
	errSince time.Time
	lastOK   time.Time
}

// New makes the screen for one sandbox. Init starts its watcher.
func New(ctx *common.Context, id string) *Model {
	return &Model{ctx: ctx, id: id, marked: map[string]bool{}}
}

// ID is the sandbox shown.
func (m *Model) ID() string { return m.id }

// Title is the screen's crumb in the header: the sandbox ID.
func (m *Model) Title() string { return m.id }

// Back leaves esc to the root.
func (m *Model) Back() bool { return false }

// Init starts the watcher.
func (m *Model) Init() tea.Cmd {
	if m.ctx.Bridge == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx.BaseCtx())
	m.cancel = cancel
	m.watchGen++
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
	err error
}

// The root holds it as a common.Screen.
var _ common.Screen = (*Model)(nil)
