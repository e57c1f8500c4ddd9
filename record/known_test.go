package record

import (
	"slices"
	"strings"
	"testing"
)

// KnownSandboxes read from the file: sandboxes with history, without the ones forgotten since
// their last event; a forgotten one with new history is back.
func TestKnownSandboxesFromFile(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir, Bridge: bridgeID})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range []string{"c", "a", "b", "d"} {
		r.Add(Event{Sandbox: sb, Source: FromWatch, Kind: "sandbox started"})
	}
	r.Forget("b")
	r.Forget("d")
	r.Add(Event{Sandbox: "d", Source: FromWatch, Kind: "sandbox started"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = Open(Options{Dir: dir, Bridge: bridgeID})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.KnownSandboxes()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("known %v, want %v", got, want)
	}
	all, err := r.Sandboxes()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(all, want) {
		t.Fatalf("sandboxes %v, want %v", all, want)
	}
}

// The known sandboxes are found through indexes, never by reading every event: the cost must
// not grow with the record (figure 13 of scripts/bench).
func TestKnownSandboxesUseIndexes(t *testing.T) {
	r, err := Open(Options{Dir: t.TempDir(), Bridge: bridgeID})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rows, err := r.db.Query("EXPLAIN QUERY PLAN " + knownQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	p := strings.Join(plan, "\n")
	if strings.Contains(p, "SCAN events") || !strings.Contains(p, "events_forget") {
		t.Fatalf("plan reads every event or misses events_forget:\n%s", p)
	}
}
