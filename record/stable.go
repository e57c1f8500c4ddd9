package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"time"

	"sandscope/client"
)

// What sandscope remembers of a stable (0.12) bridge, where it cannot ask the bridge without
// starting containers: the runs and sessions it started or used, the container marker it last saw
// per sandbox, and whether it already said that an action starts the container. It is kept as
// events of source FromStable (kinds below), folded like every other entry: a crash costs at most
// the last batch, and the report, the screens and the commands read the same fold.
const (
	FromStable Source = "stable"

	KindStableTold    = "stable told"    // the "this starts the container" notice was shown
	KindStableMarker  = "stable marker"  // the container marker a run printed
	KindStableRun     = "stable run"     // a run started here, or what became of it
	KindStableSession = "stable session" // a session created, used or deleted here
)

// StableSandbox is what the record knows of one sandbox on a stable bridge.
type StableSandbox struct {
	Told        bool            `json:"told"`                  // the "this starts the container" notice was shown
	Incarnation string          `json:"incarnation,omitempty"` // the container marker last seen
	MarkerSeen  time.Time       `json:"markerSeen,omitempty"`
	Runs        []StableRun     `json:"runs,omitempty"` // oldest first
	Sessions    []StableSession `json:"sessions,omitempty"`
}

// StableRun is one run started here under the in-sandbox recorder.
type StableRun struct {
	ID          string    `json:"id"`
	Argv        []string  `json:"argv"`
	Session     string    `json:"session,omitempty"`
	Cwd         string    `json:"cwd,omitempty"` // as asked ("" the bridge's default, /workspace)
	Started     time.Time `json:"started"`
	Incarnation string    `json:"incarnation,omitempty"`
	State       string    `json:"state"`          // a client.RunState
	Code        *int      `json:"code,omitempty"` // only when confirmed
	Reported    *int      `json:"reported,omitempty"`
	Evidence    string    `json:"evidence,omitempty"`
	ErrCode     string    `json:"errCode,omitempty"` // the bridge's error event: code and text
	Message     string    `json:"message,omitempty"`
	Inferred    bool      `json:"inferred,omitempty"`
	Updated     time.Time `json:"updated"`
}

// StableSession is one session created or used here.
type StableSession struct {
	ID      string    `json:"id"`
	Created bool      `json:"created"` // created by sandscope (else only used)
	Seen    time.Time `json:"seen"`
	Deleted bool      `json:"deleted,omitempty"`
}

// StableEntry is the body of a FromStable event: one of its fields is set, by kind.
type StableEntry struct {
	Marker  string         `json:"marker,omitempty"`
	Run     *StableRun     `json:"run,omitempty"`
	Session *StableSession `json:"session,omitempty"`
}

// MaxStableRuns bounds the runs a fold keeps per sandbox (the oldest give way).
const MaxStableRuns = 500

// Ended reports whether the run's state is an ending (confirmed, lost, or ended without a
// status) rather than running or not yet known.
func (r StableRun) Ended() bool {
	switch client.RunState(r.State) {
	case client.RunConfirmed, client.RunLost:
		return true
	case client.RunUnconfirmed:
		return r.Reported == nil // the recorder saw it end without a status (killed)
	}
	return false
}

// SetRun records (or updates) a run's state from a result: the exit code only when confirmed.
func (sb *StableSandbox) SetRun(r StableRun, res client.RunResult, now time.Time) {
	r.State, r.Evidence, r.Inferred, r.Updated = string(res.State), res.Evidence, res.Inferred, now.UTC()
	r.Code, r.Reported, r.ErrCode, r.Message = nil, nil, res.ErrCode, res.Message
	switch res.State {
	case client.RunConfirmed:
		code := res.Code
		r.Code = &code
	case client.RunUnconfirmed:
		if res.Code >= 0 {
			code := res.Code
			r.Reported = &code
		}
	}
	for i := range sb.Runs {
		if sb.Runs[i].ID == r.ID {
			old := sb.Runs[i]
			if old.State == r.State && eqInt(old.Code, r.Code) && eqInt(old.Reported, r.Reported) && old.ErrCode == r.ErrCode {
				return // the same state again (another reader settled it too): nothing new to record
			}
			if r.Incarnation == "" {
				r.Incarnation = old.Incarnation
			}
			if len(r.Argv) == 0 {
				r.Argv, r.Session, r.Started, r.Cwd = old.Argv, old.Session, old.Started, old.Cwd
			}
			sb.Runs[i] = r
			return
		}
	}
	sb.Runs = append(sb.Runs, r)
}

