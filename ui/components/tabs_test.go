package components

import (
	"io"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"sandscope/internal/cellwidth"
	"sandscope/keymap"
	"sandscope/themes"
)

// paintedStrip is the strip as it was drawn before it was measured from its labels: every piece
// through lipgloss, the painted whole measured.
func paintedStrip(st *themes.Styles, active int, labels []string, width int) string {
	draw := func(labels []string) string {
		var b strings.Builder
		for i, l := range labels {
			if i == active {
				b.WriteString(st.TabActive.Render("[" + l + "]"))
			} else {
				b.WriteString(st.Tab.Render(" " + l + " "))
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
		if i != active {
			if j := strings.Index(l, " ("); j > 0 {
				short[i] = l[:j]
			}
		}
	}
	return ansi.Truncate(draw(short), width, "…")
}

// The strip is what lipgloss draws, at every width around where it stops fitting, whichever tab is
// active, in colour and without, for labels of ASCII and of other runes.
func TestTabsDrawWhatLipglossDraws(t *testing.T) {
	labelSets := [][]string{
		{"Processes (20)", "Terminals (3)", "Sessions (1)", "Incarnations (2)"},
		{"Runs (0)", "Incarnations (12)"},
		{"Prozeße (3)", "終端 (2)", "Incarnations (1 of 4)"},
	}
	for _, name := range themes.BuiltinNames() {
		p, err := themes.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, profile := range []termenv.Profile{termenv.TrueColor, termenv.ANSI256, termenv.Ascii} {
			r := themes.NewRenderer(io.Discard, false)
			r.SetColorProfile(profile)
			st := themes.New(p, r)
			for _, set := range labelSets {
				labels := append([]string(nil), set...)
				tb := NewTabs(keymap.New(), len(labels))
				for a := range labels {
					tb.SetActive(a)
					for w := 0; w <= 90; w++ {
						for again := 0; again < 2; again++ { // the second time, as last drawn
							if got, want := tb.View(st, labels, w), paintedStrip(st, a, labels, w); got != want {
								t.Fatalf("%s, profile %d, %q, tab %d, width %d:\n got %q\nwant %q", name, profile, labels, a, w, got, want)
							}
						}
					}
				}
				// a label changed in the caller's slice is drawn anew
				labels[0] = "Other (99)"
				if got, want := tb.View(st, labels, 90), paintedStrip(st, len(labels)-1, labels, 90); got != want {
					t.Fatalf("after a label changed:\n got %q\nwant %q", got, want)
				}
			}
		}
	}
}
