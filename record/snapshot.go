package record

import (
	"bytes"
	"context"
	"database/sql"
	"debug/elf"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
)

// A sandbox's state is the fold of every event the record holds of it, and a long history is
// long to fold: 25,000 events take about 60 ms, and a TUI starting on a record of 10,000 runs
// folded 5 million of them (12 s of a core) to know where each sandbox stands. So the record keeps
// the fold itself beside the events it came from (the states table): a snapshot is exactly the
// fold of a sandbox's first events (up to an event ID), and a state is read as that snapshot with
// the events after it folded on top.
//
// A snapshot is used only when the record can tell it is the fold it says it is:
//   - made by this very executable (its Go build ID): the fold is code, and a sandscope built
//     from other code may fold the same events otherwise; every other build folds from the start
//     once and keeps its own snapshot;
//   - every event it covers is still there (their count is checked; pruning removes the oldest);
//   - none of them was observed by this run (a snapshot folds events as an earlier run's).
//
// It is a cache: a snapshot that is missing, unreadable or does not check out costs a full fold
// and nothing else, and writing one never fails anything.

// snapshotEvery is how many events a fold must cover beyond its snapshot before a new snapshot of
// it is kept: a short history folds in a millisecond or two and is left as it is (a variable for
// the tests' short histories).
var snapshotEvery = 2000

// snapshot is one row of the states table: the fold of a sandbox's events up to upto, events of
// them (its count of rows), under the executable that folded them (build).
type snapshot struct {
	sandbox string
	upto    int64
	events  int64
	build   string
	body    []byte
}

// snapshotBody is a state as a snapshot keeps it. Its actions are events, whose row columns (ID,
// run, earlier) JSON leaves out: they go beside them.
type snapshotBody struct {
	State      *State        `json:"state"`
	ActionRows []snapshotRow `json:"actionRows"`
}

type snapshotRow struct {
	ID      int64 `json:"id"`
	Run     int64 `json:"run"`
	Earlier bool  `json:"earlier"`
}

// encodeSnapshot is st as a snapshot keeps it: a copy without what is never stored (a launch's
// full request, a watcher's error value).
func encodeSnapshot(st *State) ([]byte, error) {
	c := st.Clone()
	c.WatchCause = nil
	for _, list := range [][]*Entry{c.Processes, c.Terminals} {
		for _, e := range list {
			e.Request = nil
		}
	}
	body := snapshotBody{State: c, ActionRows: make([]snapshotRow, len(c.Actions))}
	for i, a := range c.Actions {
		body.ActionRows[i] = snapshotRow{ID: a.ID, Run: a.Run, Earlier: a.Earlier}
	}
	return json.Marshal(body)
}

// decodeSnapshot is the state a snapshot keeps.
func decodeSnapshot(b []byte) (*State, bool) {
	var body snapshotBody
	if json.Unmarshal(b, &body) != nil || body.State == nil || len(body.ActionRows) != len(body.State.Actions) {
		return nil, false
	}
	for i, row := range body.ActionRows {
		a := &body.State.Actions[i]
		a.ID, a.Run, a.Earlier = row.ID, row.Run, row.Earlier
	}
	return body.State, true
}

// readSnapshot returns the snapshot of a sandbox that checks out (see above), or nil.
func (r *Record) readSnapshot(sandbox string) *snapshot {
	build := buildID()
	if build == "" {
		return nil
	}
	s := snapshot{sandbox: sandbox}
	if r.db.QueryRow("SELECT upto, events, build, body FROM states WHERE sandbox = ?", sandbox).Scan(&s.upto, &s.events, &s.build, &s.body) != nil {
		return nil
	}
	if s.build != build {
		return nil
	}
	var n int64
	if r.db.QueryRow("SELECT COUNT(*) FROM events WHERE sandbox = ? AND id <= ?", sandbox, s.upto).Scan(&n) != nil || n != s.events {
		return nil
	}
	// a read-only record's run is the last one to open the file, whose events can be anywhere
	// (firstID 0: all of them are looked at)
	if first := atomic.LoadInt64(&r.firstID); s.upto > first {
		var mine bool
		err := r.db.QueryRow("SELECT EXISTS (SELECT 1 FROM events WHERE sandbox = ? AND id > ? AND id <= ? AND run = ?)",
			sandbox, first, s.upto, atomic.LoadInt64(&r.run)).Scan(&mine)
		if err != nil || mine {
			return nil
		}
	}
	return &s
}

// keepSnapshotLocked queues a snapshot for the writer (r.mu held). A read-only record never has
// one to queue: fold makes none for it.
func (r *Record) keepSnapshotLocked(s *snapshot) {
	if s == nil || r.closed {
		return
	}
	r.snapshots = append(r.snapshots, *s)
	r.kickWriter()
}

// writeSnapshots writes the snapshots commit took from the queue, in a transaction of their own
// (the writer's): one that fails is dropped, as are those queued while the file is busy or
// damaged (the next fold makes them again).
func (r *Record) writeSnapshots(snaps []snapshot) {
	if len(snaps) == 0 || !r.busySince.IsZero() || r.held.Load() {
		return // another process holds the file, or a batch waits: events first
	}
	tx, err := r.db.Begin()
	if err != nil {
		return
	}
	defer tx.Rollback()
	for _, s := range snaps {
		if _, err := tx.Exec(`INSERT INTO states (sandbox, upto, events, build, body) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (sandbox) DO UPDATE SET upto = excluded.upto, events = excluded.events, build = excluded.build, body = excluded.body
			WHERE NOT (states.build = excluded.build AND states.upto > excluded.upto)`,
			s.sandbox, s.upto, s.events, s.build, s.body); err != nil {
			return
		}
	}
	_ = tx.Commit()
}

// readFirstID reads the largest event ID in the file as a run begins: every event this run adds
// comes after it.
func readFirstID(ctx context.Context, tx *sql.Tx) int64 {
	var id int64
	_ = tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM events").Scan(&id)
	return id
}

// buildID is the Go build ID of the running executable ("" when it cannot be read: then no
// snapshot is read or kept).
var buildID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := elf.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil {
		return ""
	}
	note, err := sec.Data()
	if err != nil || len(note) < 16 {
		return ""
	}
	// an ELF note: name size, description size, type, then the name ("Go\x00\x00") and the
	// description (the build ID), each padded to 4 bytes
	order := f.ByteOrder
	namesz, descsz := order.Uint32(note[0:]), order.Uint32(note[4:])
	name := 12 + (int(namesz)+3)&^3
	if namesz != 4 || !bytes.Equal(note[12:16], []byte("Go\x00\x00")) || name+int(descsz) > len(note) {
		return ""
	}
	return string(note[name : name+int(descsz)])
})
