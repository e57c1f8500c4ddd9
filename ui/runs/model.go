package runs

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"sandscope/record"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// refreshEvery re-reads the record for ages, last output times and the sandboxes listed (no
// bridge call: the record's background watcher is what polls).
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

	// What the row shows as of its last refresh: the column widths and the filter read these, so
	// a frame formats only the rows on screen and a keystroke formats none.
	cells  []string
	widths []int     // the cells' widths
	text   string    // the filter's text, lower-cased
	next   time.Time // when a time the row shows (its age, its last output) reads differently
}

// Model is the all-runs screen.
type Model struct {
	ctx    *common.Context
	width  int
	height int

	// known are the sandboxes the record knows, when no background watcher lists them (loadKnown)
	known     []string
	states    map[string]*record.State // what the record knows of each sandbox listed
	bySandbox map[string][]*row        // each listed sandbox's runs, oldest first
	// outputs are what the file said was captured of each listed sandbox's processes, read once:
	// what moves is held by the record in memory (OutputsHeld)
	outputs   map[string]map[string]record.Output
	all       []*row              // every run
	rows      []*row              // the rows the list sees (all, or those needing attention)
	natural   []components.Column // the columns sized by the cells of rows
	list      *components.List
	attention bool // narrowed to the runs that need attention

	cancel  context.CancelFunc
	changes <-chan string
	gen     int
	closed  bool
}

// New makes the screen. Init subscribes to the record's changes.
func New(ctx *common.Context) *Model {
	m := &Model{ctx: ctx, states: map[string]*record.State{}, bySandbox: map[string][]*row{}, outputs: map[string]map[string]record.Output{}}
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
	m.rebuild()
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

// Init subscribes to the record's change notices, reads the listed sandboxes' states and starts
// the refresh tick.
func (m *Model) Init() tea.Cmd {
	if m.closed {
		return nil
	}
	m.gen++
	if m.cancel != nil {
		m.cancel()
	}
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
	m.reload() // after subscribing: a change made meanwhile is read again, not missed
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

// reload re-reads every listed sandbox's state from the record (at Init and at every refresh
// tick: a sandbox added or forgotten elsewhere, what was captured, a change notice dropped). A run
// that reads as it did keeps its formatted cells.
func (m *Model) reload() {
	if m.ctx.Record == nil {
		return
	}
	now := m.ctx.Clock()
	keep := map[string]bool{}
	for _, sb := range m.sandboxes() {
		keep[sb] = true
		m.load(sb, now)
	}
	m.drop(keep)
	m.rebuild()
}

// drop forgets the sandboxes no longer listed; it reports whether there were any.
func (m *Model) drop(keep map[string]bool) bool {
	dropped := false
	for sb := range m.states {
		if !keep[sb] {
			delete(m.states, sb)
			delete(m.bySandbox, sb)
			delete(m.outputs, sb)
			dropped = true
		}
	}
	return dropped
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
	now := m.ctx.Clock()
	for sb := range sbs {
		if watched[sb] {
			m.load(sb, now)
		}
	}
	m.rebuild()
}

// load reads one sandbox's state and makes its rows (what was captured of its processes read in
// one query); a run that reads as its row did keeps that row's formatted cells.
func (m *Model) load(sb string, now time.Time) {
	st := m.ctx.Record.State(sb)
	m.states[sb] = st
	ids := make([]string, 0, len(st.Processes))
	for _, e := range st.Processes {
		ids = append(ids, e.ID)
	}
	outs := m.outputsOf(sb, ids)
	var before map[string]*row
	if old := m.bySandbox[sb]; len(old) > 0 {
		before = make(map[string]*row, len(old))
		for _, r := range old {
			before[rowKey(r)] = r
		}
	}
	rows := make([]*row, 0, len(st.Processes)+len(st.Terminals))
	for _, list := range [][]*record.Entry{st.Processes, st.Terminals} {
		for _, e := range list {
			r := m.makeRow(st, e, outs[e.ID], now)
			if old := before[rowKey(r)]; old != nil && now.Before(old.next) && sameShown(old, r) {
				r.cells, r.widths, r.text, r.next = old.cells, old.widths, old.text, old.next
			} else {
				m.setCells(r, now)
			}
			rows = append(rows, r)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].started.Before(rows[j].started) })
	m.bySandbox[sb] = rows
}

// outputsOf is what was captured of the processes named: the file's answers read once (again when
// a process is new to the screen), with what the record holds in memory in their place.
func (m *Model) outputsOf(sb string, ids []string) map[string]record.Output {
	file := m.outputs[sb]
	for _, id := range ids {
		if _, ok := file[id]; !ok {
			file = m.ctx.Record.OutputsOf(sb, ids)
			m.outputs[sb] = file
			return file
		}
	}
	held := m.ctx.Record.OutputsHeld(sb, ids)
	if len(held) == 0 {
		return file
	}
	outs := make(map[string]record.Output, len(file))
	for id, o := range file {
		outs[id] = o
	}
	for id, o := range held {
		outs[id] = o
	}
	return outs
}

// sameShown reports whether two rows of one run show the same cells at the same time: every
// input of cells but the clock.
func sameShown(a, b *row) bool {
	ea, eb := a.e, b.e
	return a.label == b.label && a.badge == b.badge && a.cond == b.cond && a.suspect == b.suspect &&
		a.capturing == b.capturing && a.out == b.out && a.started.Equal(b.started) && a.sandbox == b.sandbox &&
		ea.Kind == eb.Kind && ea.ID == eb.ID && ea.Incarnation == eb.Incarnation && ea.Inferred == eb.Inferred &&
		ea.Stream == eb.Stream && ea.Lost == eb.Lost && ea.Gaps == eb.Gaps && ea.Interruptions == eb.Interruptions &&
		ea.State() == eb.State() && slices.Equal(ea.Command(), eb.Command())
}

// rebuild lists the rows of every sandbox, by sandbox then start, and gives them to the list.
func (m *Model) rebuild() {
	names := make([]string, 0, len(m.bySandbox))
	for sb := range m.bySandbox {
		names = append(names, sb)
	}
	sort.Strings(names)
	m.all = m.all[:0]
	for _, sb := range names {
		m.all = append(m.all, m.bySandbox[sb]...)
	}
	m.rows = m.rows[:0]
	for _, r := range m.all {
		if !m.attention || r.attention {
			m.rows = append(m.rows, r)
		}
	}
	m.natural = naturalOf(m.rows)
	m.setRows()
}

func (m *Model) setRows() {
	m.list.SetRows(components.Rows{N: len(m.rows),
		Key:  func(i int) string { return rowKey(m.rows[i]) },
		Text: func(i int) string { return m.rows[i].text }, Lower: true})
}

func rowKey(r *row) string {
	return r.sandbox + "\x00" + string(r.e.Kind) + "\x00" + r.e.ID + "\x00" + strconv.Itoa(r.e.Incarnation)
}

// makeRow classifies one entry in the vocabulary of the other screens; out is what was captured
// of it (a process).
func (m *Model) makeRow(st *record.State, e *record.Entry, out record.Output, now time.Time) *row {
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
		r.out = out
		if m.ctx.Watch != nil {
			r.capturing = m.ctx.Watch.Capturing(st.Sandbox, e.ID)
		}
	}
	m.label(r, now)
	if r.cond == common.Current && state == "running" && e.Stream == "suspect end" {
		r.suspect = true
		r.badge, r.label = themes.BadgeSuspectEnd, "SUSPECT END"
	}
	r.attention = r.cond == common.Lost || r.cond == common.Stale || r.suspect
	return r
}

