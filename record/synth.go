package record

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"sandscope/client"
)

// Synthetic describes a generated record, for the scale benchmarks (scripts/bench, figure 13):
// Runs processes spread evenly over Sandboxes sandboxes, Events events in all (each run's
// appearance and ending, the rest stream interruptions and resumptions of its output), and
// CaptureBytes of captured output per run. Times spread over the Span before End.
type Synthetic struct {
	Sandboxes    int
	Runs         int
	Events       int
	CaptureBytes int
	End          time.Time
	Span         time.Duration
}

// SandboxName is the name of the i-th generated sandbox: "scale" and i in five letters
// ("scaleaaabq" is the 42nd), a sandbox ID a bridge accepts (client.ValidSandboxID), so a TUI
// opened on a generated record lists its sandboxes as it would a bridge's.
func (s Synthetic) SandboxName(i int) string {
	var b [10]byte
	copy(b[:], "scale")
	for k := len(b) - 1; k >= 5; k-- {
		b[k] = 'a' + byte(i%26)
		i /= 26
	}
	return string(b[:])
}

// WriteSynthetic creates the record of bridge under dir holding s, written in bulk (the events are
// the ones the record API would store, encoded the same way). The file must not exist yet.
func WriteSynthetic(dir, bridge string, s Synthetic) error {
	if s.Sandboxes <= 0 || s.Runs < s.Sandboxes || s.Events < 2*s.Runs+s.Sandboxes {
		return fmt.Errorf("record: synthetic: %d runs over %d sandboxes with %d events does not fit", s.Runs, s.Sandboxes, s.Events)
	}
	if s.Span <= 0 {
		s.Span = 7 * 24 * time.Hour
	}
	if s.End.IsZero() {
		s.End = time.Now()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	path := FileFor(dir, bridge)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("record: synthetic: %s exists", path)
	}
	// nothing else has the file: no WAL and no sync while it is written, WAL before it is used
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=auto_vacuum(INCREMENTAL)&_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)")
	if err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if err := createSchema(ctx, db); err != nil {
		return err
	}
	if _, err := db.Exec(`INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('bridge', ?)`, strconv.Itoa(SchemaVersion), bridge); err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	start := s.End.Add(-s.Span)
	if _, err := db.Exec("INSERT INTO runs (id, started, ended, version, pid) VALUES (1, ?, ?, 'synthetic', 1)", start.UnixNano(), s.End.UnixNano()); err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.Prepare(insertEvent)
	if err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	defer st.Close()
	chunk, err := tx.Prepare("INSERT INTO chunks (sandbox, process, time, cursor, stream, data) VALUES (?, ?, ?, ?, 0, ?)")
	if err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	defer chunk.Close()
	capRow, err := tx.Prepare(`INSERT INTO captures (sandbox, process, began, began_cursor, bytes, last_cursor, updated, ended)
		VALUES (?, ?, ?, '', ?, ?, ?, 'the process ended')`)
	if err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	defer capRow.Close()
	line := []byte("synthetic output line 0123456789 abcdefghijklmnopqrstuvwxyz\n")
	var out []byte
	for len(out) < s.CaptureBytes {
		out = append(out, line...)
	}
	out = out[:s.CaptureBytes]

	// the events left after each run's appearance and ending, and each sandbox's start, are
	// interruptions and resumptions, shared out evenly
	extra := s.Events - 2*s.Runs - s.Sandboxes
	step := s.Span / time.Duration(s.Events+1)
	n := 0 // events written
	when := func() time.Time { n++; return start.Add(time.Duration(n) * step) }
	add := func(ev Event) error {
		ev.Run = 1
		return execInsertEvent(st, &ev)
	}
	inc := client.Incarnation{Number: 1}
	run := 0
	for sb := 0; sb < s.Sandboxes; sb++ {
		name := s.SandboxName(sb)
		if err := add(FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: name, Time: when(), Incarnation: inc,
			Evidence: []string{"GET running: true (first poll)"}})); err != nil {
			return fmt.Errorf("record: synthetic: %w", err)
		}
		runs := s.Runs / s.Sandboxes
		if sb < s.Runs%s.Sandboxes {
			runs++
		}
		for i := 0; i < runs; i++ {
			id := fmt.Sprintf("proc-%05d", run)
			mine := extra / s.Runs
			if run < extra%s.Runs {
				mine++
			}
			run++
			p := &client.Process{ID: id, PID: 1000 + i, Command: []string{"agent", "--task", id, "--json"}, State: "running", Incarnation: 1}
			began := when()
			if err := add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: name, Time: began, Process: p, Incarnation: inc})); err != nil {
				return fmt.Errorf("record: synthetic: %w", err)
			}
			for k := 0; k < mine; k++ {
				le := client.LogEvent{Kind: client.Interrupted, Time: when(), Cursor: strconv.Itoa(k), Reason: "connection reset"}
				if k%2 == 1 {
					le = client.LogEvent{Kind: client.Resumed, Time: when(), Cursor: strconv.Itoa(k), Attempt: 1}
				}
				if err := add(FromLogEvent(name, id, le)); err != nil {
					return fmt.Errorf("record: synthetic: %w", err)
				}
			}
			ended := when()
			done := *p
			done.State, done.Exit = "exited", &client.Exit{}
			if err := add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: name, Time: ended, Process: &done, Incarnation: inc})); err != nil {
				return fmt.Errorf("record: synthetic: %w", err)
			}
			if s.CaptureBytes > 0 {
				if _, err := chunk.Exec(name, id, ended.UnixNano(), "end", out); err != nil {
					return fmt.Errorf("record: synthetic: %w", err)
				}
				if _, err := capRow.Exec(name, id, began.UnixNano(), len(out), "end", ended.UnixNano()); err != nil {
					return fmt.Errorf("record: synthetic: %w", err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	if _, err := db.Exec("PRAGMA journal_mode = WAL"); err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("record: synthetic: %w", err)
	}
	// on disk, as a record written over days is: not left to the first open's checkpoint
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		_ = f.Sync()
		f.Close()
	}
	// as a clean close leaves it: the next open need not check the whole file
	return os.WriteFile(path+".clean", []byte(statMark(path)), 0o600)
}

