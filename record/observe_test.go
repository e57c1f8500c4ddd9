package record

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

func boolp(b bool) *bool { return &b }

// What `logs -f` saw of a process lost in a replaced container, folded as a screen folds it: the
// lookups make the entry and the sandbox's first incarnation, the stream's LOST marks the entry,
// and the loss evidence, which names the new incarnation, leaves both incarnations on the timeline.
func TestLookupsFoldLikeTheWatcher(t *testing.T) {
	p := client.Process{ID: "p1", PID: 7, Command: []string{"agent"}, State: "running", Incarnation: 2}
	run, ok := LookupRunningProcess("box", p, "the process list")
	if !ok {
		t.Fatal("a running process says nothing of its sandbox")
	}
	loss := &client.LossEvidence{Lookup: "GET process: 404 not_found", SandboxRunning: boolp(true), Incarnation: 3, Previous: 2}
	evs := []Event{run, LookupProcess("box", p), FromLogEvent("box", p.ID, client.LogEvent{Kind: client.Lost, Loss: loss, Status: &p, Reason: client.DescribeLoss(loss)})}
	evs = append(evs, LookupLoss("box", "process p1", loss, time.Now())...)
	st := NewState("box")
	for _, ev := range evs {
		if ev.Source == FromLookup && ev.Kind != client.IncarnationChanged.String() && ev.Incarnation.Number != 0 && ev.Incarnation.Number != 2 {
			t.Errorf("lookup %q carries incarnation %d", ev.Kind, ev.Incarnation.Number)
		}
		st.Apply(ev)
	}
	e := st.Find(Process, "p1")
	if e == nil || e.Incarnation != 2 || e.Inferred || !e.Lost || len(e.Evidence) == 0 || strings.Join(e.Command(), " ") != "agent" {
		t.Fatalf("entry %+v", e)
	}
	if st.Running == nil || !*st.Running || st.Current.Number != 3 || st.Current.Inferred {
		t.Fatalf("sandbox: running %v current %+v", st.Running, st.Current)
	}
	if len(st.Incarnations) != 2 || st.Incarnations[0].Number != 2 || st.Incarnations[1].Number != 3 || st.Incarnations[1].Inferred {
		t.Fatalf("incarnations %+v", st.Incarnations)
	}
	if ev := st.Incarnations[1].Evidence; !strings.Contains(strings.Join(ev, "; "), "the bridge reports incarnation 3 (was 2)") {
		t.Errorf("the new incarnation's evidence: %q", ev)
	}
	if !st.Stale(e.Incarnation) || StateWord(st, e) != "LOST" {
		t.Errorf("the lost entry: stale %v, %s", st.Stale(e.Incarnation), StateWord(st, e))
	}

	// Without the lookup first, the stream's LOST still makes the entry from the status lookup it
	// carries: the process is known, in the incarnation the bridge reported, and LOST.
	bare := NewState("box")
	bare.Apply(evs[2])
	if len(bare.Processes) != 1 || !bare.Processes[0].Lost || bare.Processes[0].Incarnation != 2 {
		t.Fatalf("a LOST without a lookup first: %+v", bare.Processes)
	}
}

func TestLookupRunningAndLossWords(t *testing.T) {
	ev := LookupRunning("box", client.RunningStatus{Running: false, Incarnation: 4}, "")
	if ev.Kind != client.SandboxStopped.String() || ev.Incarnation.Number != 4 || ev.Evidence[0] != "GET running: false" || ev.Source != FromLookup {
		t.Fatalf("%+v", ev)
	}
	st := NewState("box")
	st.Apply(LookupRunning("box", client.RunningStatus{Running: true}, ""))
	if st.Running == nil || !*st.Running || len(st.Incarnations) != 0 || st.Current.Number != 0 {
		t.Fatalf("a bridge that reports no incarnation: running %v incarnations %d current %+v", st.Running, len(st.Incarnations), st.Current)
	}
	if _, ok := LookupRunningProcess("box", client.Process{ID: "x", State: "exited"}, "the list"); ok {
		t.Error("an exited process said its sandbox runs")
	}
	if _, ok := LookupRunningTerminal("box", client.Terminal{ID: "t", Status: "running", Incarnation: 1}, "the list"); !ok {
		t.Error("a running terminal said nothing")
	}
	tm := LookupTerminal("box", client.Terminal{ID: "t", Status: "running", Incarnation: 1})
	st.Apply(tm)
	if e := st.Find(Terminal, "t"); e == nil || e.Incarnation != 1 || e.State() != "running" {
		t.Fatalf("terminal %+v", e)
	}

	for _, c := range []struct {
		loss *client.LossEvidence
		kind string
	}{
		{nil, ""},
		{&client.LossEvidence{Lookup: "404"}, ""}, // the sandbox's state unknown
		{&client.LossEvidence{Lookup: "404", SandboxRunning: boolp(false), Previous: 1}, client.SandboxStopped.String()},
		{&client.LossEvidence{Lookup: "404", SandboxRunning: boolp(true), Previous: 1, Incarnation: 1}, client.SandboxStarted.String()},
		{&client.LossEvidence{Lookup: "404", SandboxRunning: boolp(true), Inferred: true}, client.SandboxStarted.String()},
		{&client.LossEvidence{Lookup: "404", SandboxRunning: boolp(true), Previous: 1, Incarnation: 2}, client.IncarnationChanged.String()},
	} {
		evs := LookupLoss("box", "process p", c.loss, time.Time{})
		got := ""
		if len(evs) == 1 {
			got = evs[0].Kind
			if evs[0].Time.IsZero() || !strings.Contains(evs[0].Evidence[0], "process p") {
				t.Errorf("%+v: %+v", c.loss, evs[0])
			}
		}
		if got != c.kind || len(evs) > 1 {
			t.Errorf("%+v: got %q (%d events), want %q", c.loss, got, len(evs), c.kind)
		}
	}
}