// label is the row's state word (an UNKNOWN one says when the state was last confirmed).
func (m *Model) label(r *row, now time.Time) {
	e := r.e
	if e.Kind == record.Process {
		r.badge, r.label = common.ProcessBadge(e.State(), e.Process.Exit, e.Process.Error, r.cond, e.Incarnation, e.LastSeen, now)
		return
	}
	r.badge, r.label = common.ProcessBadge(e.State(), e.Terminal.Exit, e.Terminal.Error, r.cond, e.Incarnation, e.LastSeen, now)
}

// setCells formats the row as of now: its cells, their widths, the filter's text, and when a time
// among them next reads differently.
func (m *Model) setCells(r *row, now time.Time) {
	r.cells = m.cells(r, now)
	r.widths = r.widths[:0]
	for _, c := range r.cells {
		r.widths = append(r.widths, cellWidth(c))
	}
	// what the row shows (the whole ID, not its first 8 characters), and its kind
	r.text = strings.ToLower(strings.Join(r.cells, " ") + " " + string(r.e.Kind) + " " + r.e.ID)
	r.next = changesAt(now, r.started)
	if !r.out.Last.IsZero() {
		r.next = minTime(r.next, changesAt(now, r.out.Last))
	}
	if r.cond == common.Unknown {
		r.next = minTime(r.next, changesAt(now, r.e.LastSeen))
	}
}

// changesAt is when common.Age of the time since t next reads differently (seconds shown under an
// hour, minutes under two days, then days). A zero t never changes.
func changesAt(now, t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(1<<62, 0)
	}
	d := now.Sub(t)
	unit := 24 * time.Hour
	switch {
	case d < 0:
		return t.Add(time.Second) // "0s" until then
	case d < time.Hour:
		unit = time.Second
	case d < 48*time.Hour:
		unit = time.Minute
	}
	return now.Add(unit - d%unit)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// cellWidth is a plain cell's width in terminal cells: one a rune for printable ASCII and Latin-1
// (the rows' "·" included), ansi.StringWidth for anything else.
func cellWidth(s string) int {
	n := 0
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0xad || r > 0xff {
			return ansi.StringWidth(s)
		}
		n++
	}
	return n
}

// naturalOf is components.Natural of the rows' cells, from the widths kept with them.
func naturalOf(rows []*row) []components.Column {
	widest := make([]int, len(columns))
	for _, r := range rows {
		for c, w := range r.widths {
			if c < len(widest) {
				widest[c] = max(widest[c], w)
			}
		}
	}
	out := append([]components.Column(nil), columns...)
	for c := range out {
		if out[c].Flex {
			continue
		}
		w := max(ansi.StringWidth(out[c].Title), widest[c])
		if out[c].Want > 0 {
			w = min(w, out[c].Want)
		}
		out[c].Want = max(w, out[c].Min)
	}
	return out
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
	m.rebuild() // the rows are kept: only the list changes
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
