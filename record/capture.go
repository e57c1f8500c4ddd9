package record

import (
	"database/sql"
	"fmt"
	"time"

	"sandscope/client"
)

// Capture is what the record kept of a process's output.
type Capture struct {
	Found       bool      // capture ever began for this process
	Began       time.Time // when capture began
	BeganCursor string    // the cursor of the first byte captured ("" = from the first byte the bridge had)
	// EarlierGone says output before the first captured byte was no longer at the bridge when
	// capture began (evicted, or the capture started late); GoneReason says why.
	EarlierGone bool
	GoneReason  string
	Dropped     int64  // bytes captured and later removed to keep the per-process budget (the oldest go first)
	Bytes       int64  // bytes kept
	LastCursor  string // cursor of the last byte captured
	Ended       string // why capture stopped ("" while it runs or when it never stopped cleanly)
	// Chunks is the output kept, oldest first. A chunk whose bytes are gone (its segment file
	// deleted or cut short) has Lost set and no Data; Lost here counts their bytes.
	Chunks []Chunk
	Lost   int64
}

// maxChunk is the largest output row; consecutive chunks of one stream are merged up to it.
const maxChunk = 64 << 10

// outputBatch is how much queued output the writer commits without waiting for its output round.
const outputBatch = 4 << 20

// CaptureBegin notes that output capture of a process begins. earlierGone says bytes before the
// first captured one are already gone, and why. Capturing a process again (after a restart)
// continues the same capture.
func (r *Record) CaptureBegin(sandbox, process string, earlierGone bool, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.metaLocked(sandbox, process)
	if m.began.IsZero() {
		m.began = r.now()
		m.earlierGone, m.goneReason = earlierGone, why
	} else if earlierGone && !m.earlierGone && m.bytes == 0 && m.dropped == 0 {
		m.earlierGone, m.goneReason = true, why
	}
	m.ended = ""
	m.dirty = true
	r.kickWriter()
}

// CaptureGap notes that bytes are missing in the middle of a capture (the stream had a gap).
// Before the first captured byte it marks the capture as beginning after lost output.
func (r *Record) CaptureGap(sandbox, process, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.metaLocked(sandbox, process)
	if m.bytes == 0 && m.dropped == 0 && m.lastCursor == "" {
		m.earlierGone, m.goneReason, m.dirty = true, why, true
	}
}

