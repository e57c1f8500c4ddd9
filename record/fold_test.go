package record

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"sandscope/client"
)

// TestFoldMatchesDecodingEveryEvent: a state folded by reading the marking stream events from
// their columns is the state every decoded event gives, on random histories of processes and
// terminals that appear, are streamed (interrupted, resumed, gaps, suspect ends, endings with a
// status, losses), end, vanish and come back in a new container, streams of entries not listed
// yet included. Histories are written in UTC and in another zone.
func TestFoldMatchesDecodingEveryEvent(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		dir := t.TempDir()
		r, err := Open(Options{Dir: dir, Bridge: bridgeID})
		if err != nil {
			t.Fatal(err)
		}
		randomHistory(r, seed, 0, 400)
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		fresh, err := Open(Options{Dir: dir, Bridge: bridgeID})
		if err != nil {
			t.Fatal(err)
		}
		for _, sb := range []string{"sb0", "sb1"} {
			got := NewState(sb)
			if _, err := fresh.fold(got, sb); err != nil {
				t.Fatal(err)
			}
			sameAsEveryEvent(t, fresh, got, fmt.Sprintf("seed %d, %s", seed, sb))
		}
		fresh.Close()
	}
}

// sameAsEveryEvent fails t unless got is the state r's events of its sandbox give when each is
// decoded and applied.
func sameAsEveryEvent(t *testing.T, r *Record, got *State, what string) {
	t.Helper()
	evs, err := r.Events(got.Sandbox, "")
	if err != nil {
		t.Fatal(err)
	}
	want := NewState(got.Sandbox)
	for _, ev := range evs {
		want.Apply(ev)
	}
	// a time read from its column is the same instant in the reader's zone (StreamAt is only ever
	// shown relative to now)
	for _, l := range [][2][]*Entry{{got.Processes, want.Processes}, {got.Terminals, want.Terminals}} {
		for i := range l[0] {
			if i < len(l[1]) && l[0][i].StreamAt.Equal(l[1][i].StreamAt) {
				l[0][i].StreamAt = l[1][i].StreamAt
			}
		}
	}
	// compared as a snapshot keeps them: a time read from JSON is the same instant in another
	// *time.Location, and an empty list reads as none
	g, err := encodeSnapshot(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := encodeSnapshot(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		for i := range want.Processes {
			if i < len(got.Processes) && !reflect.DeepEqual(got.Processes[i], want.Processes[i]) {
				t.Errorf("%s: process %d\n got %+v\nwant %+v", what, i, *got.Processes[i], *want.Processes[i])
			}
		}
		t.Fatalf("%s: the fold differs from decoding every event (%d events):\n got %s\nwant %s", what, len(evs), g, w)
	}
}

// randomHistory adds n random events (from the i-th on) to r's sandboxes sb0 and sb1: processes
// and terminals that appear, are streamed (interrupted, resumed, gaps, suspect ends, endings with
// a status, losses), end, vanish and come back in a new container, streams of entries not listed
// yet included; in UTC for odd seeds, in another zone for even ones.
func randomHistory(r *Record, seed int64, from, n int) {
	rng := rand.New(rand.NewSource(seed*1000 + int64(from)))
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	if seed%2 == 0 {
		t0 = t0.In(time.FixedZone("elsewhere", 3600))
	}
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 1500 * time.Millisecond) }
	inc := 1 + from/100
	for i := from; i < from+n; i++ {
		sb := fmt.Sprintf("sb%d", rng.Intn(2))
		pid := fmt.Sprintf("p%d", rng.Intn(6))
		tid := fmt.Sprintf("t%d", rng.Intn(3))
		p := &client.Process{ID: pid, PID: 10 + rng.Intn(5), Command: []string{"run", pid}, State: "running", StartedAt: at(i - 3), Incarnation: inc}
		watch := func(kind client.SandboxEventKind, p *client.Process, term *client.Terminal) {
			r.Add(FromSandboxEvent(client.SandboxEvent{Kind: kind, Sandbox: sb, Time: at(i), Incarnation: client.Incarnation{Number: inc}, Process: p, Terminal: term}))
		}
		stream := func(ev client.LogEvent) {
			ev.Time = at(i)
			r.Add(FromLogEvent(sb, pid, ev))
		}
		switch rng.Intn(16) {
		case 0:
			watch(client.ProcessAppeared, p, nil)
		case 1:
			q := *p
			q.State, q.Exit = "exited", &client.Exit{Code: rng.Intn(3)}
			watch(client.ProcessChanged, &q, nil)
		case 2:
			watch(client.ProcessVanished, p, nil)
		case 3:
			watch(client.TerminalAppeared, nil, &client.Terminal{ID: tid, PID: 7, Command: []string{"bash"}, Status: "running", Incarnation: inc})
		case 4:
			inc++
			r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.IncarnationChanged, Sandbox: sb, Time: at(i),
				Incarnation: client.Incarnation{Number: inc}, Previous: client.Incarnation{Number: inc - 1}}))
		case 5:
			stream(client.LogEvent{Kind: client.Ended, Status: &client.Process{ID: pid, State: "exited", Exit: &client.Exit{Code: 1}, Incarnation: inc}})
		case 6:
			stream(client.LogEvent{Kind: client.Lost, Loss: &client.LossEvidence{}})
		case 7:
			// a stream of a process not listed yet, its status lookup included
			stream(client.LogEvent{Kind: client.SuspectEnd, Reason: "stream ended", Status: p})
		case 8:
			r.Add(FromTermEvent(sb, tid, client.TermEvent{Kind: client.TermInterrupted, Time: at(i)}))
		case 9:
			r.Add(FromTermEvent(sb, tid, client.TermEvent{Kind: client.TermExited, Time: at(i), Exit: &client.Exit{Code: 0}}))
		case 10:
			stream(client.LogEvent{Kind: client.Gap, Cursor: fmt.Sprint(i), Gap: &client.GapInfo{Reason: client.GapTruncated}})
		default:
			kinds := []client.LogEventKind{client.Interrupted, client.Resumed, client.Reconnecting, client.SuspectEnd}
			stream(client.LogEvent{Kind: kinds[rng.Intn(len(kinds))], Cursor: fmt.Sprint(i), Attempt: 1})
		}
	}
}
