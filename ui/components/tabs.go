package components

import (
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"sandscope/internal/cellwidth"
	"sandscope/keymap"
	"sandscope/themes"
)

// Tabs is a tab strip: which tab is active, switched with the next/previous tab keys.
type Tabs struct {
	keys   *keymap.KeyMap
	n      int
	active int
	// last is the strip as last drawn, with what it was drawn from: screens draw it on every
	// redraw, and between two redraws it rarely changes
	last struct {
		st            *themes.Styles
		labels        []string
		active, width int
		out           string
	}
}

// NewTabs makes a strip of n tabs, the first active.
func NewTabs(keys *keymap.KeyMap, n int) *Tabs { return &Tabs{keys: keys, n: max(n, 1)} }

// Active is the active tab's index.
func (t *Tabs) Active() int { return t.active }

// SetActive activates tab i (ignored when out of range).
func (t *Tabs) SetActive(i int) {
	if i >= 0 && i < t.n {
		t.active = i
	}
}

// Update handles the next/previous tab keys and reports whether the key was the strip's.
func (t *Tabs) Update(msg tea.KeyMsg) bool {
	switch {
	case key.Matches(msg, t.keys.NextTab):
		t.active = (t.active + 1) % t.n
	case key.Matches(msg, t.keys.PrevTab):
		t.active = (t.active + t.n - 1) % t.n
	default:
		return false
	}
	return true
}

// Bindings are the strip's keys for help.
func (t *Tabs) Bindings() []key.Binding { return []key.Binding{t.keys.NextTab, t.keys.PrevTab} }

// View draws the labels in one line of at most width cells: the active one bracketed. When they
// do not fit, the inactive labels lose their counts first, then are cut.
func (t *Tabs) View(st *themes.Styles, labels []string, width int) string {
	l := &t.last
	if l.st != nil && l.st == st && l.active == t.active && l.width == width && slices.Equal(l.labels, labels) {
		return l.out
	}
	out := t.draw(st, labels, width)
	l.st, l.labels, l.active, l.width, l.out = st, append(l.labels[:0], labels...), t.active, width, out
	return out
}

// draw makes the strip View returns (View keeps the last one).
func (t *Tabs) draw(st *themes.Styles, labels []string, width int) string {
	draw := func(labels []string) string {
		var b strings.Builder
		for i, l := range labels {
			if i == t.active {
				b.WriteString(st.Paints.TabActive.Render("[" + l + "]"))
			} else {
				b.WriteString(st.Paints.Tab.Render(" " + l + " "))
			}
		}
		return b.String()
	}
	switch n, ok := t.plainWidth(st, labels); {
	case ok && n <= width:
		return draw(labels)
	case !ok:
		if out := draw(labels); cellwidth.String(out) <= width {
			return out
		}
	}
	short := make([]string, len(labels))
	for i, l := range labels {
		short[i] = l
		if i != t.active {
			if j := strings.Index(l, " ("); j > 0 {
				short[i] = l[:j]
			}
		}
	}
	return ansi.Truncate(draw(short), width, "…")
}

// plainWidth is the cells the strip of labels takes, counted from the labels and the styles'
// padding instead of measuring the painted strip (its sequences made that the slow width path).
// ok is false when a label is not printable ASCII: a cell per byte is then not sure, the painted
// strip is measured.
func (t *Tabs) plainWidth(st *themes.Styles, labels []string) (n int, ok bool) {
	for i, l := range labels {
		if !cellwidth.PrintableASCII(l) {
			return 0, false
		}
		n += len(l) + 2 // the brackets, or the spaces around an inactive label
		if i == t.active {
			n += st.TabActive.GetHorizontalFrameSize()
		} else {
			n += st.Tab.GetHorizontalFrameSize()
		}
	}
	return n, true
}
