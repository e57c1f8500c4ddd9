package components

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/keymap"
)

// Sort is one order a list offers: a name for the header and a comparison of two source rows.
type Sort struct {
	Name string
	Less func(a, b int) bool
}

// Rows describes a screen's rows to the list: how many there are, each row's identity (the cursor
// and the selection follow a row through refreshes) and the text the filter looks in.
type Rows struct {
	N    int
	Key  func(i int) string
	Text func(i int) string
	// Lower says Text is lower-case already: the filter compares it as it is (lower-casing every
	// row's text at each keystroke was most of a keystroke's cost with 10,000 rows).
	Lower bool
}

// List is the navigation state of one table. Row indices given and returned are the screen's
// (source) indices; the list decides which of them show, in which order, and where the cursor is.
type List struct {
	keys  *keymap.KeyMap
	rows  Rows
	order []int // source indices shown: filtered, then sorted (unused while all)
	// all says every row shows, in the screen's own order: position p is source row p, and no
	// order is made (a list of 10,000 runs made one at each opening of the all-runs screen, a
	// slice the size of every run of the record for a frame that shows 45 of them)
	all    bool
	win    []int // Window's answer while all
	cursor int   // position in order
	offset int   // first position on screen
	height int   // rows on screen
	// curKey is the key of the row under the cursor when the rows were last known: the rows'
	// functions may already describe new rows when SetRows is called.
	curKey string

	sorts   []Sort
	sortIdx int // -1: the screen's own order
	desc    bool

	filter  string
	input   textinput.Model
	editing bool
	// matched are the source rows whose text contains matchedBy (for these rows), in the order
	// shown when they were matched (sortIdx and desc as matchedIn says): a filter typed further is
	// looked for among them only, and keeps their order (a subsequence of rows in a stable order
	// is in that order: nothing is sorted again)
	matched   []int
	matchedBy string
	matchedIn [2]int // the sortIdx and desc (1) matched is in
	matchedOK bool
	// at is, for each source row in matched, where matchedBy first occurs in its (lower-case)
	// text: a filter typed further at its end first occurs there or later, so most rows are
	// decided by comparing the filter's new end at that place
	at []int32
	// texts are the rows' lower-case texts as the last full scan read them, one after the other
	// (row i's is texts[ends[i-1]:ends[i]]): a filter typed further reads them there, in one
	// block, instead of asking for each row's text again (valid while matchedOK)
	texts []byte
	ends  []int32

	selectable bool
	selected   map[string]bool
}

// NewList makes an empty list driven by keys.
func NewList(keys *keymap.KeyMap) *List {
	in := textinput.New()
	in.Prompt = ""
	in.CharLimit = 256
	return &List{keys: keys, sortIdx: -1, height: 1, input: in, selected: map[string]bool{}}
}

// SetSorts sets the orders o cycles through (after the screen's own order).
func (l *List) SetSorts(s []Sort) *List {
	l.sorts = s
	if l.sortIdx >= len(s) {
		l.sortIdx = -1
	}
	return l
}

// Selectable lets the select key (space) mark rows.
func (l *List) Selectable(on bool) *List {
	l.selectable = on
	return l
}

// SetHeight sets how many rows the screen shows at once (paging and scrolling follow it).
func (l *List) SetHeight(h int) {
	l.height = max(h, 1)
	l.clamp()
}

// SetRows gives the list the screen's current rows. The cursor stays on the row it was on (by
// key) when that row is still shown; selections of rows that went away are dropped.
func (l *List) SetRows(r Rows) {
	cur := l.curKey
	l.rows = r
	l.matchedOK = false
	l.rebuild(cur)
	if len(l.selected) > 0 {
		live := map[string]bool{}
		for i := 0; i < r.N; i++ {
			if k := l.key(i); l.selected[k] {
				live[k] = true
			}
		}
		l.selected = live
	}
}

func (l *List) key(i int) string {
	if l.rows.Key == nil {
		return fmt.Sprint(i)
	}
	return l.rows.Key(i)
}

// rebuild recomputes the shown rows and puts the cursor on the row keyed cur if it is shown.
func (l *List) rebuild(cur string) {
	l.refilter()
	if cur != "" {
		l.cursorTo(func(i int) bool { return l.key(i) == cur })
	}
	l.clamp()
}

