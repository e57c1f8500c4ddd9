package record

// WithState calls f with a sandbox's state as the record holds it in memory, without copying it.
// State copies every entry, which is what a screen that keeps a sandbox's runs needs; a screen
// listing every run of a large record counts and classifies the runs it does not show this way
// (10,000 in under a millisecond, where copying them took several) and copies only the sandboxes
// it shows. A sandbox not in memory yet is read as State reads it. f runs under the record's
// lock: it must not keep st or anything it points to, change them, or call the record.
func (r *Record) WithState(sandbox string, f func(st *State)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.stateLocked(sandbox))
}
