package components

import (
	"math/rand"
	"slices"
	"strings"
	"testing"

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
		setRows := func() {
			texts = texts[:0]
			for i, n := 0, rng.Intn(60); i < n; i++ {
				w := word(1 + rng.Intn(8))
				if lower {
					w = strings.ToLower(w)
				}
				texts = append(texts, w)
			}
			l.SetRows(Rows{N: len(texts), Text: func(i int) string { return texts[i] }, Lower: lower})
		}
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
			if got := l.order; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("lower %v, step %d, filter %q: shown %v, a full scan finds %v", lower, step, filter, got, want)
			}
		}
	}
}
