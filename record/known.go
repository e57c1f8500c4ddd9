package record

import (
	"fmt"
	"sort"
)

// ForgetKind is the action that takes a sandbox off the lists until it has new history (the
// partial index events_forget and knownInFile spell it out).
const ForgetKind = "forget"

// Forget records that the user forgot a sandbox: KnownSandboxes leaves it out until something new
// is recorded about it. Nothing on the bridge changes, and its history stays for reports.
func (r *Record) Forget(sandbox string) {
	r.Add(Event{Sandbox: sandbox, Source: FromAction, Kind: ForgetKind, Action: &Action{Kind: ForgetKind, Outcome: "ok"}})
}

// KnownSandboxes lists, sorted, the sandboxes with history in the record that the user has not
// forgotten since: the Sandboxes screen and `ls` list them even when the bridge cannot. The file is
// read once (and again after a prune); from then on Add keeps the answer, so asking often costs
// no query.
func (r *Record) KnownSandboxes() ([]string, error) {
	r.mu.Lock()
	known := r.known
	if known == nil {
		adds := r.knownAdds
		r.mu.Unlock()
		fromFile, err := r.knownInFile()
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		// what this run added and has not committed yet counts too
		for _, ev := range r.pending {
			fromFile[ev.Sandbox] = !isForget(ev)
		}
		known = fromFile
		if r.known == nil && r.knownAdds == adds {
			r.known = known // no event was added while the file was read: the answer is whole
		}
	}
	out := make([]string, 0, len(known))
	for sb, ok := range known {
		if ok {
			out = append(out, sb)
		}
	}
	r.mu.Unlock()
	sort.Strings(out)
	return out, nil
}

// noteKnownLocked keeps KnownSandboxes' answer for an event just added.
func (r *Record) noteKnownLocked(ev Event) {
	r.knownAdds++
	if r.known != nil {
		r.known[ev.Sandbox] = !isForget(ev)
	}
}

func isForget(ev Event) bool { return ev.Source == FromAction && ev.Kind == ForgetKind }

// knownInFile reads, per sandbox with history, whether the user forgot it since its last event.
// It costs a few index lookups per sandbox, however many events the record holds: the sandboxes
// are found by skipping through events_sandbox (a GROUP BY over every event took 0.3 s at 500,000
// events and grew with them), and each one's last forget comes from the partial index
// events_forget.
func (r *Record) knownInFile() (map[string]bool, error) {
	rows, err := r.db.Query(knownQuery)
	if err != nil {
		return nil, fmt.Errorf("record: known sandboxes: %w", err)
	}
	defer rows.Close()
	known := map[string]bool{}
	for rows.Next() {
		var sb string
		var last, forgot int64
		if rows.Scan(&sb, &last, &forgot) == nil {
			known[sb] = forgot == 0 || last > forgot
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("record: known sandboxes: %w", err)
	}
	return known, nil
}

const knownQuery = `WITH RECURSIVE s(sb) AS (
		SELECT MIN(sandbox) FROM events
		UNION ALL
		SELECT (SELECT MIN(sandbox) FROM events WHERE sandbox > s.sb) FROM s WHERE s.sb IS NOT NULL)
	SELECT sb, (SELECT MAX(id) FROM events WHERE sandbox = s.sb),
		COALESCE((SELECT MAX(id) FROM events WHERE sandbox = s.sb AND source = 'action' AND kind = 'forget'), 0)
	FROM s WHERE sb IS NOT NULL`

// sandboxesInFile lists the sandboxes with history, skipping through events_sandbox.
func (r *Record) sandboxesInFile() ([]string, error) {
	rows, err := r.db.Query(`WITH RECURSIVE s(sb) AS (
			SELECT MIN(sandbox) FROM events
			UNION ALL
			SELECT (SELECT MIN(sandbox) FROM events WHERE sandbox > s.sb) FROM s WHERE s.sb IS NOT NULL)
		SELECT sb FROM s WHERE sb IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var sb string
		if rows.Scan(&sb) == nil {
			out = append(out, sb)
		}
	}
	return out, rows.Err()
}
