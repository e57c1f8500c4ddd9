package record

import "time"

// OutputsOf is OutputOf for many processes of one sandbox: what was captured of each, the
// processes not asked about yet read in one query of the sandbox's captures (the all-runs screen
// lists every process of every sandbox: one query each cost 10,000 of them on a record of 10,000
// runs). Each answer is what OutputOf gives, and OutputOf finds them in memory afterwards.
func (r *Record) OutputsOf(sandbox string, processes []string) map[string]Output {
	out := make(map[string]Output, len(processes))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return out
	}
	missing := map[string]bool{}
	for _, p := range processes {
		if _, ok := r.capture[capKey{sandbox, p}]; !ok {
			missing[p] = true
		}
	}
	if len(missing) > 0 {
		r.loadCapturesLocked(sandbox, missing)
	}
	for _, p := range processes {
		m := r.metaLocked(sandbox, p) // in memory now: no query
		out[p] = Output{Found: !m.began.IsZero(), Last: m.lastData, Bytes: m.bytes, Ended: m.ended}
	}
	return out
}

const capturesOfQuery = `SELECT process, began, began_cursor, earlier_gone, gone_reason, dropped, bytes, last_cursor, updated, ended
	FROM captures WHERE sandbox = ?`

// loadCapturesLocked reads the capture rows of a sandbox (the primary key's prefix) and keeps those
// of the processes named as metaLocked would have; a process without a row is kept as one
// (metaLocked's answer when its query finds nothing).
func (r *Record) loadCapturesLocked(sandbox string, want map[string]bool) {
	rows, err := r.db.Query(capturesOfQuery, sandbox)
	if err != nil {
		return // metaLocked asks one by one
	}
	defer rows.Close()
	found := map[string]*captureMeta{}
	for rows.Next() {
		var p string
		var began, updated int64
		var gone int
		m := &captureMeta{}
		if rows.Scan(&p, &began, &m.beganCursor, &gone, &m.goneReason, &m.dropped, &m.bytes, &m.lastCursor, &updated, &m.ended) != nil {
			continue
		}
		if !want[p] {
			continue
		}
		m.began, m.earlierGone, m.loaded = time.Unix(0, began), gone != 0, true
		if m.bytes > 0 || m.dropped > 0 {
			m.lastData = time.Unix(0, updated)
		}
		found[p] = m
	}
	if rows.Err() != nil {
		return // a partial answer is not kept: metaLocked asks one by one
	}
	for p := range want {
		if m, ok := found[p]; ok {
			r.capture[capKey{sandbox, p}] = m
		} else {
			r.capture[capKey{sandbox, p}] = &captureMeta{}
		}
	}
}