func eqInt(a, b *int) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// FindRun returns the run with that ID, or with that unique prefix of an ID.
func (sb *StableSandbox) FindRun(id string) (StableRun, error) {
	var found []StableRun
	for _, r := range sb.Runs {
		if r.ID == id {
			return r, nil
		}
		if client.IDMatches(r.ID, id) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return StableRun{}, ErrNoRun
	}
	return StableRun{}, fmt.Errorf("%q matches %d runs: %w", id, len(found), ErrAmbiguousRun)
}

// ErrNoRun and ErrAmbiguousRun are FindRun's failures.
var (
	ErrNoRun        = errors.New("no such run")
	ErrAmbiguousRun = errors.New("ambiguous run ID")
)

// UseSession notes a session as created or used here.
func (sb *StableSandbox) UseSession(id string, created bool, now time.Time) {
	for i := range sb.Sessions {
		if sb.Sessions[i].ID == id {
			sb.Sessions[i].Seen, sb.Sessions[i].Deleted = now.UTC(), false
			sb.Sessions[i].Created = sb.Sessions[i].Created || created
			return
		}
	}
	sb.Sessions = append(sb.Sessions, StableSession{ID: id, Created: created, Seen: now.UTC()})
}

// DeleteSession notes a session as deleted.
func (sb *StableSandbox) DeleteSession(id string, now time.Time) {
	for i := range sb.Sessions {
		if sb.Sessions[i].ID == id {
			sb.Sessions[i].Deleted, sb.Sessions[i].Seen = true, now.UTC()
		}
	}
}

// LiveSessions are the sessions not deleted here, oldest first.
func (sb *StableSandbox) LiveSessions() []StableSession {
	var out []StableSession
	for _, s := range sb.Sessions {
		if !s.Deleted {
			out = append(out, s)
		}
	}
	return out
}

func (sb *StableSandbox) clone() StableSandbox {
	c := *sb
	c.Runs = append([]StableRun(nil), sb.Runs...)
	c.Sessions = append([]StableSession(nil), sb.Sessions...)
	return c
}

// applyStable folds a FromStable event.
func (sb *StableSandbox) applyStable(ev Event) {
	var body StableEntry
	if ev.Stable != nil {
		body = *ev.Stable
	}
	switch ev.Kind {
	case KindStableTold:
		sb.Told = true
	case KindStableMarker:
		sb.Incarnation, sb.MarkerSeen = body.Marker, ev.Time
	case KindStableRun:
		if body.Run == nil || body.Run.ID == "" {
			return
		}
		for i := range sb.Runs {
			if sb.Runs[i].ID == body.Run.ID {
				sb.Runs[i] = *body.Run
				return
			}
		}
		sb.Runs = append(sb.Runs, *body.Run)
		if len(sb.Runs) > MaxStableRuns {
			sb.Runs = append([]StableRun(nil), sb.Runs[len(sb.Runs)-MaxStableRuns:]...)
		}
	case KindStableSession:
		if body.Session == nil || body.Session.ID == "" {
			return
		}
		for i := range sb.Sessions {
			if sb.Sessions[i].ID == body.Session.ID {
				sb.Sessions[i] = *body.Session
				return
			}
		}
		sb.Sessions = append(sb.Sessions, *body.Session)
	}
}

// stableEvents are the events that turn before into after.
func stableEvents(sandbox string, before, after StableSandbox, now time.Time) []Event {
	var out []Event
	mk := func(kind string, entity EntityKind, id string, body *StableEntry) Event {
		return Event{Time: now, Sandbox: sandbox, Source: FromStable, Kind: kind, Entity: entity, EntityID: id, Stable: body}
	}
	if after.Told && !before.Told {
		out = append(out, mk(KindStableTold, "", "", nil))
	}
	if after.Incarnation != before.Incarnation || !after.MarkerSeen.Equal(before.MarkerSeen) {
		ev := mk(KindStableMarker, "", "", &StableEntry{Marker: after.Incarnation})
		if !after.MarkerSeen.IsZero() {
			ev.Time = after.MarkerSeen
		}
		out = append(out, ev)
	}
	old := map[string]StableRun{}
	for _, r := range before.Runs {
		old[r.ID] = r
	}
	for _, r := range after.Runs {
		if o, ok := old[r.ID]; ok && reflect.DeepEqual(o, r) {
			continue
		}
		r := r
		out = append(out, mk(KindStableRun, StableRunEntity, r.ID, &StableEntry{Run: &r}))
	}
	oldS := map[string]StableSession{}
	for _, s := range before.Sessions {
		oldS[s.ID] = s
	}
	for _, s := range after.Sessions {
		if o, ok := oldS[s.ID]; ok && o == s {
			continue
		}
		s := s
		out = append(out, mk(KindStableSession, StableSessionEntity, s.ID, &StableEntry{Session: &s}))
	}
	return out
}