// ScaleOpens is how many times MeasureScale opens the record (and the bench the all-runs screen).
const ScaleOpens = 5

// medianDuration is the median of ds (not empty), which it sorts.
func medianDuration(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	if n := len(ds); n%2 == 0 {
		return (ds[n/2-1] + ds[n/2]) / 2
	}
	return ds[len(ds)/2]
}

// ScaleBudget keeps everything a measured record holds: opening it prunes nothing of what is timed.
func ScaleBudget() Budget {
	return Budget{MaxEvents: 1 << 30, MaxAge: 365 * 24 * time.Hour, CaptureTotal: 1 << 40}
}

// ScaleStep is one measured step of MeasureScale.
type ScaleStep struct {
	Step string
	Took time.Duration
	Note string
}

// MeasureScale opens the record of bridge under dir the way sandscope does (with a budget that
// keeps what it holds) and times what the screens and `report` ask of a large record: the open,
// the known sandboxes, the state of sandbox, and its report. It checks the answers are whole.
// The open is timed ScaleOpens times, each after the last one's close: "open" is their median,
// "open-first" the first (a first open of a few milliseconds moved by a factor of two between
// processes alone).
func MeasureScale(dir, bridge, sandbox string) ([]ScaleStep, error) {
	var out []ScaleStep
	var r *Record
	var opens []time.Duration
	for i := 0; i < ScaleOpens; i++ {
		t := time.Now()
		ri, err := Open(Options{Dir: dir, Bridge: bridge, Budget: ScaleBudget()})
		if err != nil {
			return nil, err
		}
		opens = append(opens, time.Since(t))
		if i == ScaleOpens-1 {
			r = ri
			break
		}
		if err := ri.Close(); err != nil {
			return nil, err
		}
	}
	defer r.Close()
	out = append(out, ScaleStep{Step: "open", Took: medianDuration(slices.Clone(opens)), Note: fmt.Sprintf("median of %d opens", len(opens))},
		ScaleStep{Step: "open-first", Took: opens[0]})
	t := time.Now()
	known, err := r.KnownSandboxes()
	if err != nil {
		return out, err
	}
	out = append(out, ScaleStep{Step: "known", Took: time.Since(t), Note: fmt.Sprintf("%d sandboxes", len(known))})
	t = time.Now()
	st := r.State(sandbox)
	out = append(out, ScaleStep{Step: "state", Took: time.Since(t), Note: fmt.Sprintf("%d processes", len(st.Processes))})
	if len(st.Processes) == 0 {
		return out, fmt.Errorf("record: the state of %s has no process", sandbox)
	}
	t = time.Now()
	rep, err := r.BuildReport(ReportOptions{Sandbox: sandbox})
	if err != nil {
		return out, err
	}
	md := rep.Markdown() // what `sandscope report` prints
	out = append(out, ScaleStep{Step: "report", Took: time.Since(t), Note: fmt.Sprintf("%d timeline rows, %d bytes", len(rep.Timeline), len(md))})
	return out, nil
}
