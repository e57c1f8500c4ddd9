package runs

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/record"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// refreshEvery re-reads the record for ages and last output times (no bridge call: the record's
// background watcher is what polls).
const refreshEvery = time.Second

// row is one process or terminal of one sandbox.
type row struct {
	sandbox   string
	e         *record.Entry
	cond      common.Condition
	badge     themes.Badge
	label     string
	suspect   bool // running, and the last stream event recorded was a suspect end
	attention bool // LOST, SUSPECT END or STALE
	capturing bool
	out       record.Output
	started   time.Time
}

// Model is the all-runs screen.
type Model struct {
	ctx    *common.Context
	width  int
	height int

	// known are the sandboxes the record knows, when no background watcher lists them (loadKnown)
	known     []string
	states    map[string]*record.State // what the record knows of each sandbox listed
	all       []*row                   // every run
	rows      []*row                   // the rows the list sees (all, or those needing attention)
	list      *components.List
	attention bool // narrowed to the runs that need attention

	cancel  context.CancelFunc
	changes <-chan string
	gen     int
	closed  bool
}

// New makes the screen. Init subscribes to the record's changes.
func New(ctx *common.Context) *Model {
	m := &Model{ctx: ctx, states: map[string]*record.State{}}
	m.list = components.NewList(ctx.Keys).SetSorts([]components.Sort{
		{Name: "state", Less: func(a, b int) bool {
			ra, rb := rank(m.rows[a]), rank(m.rows[b])
			if ra != rb {
				return ra < rb
			}
			return m.rows[a].started.After(m.rows[b].started)
		}},
		{Name: "age", Less: func(a, b int) bool { return m.rows[a].started.After(m.rows[b].started) }},
		{Name: "sandbox", Less: func(a, b int) bool {
			if m.rows[a].sandbox != m.rows[b].sandbox {
				return m.rows[a].sandbox < m.rows[b].sandbox
			}
			return m.rows[a].started.Before(m.rows[b].started)
		}},
	})
	m.reload()
	return m
}

// rank orders rows for the state sort: what needs attention first, then what runs, then what
// ended.
func rank(r *row) int {
	switch {
	case r.cond == common.Lost:
		return 0
	case r.suspect:
		return 1
	case r.cond == common.Unknown:
		return 2
	case r.cond == common.Stale:
		return 5
	case r.e.State() == "running":
		return 3
	}
	return 4
}

// Init subscribes to the record's change notices and starts the refresh tick.
func (m *Model) Init() tea.Cmd {
	if m.closed {
		return nil
	}
	m.gen++
	if m.cancel != nil {
		m.cancel()
	}
	m.reload()
	if m.ctx.Record == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx.BaseCtx())
	m.cancel = cancel
	ch, unsubscribe := m.ctx.Record.Subscribe()
	go func() {
		<-ctx.Done()
		unsubscribe()
	}()
	m.changes = ch
	return tea.Batch(waitForChange(m, ch, m.gen), m.tick(), m.loadKnown())
}

// sandboxes are the sandboxes listed: those the record's background watcher watches (every
// known sandbox), or, when nothing watches (the bridge was unreachable at start), every sandbox
// the record knows.
func (m *Model) sandboxes() []string {
	if m.ctx.Watch != nil {
		return m.ctx.Watch.Watched()
	}
	return m.known // read from the record's file in a command (loadKnown)
}

// knownMsg lists the sandboxes the record knows (without a background watcher).
type knownMsg struct {
	owner *Model
	sbs   []string
}

// loadKnown reads, in a command, the sandboxes the record knows when nothing watches them (a
// query of the record's file: never on the UI goroutine).
func (m *Model) loadKnown() tea.Cmd {
	rec := m.ctx.Record
	if rec == nil || m.ctx.Watch != nil {
		return nil
	}
	owner := m
	return func() tea.Msg {
		sbs, _ := rec.Sandboxes()
		for _, sb := range sbs {
			rec.State(sb) // loaded here, so the screen's reads find it in memory
		}
		return knownMsg{owner: owner, sbs: sbs}
	}
}

// reload re-reads every listed sandbox's state from the record.
func (m *Model) reload() {
	if m.ctx.Record == nil {
		return
	}
	keep := map[string]bool{}
	for _, sb := range m.sandboxes() {
		keep[sb] = true
		m.states[sb] = m.ctx.Record.State(sb)
	}
	for sb := range m.states {
		if !keep[sb] {
			delete(m.states, sb)
		}
	}
	m.rebuild()
}

// refresh re-reads the states of the sandboxes named (when they are listed).
func (m *Model) refresh(sbs map[string]bool) {
	if m.ctx.Record == nil {
		return
	}
	watched := map[string]bool{}
	for _, sb := range m.sandboxes() {
		watched[sb] = true
	}
	for sb := range sbs {
		if watched[sb] {
			m.states[sb] = m.ctx.Record.State(sb)
		}
	}
	m.rebuild()
}

