package runs

import (
	"iter"
	"sort"
)

// table is every listed sandbox's runs, by sandbox then start. A sandbox not read yet is a count
// of its runs, not a slot for each: opening the screen makes what its first frame shows, where a
// slice with a slot for every run of a 10,000-run record was a fifth of the open's memory.
type table struct {
	parts []part
	ends  []int // ends[k] is the number of runs in parts[0] through parts[k]
	last  int   // the part the last lookup found: the list reads rows mostly in order
}

// part is one sandbox's runs: its rows once read, else how many runs it has.
type part struct {
	rows   []*row
	unread int
}

// reset empties the table, keeping its room.
func (t *table) reset() {
	clear(t.parts)
	t.parts, t.ends, t.last = t.parts[:0], t.ends[:0], 0
}

// add appends a read sandbox's rows.
func (t *table) add(rows []*row) { t.push(part{rows: rows}, len(rows)) }

// addUnread appends a sandbox not read yet, with its n runs.
func (t *table) addUnread(n int) { t.push(part{unread: n}, n) }

func (t *table) push(p part, n int) {
	t.parts = append(t.parts, p)
	t.ends = append(t.ends, t.Len()+n)
}

// Len is the number of runs, read or not.
func (t *table) Len() int {
	if len(t.ends) == 0 {
		return 0
	}
	return t.ends[len(t.ends)-1]
}

// At is run i (0 ≤ i < Len), nil when its sandbox is not read yet.
func (t *table) At(i int) *row {
	k := t.last
	if k >= len(t.parts) || i < t.start(k) || i >= t.ends[k] {
		k = sort.SearchInts(t.ends, i+1) // the first part ending past i
		t.last = k
	}
	p := t.parts[k]
	if p.rows == nil {
		return nil
	}
	return p.rows[i-t.start(k)]
}

func (t *table) start(k int) int {
	if k == 0 {
		return 0
	}
	return t.ends[k-1]
}

// Read yields the rows read, in order.
func (t *table) Read() iter.Seq[*row] {
	return func(yield func(*row) bool) {
		for _, p := range t.parts {
			for _, r := range p.rows {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// Flat is every run in one slice (nil for a run not read): what a sort compares, at random.
func (t *table) Flat() []*row {
	out := make([]*row, 0, t.Len())
	for _, p := range t.parts {
		if p.rows == nil {
			out = append(out, make([]*row, p.unread)...)
			continue
		}
		out = append(out, p.rows...)
	}
	return out
}
