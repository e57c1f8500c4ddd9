package record

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
)

// foldQuery reads a sandbox's events for its state. The stream events that only count and mark
// an entry (interruptions, resumptions, gaps, suspect ends: most of a long-followed sandbox's
// events) come without their body: their columns say all the fold needs of them when the entry
// is known. Decoding every body was most of a state's cost (25,000 events: 270 ms).
const foldQuery = `SELECT id, run, time, source, kind, entity, entity_id, cursor,
		CASE WHEN source IN ('stream', 'terminal') AND kind NOT IN ('ended', 'lost', 'terminal exited', 'terminal error', 'terminal lost')
			THEN NULL ELSE body END
	FROM events WHERE sandbox = ? ORDER BY id`

// foldRow is one event as foldQuery reads it (body nil: from its columns).
type foldRow struct {
	id, run, time                       int64
	source, kind, entity, entityID, cur string
	body                                []byte
}

// fold applies the committed events of a sandbox to st, as applying each decoded event would.
func (r *Record) fold(st *State, sandbox string) error {
	rows, err := r.db.Query(foldQuery, sandbox)
	if err != nil {
		return fmt.Errorf("record: read: %w", err)
	}
	var evs []foldRow
	for rows.Next() {
		var f foldRow
		var body []byte
		if err := rows.Scan(&f.id, &f.run, &f.time, &f.source, &f.kind, &f.entity, &f.entityID, &f.cur, &body); err != nil {
			rows.Close()
			return fmt.Errorf("record: read: %w", err)
		}
		f.body = body
		evs = append(evs, f)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("record: read: %w", err)
	}
	cur := atomic.LoadInt64(&r.run)
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
	return nil
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
