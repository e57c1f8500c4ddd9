package record

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

// TestOutputsOfMatchesOutputOf: the bulk answer is OutputOf's, process by process, for captures
// of every shape (none, begun without output, output, ended, earlier bytes gone), whether they
// are in memory (this run) or read from the file (a later run); the bulk read keeps nothing in
// memory, and OutputsHeld gives what OutputOf keeps.
func TestOutputsOfMatchesOutputOf(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(22))
	r, err := Open(Options{Dir: dir, Bridge: bridgeID})
	if err != nil {
		t.Fatal(err)
	}
	var procs []string
	for i := 0; i < 60; i++ {
		sb := fmt.Sprintf("sb%d", i%3)
		p := fmt.Sprintf("p%02d", i)
		if sb == "sb1" {
			procs = append(procs, p)
		}
		switch rng.Intn(5) {
		case 0: // never captured
		case 1:
			r.CaptureBegin(sb, p, false, "")
		case 2:
			r.CaptureBegin(sb, p, true, "the bridge no longer had them")
			r.CaptureData(sb, p, client.LogEvent{Kind: client.Data, Cursor: "c1", Time: time.Unix(int64(1000+i), 0), Data: []byte(strings.Repeat("x", 1+rng.Intn(500)))})
		default:
			r.CaptureBegin(sb, p, false, "")
			r.CaptureData(sb, p, client.LogEvent{Kind: client.Data, Cursor: "c1", Time: time.Unix(int64(2000+i), 0), Data: []byte("out\n")})
			r.CaptureEnd(sb, p, whyEnded)
		}
	}
	procs = append(procs, "not-a-process")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	compare := func(label string, r *Record) {
		t.Helper()
		bulk := r.OutputsOf("sb1", procs)
		if len(bulk) != len(procs) {
			t.Fatalf("%s: %d answers for %d processes", label, len(bulk), len(procs))
		}
		for _, p := range procs {
			if one := r.OutputOf("sb1", p); bulk[p] != one {
				t.Errorf("%s: %s: OutputsOf %+v, OutputOf %+v", label, p, bulk[p], one)
			}
		}
	}
	compare("this run", r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// the answers a later run reads one by one, against the bulk read of another later run
	one, err := Open(Options{Dir: dir, Bridge: bridgeID})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Output{}
	for _, p := range procs {
		want[p] = one.OutputOf("sb1", p)
	}
	if err := one.Close(); err != nil {
		t.Fatal(err)
	}
	bulk, err := Open(Options{Dir: dir, Bridge: bridgeID})
	if err != nil {
		t.Fatal(err)
	}
	defer bulk.Close()
	got := bulk.OutputsOf("sb1", procs)
	if held := bulk.OutputsHeld("sb1", procs); len(held) != 0 {
		t.Fatalf("OutputsOf kept %d answers in memory", len(held))
	}
	found := 0
	for _, p := range procs {
		if got[p] != want[p] {
			t.Errorf("later run: %s: OutputsOf %+v, OutputOf %+v", p, got[p], want[p])
		}
		if got[p].Found {
			found++
		}
	}
	if found == 0 {
		t.Fatal("no capture found: the test proves nothing")
	}
	compare("later run, after the bulk read", bulk)
	// what OutputOf read is held now, and OutputsHeld gives it as OutputOf does
	held := bulk.OutputsHeld("sb1", procs)
	if len(held) != len(procs) {
		t.Fatalf("held %d of %d", len(held), len(procs))
	}
	for p, o := range held {
		if o != want[p] {
			t.Errorf("held %s: %+v, OutputOf %+v", p, o, want[p])
		}
	}
}

// TestOutputsOfUsesTheKey: the captures of one sandbox are read through the primary key, not by
// reading every capture.
func TestOutputsOfUsesTheKey(t *testing.T) {
	r, err := Open(Options{Dir: t.TempDir(), Bridge: bridgeID})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rows, err := r.db.Query("EXPLAIN QUERY PLAN "+capturesOfQuery, "sb")
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
	if p := strings.Join(plan, "\n"); !strings.Contains(p, "SEARCH captures USING INDEX") {
		t.Fatalf("plan reads every capture:\n%s", p)
	}
}
