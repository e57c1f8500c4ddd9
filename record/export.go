package record

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"sandscope/client"
)

// What an exporter (OpenTelemetry, say) needs to send the record elsewhere without losing any of
// it: the events and the captured output in the order they were committed, read after a position
// the exporter keeps in the record itself (the meta table), so a restart, a collector outage or a
// crash resumes where the last confirmed send ended.
//
// Rows are committed in ID order (SQLite has one writer at a time, and a new row's ID is above
// every row's), so a reader that saw ID n never later meets a new row below n. Pruning removes
// the oldest rows; if it ever removes every row, IDs begin again from 1 and a position past the
// newest row is stale (ExportPosition's caller compares it with LastEventID).

// EventsAfter returns up to limit committed events with an ID above after, oldest first (every
// source, every sandbox; Event.ID set), and the highest ID it read: a row whose body does not
// decode is skipped (as every reader does) but read past, so a reader never stalls on it.
func (r *Record) EventsAfter(after int64, limit int) (events []Event, upto int64, err error) {
	if limit <= 0 {
		limit = 512
	}
	upto = after
	rows, err := r.db.Query("SELECT id, run, body FROM events WHERE id > ? ORDER BY id LIMIT ?", after, limit)
	if err != nil {
		return nil, after, fmt.Errorf("record: read: %w", err)
	}
	defer rows.Close()
	cur := atomic.LoadInt64(&r.run)
	for rows.Next() {
		var id, run int64
		var body string
		if err := rows.Scan(&id, &run, &body); err != nil {
			return events, upto, fmt.Errorf("record: read: %w", err)
		}
		upto = id
		var ev Event
		if json.Unmarshal([]byte(body), &ev) != nil {
			continue
		}
		ev.ID, ev.Run, ev.Earlier = id, run, run != cur
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		return events, upto, fmt.Errorf("record: read: %w", err)
	}
	return events, upto, nil
}

// LastEventID is the ID of the newest committed event (0: none).
func (r *Record) LastEventID() (int64, error) {
	var id int64
	if err := r.db.QueryRow("SELECT COALESCE(MAX(id), 0) FROM events").Scan(&id); err != nil {
		return 0, fmt.Errorf("record: last event: %w", err)
	}
	return id, nil
}

// CountEventsAfter counts the committed events with an ID above after (an exporter's backlog).
func (r *Record) CountEventsAfter(after int64) (int64, error) {
	var n int64
	if err := r.db.QueryRow("SELECT COUNT(*) FROM events WHERE id > ?", after).Scan(&n); err != nil {
		return 0, fmt.Errorf("record: count events: %w", err)
	}
	return n, nil
}

// OutputChunk is a committed chunk of captured output with its row ID.
type OutputChunk struct {
	ID int64
	Chunk
}

