package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sandscope/client"
	"sandscope/internal/cellwidth"
	"sandscope/record"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// detailLines is how many lines the detail under the list may take (it wraps instead of being
// cut: relaunch notices and LOST evidence are long).
const detailLines = 3

// listHeight is the list's rows: the screen minus title, tabs, table head and the detail. With
// the preview below the list (narrow screens), the list keeps the rows it has (at least 3, at most
// half) and the preview takes all the rest.
func (m *Model) listHeight() int {
	h := max(m.height-3-detailLines, 1)
	if m.previewBelow() {
		h = max(min(max(m.list().Len(), 3), h/2), 1)
	}
	return h
}

// previewSide and previewBelow say where the preview goes: beside the list on a wide screen,
// below it on a narrow one (processes tab only).
func (m *Model) previewSide() bool  { return m.previewOn() && m.width >= 120 }
func (m *Model) previewBelow() bool { return m.previewOn() && m.width < 120 }
func (m *Model) previewOn() bool    { return m.preview != nil && m.tab == ProcessesTab }

func (m *Model) tabLabel(t Tab) string {
	n := len(m.st.Incarnations)
	switch t {
	case ProcessesTab:
		n = len(m.st.Processes)
	case TerminalsTab:
		n = len(m.st.Terminals)
	case SessionsTab:
		n = len(m.sessions)
	}
	name := t.String()
	if t == ProcessesTab && !m.ctx.Driver.Features().ProcessList {
		name = "Runs" // the runs sandscope started: the bridge lists no processes
	}
	if l := m.lists[t]; l.Filter() != "" {
		return fmt.Sprintf("%s (%d of %d)", name, l.Len(), n)
	}
	return fmt.Sprintf("%s (%d)", name, n)
}

// tableWidth is the width the table gets (the side preview takes the rest).
func (m *Model) tableWidth() int {
	if m.previewSide() {
		return m.width - m.width*2/5 - 1
	}
	return m.width
}

