package record

import (
	"sync/atomic"
	"testing"
	"time"

	"sandscope/client"
)

// forgetScene records, a day and more before recent, a sandbox "demo" with a run that ended, one
// still running and an action, and a sandbox "gone" with one ended run; then, at recent, a run of
// demo that ended and an action.
func forgetScene(t *testing.T, r *Record, recent time.Time) {
	t.Helper()
	inc := client.Incarnation{Number: 1}
	old := recent.Add(-3 * 24 * time.Hour)
	exited := func(id string) *client.Process {
		p := running(id, 7, 1)
		p.State = "exited"
		return p
	}
	add := func(sb string, at time.Time, ev client.SandboxEvent) {
		ev.Sandbox, ev.Time, ev.Incarnation = sb, at, inc
		r.Add(FromSandboxEvent(ev))
	}
	add("demo", old, client.SandboxEvent{Kind: client.SandboxStarted})
	add("demo", old, client.SandboxEvent{Kind: client.ProcessAppeared, Process: exited("ended-early")})
	add("demo", old, client.SandboxEvent{Kind: client.ProcessAppeared, Process: running("still-running", 8, 1)})
	r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Time: old, Action: &Action{Kind: "exec", Outcome: "ok"}})
	add("gone", old, client.SandboxEvent{Kind: client.ProcessAppeared, Process: exited("g1")})
	add("demo", recent, client.SandboxEvent{Kind: client.ProcessAppeared, Process: exited("later")})
	r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "kill", Time: recent, Action: &Action{Kind: "kill", Outcome: "ok"}})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
}

// A pruning takes out of the states in memory what it took out of the file: what a screen lists
// and what a report of the file says agree, and memory does not keep what the budget let go.
func TestPruningForgetsWhatTheFileNoLongerHolds(t *testing.T) {
	dir := t.TempDir()
	recent := t0.Add(3 * 24 * time.Hour)
	var now atomic.Int64
	now.Store(recent.Add(-4 * 24 * time.Hour).UnixNano()) // nothing is old yet
	o := Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Millisecond, Budget: Budget{MaxAge: 24 * time.Hour},
		Now: func() time.Time { return time.Unix(0, now.Load()) }}
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	forgetScene(t, r, recent)
	st := r.State("demo")
	if len(st.Processes) != 3 || len(st.Actions) != 2 || !r.Loaded("gone") {
		t.Fatalf("before pruning: %d processes, %d actions, gone loaded %v", len(st.Processes), len(st.Actions), r.Loaded("gone"))
	}
	changes, unsubscribe := r.Subscribe()
	defer unsubscribe()

	now.Store(recent.UnixNano()) // the first events are now three days old, over the budget's day
	r.pruneMore.Store(true)
	r.kickWriter()
	waitPruned(t, r)

	st = r.State("demo")
	if st.Find(Process, "ended-early") != nil {
		t.Error("a run whose every event was pruned is still in memory")
	}
	if st.Find(Process, "still-running") == nil {
		t.Error("a run still running was forgotten with its pruned events")
	}
	if st.Find(Process, "later") == nil {
		t.Error("a run with its events left was forgotten")
	}
	if len(st.Actions) != 1 || st.Actions[0].Kind != "kill" {
		t.Errorf("actions after pruning: %+v, want the later one only", st.Actions)
	}
	if r.Loaded("gone") {
		t.Error("a sandbox with nothing left in the file is still in memory")
	}
	if sbs, _ := r.Sandboxes(); len(sbs) != 1 || sbs[0] != "demo" {
		t.Errorf("sandboxes after pruning: %v, want demo only", sbs)
	}
	told := map[string]bool{}
	for deadline := time.After(5 * time.Second); !told["demo"] || !told["gone"]; {
		select {
		case sb := <-changes:
			told[sb] = true
		case <-deadline:
			t.Fatalf("subscribers told of %v, want demo and gone", told)
		}
	}

	// a fresh read of the file lists the same runs (but the one still running, which it learns
	// of again from the watcher)
	fresh := reopenedWith(t, r, o).State("demo")
	if fresh.Find(Process, "ended-early") != nil || fresh.Find(Process, "later") == nil || len(fresh.Actions) != 1 {
		t.Errorf("read again: %d processes, %d actions", len(fresh.Processes), len(fresh.Actions))
	}
}

