package components

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/keymap"
	"sandscope/themes"
)

func keyMsg(s string) tea.KeyMsg {
	switch s {
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case " ":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune(" ")}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func press(l *List, keys ...string) {
	for _, k := range keys {
		l.Update(keyMsg(k))
	}
}

var names = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}

func newTestList() *List {
	l := NewList(keymap.New())
	l.SetRows(Rows{N: len(names), Key: func(i int) string { return names[i] }, Text: func(i int) string { return names[i] }})
	l.SetHeight(4)
	return l
}

func TestListMovesAndPages(t *testing.T) {
	l := newTestList()
	press(l, "j", "j")
	if got := names[l.Cursor()]; got != "charlie" {
		t.Fatalf("jj: cursor on %s", got)
	}
	press(l, "pgdown")
	if got := names[l.Cursor()]; got != "golf" {
		t.Fatalf("page down: cursor on %s", got)
	}
	if w := l.Window(); len(w) != 4 || names[w[3]] != "golf" {
		t.Fatalf("window %v does not end on the cursor", w)
	}
	press(l, "G")
	if l.Cursor() != len(names)-1 {
		t.Fatal("G did not reach the bottom")
	}
	press(l, "j")
	if l.Cursor() != len(names)-1 {
		t.Fatal("moved past the bottom")
	}
	press(l, "g")
	if l.Cursor() != 0 || l.Window()[0] != 0 {
		t.Fatal("g did not reach the top")
	}
	press(l, "k")
	if l.Cursor() != 0 {
		t.Fatal("moved above the top")
	}
}

func TestListFilterTypingAndEsc(t *testing.T) {
	l := newTestList()
	press(l, "/")
	if !l.Capturing() {
		t.Fatal("/ did not start the filter")
	}
	press(l, "o", "t") // o and t are letters here, not sort or other keys
	if l.Filter() != "ot" || l.Len() != 2 {
		t.Fatalf("filter %q keeps %d rows", l.Filter(), l.Len())
	}
	if !strings.Contains(l.Status(), "/ot") || !strings.Contains(l.Status(), "2 of 10") {
		t.Fatalf("status %q", l.Status())
	}
	press(l, "enter")
	if l.Capturing() || l.Filter() != "ot" {
		t.Fatal("enter did not keep the filter and stop typing")
	}
	press(l, "j")
	if got := names[l.Cursor()]; got != "hotel" {
		t.Fatalf("cursor on %s among the filtered rows", got)
	}
	// esc clears the active filter first, and keeps the cursor on its row
	if !l.Back() || l.Filter() != "" || l.Len() != len(names) || names[l.Cursor()] != "hotel" {
		t.Fatalf("esc: filter %q, %d rows, cursor %d", l.Filter(), l.Len(), l.Cursor())
	}
	if l.Back() {
		t.Fatal("a second esc was taken by the list: the screen should get it")
	}
	// esc while typing drops what was typed
	press(l, "/", "x", "y")
	if l.Len() != 0 || l.Cursor() != -1 {
		t.Fatalf("no row matches, yet %d shown, cursor %d", l.Len(), l.Cursor())
	}
	press(l, "esc")
	if l.Capturing() || l.Filter() != "" || l.Len() != len(names) {
		t.Fatal("esc while typing did not clear the filter")
	}
}

func TestListSortKeepsCursorRow(t *testing.T) {
	l := newTestList()
	byLen := func(a, b int) bool { return len(names[a]) < len(names[b]) }
	l.SetSorts([]Sort{{Name: "length", Less: byLen}})
	press(l, "j", "j", "j") // delta
	press(l, "o")
	if names[l.Cursor()] != "delta" || !strings.Contains(l.Status(), "sorted by length ↑") {
		t.Fatalf("after o: cursor %s, status %q", names[l.Cursor()], l.Status())
	}
	press(l, "g")
	if got := names[l.Cursor()]; got != "golf" && got != "echo" {
		t.Fatalf("shortest first, got %s", got)
	}
	press(l, "O", "g")
	if got := names[l.Cursor()]; len(got) != 7 {
		t.Fatalf("reversed: longest first, got %s", got)
	}
	press(l, "o") // back to the screen's order, still reversed
	press(l, "g")
	if names[l.Cursor()] != "juliet" {
		t.Fatalf("default order reversed starts with %s", names[l.Cursor()])
	}
}

func TestListSelectionAndRefresh(t *testing.T) {
	l := newTestList()
	l.Selectable(true)
	press(l, " ", " ")
	if got := l.MarkedKeys(); fmt.Sprint(got) != "[alpha bravo]" {
		t.Fatalf("marked %v", got)
	}
	// the rows change under the list: the cursor follows its row, vanished marks go
	rows := []string{"zulu", "charlie", "bravo"}
	l.SetRows(Rows{N: len(rows), Key: func(i int) string { return rows[i] }, Text: func(i int) string { return rows[i] }})
	if rows[l.Cursor()] != "charlie" {
		t.Fatalf("cursor on %s after refresh, want charlie", rows[l.Cursor()])
	}
	if got := l.MarkedKeys(); fmt.Sprint(got) != "[bravo]" {
		t.Fatalf("marks after refresh %v", got)
	}
	// rows shrinking below the cursor keep it on a row
	l.SetRows(Rows{N: 1, Key: func(int) string { return "only" }})
	if l.Cursor() != 0 {
		t.Fatalf("cursor %d with one row", l.Cursor())
	}
	l.SetRows(Rows{})
	if l.Cursor() != -1 || l.Window() != nil {
		t.Fatal("an empty list has a cursor")
	}
	press(l, "j", "k", "G", "g", " ", "o", "O")
}

