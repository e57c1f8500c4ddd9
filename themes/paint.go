package themes

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/lipgloss"
)

// Paint is a style reduced to the escape sequences around its text. For a style of colours and
// attributes only, one line of text without control characters renders as the text between the
// two; lipgloss instead splits, measures and converts colours at every render, which was most of
// a table's redraw in colour. A style that draws each rune on its own (underlined: lipgloss styles
// spaces apart) is reduced to the sequences around each rune. A style whose output depends on the
// text otherwise (a width) is left to lipgloss: Render then calls it.
type Paint struct {
	style    *lipgloss.Style // by pointer: a Paint is passed by value on every render, a Style is large
	pre, suf string
	plain    bool // pre + text + suf is what the style renders for a line without controls
	// each: the style draws every rune on its own (underline, strikethrough: lipgloss styles
	// spaces apart), each rune between pre and suf, each space between spre and ssuf, the whole
	// between lpad and rpad (the padding)
	each       bool
	spre, ssuf string
	lpad, rpad string
}

// NewPaint makes the Paint of s, checking on sample texts that wrapping them in the sequences
// gives what s renders.
func NewPaint(s lipgloss.Style) Paint {
	p := Paint{style: &s}
	out := s.Render("X")
	i := strings.IndexByte(out, 'X')
	if i < 0 || strings.IndexByte(out[i+1:], 'X') >= 0 {
		return p
	}
	p.pre, p.suf = out[:i], out[i+1:]
	p.plain = true
	for _, sample := range paintSamples {
		if s.Render(sample) != p.pre+sample+p.suf {
			p.plain = false
			break
		}
	}
	if !p.plain {
		p = eachRune(s)
	}
	return p
}

// paintSamples are the texts a Paint is checked on: spaces where lipgloss may style them apart
// (leading, trailing, doubled, no-break), punctuation, runes of one and two cells, and a byte that
// is not UTF-8 (drawing rune by rune, lipgloss replaces it, even where it emits no sequences).
var paintSamples = []string{"ab c", " RUNNING ", "x  y", "~!@#$%^&*()_+{}|:<>?", "a · b – c…", "界 é", "[Processes (20)]", "a\u00a0b", "a\xffb"}

// eachRune makes the Paint of a style that draws every rune on its own (the active tab is
// underlined): its sequences are read from the style without its padding, the padding from the
// whole, and the result is checked on the samples as NewPaint checks a plain one.
func eachRune(s lipgloss.Style) Paint {
	p := Paint{style: &s}
	core := s.UnsetPadding()
	x, sp, out := core.Render("X"), core.Render(" "), s.Render("X")
	i, j, k := strings.IndexByte(x, 'X'), strings.IndexByte(sp, ' '), strings.Index(out, x)
	if i < 0 || j < 0 || k < 0 || strings.IndexByte(x[i+1:], 'X') >= 0 || strings.IndexByte(sp[j+1:], ' ') >= 0 {
		return p
	}
	p.pre, p.suf, p.spre, p.ssuf, p.lpad, p.rpad = x[:i], x[i+1:], sp[:j], sp[j+1:], out[:k], out[k+len(x):]
	p.each = true
	for _, sample := range paintSamples {
		if s.Render(sample) != p.eachRender(sample) {
			p.each = false
			break
		}
	}
	return p
}

// eachRender draws text as a style that draws every rune on its own does (lipgloss's Render:
// runes read as range reads them, spaces as unicode.IsSpace says).
func (p Paint) eachRender(text string) string {
	var b strings.Builder
	b.Grow(len(p.lpad) + len(p.rpad) + len(text)*(1+max(len(p.pre)+len(p.suf), len(p.spre)+len(p.ssuf))))
	b.WriteString(p.lpad)
	for _, r := range text {
		if unicode.IsSpace(r) {
			b.WriteString(p.spre)
			b.WriteRune(r)
			b.WriteString(p.ssuf)
			continue
		}
		b.WriteString(p.pre)
		b.WriteRune(r)
		b.WriteString(p.suf)
	}
	b.WriteString(p.rpad)
	return b.String()
}

// Render renders text in the style: the same string lipgloss's Render gives.
func (p Paint) Render(text string) string {
	switch {
	case text == "" || hasControl(text):
		return p.style.Render(text)
	case p.plain:
		return p.pre + text + p.suf
	case p.each:
		return p.eachRender(text)
	}
	return p.style.Render(text)
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