// CaptureData keeps a Data event's bytes. It copies them and never blocks on the disk.
func (r *Record) CaptureData(sandbox, process string, ev client.LogEvent) {
	if len(ev.Data) == 0 {
		return
	}
	t := ev.Time
	if t.IsZero() {
		t = r.now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	m := r.metaLocked(sandbox, process)
	if m.began.IsZero() {
		m.began = r.now()
	}
	if m.bytes == 0 && m.dropped == 0 && m.beganCursor == "" {
		m.beganCursor = ev.Cursor
	}
	m.bytes += int64(len(ev.Data))
	m.lastCursor = ev.Cursor
	m.lastData = t
	m.dirty = true
	// a flood is committed in batches of outputBatch, not held for the whole round
	if r.queued += len(ev.Data); r.queued >= outputBatch && r.queued-len(ev.Data) < outputBatch {
		r.kickWriter()
	}
	// output waits for the writer's next output round (or an event's commit): the writer is told
	// of the first output since a commit only, not woken per chunk
	if r.outputWaiting.CompareAndSwap(false, true) {
		select {
		case r.outputKick <- struct{}{}:
		default:
		}
	}
	// the process's newest queued chunk, among the last few: captures run side by side, and
	// merging only into the very last chunk made one row per event when they interleave
	for i := len(r.chunks) - 1; i >= 0 && i >= len(r.chunks)-mergeLookback; i-- {
		c := &r.chunks[i]
		if c.Sandbox != sandbox || c.Process != process {
			continue
		}
		if n := len(c.Data) + len(ev.Data); !c.sealed && c.Stream == ev.Stream && n <= maxChunk {
			if n > cap(c.Data) {
				// a chatty process: grow into a whole chunk at once, one the writer emptied
				// (growing by doubling copied each byte again and cleared new memory)
				c.Data = append(r.spareLocked(), c.Data...)
			}
			c.Data = append(c.Data, ev.Data...)
			c.Cursor = ev.Cursor
			return
		}
		break
	}
	var data []byte
	if len(ev.Data) >= maxChunk/16 && len(ev.Data) <= maxChunk {
		data = r.spareLocked() // at most 16 times the bytes it holds, like a grown one
	} else {
		data = make([]byte, 0, max(len(ev.Data), 4<<10))
	}
	data = append(data, ev.Data...)
	r.chunks = append(r.chunks, Chunk{Sandbox: sandbox, Process: process, Time: t, Cursor: ev.Cursor, Stream: ev.Stream, Data: data})
}

// maxSpare bounds the emptied chunk buffers kept for reuse (maxChunk each: 4 MiB).
const maxSpare = 64

// spareLocked returns an empty buffer of maxChunk bytes' capacity, reused when one is spare.
func (r *Record) spareLocked() []byte {
	if n := len(r.spare); n > 0 {
		b := r.spare[n-1]
		r.spare[n-1] = nil
		r.spare = r.spare[:n-1]
		return b
	}
	return make([]byte, 0, maxChunk)
}

// recycle keeps the buffers of written chunks for the next ones (nothing refers to them once the
// transaction that stored them is over). Run by the writer.
func (r *Record) recycle(chunks []Chunk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spared = true
	for i := range chunks {
		if b := chunks[i].Data; cap(b) == maxChunk && len(r.spare) < maxSpare {
			r.spare = append(r.spare, b[:0])
		}
		chunks[i].Data = nil
	}
}

// mergeLookback is how far back CaptureData looks for a process's chunk to grow (more than the
// manager's captures at once).
const mergeLookback = 32

// CaptureEnd notes why capture of a process stopped (the process ended or was lost, the budget,
// sandscope quit).
func (r *Record) CaptureEnd(sandbox, process, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.metaLocked(sandbox, process)
	m.ended, m.dirty = why, true
	r.kickWriter()
}

// metaLocked returns the capture row of a process, loading it from disk on first use.
func (r *Record) metaLocked(sandbox, process string) *captureMeta {
	k := capKey{sandbox, process}
	if m, ok := r.capture[k]; ok {
		return m
	}
	m := &captureMeta{}
	var began, updated int64
	var gone int
	err := r.db.QueryRow(`SELECT began, began_cursor, earlier_gone, gone_reason, dropped, bytes, last_cursor, updated, ended
		FROM captures WHERE sandbox = ? AND process = ?`, sandbox, process).
		Scan(&began, &m.beganCursor, &gone, &m.goneReason, &m.dropped, &m.bytes, &m.lastCursor, &updated, &m.ended)
	if err == nil {
		m.began, m.earlierGone, m.loaded = time.Unix(0, began), gone != 0, true
		if m.bytes > 0 || m.dropped > 0 {
			m.lastData = time.Unix(0, updated)
		}
	}
	r.capture[k] = m
	return m
}

// writeChunks stores output and capture rows in tx, then trims each process to its budget. The
// chunks' bytes go to the active segment first, in one write; their rows say where.
func (r *Record) writeChunks(tx *sql.Tx, out *segTx, chunks []Chunk, metas map[capKey]captureMeta) error {
	if len(chunks) > 0 {
		bufs := r.outBufs[:0]
		for _, c := range chunks {
			if len(c.Data) > 0 {
				bufs = append(bufs, c.Data)
			}
		}
		seg, off, err := out.append(bufs)
		clear(bufs) // the chunks' buffers are recycled: nothing here keeps them
		r.outBufs = bufs[:0]
		if err != nil {
			return err
		}
		st, err := r.txStmt(tx, insertChunk)
		if err != nil {
			return fmt.Errorf("record: write output: %w", err)
		}
		for _, c := range chunks {
			if _, err := st.Exec(c.Sandbox, c.Process, c.Time.UnixNano(), c.Cursor, int(c.Stream), seg, off, len(c.Data)); err != nil {
				return fmt.Errorf("record: write output: %w", err)
			}
			off += int64(len(c.Data))
		}
	}
	var upsert *sql.Stmt
	for k, m := range metas {
		if m.bytes > r.budget.CapturePerRun {
			d, err := r.trimOldest(tx, k, m.bytes-r.budget.CapturePerRun)
			if err != nil {
				return err
			}
			if d > 0 {
				r.reclaimDue.Store(true)
			}
			r.mu.Lock()
			if cur := r.capture[k]; cur != nil {
				cur.bytes -= d
				cur.dropped += d
				m = *cur
			}
			r.mu.Unlock()
		}
		gone := 0
		if m.earlierGone {
			gone = 1
		}
		if upsert == nil {
			var err error
			if upsert, err = r.txStmt(tx, upsertCapture); err != nil {
				return fmt.Errorf("record: write capture: %w", err)
			}
		}
		if _, err := upsert.Exec(k.sandbox, k.process, m.began.UnixNano(), m.beganCursor, gone, m.goneReason, m.dropped, m.bytes, m.lastCursor, r.now().UnixNano(), m.ended); err != nil {
			return fmt.Errorf("record: write capture: %w", err)
		}
	}
	return nil
}

const (
	insertChunk   = "INSERT INTO chunks (sandbox, process, time, cursor, stream, data, seg, off, len) VALUES (?, ?, ?, ?, ?, x'', ?, ?, ?)"
	upsertCapture = `INSERT INTO captures (sandbox, process, began, began_cursor, earlier_gone, gone_reason, dropped, bytes, last_cursor, updated, ended)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (sandbox, process) DO UPDATE SET began = excluded.began, began_cursor = excluded.began_cursor,
		earlier_gone = excluded.earlier_gone, gone_reason = excluded.gone_reason, dropped = excluded.dropped, bytes = excluded.bytes,
		last_cursor = excluded.last_cursor, updated = excluded.updated, ended = excluded.ended`
)

// txStmt is query prepared for tx, reusing what the writer prepared before on the same
// connection: compiling the captures upsert at every commit, once per process, cost as much as
// inserting the output (figure 11b's profile). Run by the writer; the statement ends with tx.
func (r *Record) txStmt(tx *sql.Tx, query string) (*sql.Stmt, error) {
	st := r.stmt(query)
	if st == nil {
		return tx.Prepare(query) // as before: prepared for this transaction alone
	}
	return tx.Stmt(st), nil
}

// stmt prepares one of the writer's statements for later batches (nil when it cannot). Called
// by write before its transaction, so it takes the connection the transaction will: prepared
// within the transaction, whose connection is busy, it took a second one, a file opened and its
// schema parsed for one statement, which doubled what a command paid to record at its end.
func (r *Record) stmt(query string) *sql.Stmt {
	if st := r.prepared[query]; st != nil {
		return st
	}
	st, err := r.db.Prepare(query)
	if err != nil {
		return nil
	}
	if r.prepared == nil {
		r.prepared = map[string]*sql.Stmt{}
	}
	r.prepared[query] = st
	return st
}

// closePrepared lets the writer's prepared statements go. Run by the writer as it ends.
func (r *Record) closePrepared() {
	for q, st := range r.prepared {
		_ = st.Close()
		delete(r.prepared, q)
	}
}

// trimOldest deletes a process's oldest output rows until at least excess bytes are gone, and
// returns how many were. The segments it deleted from are noted for reclaim (trimming). Its
// statements are prepared once per writer: compiled at every commit for every process at its
// budget, they were a fifth of the writer's time (BenchmarkCaptureWriterAtCap).
func (r *Record) trimOldest(tx *sql.Tx, k capKey, excess int64) (int64, error) {
	oldest, err := r.txStmt(tx, oldestChunks)
	if err != nil {
		return 0, fmt.Errorf("record: trim output: %w", err)
	}
	del, err := r.txStmt(tx, deleteOldestChunks)
	if err != nil {
		return 0, fmt.Errorf("record: trim output: %w", err)
	}
	var deleted int64
	for deleted < excess {
		rows, err := oldest.Query(k.sandbox, k.process)
		if err != nil {
			return deleted, fmt.Errorf("record: trim output: %w", err)
		}
		var upto int64 = -1
		for rows.Next() && deleted < excess {
			var id, seg, n int64
			if rows.Scan(&id, &seg, &n) != nil {
				break
			}
			upto, deleted = id, deleted+n
			if seg > 0 {
				if r.trimming == nil {
					r.trimming = map[int64]bool{}
				}
				r.trimming[seg] = true
			}
		}
		rows.Close()
		if upto < 0 {
			break
		}
		if _, err := del.Exec(k.sandbox, k.process, upto); err != nil {
			return deleted, fmt.Errorf("record: trim output: %w", err)
		}
	}
	return deleted, nil
}

const (
	oldestChunks       = "SELECT id, seg, " + chunkLen + " FROM chunks WHERE sandbox = ? AND process = ? ORDER BY id LIMIT 64"
	deleteOldestChunks = "DELETE FROM chunks WHERE sandbox = ? AND process = ? AND id <= ?"
)

// pruneCaptures keeps the total captured output under the budget: whole captures go, the least
// recently updated first. It reports whether it removed any.
func (r *Record) pruneCaptures() bool {
	var total int64
	if r.db.QueryRow("SELECT bytes FROM capture_total WHERE id = 1").Scan(&total) != nil || total <= r.budget.CaptureTotal {
		return false
	}
	rows, err := r.db.Query("SELECT sandbox, process, bytes FROM captures WHERE bytes > 0 ORDER BY updated")
	if err != nil {
		return false
	}
	var victims []capKey
	var sizes []int64
	for rows.Next() && total > r.budget.CaptureTotal*9/10 {
		var k capKey
		var n int64
		if rows.Scan(&k.sandbox, &k.process, &n) != nil {
			break
		}
		victims = append(victims, k)
		sizes = append(sizes, n)
		total -= n
	}
	rows.Close()
	const why = "removed to keep the record under its total output budget"
	r.reclaimDue.Store(true)
	for i, k := range victims {
		if _, err := r.db.Exec("DELETE FROM chunks WHERE sandbox = ? AND process = ?", k.sandbox, k.process); err != nil {
			continue
		}
		_, _ = r.db.Exec("UPDATE captures SET dropped = dropped + bytes, bytes = 0, ended = ? WHERE sandbox = ? AND process = ?", why, k.sandbox, k.process)
		r.mu.Lock()
		if m := r.capture[k]; m != nil {
			m.dropped += sizes[i]
			m.bytes = 0
			m.ended = why
		}
		r.mu.Unlock()
	}
	return len(victims) > 0
}

// Captured returns what was captured of a process (committed output; call Flush first for the
// newest bytes).
func (r *Record) Captured(sandbox, process string) (Capture, error) {
	var c Capture
	var began, updated int64
	var gone int
	err := r.db.QueryRow(`SELECT began, began_cursor, earlier_gone, gone_reason, dropped, bytes, last_cursor, updated, ended
		FROM captures WHERE sandbox = ? AND process = ?`, sandbox, process).
		Scan(&began, &c.BeganCursor, &gone, &c.GoneReason, &c.Dropped, &c.Bytes, &c.LastCursor, &updated, &c.Ended)
	if err == sql.ErrNoRows {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("record: capture of %s: %w", process, err)
	}
	c.Found, c.Began, c.EarlierGone = true, time.Unix(0, began), gone != 0
	rows, err := r.db.Query("SELECT id, time, cursor, stream, data, seg, off, len FROM chunks WHERE sandbox = ? AND process = ? ORDER BY id", sandbox, process)
	if err != nil {
		return c, fmt.Errorf("record: capture of %s: %w", process, err)
	}
	var places []chunkPlace
	for rows.Next() {
		var ch Chunk
		var p chunkPlace
		var t int64
		var s int
		if err := rows.Scan(&p.id, &t, &ch.Cursor, &s, &ch.Data, &p.seg, &p.off, &p.n); err != nil {
			rows.Close()
			return c, fmt.Errorf("record: capture of %s: %w", process, err)
		}
		ch.Sandbox, ch.Process, ch.Time, ch.Stream = sandbox, process, time.Unix(0, t), client.Stream(s)
		c.Chunks = append(c.Chunks, ch)
		places = append(places, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("record: capture of %s: %w", process, err)
	}
	c.Lost = r.readChunks(places, func(i int) *Chunk { return &c.Chunks[i] })
	return c, nil
}

// captureCursor is the cursor of the last byte captured of a process, where a new capture
// resumes. It reads the captures row only (Captured reads every chunk kept, up to the 8 MiB
// per-process budget, for each capture that starts).
func (r *Record) captureCursor(sandbox, process string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metaLocked(sandbox, process).lastCursor
}

// Output is a summary of a process's captured output, cheap enough to ask for every row of a
// table on every refresh (no output is read).
type Output struct {
	Found bool      // capture ever began
	Last  time.Time // when the last captured byte arrived (zero: none yet)
	Bytes int64     // bytes kept
	Ended string    // why capture stopped ("" while it runs)
}

// OutputOf summarises what was captured of a process so far.
func (r *Record) OutputOf(sandbox, process string) Output {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Output{}
	}
	m := r.metaLocked(sandbox, process)
	return Output{Found: !m.began.IsZero(), Last: m.lastData, Bytes: m.bytes, Ended: m.ended}
}

// dropSpare lets the spare buffers go once output has stopped for a while. Run by the writer.
func (r *Record) dropSpare() {
	if !r.spared || r.outputWaiting.Load() || time.Now().Before(r.spareDropAt()) {
		return
	}
	r.mu.Lock()
	r.spare, r.spared = nil, false
	r.mu.Unlock()
}

// spareDropAt is when dropSpare lets the spare buffers go: two output rounds after the last
// output commit.
func (r *Record) spareDropAt() time.Time { return r.lastOutput.Add(2 * r.outputEvery) }