// A run with an event still to be written is not forgotten, nor a sandbox with one.
func TestForgetKeepsWhatWaitsToBeWritten(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	forgetScene(t, r, t0)
	r.State("gone")
	r.mu.Lock() // as Add leaves an event, without waking the writer
	r.pending = append(r.pending, Event{Sandbox: "demo", Source: FromStream, Kind: "interrupted", Entity: Process, EntityID: "ended-early", Time: t0},
		Event{Sandbox: "gone", Source: FromAction, Kind: "exec", Time: t0, Action: &Action{Kind: "exec"}})
	r.mu.Unlock()
	gone := map[prunedRef]bool{{entity: Process, id: "ended-early"}: true, {entity: Process, id: "later"}: true, {entity: Process, id: "g1"}: true}
	if !r.forgetIn("demo", gone, nil, false) {
		t.Fatal("nothing forgotten of demo")
	}
	st := r.State("demo")
	if st.Find(Process, "ended-early") == nil {
		t.Error("a run with an event waiting to be written was forgotten")
	}
	if st.Find(Process, "later") != nil {
		t.Error("an ended run with nothing left was kept")
	}
	r.forgetIn("gone", gone, nil, true)
	if !r.Loaded("gone") {
		t.Error("a sandbox with an event waiting to be written was dropped")
	}
}

// After a pruning that cut runs' histories short (a generated record over its budget, every
// state in memory), memory lists what a fresh read of the file lists: no run more, no run fewer.
func TestPruningLeavesWhatAFreshReadLists(t *testing.T) {
	dir := t.TempDir()
	s := Synthetic{Sandboxes: 4, Runs: 80, Events: 20_000, CaptureBytes: 256, End: time.Now()}
	if err := WriteSynthetic(dir, bridgeID, s); err != nil {
		t.Fatal(err)
	}
	o := Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Millisecond,
		Budget: Budget{MaxEvents: 1 << 30, MaxAge: 365 * 24 * time.Hour, CaptureTotal: 1 << 40}}
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var sbs []string
	for i := 0; i < s.Sandboxes; i++ {
		sb := s.SandboxName(i)
		sbs = append(sbs, sb)
		// in memory before the pruning; the watcher then finds each sandbox's first run gone (an
		// event left after the pruning that no fold makes a run from)
		first := r.State(sb).Processes[0]
		r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessVanished, Sandbox: sb, Time: s.End,
			Incarnation: client.Incarnation{Number: first.Incarnation}, Process: &first.Process, Evidence: []string{"absent from the process list"}}))
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	r.budget.MaxEvents = 8_000 // as a budget lowered while it runs: the next pruning trims the oldest
	r.pruneMore.Store(true)
	r.kickWriter()
	waitPruned(t, r)
	listed := func(r *Record) map[string]bool {
		runs := map[string]bool{}
		for _, sb := range sbs {
			for _, e := range r.State(sb).Processes {
				if !stillRunning(e) { // kept in memory (forgetPruned): compared apart
					runs[sb+"/"+e.ID] = true
				}
			}
		}
		return runs
	}
	inMemory := listed(r)
	fresh := listed(reopenedWith(t, r, o))
	if len(fresh) == 0 || len(fresh) >= s.Runs {
		t.Fatalf("a fresh read lists %d of %d runs: the pruning did not cut any run short", len(fresh), s.Runs)
	}
	for k := range inMemory {
		if !fresh[k] {
			t.Errorf("%s listed in memory after the pruning, not by a fresh read", k)
		}
	}
	for k := range fresh {
		if !inMemory[k] {
			t.Errorf("%s listed by a fresh read, not in memory after the pruning", k)
		}
	}
}

// reopenedWith closes r and opens its file again with o, closed at the test's end.
func reopenedWith(t *testing.T, r *Record, o Options) *Record {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r2.Close() })
	return r2
}
