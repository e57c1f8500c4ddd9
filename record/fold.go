package record

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
)

// foldQuery reads a sandbox's events after an ID for its state. The stream events that only
// count and mark an entry (interruptions, resumptions, gaps, suspect ends: most of a long-followed
// sandbox's events) come without their body: their columns say all the fold needs of them when
// the entry is known. Decoding every body was most of a state's cost (25,000 events: 270 ms).
const foldQuery = `SELECT id, run, time, source, kind, entity, entity_id, cursor,
		CASE WHEN source IN ('stream', 'terminal') AND kind NOT IN ('ended', 'lost', 'terminal exited', 'terminal error', 'terminal lost')
			THEN NULL ELSE body END
	FROM events WHERE sandbox = ? AND id > ? ORDER BY id`

// foldRow is one event as foldQuery reads it (body nil: from its columns).
type foldRow struct {
	id, run, time                       int64
	source, kind, entity, entityID, cur string
	body                                []byte
}

// fold applies the committed events of a sandbox to st (a new state), as applying each decoded
// event would: from its snapshot on, when one checks out (snapshot.go). It returns a snapshot
// worth keeping (nil: none), for the caller to queue under the lock.
func (r *Record) fold(st *State, sandbox string) (*snapshot, error) {
	var after, before int64 // the snapshot's last event ID and its count of events
	if s := r.readSnapshot(sandbox); s != nil {
		if base, ok := decodeSnapshot(s.body); ok && base.Sandbox == sandbox {
			*st = *base
			after, before = s.upto, s.events
		}
	}
	rows, err := r.db.Query(foldQuery, sandbox, after)
	if err != nil {
		return nil, fmt.Errorf("record: read: %w", err)
	}
	var evs []foldRow
	for rows.Next() {
		var f foldRow
		var body []byte
		if err := rows.Scan(&f.id, &f.run, &f.time, &f.source, &f.kind, &f.entity, &f.entityID, &f.cur, &body); err != nil {
			rows.Close()
			return nil, fmt.Errorf("record: read: %w", err)
		}
		f.body = body
		evs = append(evs, f)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("record: read: %w", err)
	}
	cur := atomic.LoadInt64(&r.run)
	// a snapshot folds events as an earlier run's: it ends before this run's first
	mine := len(evs)
	for i := range evs {
		if evs[i].run == cur {
			mine = i
			break
		}
	}
	r.applyFold(st, evs[:mine], cur)
	var keep *snapshot
	if build := buildID(); mine >= snapshotEvery && build != "" && !r.readOnly {
		if body, err := encodeSnapshot(st); err == nil {
			keep = &snapshot{sandbox: sandbox, upto: evs[mine-1].id, events: before + int64(mine), build: build, body: body}
		}
	}
	r.applyFold(st, evs[mine:], cur)
	return keep, nil
}

// applyFold applies events foldQuery read to st; cur is this run.
func (r *Record) applyFold(st *State, evs []foldRow, cur int64) {
	for i := range evs {
		f := &evs[i]
		if f.body == nil {
			if e := st.Find(EntityKind(f.entity), f.entityID); e != nil {
				st.markStream(e, Event{Kind: f.kind, Cursor: f.cur, Time: columnTime(f.time)})
				continue
			}
			// an entry not known yet: the event's status lookup may make it (applyStream)
			if err := r.db.QueryRow("SELECT body FROM events WHERE id = ?", f.id).Scan(&f.body); err != nil {
				continue // pruned meanwhile
			}
		}
		var ev Event
		if json.Unmarshal(f.body, &ev) != nil {
			continue // an entry that does not decode is skipped, not fatal
		}
		ev.ID, ev.Run, ev.Earlier = f.id, f.run, f.run != cur
		st.Apply(ev)
	}
}

// columnTime is an event's time column as decoding its body gives it (the JSON of a time at
// offset zero says "Z": UTC).
func columnTime(ns int64) time.Time {
	t := time.Unix(0, ns)
	if _, off := t.Zone(); off == 0 {
		t = t.UTC()
	}
	return t
}
