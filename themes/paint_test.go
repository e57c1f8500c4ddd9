package themes

import (
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// A Paint renders exactly what its style renders, for every builtin theme, colour profile, badge
// and Paints field (against the style of the same name), on random texts: printable ASCII, other
// runes, invalid UTF-8, and controls (which go to lipgloss); and on a few chosen ones.
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
	chosen := []string{"[Processes (20)]", "  ", " a ", "a\u00a0b", "x\u0085y", "界 é\xff", "\u2003em\u3000"}
	plain, each := 0, 0
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
			paints, styles := reflect.ValueOf(s.Paints), reflect.ValueOf(s).Elem()
			for f := 0; f < paints.NumField(); f++ {
				field := paints.Type().Field(f).Name
				pt := paints.Field(f).Interface().(Paint)
				sf := styles.FieldByName(field)
				st, ok := lipgloss.Style{}, sf.IsValid()
				if ok {
					st, ok = sf.Interface().(lipgloss.Style)
				}
				if !ok {
					t.Fatalf("Paints.%s has no style of its name in Styles", field)
				}
				if pt.plain {
					plain++
				}
				if pt.each && profile != termenv.Ascii {
					each++ // with sequences to put around each rune
				}
				for i := 0; i < 200+len(chosen); i++ {
					tx := text()
					if i < len(chosen) {
						tx = chosen[i]
					}
					if got, want := pt.Render(tx), st.Render(tx); got != want {
						t.Fatalf("%s, profile %d, Paints.%s, %q: painted %q, lipgloss %q", name, profile, field, tx, got, want)
					}
				}
			}
		}
	}
	if plain == 0 || each == 0 {
		t.Fatalf("%d styles took the plain path, %d the rune-by-rune one in colour: where none did, the test compares lipgloss with itself", plain, each)
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