// rebuildAt recomputes the shown rows, the rows being the same, and puts the cursor on source row
// cur (-1: none) if it is shown: no key is made.
func (l *List) rebuildAt(cur int) {
	l.refilter()
	if cur >= 0 {
		l.cursorTo(func(i int) bool { return i == cur })
	}
	l.clamp()
}

// cursorTo puts the cursor on the first shown row that is the one (a source row index).
func (l *List) cursorTo(is func(i int) bool) {
	for p, n := 0, l.Len(); p < n; p++ {
		if is(l.sourceAt(p)) {
			l.cursor = p
			return
		}
	}
}

// sourceAt is the source index of the row shown at position p (0 ≤ p < Len).
func (l *List) sourceAt(p int) int {
	if l.all {
		return p
	}
	return l.order[p]
}

// refilter recomputes the shown rows: filtered, then sorted. A filter that contains the last
// one looks among the rows that one matched, in the order they were shown; one that extends it
// at its end first looks where the shorter one first occurred in each.
func (l *List) refilter() {
	l.order, l.all = l.order[:0], false
	f := strings.ToLower(l.filter)
	in := l.sortState()
	narrow := l.matchedOK && l.matchedIn == in && strings.Contains(f, l.matchedBy)
	switch {
	case f == "" && in == [2]int{-1, 0}:
		l.all = true // every row, in the screen's order: nothing to make
		return
	case f == "":
		// every row, sorted: sized once (appended a row at a time, a list of 10,000 runs
		// allocated about four times its size in growing)
		l.order = slices.Grow(l.order, l.rows.N)
		for i := 0; i < l.rows.N; i++ {
			l.order = append(l.order, i)
		}
		l.sort()
		return
	case narrow:
		fb := []byte(f)
		if !strings.HasPrefix(f, l.matchedBy) {
			for _, i := range l.matched {
				if at := bytes.Index(l.textOf(i), fb); at >= 0 {
					l.at[i] = int32(at)
					l.order = append(l.order, i)
				}
			}
			break
		}
		// typed further at its end: where the shorter filter first occurs, only what was typed
		// since is compared; elsewhere the filter occurs later or not at all
		k, added := len(l.matchedBy), fb[len(l.matchedBy):]
		for _, i := range l.matched {
			t, at := l.textOf(i), int(l.at[i])
			if q := at + len(fb); q <= len(t) && bytes.Equal(t[at+k:q], added) {
				l.order = append(l.order, i)
				continue
			}
			if j := bytes.Index(t[at+1:], fb); j >= 0 {
				l.at[i] = int32(at + 1 + j)
				l.order = append(l.order, i)
			}
		}
	default:
		l.scan(f)
		l.sort()
	}
	l.matched, l.matchedBy, l.matchedIn, l.matchedOK = append(l.matched[:0], l.order...), f, in, true
}

// scan reads every row's text (kept in texts) and puts the rows containing f (lower-case) in
// order, ascending.
func (l *List) scan(f string) {
	n := l.rows.N
	if cap(l.at) < n {
		l.at = make([]int32, n)
	}
	l.at, l.ends, l.texts = l.at[:n], l.ends[:0], l.texts[:0]
	fb := []byte(f)
	for i := 0; i < n; i++ {
		start := len(l.texts)
		if l.rows.Text != nil {
			t := l.rows.Text(i)
			if !l.rows.Lower {
				t = strings.ToLower(t)
			}
			l.texts = append(l.texts, t...)
		}
		l.ends = append(l.ends, int32(len(l.texts)))
		if at := bytes.Index(l.texts[start:], fb); at >= 0 {
			l.at[i] = int32(at)
			l.order = append(l.order, i)
		}
	}
}

// textOf is source row i's lower-case text as the last scan read it.
func (l *List) textOf(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.texts[start:l.ends[i]]
}

// sortState is the order rows are shown in: the sort's index and the direction.
func (l *List) sortState() [2]int {
	in := [2]int{-1, 0}
	if l.sortIdx >= 0 && l.sortIdx < len(l.sorts) {
		in[0] = l.sortIdx
	}
	if l.desc {
		in[1] = 1
	}
	return in
}

// sort puts order, ascending, in the order shown.
func (l *List) sort() {
	if l.sortIdx >= 0 && l.sortIdx < len(l.sorts) {
		less := l.sorts[l.sortIdx].Less
		sort.SliceStable(l.order, func(a, b int) bool {
			if l.desc {
				return less(l.order[b], l.order[a])
			}
			return less(l.order[a], l.order[b])
		})
	} else if l.desc {
		for i, j := 0, len(l.order)-1; i < j; i, j = i+1, j-1 {
			l.order[i], l.order[j] = l.order[j], l.order[i]
		}
	}
}

