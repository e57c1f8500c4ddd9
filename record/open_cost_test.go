package record

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"sandscope/client"
)

// commandEvents are what `logs -f` of a finished process records: its lookup, then its ending.
func commandEvents(at time.Time) []Event {
	p := client.Process{ID: "p1", Command: []string{"sh", "-c", "yes"}, State: "exited", Incarnation: 1}
	lookup := LookupProcess("demo", p)
	lookup.Time = at
	return []Event{lookup, FromLogEvent("demo", "p1", client.LogEvent{Kind: client.Ended, Time: at.Add(time.Second), Status: &p})}
}

// A command's record (open, its events, close) makes one connection: its batch's statement is
// prepared before the transaction takes the connection, not on a second one.
func TestCommandRecordMakesOneConnection(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 3; i++ {
		r, err := Open(Options{Dir: dir, Bridge: bridgeID, Version: "test", NoFold: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range commandEvents(t0.Add(time.Duration(i) * time.Minute)) {
			r.Add(ev)
		}
		g := r.gate
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if n := g.made.Load(); n != 1 {
			t.Fatalf("run %d made %d connections, want 1", i, n)
		}
	}
}

// NoFold writes the same events as Add with folding, and reads no sandbox's history to do it.
func TestNoFoldRecordsTheSame(t *testing.T) {
	bodies := func(noFold bool) []string {
		dir := t.TempDir()
		var out []string
		for i := 0; i < 2; i++ {
			r, err := Open(Options{Dir: dir, Bridge: bridgeID, Version: "test", NoFold: noFold})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range commandEvents(t0.Add(time.Duration(i) * time.Minute)) {
				r.Add(ev)
			}
			r.mu.Lock()
			folded := len(r.states)
			r.mu.Unlock()
			if noFold && folded != 0 {
				t.Fatalf("NoFold folded %d sandboxes", folded)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
		r := open(t, dir)
		defer r.Close()
		evs, err := r.Events("demo", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			ev.Earlier = false
			b, _ := json.Marshal(ev)
			out = append(out, string(b))
		}
		if st := r.State("demo"); st.Find(Process, "p1") == nil {
			t.Fatal("the state folded from the file lacks p1")
		}
		return out
	}
	folded, unfolded := bodies(false), bodies(true)
	if len(folded) != 4 || len(folded) != len(unfolded) {
		t.Fatalf("%d events folded, %d with NoFold", len(folded), len(unfolded))
	}
	for i := range folded {
		if folded[i] != unfolded[i] {
			t.Fatalf("event %d:\n%s\nwith NoFold:\n%s", i, folded[i], unfolded[i])
		}
	}
}

// The schema's statements run when the file lacks this schema's stamp (a new file, another
// version's, one without an index added later) or its meta is not this bridge's, and are skipped
// when it has them.
func TestSchemaStatementsRunWhenTheStampDiffers(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	path := r.Path()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	raw := func(f func(db *sql.DB)) {
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		f(db)
	}
	var stamp int64
	raw(func(db *sql.DB) {
		if err := db.QueryRow("PRAGMA user_version").Scan(&stamp); err != nil {
			t.Fatal(err)
		}
	})
	if stamp != schemaStamp {
		t.Fatalf("user_version %d, want the schema's stamp %d", stamp, schemaStamp)
	}
	indexed := func() bool {
		var n int
		raw(func(db *sql.DB) {
			if err := db.QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE name = 'events_forget'").Scan(&n); err != nil {
				t.Fatal(err)
			}
		})
		return n == 1
	}
	// stamped: an index dropped behind sandscope's back stays dropped (the statements are skipped)
	raw(func(db *sql.DB) { mustExec(t, db, "DROP INDEX events_forget") })
	if r := open(t, dir); r.Close() != nil || indexed() {
		t.Fatal("a stamped file had its schema's statements run again")
	}
	// another stamp (a version whose schema lacked the index): they run, and stamp the file
	raw(func(db *sql.DB) { mustExec(t, db, "PRAGMA user_version = 7") })
	if r := open(t, dir); r.Close() != nil || !indexed() {
		t.Fatal("a file with another schema stamp did not get the missing index")
	}
	// the meta of another bridge identity (a record adopted under a new one) is brought up to date
	raw(func(db *sql.DB) { mustExec(t, db, "UPDATE meta SET value = 'old' WHERE key = 'bridge'") })
	r = open(t, dir)
	r.Close()
	raw(func(db *sql.DB) {
		var b string
		var v int64
		if err := db.QueryRow("SELECT value, (SELECT user_version FROM pragma_user_version) FROM meta WHERE key = 'bridge'").Scan(&b, &v); err != nil {
			t.Fatal(err)
		}
		if b != bridgeID || v != schemaStamp {
			t.Fatalf("meta bridge %q, user_version %d", b, v)
		}
	})
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
}

// The one-statement check before pruning says "nothing to do" for a fresh record and "due" for
// each thing prune removes.
func TestPruneDue(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	defer r.Close()
	run := r.Run()
	cutoff := t0.Add(-time.Hour).UnixNano()
	r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "x", Time: t0})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if r.pruneDue(run, cutoff) {
		t.Fatal("a fresh record is due for pruning")
	}
	if !r.pruneDue(run, t0.Add(time.Second).UnixNano()) {
		t.Fatal("an event older than the cutoff is not due")
	}
	r.budget.MaxEvents = 1
	for i := 0; i < 2; i++ {
		r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "x", Time: t0})
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if !r.pruneDue(run, cutoff) {
		t.Fatal("events over the budget are not due")
	}
	r.budget.MaxEvents = 1000
	mustExec(t, r.db, "INSERT INTO captures (sandbox, process, began, bytes, updated) VALUES ('demo', 'p', 0, 100, "+itoa(t0.UnixNano())+")")
	r.budget.CaptureTotal = 50
	if !r.pruneDue(run, cutoff) {
		t.Fatal("captured output over the total is not due")
	}
	r.budget.CaptureTotal = 1 << 30
	mustExec(t, r.db, "INSERT INTO runs (started, version, pid) VALUES ("+itoa(cutoff-1)+", 'old', 1)")
	if !r.pruneDue(run, cutoff) {
		t.Fatal("an old run is not due")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