// A command's watcher numbers inferred incarnations from its own start: those numbers, its errors
// and its inferred boundaries stay out of the record; the bridge's numbers go in.
func TestFromCommandWatch(t *testing.T) {
	p := &client.Process{ID: "p", State: "running"}
	inferred := client.Incarnation{Number: 1, Inferred: true}
	for _, c := range []struct {
		ev   client.SandboxEvent
		ok   bool
		inc  int
		prev int
	}{
		{client.SandboxEvent{Kind: client.WatchError, Err: errTest}, false, 0, 0},
		{client.SandboxEvent{Kind: client.WatchRecovered}, false, 0, 0},
		{client.SandboxEvent{Kind: client.IncarnationChanged, Incarnation: client.Incarnation{Number: 2, Inferred: true}, Previous: inferred}, false, 0, 0},
		{client.SandboxEvent{Kind: client.IncarnationChanged, Incarnation: client.Incarnation{Number: 3}, Previous: client.Incarnation{Number: 2}}, true, 3, 2},
		{client.SandboxEvent{Kind: client.IncarnationChanged, Incarnation: client.Incarnation{Number: 3}, Previous: inferred}, true, 3, 0},
		{client.SandboxEvent{Kind: client.ProcessAppeared, Process: p, Incarnation: inferred}, true, 0, 0},
		{client.SandboxEvent{Kind: client.ProcessVanished, Process: p, Incarnation: client.Incarnation{Number: 5}}, true, 5, 0},
	} {
		ev, ok := FromCommandWatch(c.ev)
		if ok != c.ok || (ok && (ev.Incarnation.Number != c.inc || ev.Incarnation.Inferred || ev.Previous.Number != c.prev || ev.Source != FromWatch)) {
			t.Errorf("%v: got %v %+v", c.ev.Kind, ok, ev)
		}
	}
}

var errTest = &client.TransportError{Op: "poll", Err: context.DeadlineExceeded}

// After command-line use only, the report shows the sandbox's state, its incarnations and the
// lookups in words of their own, and every list is a list.
func TestReportOfLookups(t *testing.T) {
	r := open(t, t.TempDir())
	defer r.Close()
	p := client.Process{ID: "p1", Command: []string{"make"}, State: "running", Incarnation: 1}
	r.Add(LookupRunning("box", client.RunningStatus{Running: true, Incarnation: 1}, ""))
	r.Add(LookupProcess("box", p))
	rep, err := r.BuildReport(ReportOptions{Sandbox: "box"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Running == nil || !*rep.Running || rep.Incarnation != 1 || len(rep.Incarnations) != 1 || len(rep.Entities) != 1 || rep.Entities[0].State != "RUNNING" {
		t.Fatalf("report %+v", rep)
	}
	if rep.Timeline[0].What != "looked up: sandbox running" || rep.Timeline[1].What != "looked up: process running" {
		t.Errorf("timeline %+v", rep.Timeline)
	}
	data, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"incarnations", "entities", "timeline", "incidents"} {
		if !strings.HasPrefix(string(raw[k]), "[") {
			t.Errorf("%s is %s, want a list", k, raw[k])
		}
	}
	// a lookup that finds the sandbox stopped is a state, not an incident
	r.Add(LookupRunning("box", client.RunningStatus{Running: false, Incarnation: 1}, ""))
	if rep, _ = r.BuildReport(ReportOptions{Sandbox: "box"}); len(rep.Incidents) != 0 {
		t.Errorf("incidents %+v", rep.Incidents)
	}
}