func (l *List) clamp() {
	n := l.Len()
	if l.cursor >= n {
		l.cursor = n - 1
	}
	if l.cursor < 0 {
		l.cursor = 0
	}
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+l.height {
		l.offset = l.cursor - l.height + 1
	}
	if maxOff := max(n-l.height, 0); l.offset > maxOff {
		l.offset = maxOff
	}
	if l.offset < 0 {
		l.offset = 0
	}
	if n > 0 {
		l.curKey = l.key(l.sourceAt(l.cursor))
	}
}

// Len is the number of rows shown (after the filter).
func (l *List) Len() int {
	if l.all {
		return l.rows.N
	}
	return len(l.order)
}

// Total is the number of rows the screen has.
func (l *List) Total() int { return l.rows.N }

// Cursor is the source index of the row under the cursor, or -1 when nothing is shown.
func (l *List) Cursor() int {
	if l.Len() == 0 {
		return -1
	}
	return l.sourceAt(l.cursor)
}

// CursorKey is the key of the row under the cursor ("" when none).
func (l *List) CursorKey() string {
	if c := l.Cursor(); c >= 0 && c < l.rows.N {
		return l.key(c)
	}
	return ""
}

// Position is the cursor's place among the rows shown (0-based).
func (l *List) Position() int { return l.cursor }

// Window is the source indices of the rows on screen, top to bottom.
func (l *List) Window() []int {
	end := min(l.offset+l.height, l.Len())
	if l.offset >= end {
		return nil
	}
	if l.all {
		l.win = l.win[:0]
		for i := l.offset; i < end; i++ {
			l.win = append(l.win, i)
		}
		return l.win
	}
	return l.order[l.offset:end]
}

// IsCursor reports whether source row i is under the cursor.
func (l *List) IsCursor(i int) bool { return l.Len() > 0 && l.sourceAt(l.cursor) == i }

// Select puts the cursor on the row keyed k, if it is shown.
func (l *List) Select(k string) bool {
	for p, n := 0, l.Len(); p < n; p++ {
		if l.key(l.sourceAt(p)) == k {
			l.cursor = p
			l.clamp()
			return true
		}
	}
	return false
}

// SelectIndex puts the cursor on source row i, if it is shown.
func (l *List) SelectIndex(i int) bool {
	for p, n := 0, l.Len(); p < n; p++ {
		if l.sourceAt(p) == i {
			l.cursor = p
			l.clamp()
			return true
		}
	}
	return false
}

// ClickRow puts the cursor on the row at screen line y of the window (mouse); false when there
// is no row there.
func (l *List) ClickRow(y int) bool {
	p := l.offset + y
	if y < 0 || p >= l.Len() {
		return false
	}
	l.cursor = p
	l.clamp()
	return true
}

// Move moves the cursor by d rows, within the rows shown.
func (l *List) Move(d int) {
	l.cursor += d
	l.clamp()
}

// Marked reports whether the row keyed k is selected.
func (l *List) Marked(k string) bool { return l.selected[k] }

// AnyMarked reports whether any row is selected: false says, without making the rows' keys, that
// Marked and MarkedKeys find nothing.
func (l *List) AnyMarked() bool { return len(l.selected) > 0 }

// MarkedKeys are the selected rows' keys, in the list's order.
func (l *List) MarkedKeys() []string {
	var out []string
	for i := 0; i < l.rows.N; i++ {
		if k := l.key(i); l.selected[k] {
			out = append(out, k)
		}
	}
	return out
}

// ClearMarks drops the selection.
func (l *List) ClearMarks() { l.selected = map[string]bool{} }

// Filter is the active filter ("" when none).
func (l *List) Filter() string { return l.filter }

// SetFilter filters the rows to those whose text contains f (case-insensitive).
func (l *List) SetFilter(f string) {
	l.filter = f
	l.rebuildAt(l.Cursor())
}

// Capturing reports whether the filter is being typed: the list then takes every key.
func (l *List) Capturing() bool { return l.editing }

// Back is esc for the list: it ends typing the filter (clearing it) or clears an active filter,
// and reports whether it did; when it did not, esc is the screen's to act on.
func (l *List) Back() bool {
	if l.editing {
		l.editing = false
		l.input.Blur()
		l.SetFilter("")
		return true
	}
	if l.filter != "" {
		l.SetFilter("")
		return true
	}
	return false
}

