package runs

import (
	"context"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"sandscope/client"
	"sandscope/internal/cellwidth"
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
	states    map[string]*record.State // what the record knows of each sandbox listed and read
	bySandbox map[string][]*row        // each listed sandbox's runs, oldest first
	// unread are the listed sandboxes whose runs are counted, not read yet: the first frame reads
	// only the sandboxes it shows (readRest reads the others in a command; a key, a refresh of
	// every sandbox or a row on screen that is not read reads them at once)
	unread map[string]counted
	// outputs are what the file said was captured of each listed sandbox's processes, read once:
	// what moves is held by the record in memory (OutputsHeld)
	outputs   map[string]map[string]record.Output
	all       table               // every run, read or counted
	flat      []*row              // all in one slice, made when a sort compares rows (nil: not yet)
	narrowed  []*row              // the runs that need attention, when narrowed to them
	names     []string            // the listed sandboxes, sorted, as rebuild last listed them
	natural   []components.Column // the columns sized by the cells of rows
	list      *components.List
	attention bool // narrowed to the runs that need attention
	need      int  // the runs that need attention, read or counted (the title's: as of rebuild)

	// reads counts each sandbox's reads on the UI goroutine: reloadLater's answer for a sandbox
	// read again since it was asked is older, and is not taken
	reads     map[string]int
	reloading bool // a reloadLater answer is on its way

	cancel  context.CancelFunc
	changes <-chan string
	gen     int
	closed  bool
}