// StableRunEntity and StableSessionEntity are the entity kinds of stable runs and sessions.
const (
	StableRunEntity     EntityKind = "run"
	StableSessionEntity EntityKind = "session"
)

// Stable returns what the record holds of a sandbox on a stable bridge, read from the file (so
// it includes what other sandscope processes wrote, e.g. an `exec` while the TUI runs).
func (r *Record) Stable(sandbox string) (StableSandbox, error) {
	if err := r.Flush(); err != nil && !r.readOnly {
		return StableSandbox{}, err
	}
	evs, err := r.query("sandbox = ? AND source = ?", sandbox, string(FromStable))
	if err != nil {
		return StableSandbox{}, err
	}
	var sb StableSandbox
	for _, ev := range evs {
		sb.applyStable(ev)
	}
	return sb, nil
}

// StableSandboxes lists the sandboxes with stable entries, sorted.
func (r *Record) StableSandboxes() ([]string, error) {
	if err := r.Flush(); err != nil && !r.readOnly {
		return nil, err
	}
	rows, err := r.db.Query("SELECT DISTINCT sandbox FROM events WHERE source = ?", string(FromStable))
	if err != nil {
		return nil, fmt.Errorf("record: stable sandboxes: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if rows.Scan(&s) == nil {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, rows.Err()
}

// UpdateStable reads a sandbox's stable entries, lets f change them, and records what changed as
// events, committed before it returns: these entries are few (one per user action and ending), and
// another sandscope process (the TUI beside an `exec`) reads them from the file.
func (r *Record) UpdateStable(sandbox string, f func(*StableSandbox)) error {
	if r.readOnly {
		return errors.New("record: opened read-only")
	}
	before, err := r.Stable(sandbox)
	if err != nil {
		return err
	}
	after := before.clone()
	f(&after)
	evs := stableEvents(sandbox, before, after, r.now())
	for _, ev := range evs {
		r.Add(ev)
	}
	if len(evs) == 0 {
		return nil
	}
	return r.Flush()
}

// The stable book file: before the record kept them, sandscope wrote the stable entries to
// stable-book.json in the state directory, keyed by bridge URL and sandbox.
type stableBookFile struct {
	Bridges map[string]map[string]*StableSandbox `json:"bridges"`
}

// stableImportKey is the meta key that says the book file was imported into this record.
const stableImportKey = "stable_book_imported"

// ImportStableBook imports this record's bridge's part of a stable-book.json once: its runs,
// sessions, markers and notices become stable events with their original times, and the meta
// table notes the import so it never happens twice. The file itself is kept as it is (other
// bridges' parts are imported when their records are opened), and a note beside it says that it
// was imported and that sandscope no longer writes it. It returns a notice for the user ("" when
// nothing was imported).
//
// key is the bridge's key in the file (its URL); "" means the record's own bridge identity.
func (r *Record) ImportStableBook(path, key string) (string, error) {
	if key == "" {
		key = r.bridge
	}
	if r.readOnly {
		return "", nil
	}
	var done string
	if err := r.db.QueryRow("SELECT value FROM meta WHERE key = ?", stableImportKey).Scan(&done); err == nil {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("record: stable book: %w", err)
	}
	var f stableBookFile
	if err := json.Unmarshal(data, &f); err != nil {
		return "", fmt.Errorf("record: stable book %s (left as it is): %w", path, err)
	}
	part := f.Bridges[key]
	ids := make([]string, 0, len(part))
	for id := range part {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	runs, sessions := 0, 0
	now := r.now()
	for _, id := range ids {
		sb := part[id]
		if sb == nil {
			continue
		}
		existing, err := r.Stable(id)
		if err != nil {
			return "", err
		}
		merged := existing.clone()
		if sb.Told {
			merged.Told = true
		}
		if merged.Incarnation == "" && sb.Incarnation != "" {
			merged.Incarnation, merged.MarkerSeen = sb.Incarnation, sb.MarkerSeen
		}
		for _, run := range sb.Runs {
			if _, err := merged.FindRun(run.ID); err == nil || run.ID == "" {
				continue
			}
			merged.Runs = append(merged.Runs, run)
			runs++
		}
		for _, s := range sb.Sessions {
			known := false
			for _, m := range merged.Sessions {
				known = known || m.ID == s.ID
			}
			if !known && s.ID != "" {
				merged.Sessions = append(merged.Sessions, s)
				sessions++
			}
		}
		for _, ev := range stableEvents(id, existing, merged, now) {
			// keep the times the book had
			switch {
			case ev.Stable != nil && ev.Stable.Run != nil && !ev.Stable.Run.Updated.IsZero():
				ev.Time = ev.Stable.Run.Updated
			case ev.Stable != nil && ev.Stable.Session != nil && !ev.Stable.Session.Seen.IsZero():
				ev.Time = ev.Stable.Session.Seen
			}
			r.Add(ev)
		}
	}
	if err := r.Flush(); err != nil {
		return "", err
	}
	if _, err := r.db.Exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		stableImportKey, now.UTC().Format(time.RFC3339)); err != nil {
		return "", fmt.Errorf("record: stable book: %w", err)
	}
	note := fmt.Sprintf("This file was read by sandscope %s: the runs, sessions and container markers of each bridge\n"+
		"were imported into that bridge's record (%s) when the record was first opened.\n"+
		"sandscope no longer writes this file; it is kept so that nothing is lost. You may delete it.\n",
		now.UTC().Format(time.RFC3339), filepath.Dir(r.path))
	_ = os.WriteFile(path+".imported.txt", []byte(note), 0o600)
	if runs == 0 && sessions == 0 {
		return "", nil
	}
	return fmt.Sprintf("imported %d runs and %d sessions from %s into the record (the file is kept; sandscope no longer writes it)", runs, sessions, path), nil
}

// StableStateWord is how sandscope words a stable run's state: EXITED n only when the recorder
// confirmed it; a code the stream reported stays "REPORTED n (unconfirmed)"; ERROR with the
// bridge's code; INTERRUPTED, LOST (inferred), RUNNING.
func StableStateWord(r StableRun) string {
	switch client.RunState(r.State) {
	case client.RunConfirmed:
		if r.Code != nil {
			return fmt.Sprintf("EXITED %d", *r.Code)
		}
		return "EXITED"
	case client.RunUnconfirmed:
		if r.Reported != nil {
			return fmt.Sprintf("REPORTED %d (unconfirmed)", *r.Reported)
		}
		return "ENDED, code unknown"
	case client.RunErrored:
		if r.ErrCode != "" {
			return "ERROR " + label(r.ErrCode)
		}
		return "ERROR"
	case client.RunInterrupted:
		return "INTERRUPTED, outcome unknown"
	case client.RunLost:
		return "LOST (inferred)"
	case client.RunRunning, client.RunStillGoing:
		return "RUNNING"
	}
	if r.State == "" {
		return "UNKNOWN"
	}
	return label(r.State)
}

func stableReportEntity(r StableRun) ReportEntity {
	re := ReportEntity{Kind: string(StableRunEntity), ID: label(r.ID), State: StableStateWord(r), FirstSeen: r.Started.UTC(),
		LastSeen: r.Updated.UTC(), Lost: client.RunState(r.State) == client.RunLost, Command: []string{}}
	for _, a := range r.Argv {
		re.Command = append(re.Command, label(a))
	}
	if r.Evidence != "" {
		re.Evidence = []string{safe(r.Evidence)}
	}
	if r.Message != "" {
		re.Evidence = append(re.Evidence, safe(r.Message))
	}
	return re
}

// stableRow words a FromStable event for the timeline.
func stableRow(ev Event) (what, evidence []string) {
	var body StableEntry
	if ev.Stable != nil {
		body = *ev.Stable
	}
	switch ev.Kind {
	case KindStableTold:
		what = []string{"told the user that actions start the container (stable bridge)"}
	case KindStableMarker:
		what = []string{"container marker " + label(body.Marker)}
		evidence = []string{"printed by sandscope's recorder (inferred container identity)"}
	case KindStableRun:
		if r := body.Run; r != nil {
			what = []string{StableStateWord(*r)}
			if len(r.Argv) > 0 {
				evidence = append(evidence, "argv "+ShellJoin(r.Argv))
			}
			if r.Session != "" {
				evidence = append(evidence, "session "+r.Session)
			}
			evidence = append(evidence, r.Evidence)
			if r.ErrCode != "" || r.Message != "" {
				evidence = append(evidence, r.ErrCode+" "+r.Message)
			}
		}
	case KindStableSession:
		if s := body.Session; s != nil {
			switch {
			case s.Deleted:
				what = []string{"session deleted"}
			case s.Created:
				what = []string{"session used (created here)"}
			default:
				what = []string{"session used"}
			}
		}
	default:
		what = []string{ev.Kind}
	}
	return what, evidence
}