// ChunksAfter returns up to limit committed output chunks with an ID above after, oldest first. A
// chunk whose bytes are gone has Lost set (and no Data).
func (r *Record) ChunksAfter(after int64, limit int) ([]OutputChunk, error) {
	if limit <= 0 {
		limit = 256
	}
	rows, err := r.db.Query("SELECT id, sandbox, process, time, cursor, stream, data, seg, off, len FROM chunks WHERE id > ? ORDER BY id LIMIT ?", after, limit)
	if err != nil {
		return nil, fmt.Errorf("record: read output: %w", err)
	}
	var out []OutputChunk
	var places []chunkPlace
	for rows.Next() {
		var c OutputChunk
		var p chunkPlace
		var t int64
		var s int
		if err := rows.Scan(&c.ID, &c.Sandbox, &c.Process, &t, &c.Cursor, &s, &c.Data, &p.seg, &p.off, &p.n); err != nil {
			rows.Close()
			return out, fmt.Errorf("record: read output: %w", err)
		}
		c.Time, c.Stream, p.id = time.Unix(0, t), client.Stream(s), c.ID
		out = append(out, c)
		places = append(places, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("record: read output: %w", err)
	}
	r.readChunks(places, func(i int) *Chunk { return &out[i].Chunk })
	return out, nil
}

// ChunkBacklog is the number of committed chunks above after and the bytes they hold.
func (r *Record) ChunkBacklog(after int64) (chunks, bytes int64, err error) {
	if err := r.db.QueryRow("SELECT COUNT(*), COALESCE(SUM("+chunkLen+"), 0) FROM chunks WHERE id > ?", after).Scan(&chunks, &bytes); err != nil {
		return 0, 0, fmt.Errorf("record: count output: %w", err)
	}
	return chunks, bytes, nil
}

// LastChunkID is the ID of the newest committed output chunk (0: none).
func (r *Record) LastChunkID() (int64, error) {
	var id int64
	if err := r.db.QueryRow("SELECT COALESCE(MAX(id), 0) FROM chunks").Scan(&id); err != nil {
		return 0, fmt.Errorf("record: last output: %w", err)
	}
	return id, nil
}

// Mark is a position in the events or the output: a row ID and that row's time. Pruning removes
// the oldest rows; if it removes every one, IDs begin again from 1, and only the time tells a
// reused ID from the row a reader stopped at.
type Mark struct {
	ID   int64 `json:"id"`
	Time int64 `json:"time"` // Unix ns; 0 unknown
}

// ExportPosition is where the exporter named name stopped: the last event and output chunk the
// collector confirmed (zero Marks when it never sent anything).
func (r *Record) ExportPosition(name string) (events, chunks Mark, err error) {
	get := func(key string) (Mark, error) {
		var v string
		err := r.db.QueryRow("SELECT value FROM meta WHERE key = ?", key).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return Mark{}, nil
		}
		if err != nil {
			return Mark{}, fmt.Errorf("record: export position: %w", err)
		}
		var m Mark
		if json.Unmarshal([]byte(v), &m) != nil {
			return Mark{}, nil // a position that does not read starts over: the span IDs make that safe
		}
		return m, nil
	}
	if events, err = get(exportKey(name, "events")); err != nil {
		return Mark{}, Mark{}, err
	}
	chunks, err = get(exportKey(name, "output"))
	return events, chunks, err
}

// SetExportPosition keeps the exporter's position (written at once, not queued with the events:
// the exporter calls it after the collector confirmed a batch).
func (r *Record) SetExportPosition(name string, events, chunks Mark) error {
	if r.readOnly || atomic.LoadInt64(&r.run) == 0 {
		return errors.New("record: export position: the record is not open for writing")
	}
	ev, _ := json.Marshal(events)
	ch, _ := json.Marshal(chunks)
	return r.retryBusy(func() error {
		_, err := r.db.Exec(`INSERT INTO meta (key, value) VALUES (?, ?), (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
			exportKey(name, "events"), string(ev), exportKey(name, "output"), string(ch))
		if err != nil {
			return fmt.Errorf("record: export position: %w", err)
		}
		return nil
	})
}

// EventMark and ChunkMark are the marks of rows just read (for SetExportPosition).
func EventMark(ev Event) Mark      { return Mark{ID: ev.ID, Time: ev.Time.UnixNano()} }
func ChunkMark(c OutputChunk) Mark { return Mark{ID: c.ID, Time: c.Time.UnixNano()} }

// MarkStands reports whether a position in the events (output false) or the output still means
// what it meant: false when the IDs began again after pruning removed every row (the row at the
// mark now holds a different time, or no row reaches it), and the reader must start over.
func (r *Record) MarkStands(output bool, m Mark) (bool, error) {
	if m.ID == 0 {
		return true, nil
	}
	table := "events"
	if output {
		table = "chunks"
	}
	var t int64
	err := r.db.QueryRow("SELECT time FROM "+table+" WHERE id = ?", m.ID).Scan(&t)
	switch {
	case err == nil:
		return m.Time == 0 || t == m.Time, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("record: export position: %w", err)
	}
	// the row is gone: pruned (newer rows have higher IDs), unless no row reaches it any more
	var last int64
	if err := r.db.QueryRow("SELECT COALESCE(MAX(id), 0) FROM " + table).Scan(&last); err != nil {
		return false, fmt.Errorf("record: export position: %w", err)
	}
	return last > m.ID, nil
}

func exportKey(name, what string) string { return "export:" + name + ":" + what }