func TestTabs(t *testing.T) {
	tb := NewTabs(keymap.New(), 3)
	tb.Update(keyMsg("shift+tab"))
	if tb.Active() != 2 {
		t.Fatalf("shift+tab from the first: %d", tb.Active())
	}
	tb.Update(keyMsg("tab"))
	if tb.Active() != 0 {
		t.Fatalf("tab wraps to %d", tb.Active())
	}
	p, err := themes.Builtin("dark")
	if err != nil {
		t.Fatal(err)
	}
	st := themes.New(p, themes.AsciiRenderer())
	labels := []string{"Processes (12)", "Terminals (3)", "Incarnations (2)"}
	if v := tb.View(st, labels, 80); !strings.Contains(v, "[Processes (12)]") || !strings.Contains(v, "Terminals (3)") {
		t.Fatalf("wide strip %q", v)
	}
	if v := tb.View(st, labels, 36); !strings.Contains(v, "[Processes (12)]") || strings.Contains(v, "(3)") {
		t.Fatalf("narrow strip keeps the active count, drops the others: %q", v)
	}
}

func TestLayoutGivesWayByPriority(t *testing.T) {
	cols := []Column{
		{Title: "ID", Min: 8, Want: 12, Priority: 0},
		{Title: "STATE", Min: 10, Want: 16, Priority: 0},
		{Title: "INC", Min: 3, Priority: 3},
		{Title: "COMMAND", Min: 16, Want: 30, Priority: 0, Flex: true},
		{Title: "CWD", Min: 8, Want: 12, Priority: 4},
		{Title: "STARTED", Min: 8, Priority: 2},
		{Title: "TOOK", Min: 5, Priority: 5},
	}
	for _, width := range []int{20, 40, 60, 78, 118, 198} {
		ws := Layout(cols, width)
		if Span(ws) > width {
			t.Errorf("width %d: columns take %d: %v", width, Span(ws), ws)
		}
		if width >= 78 && ws[3] < ws[1] {
			t.Errorf("width %d: COMMAND %d narrower than STATE %d", width, ws[3], ws[1])
		}
		if width >= 118 && Span(ws) != width {
			t.Errorf("width %d: the flexible column does not take the room left: %v", width, ws)
		}
	}
	ws := Layout(cols, 40)
	if ws[0] == 0 || ws[1] == 0 || ws[6] != 0 {
		t.Errorf("at 40 cells the first columns stay and TOOK goes: %v", ws)
	}
}

// TestLayoutNeverCutsATitle: a column narrower than its title would cut the header mid-word; it
// gets the title's width, or goes.
func TestLayoutNeverCutsATitle(t *testing.T) {
	cols := []Column{{Title: "COMMAND", Min: 4, Flex: true}, {Title: "RUNTIME", Min: 3, Priority: 1}}
	for w := 5; w < 30; w++ {
		for i, got := range Layout(cols, w) {
			if got > 0 && got < len(cols[i].Title) {
				t.Fatalf("width %d: %s gets %d cells", w, cols[i].Title, got)
			}
		}
	}
}

// TestFixedColumnsGetTheirNaturalWidthFirst: short columns (OUTPUT, STREAM) reach what their
// cells need before the flexible one (COMMAND) takes the rest; at a narrow width the flexible
// one still keeps a useful share by hiding the least important columns.
func TestFixedColumnsGetTheirNaturalWidthFirst(t *testing.T) {
	cols := []Column{
		{Title: "STATE", Min: 11, Want: 24, Priority: 0},
		{Title: "COMMAND", Min: 14, Want: 48, Priority: 0, Flex: true},
		{Title: "ID", Min: 8, Priority: 4},
		{Title: "OUTPUT", Min: 8, Want: 12, Priority: 2},
		{Title: "STREAM", Min: 10, Want: 40, Priority: 2},
	}
	cells := [][]string{{"RUNNING", "make", "abcdefgh", "9m21s ago", "1.2 KiB kept · live"}}
	nat := Natural(cols, cells)
	if nat[0].Want != 11 || nat[3].Want != 9 || nat[4].Want != 19 || nat[1].Want != 48 {
		t.Fatalf("natural wants: %+v", nat)
	}
	got := Layout(nat, 118)
	if got[3] != 9 || got[4] != 19 || got[0] != 11 {
		t.Fatalf("at 118: %v: OUTPUT and STREAM cut", got)
	}
	if got[1] != 118-11-8-9-19-4 {
		t.Fatalf("at 118: COMMAND has %d, want the rest", got[1])
	}
	got = Layout(nat, 70)
	if got[1] < 31 || got[0] != 11 {
		t.Fatalf("at 70: %v: COMMAND starved or STATE cut", got)
	}
}
