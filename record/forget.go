package record

import (
	"fmt"
	"slices"
	"time"

	"sandscope/client"
)

// prunedRef names what lost events to a pruning: a run (its entity and ID) of a sandbox, or the
// sandbox itself (no ID: the watcher's own events and the actions).
type prunedRef struct {
	sandbox string
	entity  EntityKind
	id      string
}

// prunedAction is an action event a pruning removed (an action has no other name in memory: one
// this run recorded has no row ID there).
type prunedAction struct {
	sandbox, kind string
	time          int64
}

// pruned is what a pruning's removing took out of the file, for forgetPruned.
type pruned struct {
	refs    map[prunedRef]struct{}
	actions map[prunedAction]struct{}
}

// deletePrunedEvents deletes the events the query ids selects (a batch of pruning's), noting in p
// what lost events, in one transaction. It reports how many rows went. What lost events is read
// first, as distinct rows (an action is its own: its kind and time name it), not handed over a
// row per event deleted: a RETURNING clause did that, and cost the whole pruning a third more.
func (r *Record) deletePrunedEvents(p *pruned, ids string, args ...any) (int64, error) {
	tx, err := r.db.Begin()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if p.refs == nil {
		p.refs, p.actions = map[prunedRef]struct{}{}, map[prunedAction]struct{}{}
	}
	rows, err := tx.Query(`SELECT DISTINCT sandbox, entity, entity_id, source = ?, CASE WHEN source = ? THEN kind ELSE '' END,
		CASE WHEN source = ? THEN time ELSE 0 END FROM events WHERE id IN (`+ids+`)`,
		append([]any{string(FromAction), string(FromAction), string(FromAction)}, args...)...)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var ref prunedRef
		var action bool
		var a prunedAction
		if rows.Scan(&ref.sandbox, &ref.entity, &ref.id, &action, &a.kind, &a.time) != nil {
			continue
		}
		p.refs[ref] = struct{}{}
		if action {
			a.sandbox = ref.sandbox
			p.actions[a] = struct{}{}
		}
	}
	rows.Close()
	res, err := tx.Exec("DELETE FROM events WHERE id IN ("+ids+")", args...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, tx.Commit()
}

// forgetPruned takes out of the states in memory what a pruning took out of the file, once its
// removing is done: a run that ended and has no event left to list it, an action removed, a
// sandbox with nothing left at all. The states in memory were otherwise never read again: a
// sandscope running for weeks, or one whose start pruned a record far over its budget a step at a
// time while its screens read it, went on listing runs the record no longer held (and a report of
// the same sandbox did not), and kept them in memory, until it was started again. A run still
// running is kept: nothing but the watcher's first sight of it would bring it back. Run by the
// writer, between its commits.
func (r *Record) forgetPruned(p pruned) {
	bySandbox := map[string][]prunedRef{}
	for ref := range p.refs {
		bySandbox[ref.sandbox] = append(bySandbox[ref.sandbox], ref)
	}
	for sb, refs := range bySandbox {
		// a read of the history in flight may have folded events removed since: it is waited for
		r.mu.Lock()
		wait, reading := r.reading[sb]
		r.mu.Unlock()
		if reading {
			<-wait
		}
		r.mu.Lock()
		_, inMemory := r.states[sb]
		r.mu.Unlock()
		if !inMemory {
			continue // read from the file when asked: nothing removed is in it
		}
		var left bool
		if r.db.QueryRow("SELECT EXISTS (SELECT 1 FROM events WHERE sandbox = ?)", sb).Scan(&left) != nil {
			continue
		}
		gone := map[prunedRef]bool{}
		for _, ref := range refs {
			if ref.id == "" {
				continue
			}
			var runLeft bool
			err := r.db.QueryRow(runLeftQuery, sb, ref.id, string(ref.entity)).Scan(&runLeft)
			if err == nil && !runLeft {
				gone[prunedRef{entity: ref.entity, id: ref.id}] = true
			}
		}
		if r.forgetIn(sb, gone, p.actions, !left) {
			r.notify(sb)
		}
	}
}

