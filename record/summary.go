package record

// WithState calls f with a sandbox's state as the record holds it in memory, without copying it.
// State copies every entry, which is what a screen that keeps a sandbox's runs needs; a screen
// listing every run of a large record counts and classifies the runs it does not show this way
// (10,000 in under a millisecond, where copying them took several) and copies only the sandboxes
// it shows. A sandbox not in memory yet is read as State reads it. f runs under the record's
// lock: it must not keep st or anything it points to, change them, or call the record.
func (r *Record) WithState(sandbox string, f func(st *State)) {
	r.load(sandbox)
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.stateLocked(sandbox))
}

// Memo returns what f computed of a sandbox's state (as WithState hands it over) the last time
// it was asked under key, or computes it now when the state changed since or it never was. A
// screen that summarises every sandbox each time it opens (the all-runs screen counts and
// classifies 10,000 runs to title its first frame) then pays for the sandboxes that changed
// only. f runs under the record's lock as WithState's does; what it returns is kept and handed
// to later callers as is, so it must not point into st, and it must depend on st alone.
func (r *Record) Memo(sandbox, key string, f func(st *State) any) any {
	r.load(sandbox)
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stateLocked(sandbox)
	k := memoKey{sandbox, key}
	if m, ok := r.memos[k]; ok && m.st == st && m.changes == st.changes {
		return m.v
	}
	v := f(st)
	if r.memos == nil {
		r.memos = map[memoKey]memo{}
	}
	r.memos[k] = memo{st: st, changes: st.changes, v: v}
	return v
}

type memoKey struct{ sandbox, key string }

// memo is one value Memo computed, and the state it was computed of (the same State, as many
// changes made to it).
type memo struct {
	st      *State
	changes uint64
	v       any
}
