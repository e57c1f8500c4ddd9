package themes

import (
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// A Paint renders exactly what its style renders, for every builtin theme, colour profile and
// badge, on random texts: printable ASCII, other runes, invalid UTF-8, and controls (which go to
// lipgloss).
func TestPaintRendersWhatTheStyleRenders(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte(" \t\n\r\x1b\x7f\xff~aZ09-…é·界")
	text := func() string {
		var b strings.Builder
		for n := rng.Intn(12); n > 0; n-- {
			if rng.Intn(4) == 0 {
				b.WriteByte(alphabet[rng.Intn(len(alphabet))])
			} else {
				b.WriteByte(byte(0x20 + rng.Intn(0x5f)))
			}
		}
		return b.String()
	}
	plain := 0
	for _, name := range BuiltinNames() {
		p, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, profile := range []termenv.Profile{termenv.TrueColor, termenv.ANSI256, termenv.ANSI, termenv.Ascii} {
			r := NewRenderer(os.Stderr, false)
			r.SetColorProfile(profile)
			s := New(p, r)
			for b := Badge(0); b < badgeCount; b++ {
				if s.badgePaints[b].plain {
					plain++
				}
				for i := 0; i < 200; i++ {
					tx := text()
					if got, want := s.BadgeText(b, tx), s.Badge(b).Render(tx); got != want {
						t.Fatalf("%s, profile %d, badge %d, %q: painted %q, lipgloss %q", name, profile, b, tx, got, want)
					}
				}
			}
		}
	}
	if plain == 0 {
		t.Fatal("no badge style took the plain path: the test compares lipgloss with itself")
	}
}

// A style whose rendering depends on the text's width or spaces is left to lipgloss.
func TestPaintLeavesLayoutToLipgloss(t *testing.T) {
	r := NewRenderer(os.Stderr, false)
	r.SetColorProfile(termenv.TrueColor)
	for _, s := range []lipgloss.Style{
		r.NewStyle().Underline(true),
		r.NewStyle().Width(10),
		r.NewStyle().Foreground(lipgloss.Color("#ff0000")).MaxWidth(3),
	} {
		if NewPaint(s).plain {
			t.Fatalf("style %q taken as plain colour", s.Render("a b"))
		}
		if got, want := NewPaint(s).Render("a b"), s.Render("a b"); got != want {
			t.Fatalf("painted %q, lipgloss %q", got, want)
		}
	}
}
