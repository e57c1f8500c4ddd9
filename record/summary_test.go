package record

import (
	"path/filepath"
	"testing"
	"time"

	"sandscope/client"
)

// TestWithStateIsWhatStateCopies: WithState's state has the processes, then the terminals, that
// State returns a copy of, in the same order, as they are now; a sandbox the record has not heard
// of has none.
func TestWithStateIsWhatStateCopies(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	rec := openAt(t, t0)
	inc := client.Incarnation{Number: 1}
	rec.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "sb", Time: t0, Incarnation: inc}))
	for _, id := range []string{"p1", "p2", "p3"} {
		rec.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: t0, Incarnation: inc,
			Process: &client.Process{ID: id, State: "running", Incarnation: 1}}))
	}
	rec.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.TerminalAppeared, Sandbox: "sb", Time: t0, Incarnation: inc,
		Terminal: &client.Terminal{ID: "t1", Status: "running", Incarnation: 1}}))
	rec.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "sb", Time: t0, Incarnation: inc,
		Process: &client.Process{ID: "p2", State: "exited", Exit: &client.Exit{Code: 1}, Incarnation: 1}}))

	type seen struct {
		kind        EntityKind
		id, state   string
		sandbox     string
		incarnation int
	}
	var got []seen
	rec.WithState("sb", func(st *State) {
		for _, e := range append(append([]*Entry(nil), st.Processes...), st.Terminals...) {
			got = append(got, seen{e.Kind, e.ID, e.State(), st.Sandbox, e.Incarnation})
		}
	})
	st := rec.State("sb")
	var want []seen
	for _, e := range append(append([]*Entry(nil), st.Processes...), st.Terminals...) {
		want = append(want, seen{e.Kind, e.ID, e.State(), st.Sandbox, e.Incarnation})
	}
	if len(got) != 4 || len(got) != len(want) {
		t.Fatalf("visited %+v, State has %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("visit %d: %+v, State has %+v", i, got[i], want[i])
		}
	}
	if got[1].state != "exited" {
		t.Errorf("p2 visited as %q, after its change", got[1].state)
	}
	rec.WithState("nowhere", func(st *State) {
		if st.Sandbox != "nowhere" || len(st.Processes)+len(st.Terminals) != 0 {
			t.Errorf("a sandbox never heard of: %+v", st)
		}
	})
}

// TestMemoFollowsTheState: Memo computes once per state of a sandbox: again after that sandbox
// changes (an event, a launch's request kept), not after another sandbox does, and apart for each
// key.
func TestMemoFollowsTheState(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	rec := openAt(t, t0)
	inc := client.Incarnation{Number: 1}
	appear := func(sb, id string) {
		rec.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: sb, Time: t0, Incarnation: inc,
			Process: &client.Process{ID: id, State: "running", Incarnation: 1}}))
	}
	appear("sb", "p1")
	appear("other", "q1")
	calls := 0
	count := func(key string) int {
		return rec.Memo("sb", key, func(st *State) any { calls++; return len(st.Processes) }).(int)
	}
	step := func(what string, key string, want, wantCalls int) {
		t.Helper()
		if got := count(key); got != want || calls != wantCalls {
			t.Fatalf("%s: %d processes after %d computations, want %d after %d", what, got, calls, want, wantCalls)
		}
	}
	step("first", "n", 1, 1)
	step("asked again", "n", 1, 1)
	step("another key", "m", 1, 2)
	appear("other", "q2")
	step("after another sandbox's event", "n", 1, 2)
	appear("sb", "p2")
	step("after the sandbox's event", "n", 2, 3)
	step("asked again", "n", 2, 3)
	rec.SetRequest("sb", "p2", client.ExecRequest{Argv: []string{"true"}})
	step("after a kept request", "n", 2, 4)
	step("the other key, changed meanwhile", "m", 2, 5)
}

// openAt opens a record in a fresh directory whose clock stands at now; it is closed with the test.
func openAt(t *testing.T, now time.Time) *Record {
	t.Helper()
	rec, err := Open(Options{Dir: filepath.Join(t.TempDir(), "record"), Bridge: "test", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}
