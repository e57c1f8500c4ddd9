// Package cellwidth measures text in terminal cells. Most of what sandscope's tables show is printable
// ASCII or Latin-1 (the rows' "·"), one cell per rune: measuring it needs no grapheme segmentation,
// which made a redraw of the sandbox screen with 20 processes take 2 ms.
package cellwidth

import "github.com/charmbracelet/x/ansi"

// String is the cells s takes on screen (escape sequences take none): one a rune for printable
// ASCII and Latin-1 (not the soft hyphen), ansi.StringWidth for anything else.
func String(s string) int {
	n := 0
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0xad || r > 0xff {
			return ansi.StringWidth(s)
		}
		n++
	}
	return n
}

// PrintableASCII reports whether s is printable ASCII only: a cell per byte, no tabs, newlines
// or escapes.
func PrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