// runLeftQuery says whether the file still holds an event a fold makes a run's entry from (Apply):
// the watcher's or a lookup's that it appeared or changed, the launch, a stable run's, or a
// follower's with the status it looked up. The others (that it vanished, a follower's other words,
// a capture's, an action naming it) only add to an entry already made: a run left with only those
// is not listed when the file is read again.
var runLeftQuery = fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM events WHERE sandbox = ? AND entity_id = ? AND entity = ?
	AND ((source IN ('%s', '%s') AND kind IN ('%s', '%s', '%s', '%s'))
		OR source IN ('%s', '%s') OR (source = '%s' AND body LIKE '%%"status":{%%')))`,
	FromWatch, FromLookup, client.ProcessAppeared, client.ProcessChanged, client.TerminalAppeared, client.TerminalChanged,
	FromLaunch, FromStable, FromStream)

// forgetIn takes gone (runs with no event left) and the actions removed out of a sandbox's state
// in memory, and the state itself when nothing is left of it (none: the file holds no event of
// it). A run or sandbox with events still waiting to be written is kept. It reports whether
// anything changed.
func (r *Record) forgetIn(sb string, gone map[prunedRef]bool, actions map[prunedAction]struct{}, none bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.states[sb]
	if !ok || r.closed {
		return false
	}
	waiting := map[prunedRef]bool{}
	sandboxWaiting := false
	for i := range r.pending {
		if ev := &r.pending[i]; ev.Sandbox == sb {
			sandboxWaiting = true
			waiting[prunedRef{entity: ev.Entity, id: ev.EntityID}] = true
		}
	}
	forget := func(kind EntityKind, id string) bool {
		ref := prunedRef{entity: kind, id: id}
		return gone[ref] && !waiting[ref]
	}
	removed := func(kind string, at time.Time) bool {
		_, ok := actions[prunedAction{sb, kind, at.UnixNano()}]
		return ok
	}
	changed := st.forget(forget, removed)
	if none && !sandboxWaiting && st.empty() {
		delete(r.states, sb)
		for k := range r.memos {
			if k.sandbox == sb {
				delete(r.memos, k)
			}
		}
		return true
	}
	if changed {
		st.changes++
	}
	return changed
}

// forget removes the ended runs forget names and the actions removed names (by kind and time, an
// action's only name in memory). It reports whether anything changed.
func (s *State) forget(forget func(kind EntityKind, id string) bool, removed func(kind string, at time.Time) bool) bool {
	n := len(s.Processes) + len(s.Terminals) + len(s.Actions) + len(s.Stable.Runs)
	ended := func(e *Entry) bool { return forget(e.Kind, e.ID) && !stillRunning(e) }
	s.Processes = slices.DeleteFunc(s.Processes, ended)
	s.Terminals = slices.DeleteFunc(s.Terminals, ended)
	s.Actions = slices.DeleteFunc(s.Actions, func(a Event) bool { return removed(a.Kind, a.Time) })
	s.Stable.Runs = slices.DeleteFunc(s.Stable.Runs, func(run StableRun) bool {
		return forget(StableRunEntity, run.ID) && !stableRunGoing(run.State)
	})
	return len(s.Processes)+len(s.Terminals)+len(s.Actions)+len(s.Stable.Runs) != n
}

// stillRunning reports whether an entry's last known state is running (and it was not found
// lost or gone since).
func stillRunning(e *Entry) bool { return e.State() == "running" && !e.Lost && !e.Gone }

// stableRunGoing reports whether a stable run's last known state says it may still run.
func stableRunGoing(s string) bool {
	return s == string(client.RunRunning) || s == string(client.RunStillGoing)
}

// empty reports whether a state holds no run, action or stable run (what is left of a sandbox
// whose every event was pruned).
func (s *State) empty() bool {
	return len(s.Processes) == 0 && len(s.Terminals) == 0 && len(s.Actions) == 0 && len(s.Stable.Runs) == 0
}