// rebuild turns the states into rows and gives them to the list.
func (m *Model) rebuild() {
	now := m.ctx.Clock()
	names := make([]string, 0, len(m.states))
	for sb := range m.states {
		names = append(names, sb)
	}
	sort.Strings(names)
	m.all = m.all[:0]
	for _, sb := range names {
		st := m.states[sb]
		for _, list := range [][]*record.Entry{st.Processes, st.Terminals} {
			for _, e := range list {
				m.all = append(m.all, m.makeRow(st, e, now))
			}
		}
	}
	sort.SliceStable(m.all, func(i, j int) bool {
		if m.all[i].sandbox != m.all[j].sandbox {
			return m.all[i].sandbox < m.all[j].sandbox
		}
		return m.all[i].started.Before(m.all[j].started)
	})
	m.rows = m.rows[:0]
	for _, r := range m.all {
		if !m.attention || r.attention {
			m.rows = append(m.rows, r)
		}
	}
	m.list.SetRows(components.Rows{N: len(m.rows),
		Key: func(i int) string { return rowKey(m.rows[i]) },
		Text: func(i int) string {
			// what the row shows (the whole ID, not its first 8 characters), and its kind
			r := m.rows[i]
			return strings.Join(m.cells(r, m.ctx.Clock()), " ") + " " + string(r.e.Kind) + " " + r.e.ID
		}})
}

func rowKey(r *row) string {
	return r.sandbox + "\x00" + string(r.e.Kind) + "\x00" + r.e.ID + "\x00" + strconv.Itoa(r.e.Incarnation)
}

// makeRow classifies one entry in the vocabulary of the other screens.
func (m *Model) makeRow(st *record.State, e *record.Entry, now time.Time) *row {
	r := &row{sandbox: st.Sandbox, e: e, started: e.FirstSeen}
	state := e.State()
	switch {
	case e.Lost:
		r.cond = common.Lost
	case st.Stale(e.Incarnation):
		r.cond = common.Stale
	case st.WatchErr != "" && state == "running":
		r.cond = common.Unknown
	}
	if e.Kind == record.Process {
		if !e.Process.StartedAt.IsZero() {
			r.started = e.Process.StartedAt
		}
		r.badge, r.label = common.ProcessBadge(state, e.Process.Exit, e.Process.Error, r.cond, e.Incarnation, e.LastSeen, now)
		if m.ctx.Record != nil {
			r.out = m.ctx.Record.OutputOf(st.Sandbox, e.ID)
		}
		if m.ctx.Watch != nil {
			r.capturing = m.ctx.Watch.Capturing(st.Sandbox, e.ID)
		}
	} else {
		r.badge, r.label = common.ProcessBadge(state, e.Terminal.Exit, e.Terminal.Error, r.cond, e.Incarnation, e.LastSeen, now)
	}
	if r.cond == common.Current && state == "running" && e.Stream == "suspect end" {
		r.suspect = true
		r.badge, r.label = themes.BadgeSuspectEnd, "SUSPECT END"
	}
	r.attention = r.cond == common.Lost || r.cond == common.Stale || r.suspect
	return r
}

// Close ends the subscription.
func (m *Model) Close() {
	m.closed = true
	if m.cancel != nil {
		m.cancel()
	}
}

// SetSize sets the screen's area.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.list.SetHeight(m.listHeight())
}

// Title is the screen's crumb in the header.
func (m *Model) Title() string { return "all runs" }

// SetFocus does nothing: the screen reads the record, it does not watch.
func (m *Model) SetFocus(bool) {}

// Capturing reports whether the filter is being typed.
func (m *Model) Capturing() bool { return m.list.Capturing() }

// Prompting is false: the screen opens no dialog.
func (m *Model) Prompting() bool { return false }

// Attached is 0: the screen holds no stream of the bridge.
func (m *Model) Attached() int { return 0 }

// Back clears the filter, then the attention narrowing; otherwise esc is the root's.
func (m *Model) Back() bool {
	if m.list.Back() {
		return true
	}
	if m.attention {
		m.setAttention(false)
		return true
	}
	return false
}

func (m *Model) setAttention(on bool) {
	m.attention = on
	m.rebuild()
}

// Attention reports whether the screen shows only the runs that need attention.
func (m *Model) Attention() bool { return m.attention }

// ShortHelp is the one-line help.
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	return append(m.actions().Bindings(), k.FilterRows, k.Sort, k.Back, k.Help)
}

// FullHelp is the help overlay: the screen's keys and the table's, from the tables that
// dispatch them.
func (m *Model) FullHelp() [][]key.Binding {
	return m.ctx.Keys.HelpColumns(m.actions().Bindings(), m.list.Bindings())
}

// changeMsg names the sandboxes whose record changed.
type changeMsg struct {
	owner  *Model
	gen    int
	sbs    map[string]bool
	closed bool
}

// waitForChange waits for the record to change; notices queued meanwhile join the same message.
func waitForChange(owner *Model, ch <-chan string, gen int) tea.Cmd {
	return func() tea.Msg {
		sb, ok := <-ch
		if !ok {
			return changeMsg{owner: owner, gen: gen, closed: true}
		}
		sbs := map[string]bool{sb: true}
		for {
			select {
			case sb, ok := <-ch:
				if !ok {
					return changeMsg{owner: owner, gen: gen, sbs: sbs, closed: true}
				}
				sbs[sb] = true
				continue
			default:
			}
			return changeMsg{owner: owner, gen: gen, sbs: sbs}
		}
	}
}

type tickMsg struct {
	owner *Model
	gen   int
}

func (m *Model) tick() tea.Cmd {
	owner, gen := m, m.gen
	return tea.Tick(refreshEvery, func(time.Time) tea.Msg { return tickMsg{owner: owner, gen: gen} })
}

// The root holds it as a common.Screen.
var _ common.Screen = (*Model)(nil)
