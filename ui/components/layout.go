package components

import (
	"unicode/utf8"

	"sandscope/internal/cellwidth"
)

// Column describes one table column for Layout.
type Column struct {
	Title    string
	Min      int // narrowest useful width (the title is cut below it)
	Want     int // width it gets when there is room (0: Min)
	Priority int // lower keeps its place longer; columns of the highest priority go first
	Flex     bool
}

// Layout gives each column a width for a table width cells wide (one space between columns).
// Every column first gets its Min, in priority order; columns that do not fit get 0 (hidden),
// dropped from the highest priority down. Room left grows the fixed columns toward their natural
// width (Want), one priority at a time, shared within a priority in proportion to what each still
// wants; only then do flexible columns (COMMAND) share what remains, so a short column is never
// cut to give a long one more. A flexible column left with less than half of what it wants beyond
// its Min makes the columns of lower priority go, least important first, until it has it. The
// widths sum, with separators, to at most width.
//
// A column is never narrower than its title: a header is shown whole or its column is dropped,
// never cut mid-word.
func Layout(cols []Column, width int) []int {
	cols = titled(cols)
	hidden := make([]bool, len(cols))
	for {
		out := layout(cols, width, hidden)
		// elide by priority: while a flexible column has less than half of what it wants beyond
		// its Min, the least important column of a lower priority goes
		starved := -1
		for i, c := range cols {
			if c.Flex && out[i] > 0 && out[i] < (c.Min+max(c.Want, c.Min))/2 {
				starved = i
				break
			}
		}
		if starved < 0 {
			return out
		}
		drop := -1
		for i, c := range cols {
			if out[i] > 0 && c.Priority > cols[starved].Priority && (drop < 0 || c.Priority >= cols[drop].Priority) {
				drop = i
			}
		}
		if drop < 0 {
			return out
		}
		hidden[drop] = true
	}
}

func layout(cols []Column, width int, hidden []bool) []int {
	out := make([]int, len(cols))
	order := make([]int, len(cols))
	for i := range order {
		order[i] = i
	}
	// stable order by priority
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && cols[order[j]].Priority < cols[order[j-1]].Priority; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	used := 0
	shown := 0
	for _, i := range order {
		if hidden[i] {
			continue
		}
		need := cols[i].Min
		if shown > 0 {
			need++
		}
		if used+need > width {
			continue
		}
		out[i] = cols[i].Min
		used += need
		shown++
	}
	room := width - used
	// grow toward Want, one priority at a time; within a priority the room is shared in
	// proportion to what each column still wants (a wide STATE does not starve COMMAND)
	for start := 0; start < len(order) && room > 0; {
		end := start
		for end < len(order) && cols[order[end]].Priority == cols[order[start]].Priority {
			end++
		}
		tier := order[start:end]
		start = end
		gap := 0
		for _, i := range tier {
			if out[i] > 0 && !cols[i].Flex {
				gap += max(cols[i].Want, cols[i].Min) - out[i]
			}
		}
		if gap <= 0 {
			continue
		}
		share := min(room, gap)
		given := 0
		for _, i := range tier {
			if out[i] == 0 || cols[i].Flex {
				continue
			}
			g := (max(cols[i].Want, cols[i].Min) - out[i]) * share / gap
			out[i] += g
			given += g
		}
		// what rounding left goes to the tier's columns in order, up to their Want
		for _, i := range tier {
			if given >= share {
				break
			}
			if out[i] > 0 && !cols[i].Flex && out[i] < max(cols[i].Want, cols[i].Min) {
				out[i]++
				given++
			}
		}
		room -= given
	}
	var flex []int
	for _, i := range order {
		if out[i] > 0 && cols[i].Flex {
			flex = append(flex, i)
		}
	}
	for k, i := range flex {
		share := room / (len(flex) - k)
		out[i] += share
		room -= share
	}
	return out
}

// titled raises each column's Min to its title's width (a copy when one changes).
func titled(cols []Column) []Column {
	out := cols
	for i, c := range cols {
		if w := utf8.RuneCountInString(c.Title); c.Min < w {
			if &out[0] == &cols[0] {
				out = append([]Column(nil), cols...)
			}
			out[i].Min = w
		}
	}
	return out
}

// Natural returns cols with each fixed column's Want set to its natural width: the widest of its
// title and its cells (cells[row][col], plain text), never less than its Min and never more than
// the Want it declares (its cap; 0: no cap). Flexible columns keep theirs.
func Natural(cols []Column, cells [][]string) []Column {
	out := append([]Column(nil), cols...)
	for c := range out {
		if out[c].Flex {
			continue
		}
		w := cellwidth.String(out[c].Title)
		for _, row := range cells {
			if c < len(row) {
				w = max(w, cellwidth.String(row[c]))
			}
		}
		if out[c].Want > 0 {
			w = min(w, out[c].Want)
		}
		out[c].Want = max(w, out[c].Min)
	}
	return out
}

// Span is the cells a row of columns this wide takes: the shown columns (width 0: hidden) and a
// space between each two.
func Span(widths []int) int {
	n, shown := 0, 0
	for _, w := range widths {
		if w > 0 {
			n += w
			shown++
		}
	}
	return n + max(shown-1, 0)
}
