package components

import (
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/keymap"
)

// TestListFilterNarrowsLikeAFullScan: a filter typed further is looked for among the rows the
// shorter one matched; the rows shown must be those a full scan finds, whatever is typed, erased
// or replaced, with rows changing meanwhile and with texts given lower-case or not.
func TestListFilterNarrowsLikeAFullScan(t *testing.T) {
	rng := rand.New(rand.NewSource(22))
	word := func(n int) string {
		parts := []string{"a", "b", "A", "B", " ", "·", "É", "é"}
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(parts[rng.Intn(len(parts))])
		}
		return b.String()
	}
	for _, lower := range []bool{false, true} {
		l := NewList(keymap.New())
		l.SetHeight(5)
		var texts []string
		setRows := func() { setRandomRows(l, &texts, rng, word, 60, 8, lower) }
		setRows()
		filter := ""
		for step := 0; step < 3000; step++ {
			switch r := rng.Intn(10); {
			case r < 5:
				filter += word(1)
			case r < 7 && filter != "":
				r := []rune(filter)
				filter = string(r[:len(r)-1])
			case r < 8:
				filter = word(rng.Intn(3))
			default:
				setRows()
			}
			l.SetFilter(filter)
			var want []int
			f := strings.ToLower(filter)
			for i, s := range texts {
				if strings.Contains(strings.ToLower(s), f) {
					want = append(want, i)
				}
			}
			if got := shownOrder(l); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("lower %v, step %d, filter %q: shown %v, a full scan finds %v", lower, step, filter, got, want)
			}
		}
	}
}

// TestListFilterKeepsTheOrderShown: with a sort (either way) or the screen's order reversed, the
// rows a filter shows, typed further at either end, erased or replaced, are those a full scan
// finds, in the order a stable sort of them gives; the cursor stays on its row while it is shown.
// The texts repeat their letters, so a filter typed further is often not where the shorter one
// first occurred, and hold runes whose lower case is longer or shorter than they are (İ, K, ẞ).
func TestListFilterKeepsTheOrderShown(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	parts := []string{"a", "b", "A", "B", "ab", " ", "·", "É", "é", "İ", "i", "\u212a", "k", "ẞ", "ß"}
	word := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(parts[rng.Intn(len(parts))])
		}
		return b.String()
	}
	var texts []string
	sorts := []Sort{
		{Name: "length", Less: func(a, b int) bool { return len(texts[a]) < len(texts[b]) }},
		{Name: "last", Less: func(a, b int) bool { return texts[a][len(texts[a])-1] < texts[b][len(texts[b])-1] }},
	}
	keys := keymap.New()
	press := func(l *List, k string) {
		if ok, _ := l.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}); !ok {
			t.Fatalf("%s is not the list's", k)
		}
	}
	for _, lower := range []bool{false, true} {
		l := NewList(keys).SetSorts(sorts)
		l.SetHeight(5)
		setRows := func() { setRandomRows(l, &texts, rng, word, 80, 12, lower) }
		setRows()
		filter := ""
		for step := 0; step < 5000; step++ {
			switch r := rng.Intn(20); {
			case r < 9:
				filter += word(1)
			case r < 11:
				filter = word(1) + filter
			case r < 14 && filter != "":
				r := []rune(filter)
				filter = string(r[:len(r)-1])
			case r < 15:
				filter = word(rng.Intn(3))
			case r < 16:
				press(l, "o")
			case r < 17:
				press(l, "O")
			case r < 18:
				l.Move(rng.Intn(7) - 3)
			default:
				setRows()
			}
			before := l.Cursor()
			l.SetFilter(filter)
			var want []int
			f := strings.ToLower(filter)
			for i, s := range texts {
				if strings.Contains(strings.ToLower(s), f) {
					want = append(want, i)
				}
			}
			if l.sortIdx >= 0 {
				less := sorts[l.sortIdx].Less
				sort.SliceStable(want, func(a, b int) bool {
					if l.desc {
						return less(want[b], want[a])
					}
					return less(want[a], want[b])
				})
			} else if l.desc {
				slices.Reverse(want)
			}
			if got := shownOrder(l); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("lower %v, step %d, filter %q, sort %d, desc %v: shown %v, a full scan finds %v", lower, step, filter, l.sortIdx, l.desc, got, want)
			}
			if before >= 0 && slices.Contains(want, before) && l.Cursor() != before {
				t.Fatalf("lower %v, step %d, filter %q: the cursor moved from row %d to %d", lower, step, filter, before, l.Cursor())
			}
		}
	}
}

// setRandomRows gives l fewer than maxRows rows of random words (1 to maxLen parts each), kept
// in *texts, lower-cased when the rows say their texts are.
func setRandomRows(l *List, texts *[]string, rng *rand.Rand, word func(int) string, maxRows, maxLen int, lower bool) {
	*texts = (*texts)[:0]
	for i, n := 0, rng.Intn(maxRows); i < n; i++ {
		w := word(1 + rng.Intn(maxLen))
		if lower {
			w = strings.ToLower(w)
		}
		*texts = append(*texts, w)
	}
	ts := *texts
	l.SetRows(Rows{N: len(ts), Text: func(i int) string { return ts[i] }, Lower: lower})
}

// shownOrder is the source rows shown, in order, however the list holds them.
func shownOrder(l *List) []int {
	var out []int
	for p := 0; p < l.Len(); p++ {
		out = append(out, l.sourceAt(p))
	}
	return out
}
