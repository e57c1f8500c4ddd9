package components

import (
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
	draw := func(labels []string) string {
		var b strings.Builder
		for i, l := range labels {
			if i == t.active {
				b.WriteString(st.TabActive.Render("[" + l + "]"))
			} else {
				b.WriteString(st.Paints.Tab.Render(" " + l + " "))
			}
		}
		return b.String()
	}
	out := draw(labels)
	if cellwidth.String(out) <= width {
		return out
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
