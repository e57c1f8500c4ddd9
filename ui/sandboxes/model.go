package sandboxes

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/keymap"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// refreshEvery is the poll interval while the bridge answers.
const refreshEvery = 3 * time.Second

// row is one sandbox on the screen.
type row struct {
	Known
	listed      bool // in the local bridge's list
	procs       int
	terms       int
	countsKnown bool
	err         error // the last lookup of this sandbox failed
	sawStopped  bool  // a stop was observed since the last start (remote incarnation inference)
}

// Model is the sandboxes screen.
type Model struct {
	ctx    *common.Context
	store  *Store
	rows   []*row
	list   *components.List // cursor, paging, filter and sort over rows
	width  int
	height int

	dialog *common.Dialog

	loaded   bool
	gen      int // refresh generation: stale results and ticks are ignored
	inflight bool
	connErr  error
	failures int
	retryAt  time.Time
	lastOK   time.Time
	saveErr  error
	busy     string // an action under way
	saver    *saver // writes the known-sandbox file, only when it changed
	hidden   bool   // another screen is on top
	paused   bool   // a tick came while hidden: no refresh is scheduled until Resume
	// shownAt is the clock the ages are drawn at: the last refresh's (ages move with the
	// refreshes, so a tick alone redraws nothing)
	shownAt time.Time
}

// New makes the screen and loads the persisted known set.
func New(ctx *common.Context) *Model {
	m := &Model{ctx: ctx, store: NewStore(ctx.StateDir, ctx.BridgeURL)}
	m.saver = &saver{store: m.store}
	m.list = components.NewList(ctx.Keys).SetSorts([]components.Sort{
		{Name: "sandbox", Less: func(a, b int) bool { return m.rows[a].ID < m.rows[b].ID }},
		{Name: "state", Less: func(a, b int) bool { return stateRank(m.rows[a]) < stateRank(m.rows[b]) }},
		{Name: "last seen", Less: func(a, b int) bool { return m.rows[a].LastSeen.After(m.rows[b].LastSeen) }},
	})
	known, err := m.store.Load()
	m.saveErr = err
	m.saver.saved = known
	for _, k := range known {
		k := k
		m.rows = append(m.rows, &row{Known: k})
	}
	m.sortRows()
	return m
}

// Init starts the first refresh.
func (m *Model) Init() tea.Cmd { return m.refresh() }

// SetSize sets the screen's area.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.list.SetHeight(m.listHeight())
}

// Capturing reports whether a dialog or the filter being typed takes every key.
func (m *Model) Capturing() bool { return m.dialog != nil || m.list.Capturing() }

// Prompting reports an open dialog.
func (m *Model) Prompting() bool { return m.dialog != nil }

// Title is the screen's crumb in the header.
func (m *Model) Title() string { return "sandboxes" }

// Close does nothing: the screen's refreshes are one call at a time, each with a timeout.
func (m *Model) Close() {}

// SetFocus says whether the list is on top. Hidden, it stops refreshing at its next tick (the
// record's watcher goes on watching every sandbox); Resume refreshes it when it is back.
func (m *Model) SetFocus(focused bool) { m.hidden = !focused }

// Resume refreshes a list that stopped refreshing while hidden, and starts its ticks again.
func (m *Model) Resume() tea.Cmd {
	if !m.paused || m.hidden {
		return nil
	}
	m.paused = false
	return m.refresh()
}

// Attached is 0: the screen holds no stream.
func (m *Model) Attached() int { return 0 }

// Back clears an active filter; otherwise esc is the root's.
func (m *Model) Back() bool { return m.list.Back() }

// syncList gives the list the current rows (the cursor stays on its sandbox).
func (m *Model) syncList() {
	m.list.SetRows(components.Rows{
		N:   len(m.rows),
		Key: func(i int) string { return m.rows[i].ID },
		Text: func(i int) string {
			return m.rows[i].ID + " " + m.state(m.rows[i]).Full() + " " + m.source(m.rows[i])
		},
	})
}

// stateRank orders rows running first, then stopped, then unknown.
func stateRank(r *row) int {
	switch {
	case r.Running == nil || r.err != nil:
		return 2
	case *r.Running:
		return 0
	}
	return 1
}

// ShortHelp is the one-line help (delete only where the driver deletes sandboxes).
func (m *Model) ShortHelp() []key.Binding {
	all := m.ctx.Keys.ShortHelp(keymap.Sandboxes)
	if _, ok := m.ctx.Driver.(driver.Lifecycle); ok {
		return all
	}
	out := make([]key.Binding, 0, len(all))
	for _, b := range all {
		if b.Help() != m.ctx.Keys.Delete.Help() {
			out = append(out, b)
		}
	}
	return out
}

// FullHelp is the help overlay: the screen's keys and the table's, from the tables that
// dispatch them.
func (m *Model) FullHelp() [][]key.Binding {
	return m.ctx.Keys.HelpColumns(m.actions().Bindings(), m.list.Bindings())
}

// Selected is the sandbox under the cursor ("" when none).
func (m *Model) Selected() string {
	m.syncList()
	if i := m.list.Cursor(); i >= 0 && i < len(m.rows) {
		return m.rows[i].ID
	}
	return ""
}

