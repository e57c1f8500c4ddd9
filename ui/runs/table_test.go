package runs

import (
	"math/rand"
	"slices"
	"testing"
)

// TestTableAtAgreesWithFlat: runs looked up one by one, in order and at random, are the runs of
// the table laid out flat (nil for a sandbox not read), and Read yields the read ones in order.
func TestTableAtAgreesWithFlat(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var tb table
	for round := 0; round < 50; round++ {
		tb.reset()
		var read []*row
		for k := rng.Intn(12); k > 0; k-- {
			switch n := rng.Intn(5); {
			case rng.Intn(3) == 0:
				tb.addUnread(n)
			default:
				rows := make([]*row, n)
				for i := range rows {
					rows[i] = &row{label: "r"}
				}
				read = append(read, rows...)
				tb.add(rows)
			}
		}
		flat := tb.Flat()
		if len(flat) != tb.Len() {
			t.Fatalf("round %d: Flat has %d runs, Len says %d", round, len(flat), tb.Len())
		}
		for i := range flat {
			if tb.At(i) != flat[i] {
				t.Fatalf("round %d: At(%d) in order differs from Flat", round, i)
			}
		}
		for range 3 * len(flat) {
			i := rng.Intn(len(flat))
			if tb.At(i) != flat[i] {
				t.Fatalf("round %d: At(%d) at random differs from Flat", round, i)
			}
		}
		if got := slices.Collect(tb.Read()); !slices.Equal(got, read) {
			t.Fatalf("round %d: Read yields %d rows, %d were added", round, len(got), len(read))
		}
	}
}

// TestListedSortedFollowsTheSandboxesListed: the sorted names kept from the last rebuild are used
// again only while the same sandboxes are listed; one swapped for another (the count unchanged)
// or moved from unread to read is seen.
func TestListedSortedFollowsTheSandboxesListed(t *testing.T) {
	m := &Model{bySandbox: map[string][]*row{"b": nil}, unread: map[string]counted{"a": {}, "c": {}}}
	if got := m.listedSorted(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("listed %v", got)
	}
	delete(m.unread, "a")
	m.bySandbox["a"] = nil // read: the same sandboxes
	if got := m.listedSorted(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("after a read, listed %v", got)
	}
	delete(m.unread, "c")
	m.unread["d"] = counted{} // one for another, as many as before
	if got := m.listedSorted(); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Fatalf("after a swap, listed %v", got)
	}
	delete(m.bySandbox, "b")
	if got := m.listedSorted(); !slices.Equal(got, []string{"a", "d"}) {
		t.Fatalf("after a drop, listed %v", got)
	}
}
