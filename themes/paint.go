package themes

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Paint is a style reduced to the escape sequences around its text. For a style of colours and
// attributes only, one line of text without control characters renders as the text between the
// two; lipgloss instead splits, measures and converts colours at every render, which was most of
// a table's redraw in colour. A style whose output depends on the text (a width, underlined
// spaces) is left to lipgloss: Render then calls it.
type Paint struct {
	style    lipgloss.Style
	pre, suf string
	plain    bool // pre + text + suf is what the style renders for a line without controls
}

// NewPaint makes the Paint of s, checking on sample texts that wrapping them in the sequences
// gives what s renders.
func NewPaint(s lipgloss.Style) Paint {
	p := Paint{style: s}
	out := s.Render("X")
	i := strings.IndexByte(out, 'X')
	if i < 0 || strings.IndexByte(out[i+1:], 'X') >= 0 {
		return p
	}
	p.pre, p.suf = out[:i], out[i+1:]
	for _, sample := range []string{"ab c", " RUNNING ", "x  y", "~!@#$%^&*()_+{}|:<>?", "a · b – c…", "界 é"} {
		if s.Render(sample) != p.pre+sample+p.suf {
			return p
		}
	}
	p.plain = true
	return p
}

// Render renders text in the style: the same string lipgloss's Render gives.
func (p Paint) Render(text string) string {
	if !p.plain || text == "" || hasControl(text) {
		return p.style.Render(text)
	}
	return p.pre + text + p.suf
}

// hasControl reports whether s holds a control character (tabs, newlines and escapes among them):
// lipgloss changes such text, so it renders it.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}