// New makes the screen. Init subscribes to the record's changes.
func New(ctx *common.Context) *Model {
	m := &Model{ctx: ctx, states: map[string]*record.State{}, bySandbox: map[string][]*row{}, outputs: map[string]map[string]record.Output{},
		unread: map[string]counted{}, reads: map[string]int{}}
	m.list = components.NewList(ctx.Keys).SetSorts([]components.Sort{
		{Name: "state", Less: func(a, b int) bool {
			rs := m.random()
			ra, rb := rank(rs[a]), rank(rs[b])
			if ra != rb {
				return ra < rb
			}
			return rs[a].started.After(rs[b].started)
		}},
		{Name: "age", Less: func(a, b int) bool { rs := m.random(); return rs[a].started.After(rs[b].started) }},
		{Name: "sandbox", Less: func(a, b int) bool {
			rs := m.random()
			if rs[a].sandbox != rs[b].sandbox {
				return rs[a].sandbox < rs[b].sandbox
			}
			return rs[a].started.Before(rs[b].started)
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
	m.reloading = false // an answer asked before is for the last generation: dropped
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
	// after subscribing: a change made meanwhile is read again, not missed
	if len(m.states) == 0 && len(m.unread) == 0 {
		m.openFirst()
	} else {
		m.reload()
	}
	return tea.Batch(waitForChange(m, ch, m.gen), m.tick(), m.loadKnown(), m.readRest())
}

// counted is what the screen knows of an unread sandbox: how many runs it has, and how many of
// them need attention (the title's counts). reading says the record had not read its history
// into memory when the screen counted: its runs are not counted yet (readRest reads it).
type counted struct {
	runs, attention int
	reading         bool
}

// openFirst reads the listed sandboxes the first frame shows (by name, as the rows are listed,
// until the table is full) and counts the runs of the others in the record's memory: opening the
// screen costs what it shows, not the size of the record. The column widths are the read rows'
// until readRest's answer comes (within a moment: the layout then settles).
func (m *Model) openFirst() {
	if m.ctx.Record == nil {
		return
	}
	now := m.ctx.Clock()
	shown, want := 0, m.listHeight()
	for _, sb := range m.sandboxes() { // sorted, as rebuild lists them
		if shown < want {
			m.load(sb, now)
			shown += len(m.bySandbox[sb])
			continue
		}
		m.unread[sb] = m.count(sb)
	}
	m.rebuild()
}

// count counts an unread sandbox's runs and those needing attention, as the record holds them in
// memory (nothing is copied: a few fields of each run are read). A sandbox whose state the record
// has not read yet is left to readRest: in the first moments after a start, the record's manager
// is still reading every sandbox's state (a history of 25,000 events that no snapshot covers takes
// about 60 ms), and counting them here made the first frame of a 10,000-run record wait 12 s for
// all 200.
func (m *Model) count(sb string) counted {
	if !m.ctx.Record.Loaded(sb) {
		return counted{reading: true}
	}
	return countIn(m.ctx.Record, sb)
}

// stillReading reports whether an unread sandbox's history is still being read into the
// record's memory (readRest brings its runs, not the caller).
func (m *Model) stillReading(sb string) bool {
	c, ok := m.unread[sb]
	return ok && c.reading && !m.ctx.Record.Loaded(sb)
}

// reading counts the listed sandboxes whose runs are not counted yet.
func (m *Model) reading() int {
	n := 0
	for _, c := range m.unread {
		if c.reading {
			n++
		}
	}
	return n
}

// countIn is count of a sandbox of rec (it reads nothing of the screen). The record keeps the
// count until the sandbox's state changes: classifying every run of the sandboxes a first frame
// does not show was the part of opening the screen that grew with the record (a fifth of the
// open at 10,000 runs, the entries' memory read for it).
func countIn(rec *record.Record, sb string) counted {
	c, _ := rec.Memo(sb, "runs: counted", func(st *record.State) any {
		var c counted
		for _, list := range [2][]*record.Entry{st.Processes, st.Terminals} {
			c.runs += len(list)
			for _, e := range list {
				if _, _, attention := classify(st, e); attention {
					c.attention++
				}
			}
		}
		return c
	}).(counted)
	return c
}

// readAll reads every unread sandbox now (what needs every row: a key, a row on screen not read),
// but those whose histories are still to be read from the file (reading): their runs come with
// readRest's answers, and a key pressed meanwhile works on the runs read so far.
func (m *Model) readAll() {
	if len(m.unread) == 0 {
		return
	}
	now := m.ctx.Clock()
	read := false
	for sb := range m.unread {
		if m.stillReading(sb) {
			continue
		}
		m.load(sb, now)
		read = true
	}
	if read {
		m.rebuild()
	}
}

// loaded reports whether every listed sandbox's runs are read (the first frame reads those it
// shows; the others are read in a command, or at once when a key needs them).
func (m *Model) loaded() bool { return len(m.unread) == 0 }

// readMsg is readRest's answer: the runs of sandboxes that were unread.
type readMsg struct {
	owner *Model
	gen   int
	reads []sandboxRead
}

// sandboxRead is one sandbox as read off the UI goroutine: its state, what the file said was
// captured of its processes, and its rows formatted.
type sandboxRead struct {
	sandbox string
	st      *record.State
	outputs map[string]record.Output
	rows    []*row
}

// readSlice is how long one readRest command reads before it answers: the sandboxes whose
// histories the record still reads from the file come in as they are read, not all at the end.
const readSlice = 100 * time.Millisecond

// readRest reads, in a command, the sandboxes the first frame left unread: their states, what was
// captured of them (a query of the record's file each) and their rows, formatted, for about
// readSlice; took asks for the rest. Nothing of the screen is touched there; Update takes the
// answer for the sandboxes still unread (one read since, after a change notice or a key, is
// newer).
func (m *Model) readRest() tea.Cmd {
	rec := m.ctx.Record
	if rec == nil || len(m.unread) == 0 {
		return nil
	}
	sbs := make([]string, 0, len(m.unread))
	for sb := range m.unread {
		sbs = append(sbs, sb)
	}
	sort.Strings(sbs)
	watch, clock, owner, gen := m.ctx.Watch, m.ctx.Clock, m, m.gen
	return func() tea.Msg {
		msg := readMsg{owner: owner, gen: gen}
		now, began := clock(), time.Now()
		for _, sb := range sbs {
			st := rec.State(sb)
			outs := rec.OutputsOf(sb, processIDs(st))
			msg.reads = append(msg.reads, sandboxRead{sandbox: sb, st: st, outputs: outs, rows: makeRows(st, outs, nil, watch, now)})
			if time.Since(began) >= readSlice {
				break
			}
		}
		return msg
	}
}

// took takes readRest's answer for the sandboxes still unread, and asks for the next slice while
// some are (an answer for an earlier opening of the screen only for what it read).
func (m *Model) took(msg readMsg) tea.Cmd {
	taken := false
	for _, r := range msg.reads {
		if _, ok := m.unread[r.sandbox]; !ok {
			continue // read since (a change notice, a key): that read is newer
		}
		delete(m.unread, r.sandbox)
		m.reads[r.sandbox]++
		m.states[r.sandbox], m.outputs[r.sandbox], m.bySandbox[r.sandbox] = r.st, r.outputs, r.rows
		taken = true
	}
	if taken {
		m.rebuild()
	}
	if msg.gen != m.gen || len(msg.reads) == 0 {
		return nil // Init asked for this opening's own
	}
	return m.readRest()
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

// reload re-reads every listed sandbox's state from the record (at every refresh tick, and at an
// Init that is not the first: a sandbox added or forgotten elsewhere, what was captured, a change
// notice dropped); an unread sandbox is counted again. A run that reads as it did keeps its
// formatted cells.
func (m *Model) reload() {
	if m.ctx.Record == nil {
		return
	}
	m.reloaded(m.readListed()())
}

// reloadMsg is reloadLater's answer: the listed sandboxes read again (reads, each with the count of
// its reads on the UI goroutine when it was asked) and the unread ones counted again.
type reloadMsg struct {
	owner  *Model
	gen    int
	reads  []sandboxRead
	seen   []int
	counts map[string]counted
}

// reloadLater is reload for the refresh tick, read in a command: every listed sandbox's state,
// what was captured of it and its rows (a run that reads as it did keeping its formatted cells),
// made off the UI goroutine (at 10,000 runs this took about 12 ms there every second). Update takes
// the answer for the sandboxes not read since (reloaded); nil while an answer is on its way.
func (m *Model) reloadLater() tea.Cmd {
	if m.ctx.Record == nil || m.reloading {
		return nil
	}
	read := m.readListed()
	m.reloading = true
	return func() tea.Msg { return read() }
}

// readListed is the read of every listed sandbox as it stands: the function reads the record (and
// nothing of the screen), reload runs it at once, reloadLater in a command.
func (m *Model) readListed() func() reloadMsg {
	rec := m.ctx.Record
	type ask struct {
		sb     string
		unread bool
		seen   int
		old    []*row
		file   map[string]record.Output
	}
	var asks []ask
	for _, sb := range m.sandboxes() {
		_, unread := m.unread[sb]
		asks = append(asks, ask{sb: sb, unread: unread, seen: m.reads[sb], old: m.bySandbox[sb], file: m.outputs[sb]})
	}
	watch, clock, owner, gen := m.ctx.Watch, m.ctx.Clock, m, m.gen
	return func() reloadMsg {
		msg := reloadMsg{owner: owner, gen: gen, counts: map[string]counted{}}
		now := clock()
		for _, a := range asks {
			if a.unread {
				msg.counts[a.sb] = countIn(rec, a.sb) // readRest's answer is on its way
				continue
			}
			st := rec.State(a.sb)
			outs, file := outputsIn(rec, a.sb, processIDs(st), a.file)
			msg.reads = append(msg.reads, sandboxRead{sandbox: a.sb, st: st, outputs: file, rows: makeRows(st, outs, a.old, watch, now)})
			msg.seen = append(msg.seen, a.seen)
		}
		return msg
	}
}

// reloaded takes reloadLater's answer: the sandboxes not read since it was asked, the counts of
// those still unread; a sandbox listed since is read now, one no longer listed is dropped.
func (m *Model) reloaded(msg reloadMsg) {
	for k, r := range msg.reads {
		if _, unread := m.unread[r.sandbox]; unread || m.reads[r.sandbox] != msg.seen[k] {
			continue // forgotten and listed again, or read since (a change notice, a key): that read is newer
		}
		m.reads[r.sandbox]++
		m.states[r.sandbox], m.outputs[r.sandbox], m.bySandbox[r.sandbox] = r.st, r.outputs, r.rows
	}
	for sb, c := range msg.counts {
		if _, ok := m.unread[sb]; ok {
			m.unread[sb] = c
		}
	}
	now := m.ctx.Clock()
	keep := map[string]bool{}
	for _, sb := range m.sandboxes() {
		keep[sb] = true
		_, read := m.states[sb]
		if _, unread := m.unread[sb]; !read && !unread {
			m.load(sb, now) // listed since the answer was asked
		}
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
			delete(m.reads, sb)
			dropped = true
		}
	}
	for sb := range m.unread {
		if !keep[sb] {
			delete(m.unread, sb)
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
		if m.stillReading(sb) {
			continue // readRest reads it
		}
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
	delete(m.unread, sb)
	m.reads[sb]++
	m.states[sb] = st
	outs := m.outputsOf(sb, processIDs(st))
	m.bySandbox[sb] = makeRows(st, outs, m.bySandbox[sb], m.ctx.Watch, now)
}

func processIDs(st *record.State) []string {
	ids := make([]string, 0, len(st.Processes))
	for _, e := range st.Processes {
		ids = append(ids, e.ID)
	}
	return ids
}

// makeRows makes a sandbox's rows, oldest first, in one allocation; a run that reads as its row
// in old did keeps that row's state word and formatted cells. It reads nothing of the screen
// (readRest calls it off the UI goroutine).
func makeRows(st *record.State, outs map[string]record.Output, old []*row, watch *record.Manager, now time.Time) []*row {
	var before map[runKey]*row
	if len(old) > 0 {
		before = make(map[runKey]*row, len(old))
		for _, r := range old {
			before[keyOf(r.e)] = r
		}
	}
	made := make([]row, 0, len(st.Processes)+len(st.Terminals))
	for _, list := range [][]*record.Entry{st.Processes, st.Terminals} {
		for _, e := range list {
			o := before[keyOf(e)]
			if o != nil && !now.Before(o.next) {
				o = nil // a time it shows reads differently now
			}
			made = append(made, makeRow(st, e, outs[e.ID], watch, now, o))
			r := &made[len(made)-1]
			if o != nil && sameShown(o, r) {
				r.cells, r.widths, r.text, r.next = o.cells, o.widths, o.text, o.next
			} else {
				setCells(r, now)
			}
		}
	}
	rows := make([]*row, len(made))
	for i := range made {
		rows[i] = &made[i]
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].started.Before(rows[j].started) })
	return rows
}

// runKey is a run within its sandbox: rowKey without the sandbox, and without building a string.
type runKey struct {
	kind record.EntityKind
	id   string
	inc  int
}

func keyOf(e *record.Entry) runKey { return runKey{e.Kind, e.ID, e.Incarnation} }

// outputsOf is what was captured of the processes named: the file's answers read once (again when
// a process is new to the screen), with what the record holds in memory in their place.
func (m *Model) outputsOf(sb string, ids []string) map[string]record.Output {
	outs, file := outputsIn(m.ctx.Record, sb, ids, m.outputs[sb])
	m.outputs[sb] = file
	return outs
}

// outputsIn is outputsOf with file the answers read so far: it returns what was captured and the
// file's answers, read again when a process is new to them (it reads nothing of the screen).
func outputsIn(rec *record.Record, sb string, ids []string, file map[string]record.Output) (outs, kept map[string]record.Output) {
	for _, id := range ids {
		if _, ok := file[id]; !ok {
			file = rec.OutputsOf(sb, ids)
			return file, file
		}
	}
	held := rec.OutputsHeld(sb, ids)
	if len(held) == 0 {
		return file, file
	}
	outs = make(map[string]record.Output, len(file))
	for id, o := range file {
		outs[id] = o
	}
	for id, o := range held {
		outs[id] = o
	}
	return outs, file
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

// rebuild lists the rows of every sandbox, by sandbox then start (an unread sandbox's as a count
// of its runs), and gives them to the list.
func (m *Model) rebuild() {
	m.all.reset()
	m.flat = nil
	m.need = 0
	for _, sb := range m.listedSorted() {
		if rows, ok := m.bySandbox[sb]; ok {
			m.all.add(rows)
			for _, r := range rows {
				if r.attention {
					m.need++
				}
			}
			continue
		}
		c := m.unread[sb]
		m.all.addUnread(c.runs)
		m.need += c.attention
	}
	rows := m.all.Read()
	if m.attention {
		m.narrowed = m.narrowed[:0]
		for r := range rows {
			if r.attention { // narrowed: every sandbox is read (setAttention)
				m.narrowed = append(m.narrowed, r)
			}
		}
		rows = slices.Values(m.narrowed)
	}
	m.natural = naturalOf(rows)
	m.setRows()
}

// listedSorted is the listed sandboxes (read or not), sorted. The last answer is used again while
// the same sandboxes are listed: sorting 200 names at each rebuild was a tenth of opening the
// screen on a record of that many.
func (m *Model) listedSorted() []string {
	if len(m.names) == len(m.bySandbox)+len(m.unread) { // the two are apart: load moves a name
		same := true
		for _, sb := range m.names {
			_, read := m.bySandbox[sb]
			_, unread := m.unread[sb]
			if !read && !unread {
				same = false
				break
			}
		}
		if same {
			return m.names
		}
	}
	m.names = m.names[:0]
	for sb := range m.bySandbox {
		m.names = append(m.names, sb)
	}
	for sb := range m.unread {
		m.names = append(m.names, sb)
	}
	slices.Sort(m.names)
	return m.names
}

// rowAt is the list's source row i (nil: a run of a sandbox not read yet).
func (m *Model) rowAt(i int) *row {
	switch {
	case m.attention:
		return m.narrowed[i]
	case m.flat != nil:
		return m.flat[i]
	}
	return m.all.At(i)
}

// rowCount is how many rows the list has.
func (m *Model) rowCount() int {
	if m.attention {
		return len(m.narrowed)
	}
	return m.all.Len()
}

// random is the list's rows in one slice, for a sort's comparisons (a sort reads every sandbox
// first): made once a rebuild.
func (m *Model) random() []*row {
	if m.attention {
		return m.narrowed
	}
	if m.flat == nil {
		m.flat = m.all.Flat()
	}
	return m.flat
}

// listed is how many sandboxes are listed, read or not.
func (m *Model) listed() int { return len(m.states) + len(m.unread) }

func (m *Model) setRows() {
	m.list.SetRows(components.Rows{N: m.rowCount(),
		Key: func(i int) string {
			r := m.rowAt(i)
			if r == nil {
				return unreadKey // never the cursor's: the row under the cursor is read
			}
			return rowKey(r)
		},
		Text: func(i int) string {
			r := m.rowAt(i)
			if r == nil {
				return "" // a filter reads every sandbox first (key)
			}
			return r.text
		}, Lower: true})
}

// unreadKey is the list's key of a run of an unread sandbox: no run's key (those have NULs).
const unreadKey = "(unread)"

func rowKey(r *row) string {
	return r.sandbox + "\x00" + string(r.e.Kind) + "\x00" + r.e.ID + "\x00" + strconv.Itoa(r.e.Incarnation)
}

// classify is an entry's condition in the vocabulary of the other screens, whether its stream's
// last word was a suspect end (running, as far as the record knows), and whether it needs
// attention (LOST, SUSPECT END or STALE).
func classify(st *record.State, e *record.Entry) (cond common.Condition, suspect, attention bool) {
	state := e.State()
	switch {
	case e.Lost:
		cond = common.Lost
	case st.Stale(e.Incarnation):
		cond = common.Stale
	case st.WatchErr != "" && state == "running":
		cond = common.Unknown
	}
	suspect = cond == common.Current && state == "running" && e.Stream == "suspect end"
	return cond, suspect, cond == common.Lost || cond == common.Stale || suspect
}

// makeRow classifies one entry in the vocabulary of the other screens; out is what was captured
// of it (a process).
//
// old is the run's row as of the last refresh, when the times it shows read the same now: its
// state word is kept when every input of it is the same (what allocates most in a refresh).
func makeRow(st *record.State, e *record.Entry, out record.Output, watch *record.Manager, now time.Time, old *row) row {
	r := row{sandbox: st.Sandbox, e: e, started: e.FirstSeen}
	r.cond, r.suspect, r.attention = classify(st, e)
	if e.Kind == record.Process {
		if !e.Process.StartedAt.IsZero() {
			r.started = e.Process.StartedAt
		}
		r.out = out
		if watch != nil {
			r.capturing = watch.Capturing(st.Sandbox, e.ID)
		}
	}
	if old != nil && sameWord(old, &r) {
		r.badge, r.label = old.badge, old.label
	} else {
		label(&r, now)
	}
	if r.suspect {
		r.badge, r.label = themes.BadgeSuspectEnd, "SUSPECT END"
	}
	return r
}

// sameWord reports whether label gives b the word it gave a (the clock aside: the caller knows
// the times a shows read the same now).
func sameWord(a, b *row) bool {
	ea, eb := a.e, b.e
	xa, ra := endOf(ea)
	xb, rb := endOf(eb)
	return !a.suspect && a.cond == b.cond && ea.Kind == eb.Kind && ea.State() == eb.State() && same(xa, xb) && same(ra, rb) &&
		ea.Incarnation == eb.Incarnation && ea.LastSeen.Equal(eb.LastSeen)
}

// endOf is how the entry ended, as the bridge said.
func endOf(e *record.Entry) (*client.Exit, *client.RunError) {
	if e.Kind == record.Terminal {
		return e.Terminal.Exit, e.Terminal.Error
	}
	return e.Process.Exit, e.Process.Error
}

// same reports whether a and b are both nil or point to equal values.
func same[T comparable](a, b *T) bool { return a == b || a != nil && b != nil && *a == *b }

// label is the row's state word (an UNKNOWN one says when the state was last confirmed).
func label(r *row, now time.Time) {
	e := r.e
	if e.Kind == record.Process {
		r.badge, r.label = common.ProcessBadge(e.State(), e.Process.Exit, e.Process.Error, r.cond, e.Incarnation, e.LastSeen, now)
		return
	}
	r.badge, r.label = common.ProcessBadge(e.State(), e.Terminal.Exit, e.Terminal.Error, r.cond, e.Incarnation, e.LastSeen, now)
}

// setCells formats the row as of now: its cells, their widths, the filter's text, and when a time
// among them next reads differently.
func setCells(r *row, now time.Time) {
	r.cells = cells(r, now)
	r.widths = r.widths[:0]
	for _, c := range r.cells {
		r.widths = append(r.widths, cellwidth.String(c))
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

// naturalOf is components.Natural of the rows' cells, from the widths kept with them.
// Runs of sandboxes not read yet are not among them: their widths join when they are read.
func naturalOf(rows iter.Seq[*row]) []components.Column {
	widest := make([]int, len(columns))
	for r := range rows {
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
	if on {
		m.readAll() // which runs need attention
	}
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
