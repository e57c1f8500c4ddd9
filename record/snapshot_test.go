package record

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

// lowSnapshots keeps a snapshot of every fold of more than 20 events, for the tests' short
// histories.
func lowSnapshots(t *testing.T) {
	old := snapshotEvery
	snapshotEvery = 20
	t.Cleanup(func() { snapshotEvery = old })
}

func reopened(t *testing.T, r *Record, dir string) *Record {
	t.Helper()
	if r != nil {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	again, err := Open(Options{Dir: dir, Bridge: bridgeID})
	if err != nil {
		t.Fatal(err)
	}
	return again
}

// snapshotCount is how many snapshots the file holds.
func snapshotCount(t *testing.T, r *Record) int {
	t.Helper()
	var n int
	if err := r.db.QueryRow("SELECT COUNT(*) FROM states").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSnapshotThenTailIsTheWholeFold: a run that reads a sandbox's long history keeps its fold
// (the states table); the next runs read that fold and the events after it, and get the state
// that decoding every event gives, on the random histories of TestFoldMatchesDecodingEveryEvent
// spread over four runs, in two time zones.
func TestSnapshotThenTailIsTheWholeFold(t *testing.T) {
	if buildID() == "" {
		t.Fatal("the test binary's Go build ID cannot be read: snapshots are off")
	}
	lowSnapshots(t)
	for seed := int64(1); seed <= 12; seed++ {
		dir := t.TempDir()
		var r *Record
		used := 0
		for phase := 0; phase < 4; phase++ {
			r = reopened(t, r, dir)
			for _, sb := range []string{"sb0", "sb1"} {
				if phase > 0 && r.readSnapshot(sb) != nil {
					used++
				}
				sameAsEveryEvent(t, r, r.State(sb), fmt.Sprintf("seed %d, phase %d, %s", seed, phase, sb))
			}
			// this run's own events: after the states were read, as the TUI's watchers add them
			randomHistory(r, seed, phase*150, 150)
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			for _, sb := range []string{"sb0", "sb1"} {
				sameAsEveryEvent(t, r, r.State(sb), fmt.Sprintf("seed %d, phase %d, %s after adding", seed, phase, sb))
			}
		}
		r = reopened(t, r, dir)
		for _, sb := range []string{"sb0", "sb1"} {
			if r.readSnapshot(sb) != nil {
				used++
			}
			sameAsEveryEvent(t, r, r.State(sb), fmt.Sprintf("seed %d, last open, %s", seed, sb))
		}
		if used < 6 {
			t.Fatalf("seed %d: a snapshot was read %d times over 8 reads after the first run", seed, used)
		}
		r.Close()
		// read-only (ls, report): the last run to open the file is its run
		ro, err := Open(Options{Dir: dir, Bridge: bridgeID, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, sb := range []string{"sb0", "sb1"} {
			if ro.readSnapshot(sb) == nil {
				t.Errorf("seed %d: read-only, the snapshot of %s is not read", seed, sb)
			}
			sameAsEveryEvent(t, ro, ro.State(sb), fmt.Sprintf("seed %d, read-only, %s", seed, sb))
		}
		ro.Close()
	}
}

// TestSnapshotNotTrustedWhenItDoesNotCheckOut: a snapshot is read only when every event it covers
// is still there (pruning, or another sandscope, removed some), it was made by this executable,
// and none of the events it covers is this run's; otherwise the whole history is folded.
func TestSnapshotNotTrustedWhenItDoesNotCheckOut(t *testing.T) {
	lowSnapshots(t)
	dir := t.TempDir()
	r := reopened(t, nil, dir)
	randomHistory(r, 7, 0, 300)
	r = reopened(t, r, dir)
	r.State("sb0")
	if err := r.Flush(); err != nil { // the writer writes the snapshot at its next round
		t.Fatal(err)
	}
	r = reopened(t, r, dir)
	if snapshotCount(t, r) == 0 || r.readSnapshot("sb0") == nil {
		t.Fatal("no snapshot of sb0 was kept, or it does not check out")
	}

	// an event it covers removed: the count no longer matches
	if _, err := r.db.Exec("DELETE FROM events WHERE id = (SELECT MIN(id) FROM events WHERE sandbox = 'sb0')"); err != nil {
		t.Fatal(err)
	}
	if r.readSnapshot("sb0") != nil {
		t.Fatal("a snapshot covering a removed event was read")
	}
	sameAsEveryEvent(t, r, r.State("sb0"), "after a removal")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	r = reopened(t, r, dir)
	if r.readSnapshot("sb0") == nil {
		t.Fatal("the full fold after the removal kept no snapshot that checks out")
	}

	// made by another executable
	if _, err := r.db.Exec("UPDATE states SET build = 'another build'"); err != nil {
		t.Fatal(err)
	}
	if r.readSnapshot("sb0") != nil {
		t.Fatal("another executable's snapshot was read")
	}
	r = reopened(t, r, dir)

	// covering an event of this run: every event of a snapshot folds as an earlier run's
	r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb0", Time: time.Now(),
		Incarnation: client.Incarnation{Number: 1}, Process: &client.Process{ID: "mine", State: "running", Incarnation: 1}}))
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	var last int64
	if err := r.db.QueryRow("SELECT MAX(id) FROM events WHERE sandbox = 'sb0'").Scan(&last); err != nil {
		t.Fatal(err)
	}
	var count int64
	if err := r.db.QueryRow("SELECT COUNT(*) FROM events WHERE sandbox = 'sb0'").Scan(&count); err != nil {
		t.Fatal(err)
	}
	if _, err := r.db.Exec("UPDATE states SET upto = ?, events = ?, build = ? WHERE sandbox = 'sb0'", last, count, buildID()); err != nil {
		t.Fatal(err)
	}
	if r.readSnapshot("sb0") != nil {
		t.Fatal("a snapshot covering this run's event was read")
	}
	r.Close()
}

// TestSnapshotKeepsNoRequest: what a snapshot keeps of a state leaves out the launch request
// (environment values included, never stored) and the watcher's error value.
func TestSnapshotKeepsNoRequest(t *testing.T) {
	st := NewState("sb")
	st.Processes = []*Entry{{Kind: Process, ID: "p", Request: &client.ExecRequest{Env: map[string]string{"TOKEN": "secret-value"}}}}
	st.WatchCause = fmt.Errorf("boom")
	st.Actions = []Event{{ID: 4, Run: 2, Earlier: true, Kind: "note", Source: FromAction}}
	b, err := encodeSnapshot(st)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "secret-value") || strings.Contains(s, "TOKEN") {
		t.Fatalf("the snapshot keeps the launch request: %s", s)
	}
	back, ok := decodeSnapshot(b)
	if !ok || back.WatchCause != nil || back.Processes[0].Request != nil {
		t.Fatalf("decoded: %v %+v", ok, back)
	}
	if a := back.Actions[0]; a.ID != 4 || a.Run != 2 || !a.Earlier {
		t.Fatalf("an action's row columns: %+v", a)
	}
	if st.Processes[0].Request == nil || st.WatchCause == nil {
		t.Fatal("encoding changed the state itself")
	}
}

// TestPruningDropsSnapshotsOfNothing: a snapshot whose events pruning removed is removed with them.
func TestPruningDropsSnapshotsOfNothing(t *testing.T) {
	lowSnapshots(t)
	dir := t.TempDir()
	r := reopened(t, nil, dir)
	randomHistory(r, 3, 0, 200) // December 2026
	r = reopened(t, r, dir)
	r.State("sb0")
	r.State("sb1")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := snapshotCount(t, r); n != 2 {
		t.Fatalf("%d snapshots kept, want 2", n)
	}
	now := time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC) // every event is past the budget's age
	r = prunedByReopen(t, r, Options{Dir: dir, Bridge: bridgeID, Budget: Budget{MaxAge: 30 * 24 * time.Hour}, Now: func() time.Time { return now }})
	defer r.Close()
	if evs, _ := r.Events("sb0", ""); len(evs) != 0 {
		t.Fatalf("%d events of sb0 kept", len(evs))
	}
	if n := snapshotCount(t, r); n != 0 {
		t.Fatalf("%d snapshots of pruned histories kept", n)
	}
}
