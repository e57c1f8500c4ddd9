package record

import (
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

func alertKinds(as []Alert) string {
	var ks []string
	for _, a := range as {
		ks = append(ks, string(a.Kind)+":"+a.ID)
	}
	return strings.Join(ks, ",")
}

// The scene's replacement loses agent1: one alert, with its evidence.
func TestAlertsLostFromScene(t *testing.T) {
	r := open(t, t.TempDir())
	defer r.Close()
	scene(r)
	as, last, missed := r.Alerts(0)
	if alertKinds(as) != "lost:agent1" || last != 1 || missed != 0 {
		t.Fatalf("alerts %q last %d missed %d", alertKinds(as), last, missed)
	}
	if !strings.Contains(as[0].Text, "absent from the process list") || as[0].Sandbox != "demo" || as[0].Command[0] != "agent" {
		t.Fatalf("alert: %+v", as[0])
	}
	if more, _, _ := r.Alerts(last); len(more) != 0 {
		t.Fatalf("alerts after the last: %v", alertKinds(more))
	}
}

// An ending seen by the watcher and then by the stream (or the other way round) is one alert; a
// process first seen already ended is none; a gap or suspect end reported twice at the same cursor
// (two followers) is one alert each.
func TestAlertsOncePerTransition(t *testing.T) {
	r := open(t, t.TempDir())
	defer r.Close()
	inc := client.Incarnation{Number: 1}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	watch := func(s int, ev client.SandboxEvent) {
		ev.Sandbox, ev.Time, ev.Incarnation = "sb", at(s), inc
		r.Add(FromSandboxEvent(ev))
	}
	exited := func(id string, code int) *client.Process {
		p := running(id, 1, 1)
		p.State, p.Exit = "exited", &client.Exit{Code: code}
		return p
	}
	watch(0, client.SandboxEvent{Kind: client.ProcessAppeared, Process: running("a", 1, 1)})
	watch(0, client.SandboxEvent{Kind: client.ProcessAppeared, Process: running("b", 2, 1)})
	watch(0, client.SandboxEvent{Kind: client.ProcessAppeared, Process: exited("old", 0)})
	// started after the record was opened and ended between two polls: it ran while watched
	quick := exited("quick", 3)
	quick.StartedAt = time.Now().Add(time.Minute)
	watch(0, client.SandboxEvent{Kind: client.ProcessAppeared, Process: quick})
	watch(1, client.SandboxEvent{Kind: client.ProcessChanged, Process: quick})
	// a: the watcher sees it end, then the stream confirms it
	watch(1, client.SandboxEvent{Kind: client.ProcessChanged, Process: exited("a", 5)})
	r.Add(FromLogEvent("sb", "a", client.LogEvent{Kind: client.Ended, Time: at(2), Cursor: "c9", Status: exited("a", 5)}))
	// b: the stream first, then the watcher
	r.Add(FromLogEvent("sb", "b", client.LogEvent{Kind: client.Gap, Time: at(2), Cursor: "c3", Gap: &client.GapInfo{Bytes: 40, Reason: client.GapTruncated}}))
	r.Add(FromLogEvent("sb", "b", client.LogEvent{Kind: client.Gap, Time: at(2), Cursor: "c3", Gap: &client.GapInfo{Bytes: 40, Reason: client.GapTruncated}}))
	r.Add(FromLogEvent("sb", "b", client.LogEvent{Kind: client.SuspectEnd, Time: at(3), Cursor: "c4", Reason: "stream ended"}))
	r.Add(FromLogEvent("sb", "b", client.LogEvent{Kind: client.SuspectEnd, Time: at(3), Cursor: "c4", Reason: "stream ended"}))
	r.Add(FromLogEvent("sb", "b", client.LogEvent{Kind: client.Ended, Time: at(4), Cursor: "c5", Status: exited("b", 0)}))
	watch(5, client.SandboxEvent{Kind: client.ProcessChanged, Process: exited("b", 0)})
	watch(6, client.SandboxEvent{Kind: client.ProcessVanished, Process: exited("b", 0), Evidence: []string{"absent"}})
	as, _, _ := r.Alerts(0)
	if got, want := alertKinds(as), "ended:quick,ended:a,gap:b,suspect:b,ended:b"; got != want {
		t.Fatalf("alerts %q, want %q", got, want)
	}
	if as[0].Text != "EXITED 3" || as[1].Text != "EXITED 5" || as[4].Text != "EXITED 0" {
		t.Fatalf("texts: %q %q %q", as[0].Text, as[1].Text, as[4].Text)
	}
	if !strings.Contains(as[2].Text, "40 bytes") || !strings.Contains(as[2].Text, "truncated") {
		t.Fatalf("gap text: %q", as[2].Text)
	}
}

// Alerts are kept bounded; a reader that fell behind is told how many it missed.
func TestAlertsBounded(t *testing.T) {
	r := open(t, t.TempDir())
	defer r.Close()
	inc := client.Incarnation{Number: 1}
	r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: t0, Incarnation: inc, Process: running("p", 1, 1)}))
	for i := 0; i < alertsKept+10; i++ {
		r.Add(FromLogEvent("sb", "p", client.LogEvent{Kind: client.Gap, Time: t0, Cursor: "c" + string(rune('a'+i%26)) + time.Duration(i).String(), Gap: &client.GapInfo{Bytes: 1}}))
	}
	as, last, missed := r.Alerts(0)
	if len(as) != alertsKept || last != int64(alertsKept+10) || missed != 10 {
		t.Fatalf("kept %d last %d missed %d", len(as), last, missed)
	}
}

// A stable run whose stream broke off (INTERRUPTED) has not ended: no notification; when it ends
// later (REPORTED, ENDED), that is the one ending notified.
func TestInterruptedIsNotAnEnding(t *testing.T) {
	st := NewState("sbx")
	t0 := time.Now()
	seen := map[string]bool{}
	apply := func(state string, at time.Duration, exit *client.Exit) []Alert {
		ev := Event{Sandbox: "sbx", Time: t0.Add(at), Source: FromWatch, Kind: client.ProcessChanged.String(),
			Entity: Process, EntityID: "r1", Process: &client.Process{ID: "r1", State: state, Exit: exit, StartedAt: t0}}
		if at == 0 {
			ev.Kind = client.ProcessAppeared.String()
		}
		before := snapOf(st.Find(Process, "r1"))
		st.Apply(ev)
		return alertsFor(st, ev, before, t0.Add(-time.Hour), seen)
	}
	apply("running", 0, nil)
	if as := apply("interrupted", time.Second, nil); len(as) != 0 {
		t.Fatalf("INTERRUPTED notified: %+v", as)
	}
	as := apply("reported", 2*time.Second, &client.Exit{Code: 1})
	if len(as) != 1 || as[0].Kind != AlertEnded || as[0].Text != "REPORTED 1 (unconfirmed)" {
		t.Fatalf("the later ending: %+v", as)
	}
}