func (m *Model) find(id string) *row {
	for _, r := range m.rows {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// remember adds id to the known set (or updates its source) and persists it.
func (m *Model) remember(id, source string) *row {
	r := m.find(id)
	if r == nil {
		r = &row{Known: Known{ID: id, Source: source, AddedAt: m.ctx.Clock()}}
		m.rows = append(m.rows, r)
		m.sortRows()
	} else if r.Source == "listed" && source != "listed" {
		r.Source = source
	}
	m.persist()
	return r
}

func (m *Model) forget(id string) {
	if m.ctx.Record != nil {
		// a sandbox with history in the record is listed until the user forgets it
		m.ctx.Record.Forget(id)
	}
	if m.ctx.Watch != nil {
		m.ctx.Watch.Untrack(id)
	}
	for i, r := range m.rows {
		if r.ID == id {
			m.rows = append(m.rows[:i], m.rows[i+1:]...)
			break
		}
	}
	m.syncList() // keep the cursor on a row
	m.persist()
}

// persist saves every row not merely listed by the local bridge (that list is the truth for those),
// now, when it differs from what was saved last.
func (m *Model) persist() {
	if save := m.saver.prepare(m.known()); save != nil {
		m.saveErr = save()
	}
}

// persistLater is persist off the UI goroutine (for the periodic refresh): the command saves and
// reports the outcome as a savedMsg; nil when nothing changed.
func (m *Model) persistLater() tea.Cmd {
	save := m.saver.prepare(m.known())
	if save == nil {
		return nil
	}
	return func() tea.Msg { return savedMsg{owner: m, err: save()} }
}

func (m *Model) known() []Known {
	var ks []Known
	for _, r := range m.rows {
		if r.Source == "listed" || r.Source == "recorded" {
			continue // the bridge's list and the record say these again on every start
		}
		ks = append(ks, r.Known)
	}
	return ks
}

// savedMsg is the outcome of a save started by persistLater.
type savedMsg struct {
	owner *Model
	err   error
}

// lastSeenEvery is how stale a saved "last seen" may get before it alone is worth a write.
const lastSeenEvery = time.Minute

// saver writes the known-sandbox file only when its content changed (a "last seen" that moved by
// less than lastSeenEvery is not a change), and in the order the saves were prepared even when they
// run on different goroutines.
type saver struct {
	store *Store
	saved []Known // what the last prepared save holds (UI goroutine)
	seq   uint64  // prepared saves (UI goroutine)

	mu      sync.Mutex
	written uint64 // the newest save written
}

// prepare returns the save of ks, or nil when the file already holds it.
func (s *saver) prepare(ks []Known) func() error {
	if sameKnown(s.saved, ks) {
		return nil
	}
	s.saved = append([]Known(nil), ks...)
	s.seq++
	seq, data := s.seq, s.saved
	return func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if seq < s.written {
			return nil // a newer save was written already
		}
		s.written = seq
		return s.store.Save(data)
	}
}

func sameKnown(a, b []Known) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Source != y.Source || !x.AddedAt.Equal(y.AddedAt) || x.Incarnation != y.Incarnation ||
			x.Inferred != y.Inferred || (x.Running == nil) != (y.Running == nil) || (x.Running != nil && *x.Running != *y.Running) {
			return false
		}
		if d := y.LastSeen.Sub(x.LastSeen); d >= lastSeenEvery || d <= -lastSeenEvery {
			return false
		}
	}
	return true
}

func (m *Model) sortRows() {
	sel := m.Selected()
	sort.SliceStable(m.rows, func(i, j int) bool {
		a, b := m.rows[i], m.rows[j]
		if !a.AddedAt.Equal(b.AddedAt) {
			return a.AddedAt.Before(b.AddedAt)
		}
		return a.ID < b.ID
	})
	m.syncList()
	m.list.Select(sel)
}

// refreshMsg carries one refresh's answers.
type refreshMsg struct {
	owner  *Model
	gen    int
	at     time.Time
	listed []client.SandboxInfo
	listOK bool
	// recorded: the sandboxes with history in the record (not forgotten)
	recorded []string
	status   map[string]statusResult
	connErr  error // unauthorized or unreachable: the bridge as a whole
}

type statusResult struct {
	running     client.RunningStatus
	procs       int
	terms       int
	countsKnown bool
	err         error
	// observed: read from the record's watcher (its incarnation, inferred or not, and when it
	// last answered) rather than looked up by this screen
	observed bool
	inc      client.Incarnation
	at       time.Time
}

// statusFromRecord is what the record's watcher observed of a sandbox; ok is false while it has
// heard nothing yet.
func statusFromRecord(st *record.State) (statusResult, bool) {
	if st.WatchErr != "" && !st.ErrSince.Before(st.LastOK) {
		if st.WatchCause != nil {
			return statusResult{err: st.WatchCause}, true
		}
		return statusResult{err: errors.New(st.WatchErr)}, true
	}
	if st.Running == nil {
		return statusResult{}, false
	}
	sr := statusResult{observed: true, running: client.RunningStatus{Running: *st.Running}, inc: st.Current, at: st.LastOK, countsKnown: st.Events > 0}
	for _, e := range st.Processes {
		if !e.Gone && !e.Lost {
			sr.procs++
		}
	}
	for _, e := range st.Terminals {
		if !e.Gone && !e.Lost {
			sr.terms++
		}
	}
	return sr, true
}

// tickMsg and refreshMsg name their model: after a context switch a new list must not take the
// old one's answers.
type tickMsg struct {
	owner *Model
	gen   int
}

type actionMsg struct {
	op  string
	id  string
	err error
}

// The root holds it as a common.Screen.
var _ common.Screen = (*Model)(nil)
