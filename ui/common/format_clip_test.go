package common

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"sandscope/internal/cellwidth"
)

// Fit of a long string gives what full measuring and truncation give, for plain, wide, combining
// and SGR-styled text, at every width.
func TestFitClipsLongStringsExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	pieces := []string{"a", "M", "界", "e\u0301", "\x1b[31m", "\x1b[0m", "\x1b[1;4m", " ", "👍🏽", "\x1b]8;;x\x1b\\"}
	for range 300 {
		var b strings.Builder
		for b.Len() < 2000+rng.IntN(3000) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		for _, w := range []int{1, 2, 5, 13, 40, 120} {
			if got, want := Fit(s, w), fitFull(s, w); got != want {
				t.Fatalf("Fit(%q…, %d) = %q, want %q", s[:40], w, got, want)
			}
		}
	}
}

// fitFull is Fit without the clipping.
func fitFull(s string, w int) string {
	n := ansiWidth(s)
	if n > w {
		return ansiTruncate(s, w)
	}
	return s + strings.Repeat(" ", w-n)
}

func BenchmarkFitMegabyte(b *testing.B) {
	s := strings.Repeat("M", 1<<20) + "\x1b[0m"
	for b.Loop() {
		_ = Fit(s, 80)
	}
}

func ansiWidth(s string) int              { return ansi.StringWidth(s) }
func ansiTruncate(s string, w int) string { return ansi.Truncate(s, w, "…") }

// TestCutNeverDoublesTheEllipsis: text cut where it already has "…" keeps that one mark, and a
// line marked as going on ends with exactly one.
func TestCutNeverDoublesTheEllipsis(t *testing.T) {
	for _, c := range []struct{ s, want string }{
		{"copying files", "copyin…"},
		{"copi… more", "copi…"},
		{"copi…", "copi…"},
		{"\x1b[31mcopi…\x1b[0m more", "\x1b[31mcopi…"},
	} {
		got := Cut(c.s, 7)
		if strings.Count(ansi.Strip(got), "…") != 1 || ansi.StringWidth(got) > 7 || !strings.HasPrefix(got, c.want) {
			t.Errorf("Cut(%q, 7) = %q, want %q", c.s, got, c.want)
		}
	}
	for _, c := range []struct {
		s    string
		w    int
		want string
	}{
		{"the first line of a long message", 12, "the first l…"},
		{"short", 12, "short…"},
		{"copying…", 12, "copying…"},
		{"copying… ", 8, "copying…"},
		{"exactly twelve", 14, "exactly twelv…"},
	} {
		if got := More(c.s, c.w); got != c.want {
			t.Errorf("More(%q, %d) = %q, want %q", c.s, c.w, got, c.want)
		}
	}
	if got := Fit("copi……", 6); strings.Count(got, "…") > 2 || got != "copi……" {
		t.Errorf("Fit of text that fits changed it: %q", got)
	}
}

// Printable ASCII takes a shortcut in Fit, Cut and FitCells: it must give what the general path
// gives, for text around every width, with the spaces, dots and bytes beside the range it keys on.
func TestPlainASCIIShortcutMatchesTheGeneralPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []byte(" .~!az09AZ\x1f\x7f\x1b")
	shortcuts := 0
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(8) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = byte(0x20 + rng.IntN(0x5f))
			}
		}
		s := string(b)
		if cellwidth.PrintableASCII(s) {
			shortcuts++
		}
		w := 1 + rng.IntN(45)
		if got, want := Fit(s, w), fitGeneral(s, w); got != want {
			t.Fatalf("Fit(%q, %d) = %q, the general path gives %q", s, w, got, want)
		}
		if got, want := Cut(s, w), cutGeneral(s, w); got != want {
			t.Fatalf("Cut(%q, %d) = %q, the general path gives %q", s, w, got, want)
		}
		if got, want := FitCells(s, w), fitCellsGeneral(s, w); got != want {
			t.Fatalf("FitCells(%q, %d) = %q, the general path gives %q", s, w, got, want)
		}
	}
	if shortcuts < 5000 {
		t.Fatalf("only %d of 20000 strings took the shortcut", shortcuts)
	}
}
