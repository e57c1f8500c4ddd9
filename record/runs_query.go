package record

import "time"

// OutputsOf is OutputOf for many processes of one sandbox, read from the file in one query of the
// sandbox's captures (the all-runs screen lists every process of every sandbox: one query each
// cost 10,000 of them on a record of 10,000 runs), with what this run holds in memory (its own
// captures) in place of the file's. It keeps nothing in memory: a screen that lists every run
// keeps the answers itself and asks OutputsHeld for what moves.
func (r *Record) OutputsOf(sandbox string, processes []string) map[string]Output {
	out := make(map[string]Output, len(processes))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return out
	}
	want := make(map[string]bool, len(processes))
	for _, p := range processes {
		if m, ok := r.capture[capKey{sandbox, p}]; ok {
			out[p] = m.output()
		} else {
			want[p] = true
		}
	}
	if len(want) == 0 {
		return out
	}
	if !r.readOutputsLocked(sandbox, want, out) {
		for p := range want {
			out[p] = r.metaLocked(sandbox, p).output() // one by one, as OutputOf
		}
		return out
	}
	for p := range want {
		if _, ok := out[p]; !ok {
			out[p] = Output{} // no capture row
		}
	}
	return out
}

// OutputsHeld is OutputOf for the processes of a sandbox whose capture this run holds in memory
// (captured, or asked about, by this run); the others are left out. It reads no file.
func (r *Record) OutputsHeld(sandbox string, processes []string) map[string]Output {
	out := map[string]Output{}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return out
	}
	for _, p := range processes {
		if m, ok := r.capture[capKey{sandbox, p}]; ok {
			out[p] = m.output()
		}
	}
	return out
}

func (m *captureMeta) output() Output {
	return Output{Found: !m.began.IsZero(), Last: m.lastData, Bytes: m.bytes, Ended: m.ended}
}

// capturesOfQuery reads what Output needs of a sandbox's capture rows (the primary key's prefix).
const capturesOfQuery = `SELECT process, began, dropped, bytes, updated, ended FROM captures WHERE sandbox = ?`

// readOutputsLocked fills out with the file's answer for the processes wanted, as metaLocked reads
// them; false when the query failed.
func (r *Record) readOutputsLocked(sandbox string, want map[string]bool, out map[string]Output) bool {
	rows, err := r.db.Query(capturesOfQuery, sandbox)
	if err != nil {
		return false
	}
	defer rows.Close()
	for rows.Next() {
		var p, ended string
		var began, dropped, bytes, updated int64
		if rows.Scan(&p, &began, &dropped, &bytes, &updated, &ended) != nil || !want[p] {
			continue
		}
		o := Output{Found: !time.Unix(0, began).IsZero(), Bytes: bytes, Ended: ended}
		if bytes > 0 || dropped > 0 {
			o.Last = time.Unix(0, updated)
		}
		out[p] = o
	}
	return rows.Err() == nil
}
