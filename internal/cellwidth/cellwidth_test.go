package cellwidth

import (
	"math/rand"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// String agrees with ansi.StringWidth on random strings of printable ASCII and the bytes around it
// (controls, DEL, ESC sequences), Latin-1 (the soft hyphen, C1 controls), combining marks, wide
// and emoji runes.
func TestStringMatchesStringWidth(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pieces := []string{"\x1b[1m", "\x1b[0m", "\t", "\n", "\x7f", "\x1f", "é", "…", "界", "👍🏽", "\u0301", "·", "×", "\u00ad", "\u00a0", "\u0085", "ÿ", "‐", "😀"}
	shortcut := 0
	for i := 0; i < 20000; i++ {
		b := make([]byte, 0, 16)
		for n := rng.Intn(16); n > 0; n-- {
			if rng.Intn(5) == 0 {
				b = append(b, pieces[rng.Intn(len(pieces))]...)
			} else {
				b = append(b, byte(0x1f+rng.Intn(0x61))) // 0x1f..0x7f: the range and a byte either side
			}
		}
		s := string(b)
		if PrintableASCII(s) {
			shortcut++
		}
		if got, want := String(s), ansi.StringWidth(s); got != want {
			t.Fatalf("String(%q) = %d, ansi.StringWidth %d", s, got, want)
		}
	}
	if shortcut < 1000 {
		t.Fatalf("only %d strings took the shortcut", shortcut)
	}
}
