// Package cellwidth measures text in terminal cells. Most of what sandscope's tables show is printable
// ASCII, one cell per byte: measuring it needs no grapheme segmentation, which made a redraw of
// the sandbox screen with 20 processes take 2 ms.
package cellwidth

import "github.com/charmbracelet/x/ansi"

// String is the cells s takes on screen (escape sequences take none).
func String(s string) int {
	if PrintableASCII(s) {
		return len(s)
	}
	return ansi.StringWidth(s)
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