// View renders the screen: a title with the sandbox state, tabs, the list (with the preview beside
// or below it when open), and the detail of the selected row, wrapped.
func (m *Model) View() string {
	st := m.ctx.Styles
	w := m.width
	now := m.ctx.Clock()
	m.ages.Reset()
	m.procFixed.redraw()
	m.syncLists()
	lh := m.listHeight()
	for _, l := range m.lists {
		l.SetHeight(lh)
	}
	var b strings.Builder
	b.Grow(m.viewLen) // about what the last redraw wrote: the builder need not grow step by step

	b.WriteString(m.titleLine.fit(st.Paints.Title.Render("Sandbox "+m.id)+"  "+m.sandboxState(now), w))
	b.WriteByte('\n')
	labels := make([]string, len(m.kinds))
	for i, t := range m.kinds {
		labels[i] = m.tabLabel(t)
	}
	strip := m.tabs.View(st, labels, w)
	if ls := m.list().Status(); ls != "" {
		strip += "  " + st.Paints.Info.Render(ls)
	}
	b.WriteString(m.stripLine.fit(strip, w))
	b.WriteByte('\n')

	var head string
	var rows []string
	var detail string
	switch m.tab {
	case ProcessesTab:
		head, rows, detail = m.procRows(now)
	case TerminalsTab:
		head, rows, detail = m.termRows(now)
	case SessionsTab:
		head, rows, detail = m.sessionRows(now)
	default:
		head, rows, detail = m.incRows(now)
	}
	tw := m.tableWidth()
	table := make([]string, 0, lh+1)
	table = append(table, "  "+st.Paints.TableHead.Render(common.Fit(head, tw-2)))
	if len(rows) == 0 || m.list().Len() == 0 {
		msg, problem := "  nothing yet", false
		switch {
		case len(rows) > 0:
			msg = fmt.Sprintf("  nothing matches %q; %s clears the filter", m.list().Filter(), m.ctx.Keys.Back.Help().Key)
		case m.st.WatchErr != "" && m.tab != TimelineTab:
			msg, problem = m.watchProblem(), true
		case m.tab == ProcessesTab && !m.ctx.Driver.Features().ProcessList:
			msg = "  no runs started by sandscope here; press " + m.ctx.Keys.Exec.Help().Key + " to run one (the bridge lists no processes: only runs sandscope started are known)"
		case m.tab == SessionsTab:
			msg = "  no sessions created or used here; " + m.ctx.Keys.Create.Help().Key + " creates one (the bridge lists none)"
		case m.st.Events == 0 && m.st.WatchErr == "":
			msg = "  waiting for the first answer from the bridge…"
		case m.tab == ProcessesTab:
			msg = "  no processes; press " + m.ctx.Keys.Exec.Help().Key + " to run one"
		case m.tab == TerminalsTab:
			msg = "  no terminals"
		}
		if problem {
			// the bridge's error, whole: wrapped over the empty table's rows
			for i, l := range common.Wrap(msg, tw-2) {
				if i < lh {
					table = append(table, "  "+st.Warning.Render(common.Fit(l, tw-2)))
				}
			}
		} else {
			table = append(table, st.Paints.Faint.Render(common.Fit(msg, tw)))
		}
	}
	for _, i := range m.list().Window() {
		table = append(table, rows[i])
	}
	for len(table) < lh+1 {
		table = append(table, "")
	}
	table = table[:lh+1]
	switch {
	case m.previewSide():
		pw := w - tw - 1
		pv := m.previewView(pw, lh+1)
		for i := range table {
			b.WriteString(common.Fit(table[i], tw) + st.Paints.Faint.Render("│") + pv[i] + "\n")
		}
	case m.previewBelow():
		for _, l := range table {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		ph := max(m.height-3-detailLines-lh, 1)
		b.WriteString(st.Faint.Render(strings.Repeat("─", w)) + "\n")
		for _, l := range m.previewView(w, ph-1) {
			b.WriteString(l + "\n")
		}
	default:
		for _, l := range table {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	b.WriteString(m.detailView.of(detail, w, st))
	m.viewLen = b.Len()
	out := b.String()
	if m.dialog != nil {
		out = common.Overlay(out, m.dialog.View(st, m.ctx.Keys, w), w, m.height)
	}
	return out
}

// lastFit is common.Fit's last answer for one line of the screen. The title and the tab strip are
// painted, which Fit measures the slow way, and from one redraw to the next they read the same.
type lastFit struct {
	s, out string
	w      int
}

func (f *lastFit) fit(s string, w int) string {
	if s != f.s || w != f.w {
		f.s, f.w, f.out = s, w, common.Fit(s, w)
	}
	return f.out
}

// lastDetail is the detail lines under the list as last drawn, for the text and width they were
// drawn from: wrapping and fitting them again was a tenth of a redraw, and a clock tick rarely
// changes them.
type lastDetail struct {
	detail string
	w      int
	st     *themes.Styles
	out    string
}

// of is detail wrapped to w, in at most detailLines lines (always that many), drawn faint.
func (d *lastDetail) of(detail string, w int, st *themes.Styles) string {
	if d.out != "" && detail == d.detail && w == d.w && st == d.st {
		return d.out
	}
	dl := common.Wrap(common.SanitizeText(detail), w)
	if len(dl) > detailLines {
		dl = dl[:detailLines]
		dl[detailLines-1] = common.More(dl[detailLines-1], w)
	}
	for len(dl) < detailLines {
		dl = append(dl, "")
	}
	var b strings.Builder
	for i, l := range dl {
		b.WriteString(st.Paints.Faint.Render(common.Fit(l, w)))
		if i < len(dl)-1 {
			b.WriteString("\n")
		}
	}
	d.detail, d.w, d.st, d.out = detail, w, st, b.String()
	return d.out
}

// sandboxState is the title's state: RUNNING (incarnation k) / STOPPED / UNKNOWN.
func (m *Model) sandboxState(now time.Time) string {
	st := m.ctx.Styles
	inc := ""
	if m.st.Current.Number > 0 {
		inc = fmt.Sprintf(" · incarnation #%d", m.st.Current.Number)
		if m.st.Current.Inferred {
			inc += " (inferred)"
		}
	}
	switch {
	case m.st.WatchErr != "":
		return st.Badge(themes.BadgeUnknown).Render("UNKNOWN") + st.Faint.Render(inc+" · "+common.ConnProblem(m.st.WatchCause)+" since "+
			m.ages.Since(now, m.st.ErrSince)+"; last answer "+m.ages.Since(now, m.st.LastOK))
	case m.st.Running == nil && !m.ctx.Driver.Features().NonWakingLookups:
		// asking would start the container: say what sandscope knows instead of waiting
		return st.Badge(themes.BadgeUnknown).Render("UNKNOWN") + st.Faint.Render(inc+" · not asked: every request to this sandbox starts its container; sandscope sends one only when you act")
	case m.st.Running == nil:
		if m.st.Events == 0 {
			return st.Faint.Render("connecting…")
		}
		return st.Badge(themes.BadgeUnknown).Render("UNKNOWN") + st.Faint.Render(inc)
	case *m.st.Running:
		every := m.ctx.WatchFast
		if every <= 0 {
			every = time.Second
		}
		// fast right after a change, slower while nothing changes (client.WatchOptions)
		settled := client.SettledInterval(every, m.ctx.WatchSlow)
		return st.BadgeText(themes.BadgeRunning, "RUNNING") + st.Paints.Faint.Render(inc+" · states polled every "+every.String()+"–"+settled.String())
	}
	return st.BadgeText(themes.BadgeStopped, "STOPPED") + st.Paints.Faint.Render(inc+" · nothing runs until something is started")
}

// watchProblem says why the lists are empty while the watcher fails: the bridge's error
// (classified and sanitised) and what to do.
func (m *Model) watchProblem() string {
	err := m.st.WatchCause
	if err == nil {
		err = errors.New(m.st.WatchErr)
	}
	what := "processes"
	if m.tab == TerminalsTab {
		what = "terminals"
	}
	s := "cannot list " + what + ": " + common.Describe("", err)
	if r := common.Remedy(err, "sandscope retries on its own"); r != "" {
		s += " · what to do: " + r
	}
	return s
}

func incLabel(n int, inferred bool) string {
	if n == 0 {
		return "-"
	}
	if inferred {
		return fmt.Sprintf("#%d?", n)
	}
	return fmt.Sprintf("#%d", n)
}

func (m *Model) duration(start time.Time, end *time.Time, running bool, now time.Time) string {
	if start.IsZero() {
		return "-"
	}
	if end != nil && !end.IsZero() {
		return common.Age(end.Sub(start))
	}
	if running {
		return m.ages.Age(now, start)
	}
	return "-"
}

// procCols: at 80 columns COMMAND keeps room while CWD and INC give way; STATE gets at least the
// widest bare state word of its rows and grows toward their full wording.
// wideIDWant is what the ID column may take on a wide table: a whole stable run ID.
const wideIDWant = 26

var procCols = []components.Column{
	{Title: "ID", Min: 8, Want: 12, Priority: 0}, // wideIDWant on a wide table
	{Title: "STATE", Priority: 0},                // sized by withState for the rows' words
	{Title: "INC", Min: 4, Priority: 3},
	{Title: "COMMAND", Min: 14, Want: 40, Priority: 0, Flex: true},
	{Title: "CWD", Min: 10, Want: 14, Priority: 4},
	{Title: "STARTED", Min: 8, Priority: 2},
	{Title: "RUNTIME", Min: 7, Priority: 1},
}

// row draws table row i: its plain cells fitted to the columns, the state cell (1) drawn by state
// when given, the whole row in style when given (stale rows: the state cell stays plain there).
// Cells are fitted before they are painted: nothing painted is measured again.
func (m *Model) row(i int, mark bool, cells []string, cols []int, state stateCell, style func(string) string) string {
	st := m.ctx.Styles
	w := m.tableWidth()
	gutter := "  "
	if mark {
		gutter = " *"
	}
	if m.list().IsCursor(i) {
		return st.Paints.Selected.Render(common.Fit(">"+gutter[1:]+joinShown(cells, cols, nil), w))
	}
	if style != nil {
		return gutter + style(common.Fit(joinShown(cells, cols, nil), w-2))
	}
	n := components.Span(cols)
	if n > w-2 {
		return gutter + common.Fit(joinShown(cells, cols, state), w-2)
	}
	// one string for the whole row: gutter, cells and the padding to the table's width
	var b strings.Builder
	b.Grow(w + rowSlack)
	b.WriteString(gutter)
	writeShown(&b, cells, cols, state)
	writeSpaces(&b, w-2-n)
	return b.String()
}

// rowSlack is room for a row's bytes beyond one a cell: the state badge's sequences and cells
// that are not ASCII.
const rowSlack = 64

// stateCell draws a state cell's text in exactly w cells, painted (nil: the text as it is).
type stateCell func(text string, w int) string

// badgeCell draws the state in its badge, the cell's padding outside the badge.
func badgeCell(st *themes.Styles, b themes.Badge) stateCell {
	return func(text string, w int) string {
		c := common.Cut(text, w)
		return st.BadgeText(b, c) + strings.Repeat(" ", max(w-cellwidth.String(c), 0))
	}
}

// joinShown joins the cells of the columns Layout kept (width 0: hidden), each fitted; cell 1 is
// drawn by state when given.
func joinShown(cells []string, widths []int, state stateCell) string {
	var b strings.Builder
	b.Grow(components.Span(widths) + rowSlack)
	writeShown(&b, cells, widths, state)
	return b.String()
}

// writeShown writes what joinShown joins to b.
func writeShown(b *strings.Builder, cells []string, widths []int, state stateCell) {
	first := true
	for i, c := range cells {
		if widths[i] <= 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		if i == 1 && state != nil {
			b.WriteString(state(c, widths[i]))
		} else {
			writeFit(b, c, widths[i])
		}
	}
}

// writeFit writes common.Fit(s, w) to b: printable ASCII that fits is padded in place, without
// making the fitted string first.
func writeFit(b *strings.Builder, s string, w int) {
	if w > 0 && len(s) <= w && cellwidth.PrintableASCII(s) {
		b.WriteString(s)
		writeSpaces(b, w-len(s))
		return
	}
	b.WriteString(common.Fit(s, w))
}

// spaces is padding written a slice at a time (writeSpaces).
const spaces = "                                                                "

// writeSpaces writes n spaces to b (none when n <= 0).
func writeSpaces(b *strings.Builder, n int) {
	for n > 0 {
		k := min(n, len(spaces))
		b.WriteString(spaces[:k])
		n -= k
	}
}

// layout gives the columns their widths for the table's width (2 cells go to the gutter).
func (m *Model) layout(cols []components.Column) []int {
	return components.Layout(cols, max(m.tableWidth()-2, 1))
}

func titles(cols []components.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Title
	}
	return out
}

// maxStateWant bounds what STATE asks for beyond its bare words (a fifth of the table when that is
// more): a bridge's long error code gives way to the command first (the detail line has it whole).
const maxStateWant = 28

// withState sizes the STATE column (index i of cols) for the words the rows show: never narrower
// than the widest bare state word, so a narrow table shortens a word's detail, never the word.
func withState(cols []components.Column, i int, words []common.StateWord, width int) []components.Column {
	out := append([]components.Column(nil), cols...)
	least, want := common.StateWidths(out[i].Title, words)
	out[i].Min, out[i].Want, out[i].Priority = least, min(want, max(maxStateWant, width/5)), -1
	return out
}

func (m *Model) procRows(now time.Time) (string, []string, string) {
	st, procs := m.ctx.Styles, m.lists[ProcessesTab]
	words := make([]common.StateWord, len(m.st.Processes))
	for i, e := range m.st.Processes {
		words[i] = m.procWord(e, now)
	}
	plain := make([][]string, len(m.st.Processes))
	all := make([]string, len(procCols)*len(m.st.Processes)) // every row's cells, in one allocation
	for i, e := range m.st.Processes {
		k := i * len(procCols)
		plain[i] = m.putProcCells(all[k:k+len(procCols):k+len(procCols)], e, words[i], now)
	}
	cols0 := procCols
	if m.tableWidth() >= 150 {
		// a stable run's ID is 25 cells: whole where there is room for it
		cols0 = append([]components.Column(nil), procCols...)
		cols0[0].Want = wideIDWant
	}
	pc := withState(components.Natural(cols0, plain), 1, words, m.tableWidth())
	cols := m.layout(pc)
	head := joinShown(titles(pc), cols, nil)
	var rows []string
	for i, e := range m.st.Processes {
		cond := m.procCond(e)
		badge, label := words[i].Badge, words[i].Fit(cols[1])
		cells := plain[i]
		if cols[0] < cellwidth.String(cells[0]) {
			// a recorded run's ID starts with its launch date, the same on every row of a day:
			// where it does not fit, show its random tail (what the other screens show)
			if short := client.ShortID(e.Process.ID); !strings.HasPrefix(e.Process.ID, short) {
				cells = append([]string{common.SanitizeText(short)}, cells[1:]...)
			}
		}
		cells[1] = label
		state := badgeCell(st, badge)
		var style func(string) string
		switch cond {
		case common.Stale:
			style = st.Paints.Stale.Render
		case common.Lost:
			// keep the LOST badge loud on a greyed row: the whole cell in it
			state = func(text string, w int) string { return st.BadgeText(badge, common.Fit(text, w)) }
		}
		// no key is made while nothing is marked (the usual case)
		mark := procs.AnyMarked() && procs.Marked(entryKey(e))
		rows = append(rows, m.row(i, mark, cells, cols, state, style))
	}
	detail := ""
	if procs.AnyMarked() { // MarkedKeys makes every row's key
		if n := len(procs.MarkedKeys()); n > 0 {
			detail = fmt.Sprintf("%d marked · ", n)
		}
	}
	if e := m.curProc(); e != nil {
		detail += m.procDetail(e)
	}
	return head, rows, detail
}

// procWord is a process row's state word.
func (m *Model) procWord(e *procEntry, now time.Time) common.StateWord {
	return common.ProcessWord(e.Process.State, e.Process.Exit, e.Process.Error, m.procCond(e), e.Incarnation, e.LastSeen, now)
}

// procCells are what a process row shows, plain, column by column (the state in full): the
// table draws them and the filter looks in them.
func (m *Model) procCells(e *procEntry, word common.StateWord, now time.Time) []string {
	return m.putProcCells(make([]string, len(procCols)), e, word, now)
}

// putProcCells puts procCells into dst (len(procCols) long) and returns it.
func (m *Model) putProcCells(dst []string, e *procEntry, word common.StateWord, now time.Time) []string {
	c := m.procFixed.get(e)
	dst[0], dst[1], dst[2], dst[3], dst[4], dst[5] = c.id, word.Full(), c.inc, c.argv, c.cwd, c.start
	dst[6] = m.duration(e.Process.StartedAt, e.Process.EndedAt, e.Process.State == "running" && m.procCond(e) == common.Current, now)
	return dst
}

// fixedCells are the cells of a process row that do not move with the clock (ID, INC, COMMAND,
// CWD, STARTED), with what they were made from. The screen redraws every second for RUNTIME, and
// sanitising and quoting these again was most of a redraw; comparing their inputs is far cheaper.
type fixedCells struct {
	// the inputs, compared by value: the record hands the screen new copies of its entries after
	// every change, and without a record entries change in place
	pid      string
	command  []string // a copy: the entry's slice may share its array with the record's
	pwd      string
	started  time.Time
	incN     int
	inferred bool

	id, inc, argv, cwd, start string
	used                      uint64 // the redraw that last asked for them (rowCells.gen)
}

func newFixedCells(e *procEntry) *fixedCells {
	p := &e.Process
	return &fixedCells{
		pid: p.ID, command: append([]string(nil), p.Command...), pwd: p.Cwd, started: p.StartedAt,
		incN: e.Incarnation, inferred: e.Inferred,
		id: common.SanitizeText(p.ID), inc: incLabel(e.Incarnation, e.Inferred), argv: common.Argv(p.Command),
		cwd: common.SanitizeText(p.Cwd), start: common.Clock(p.StartedAt),
	}
}

// of reports whether c was made from e's current values. StartedAt is compared with == (not
// Equal): the clock cell is formatted in the time's location, which Equal ignores.
func (c *fixedCells) of(e *procEntry) bool {
	p := &e.Process
	return c.pid == p.ID && c.incN == e.Incarnation && c.inferred == e.Inferred && c.pwd == p.Cwd &&
		c.started == p.StartedAt && slices.Equal(c.command, p.Command)
}

// rowKey is a process row's identity (what entryKey says, without making a string).
type rowKey struct {
	id  string
	inc int
}

// rowCells keeps the fixedCells of the processes listed lately: what the last redraw asked for,
// and what has been asked for since (the filter reads rows between redraws).
type rowCells struct {
	gen   uint64
	cells map[rowKey]*fixedCells
}

// get is e's fixed cells, made again when e's values changed since they were made.
func (r *rowCells) get(e *procEntry) *fixedCells {
	k := rowKey{e.Process.ID, e.Incarnation}
	c := r.cells[k]
	if c == nil || !c.of(e) {
		c = newFixedCells(e)
		if r.cells == nil {
			r.cells = map[rowKey]*fixedCells{}
		}
		r.cells[k] = c
	}
	c.used = r.gen
	return c
}

// redraw starts a redraw: the cells nothing asked for since the last one started are dropped, so
// the cache holds no more than the processes listed lately.
func (r *rowCells) redraw() {
	for k, c := range r.cells {
		if c.used != r.gen {
			delete(r.cells, k)
		}
	}
	r.gen++
}

// termWord is a terminal row's state word.
func (m *Model) termWord(e *termEntry, now time.Time) common.StateWord {
	return common.ProcessWord(e.Terminal.Status, e.Terminal.Exit, e.Terminal.Error, m.termCond(e), e.Incarnation, e.LastSeen, now)
}

// termCells are what a terminal row shows, plain, column by column (the state in full).
func (m *Model) termCells(e *termEntry, word common.StateWord) []string {
	cmd := common.Argv(e.Terminal.Command)
	if cmd == "" {
		cmd = "(default shell)"
	}
	return []string{common.SanitizeText(e.Terminal.ID), word.Full(), incLabel(e.Incarnation, e.Inferred), cmd, common.SanitizeText(e.Terminal.Cwd)}
}

// incCells are what an incarnation row shows, plain, column by column.
func (m *Model) incCells(i int) []string {
	e := m.st.Incarnations[i]
	kind := "reported"
	if e.Inferred {
		kind = "inferred"
	}
	if i == 0 {
		kind = "first seen"
	}
	cur := ""
	if i == len(m.st.Incarnations)-1 {
		cur = " ◀ now"
	}
	return []string{fmt.Sprintf("#%d", e.Number), common.Clock(e.FirstSeen), common.Clock(e.LastSeen), kind, strings.Join(sanitizeAll(e.Evidence), "; ") + cur}
}

func (m *Model) procDetail(e *procEntry) string {
	if e.Earlier {
		return "seen by an earlier run of sandscope · " + m.procDetailNow(e)
	}
	return m.procDetailNow(e)
}

func (m *Model) procDetailNow(e *procEntry) string {
	switch m.procCond(e) {
	case common.Lost:
		return lostDetail(e, m.st)
	case common.Stale:
		return fmt.Sprintf("%s belongs to incarnation #%d (now #%d): last known state kept; actions refused; %s relaunches it here",
			e.Process.ID, e.Incarnation, m.st.Current.Number, m.ctx.Keys.Relaunch.Help().Key)
	case common.Unknown:
		return fmt.Sprintf("%s: bridge not answering; last confirmed RUNNING %s", e.Process.ID, m.ages.Since(m.ctx.Clock(), e.LastSeen))
	}
	if e.Process.Error != nil {
		return fmt.Sprintf("%s: %s", common.SanitizeText(e.Process.Error.Code), common.SanitizeText(e.Process.Error.Message))
	}
	return fmt.Sprintf("%s pid %d · %s opens its log · %s picks for multi-follow", e.Process.ID, e.Process.PID,
		m.ctx.Keys.Open.Help().Key, m.ctx.Keys.Select.Help().Key)
}

// lostDetail is one sentence on a LOST entry: how it was found gone, the incarnation it belonged
// to, and what the sandbox runs now (said once: the evidence's own words on the sandbox, which may
// be out of date, give way to what the record knows now).
func lostDetail(e *procEntry, st *record.State) string {
	found := "it vanished with its container"
	switch {
	case e.Loss != nil && e.Loss.Lookup != "":
		found = e.Loss.Lookup
	case e.Loss == nil && len(e.Evidence) > 0:
		found = e.Evidence[0] // the watcher's evidence says first where the entry is missing from
	}
	id := e.Process.ID
	if e.Kind == record.Terminal {
		id = e.Terminal.ID
	}
	s := fmt.Sprintf("%s was running and vanished with its container (%s)", common.SanitizeText(id), common.SanitizeText(found))
	switch {
	case st.Running != nil && !*st.Running:
		s += "; the sandbox is now stopped"
	case e.Incarnation > 0 && st.Current.Number > 0 && e.Incarnation != st.Current.Number:
		s += fmt.Sprintf("; it belonged to incarnation #%d, the sandbox now runs %s", e.Incarnation, incLabel(st.Current.Number, st.Current.Inferred))
	case st.Current.Number > 0:
		s += "; the sandbox still runs incarnation " + incLabel(st.Current.Number, st.Current.Inferred)
	}
	return s
}

var termCols = []components.Column{
	{Title: "ID", Min: 8, Want: 12, Priority: 0},
	{Title: "STATE", Priority: 0}, // sized by withState for the rows' words
	{Title: "INC", Min: 4, Priority: 2},
	{Title: "COMMAND", Min: 14, Want: 40, Priority: 0, Flex: true},
	{Title: "CWD", Min: 8, Want: 14, Priority: 1},
}

func (m *Model) termRows(now time.Time) (string, []string, string) {
	st := m.ctx.Styles
	words := make([]common.StateWord, len(m.st.Terminals))
	for i, e := range m.st.Terminals {
		words[i] = m.termWord(e, now)
	}
	plain := make([][]string, len(m.st.Terminals))
	for i, e := range m.st.Terminals {
		plain[i] = m.termCells(e, words[i])
	}
	tc := withState(components.Natural(termCols, plain), 1, words, m.tableWidth())
	cols := m.layout(tc)
	head := joinShown(titles(tc), cols, nil)
	var rows []string
	for i, e := range m.st.Terminals {
		cond := m.termCond(e)
		badge, label := words[i].Badge, words[i].Fit(cols[1])
		cells := plain[i]
		if cols[0] < cellwidth.String(cells[0]) {
			// a recorded run's ID starts with its launch date, the same on every row of a day:
			// where it does not fit, show its random tail (what the other screens show)
			if short := client.ShortID(e.Process.ID); !strings.HasPrefix(e.Process.ID, short) {
				cells = append([]string{common.SanitizeText(short)}, cells[1:]...)
			}
		}
		cells[1] = label
		var style func(string) string
		if cond == common.Stale {
			style = st.Paints.Stale.Render
		}
		rows = append(rows, m.row(i, false, cells, cols, badgeCell(st, badge), style))
	}
	detail := ""
	if e := m.curTerm(); e != nil {
		switch m.termCond(e) {
		case common.Stale, common.Lost:
			detail = fmt.Sprintf("%s belonged to incarnation #%d: its container is gone; attaching is refused", e.Terminal.ID, e.Incarnation)
		default:
			detail = fmt.Sprintf("%s pid %d · %s attaches in a pane", e.Terminal.ID, e.Terminal.PID, m.ctx.Keys.Open.Help().Key)
		}
	}
	return head, rows, detail
}

var incCols = []components.Column{
	{Title: "INC", Min: 5, Want: 6, Priority: 0},
	{Title: "FIRST", Min: 8, Want: 9, Priority: 1},
	{Title: "LAST", Min: 8, Want: 9, Priority: 1},
	{Title: "BOUNDARY", Min: 10, Priority: 2},
	{Title: "EVIDENCE", Min: 12, Priority: 0, Flex: true},
}

func (m *Model) incRows(now time.Time) (string, []string, string) {
	plain := make([][]string, len(m.st.Incarnations))
	for i := range m.st.Incarnations {
		plain[i] = m.incCells(i)
	}
	ic := components.Natural(incCols, plain)
	cols := m.layout(ic)
	head := joinShown(titles(ic), cols, nil)
	var rows []string
	for i := range m.st.Incarnations {
		cells := plain[i]
		var style func(string) string
		if i < len(m.st.Incarnations)-1 {
			st := m.ctx.Styles
			style = st.Paints.Stale.Render
		}
		rows = append(rows, m.row(i, false, cells, cols, nil, style))
	}
	detail := "A boundary is reported when the bridge says which container answered, inferred from evidence otherwise."
	if c := m.lists[TimelineTab].Cursor(); c >= 0 && c < len(m.st.Incarnations) {
		e := m.st.Incarnations[c]
		detail = fmt.Sprintf("#%d: first seen %s, last seen %s · %s", e.Number, m.ages.Since(now, e.FirstSeen), m.ages.Since(now, e.LastSeen), strings.Join(sanitizeAll(e.Evidence), "; "))
		if e.Earlier {
			detail = "seen by an earlier run of sandscope · " + detail
		}
	}
	return head, rows, detail
}