// SortName is the current order's name ("" for the screen's own order) with its direction.
func (l *List) SortName() string {
	name := ""
	if l.sortIdx >= 0 && l.sortIdx < len(l.sorts) {
		name = l.sorts[l.sortIdx].Name
	}
	switch {
	case name == "" && !l.desc:
		return ""
	case name == "":
		name = "default"
	}
	if l.desc {
		return name + " ↓"
	}
	return name + " ↑"
}

// Update handles the list's keys: moving, paging, filtering, sorting and selecting. It reports
// whether the key was the list's.
func (l *List) Update(msg tea.KeyMsg) (bool, tea.Cmd) {
	k := l.keys
	if l.editing {
		switch {
		case key.Matches(msg, k.Confirm):
			l.editing = false
			l.input.Blur()
			return true, nil
		case key.Matches(msg, k.Cancel):
			l.Back()
			return true, nil
		case key.Matches(msg, k.Up), key.Matches(msg, k.Down):
			// moving while typing: the filter stays open
			if msg.Type == tea.KeyUp {
				l.Move(-1)
				return true, nil
			}
			if msg.Type == tea.KeyDown {
				l.Move(1)
				return true, nil
			}
		}
		var cmd tea.Cmd
		l.input, cmd = l.input.Update(msg)
		if v := l.input.Value(); v != l.filter {
			l.SetFilter(v)
		}
		return true, cmd
	}
	cmd, ok := l.actions().Handle(msg)
	return ok, cmd
}

// actions are the list's keys where it is (sorting only when it has orders, selecting only when
// rows can be marked): one table for dispatch and help.
func (l *List) actions() KeyActions {
	k := l.keys
	acts := KeyActions{
		Act(k.Up, func() tea.Cmd { l.Move(-1); return nil }),
		Act(k.Down, func() tea.Cmd { l.Move(1); return nil }),
		Act(k.PageUp, func() tea.Cmd { l.Move(-l.height); return nil }),
		Act(k.PageDown, func() tea.Cmd { l.Move(l.height); return nil }),
		Act(k.Top, func() tea.Cmd { l.cursor = 0; l.clamp(); return nil }),
		Act(k.Bottom, func() tea.Cmd { l.cursor = l.Len() - 1; l.clamp(); return nil }),
		Act(k.FilterRows, func() tea.Cmd {
			l.editing = true
			l.input.SetValue(l.filter)
			l.input.CursorEnd()
			return l.input.Focus()
		}),
	}
	if l.filter != "" {
		acts = append(acts, Act(Relabel(k.Back, "clear the filter"), func() tea.Cmd { l.Back(); return nil }))
	}
	if len(l.sorts) > 0 {
		acts = append(acts, Act(k.Sort, func() tea.Cmd {
			l.sortIdx++
			if l.sortIdx >= len(l.sorts) {
				l.sortIdx = -1
			}
			l.rebuildAt(l.Cursor())
			return nil
		}))
	}
	acts = append(acts, Act(k.SortReverse, func() tea.Cmd { l.desc = !l.desc; l.rebuildAt(l.Cursor()); return nil }))
	if l.selectable {
		acts = append(acts, Act(k.Select, func() tea.Cmd {
			if c := l.CursorKey(); c != "" {
				if l.selected[c] {
					delete(l.selected, c)
				} else {
					l.selected[c] = true
				}
				l.Move(1)
			}
			return nil
		}))
	}
	return acts
}

// Bindings are the list's keys for help: moving, paging, filtering, and sorting and selecting
// where the list offers them (the keys Update handles, from the same table).
func (l *List) Bindings() []key.Binding { return l.actions().Bindings() }

// Status is the list's line for the screen's title or footer: the filter being typed or active,
// how many rows it keeps, and the order. Empty when there is nothing to say.
func (l *List) Status() string {
	var parts []string
	switch {
	case l.editing:
		parts = append(parts, fmt.Sprintf("/%s▏ %d of %d", l.input.Value(), l.Len(), l.rows.N))
	case l.filter != "":
		parts = append(parts, fmt.Sprintf("filter %q: %d of %d (%s clears)", l.filter, l.Len(), l.rows.N, l.keys.Back.Help().Key))
	}
	if s := l.SortName(); s != "" {
		parts = append(parts, "sorted by "+s)
	}
	return strings.Join(parts, " · ")
}
