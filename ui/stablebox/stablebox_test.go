package stablebox

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// counting is a bridge that counts every request (each would start a container on stable).
func counting(t *testing.T) (*client.Stable, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	return c.Stable(), &n
}

func seeded(t *testing.T) (*common.Context, *atomic.Int64) {
	t.Helper()
	ctx := uitest.Context(t, uitest.NewBridge(), 140, 30)
	rec, err := record.Open(record.Options{Dir: t.TempDir(), Bridge: "http://stable", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	ctx.Record = rec
	var n *atomic.Int64
	ctx.Stable, n = counting(t)
	now := uitest.T0
	set := func(id string, argv []string, res client.RunResult) {
		_ = rec.UpdateStable("box", func(sb *record.StableSandbox) {
			sb.SetRun(record.StableRun{ID: id, Argv: argv, Started: now}, res, now)
		})
	}
	set("20260101T000001Z-00000001", []string{"make", "ok"}, client.RunResult{State: client.RunConfirmed, Code: 4, Evidence: "the recorder's status file"})
	set("20260101T000002Z-00000002", []string{"make", "fake"}, client.RunResult{State: client.RunUnconfirmed, Code: 0, Evidence: "no trailer"})
	set("20260101T000003Z-00000003", []string{"make", "cut"}, client.RunResult{State: client.RunInterrupted, Evidence: "the body ended"})
	set("20260101T000004Z-00000004", []string{"make", "err"}, client.RunResult{State: client.RunErrored, ErrCode: "exec_error", Message: "boom"})
	set("20260101T000005Z-00000005", []string{"make", "gone"}, client.RunResult{State: client.RunLost, Inferred: true, Evidence: "files and marker gone"})
	_ = rec.UpdateStable("box", func(sb *record.StableSandbox) { sb.UseSession("dev", true, now) })
	return ctx, n
}

// The screen shows the record's runs with honest states, and sends nothing: not on opening, not
// on switching lists, not when the exec prompt is filled (it asks first), not when a LOST run is
// opened (its files went with its container).
func TestScreenFromTheRecordSendsNothing(t *testing.T) {
	ctx, n := seeded(t)
	m := New(ctx, "box")
	m.SetSize(140, 30)
	_ = m.Init() // a record re-read tick, not run here
	v := m.View()
	for _, want := range []string{"Runs (5)", "Sessions (1)", "EXITED 4", "REPORTED 0 (unconfirmed)", "INTERRUPTED, outcome unknown", "ERROR exec_error", "LOST (inferred)"} {
		if !strings.Contains(v, want) {
			t.Errorf("the screen lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "EXITED 0") {
		t.Errorf("an unconfirmed exit code shows as EXITED 0:\n%s", v)
	}
	m.Update(uitest.Key("tab"))
	if v := m.View(); !strings.Contains(v, "dev") || !strings.Contains(v, "yes") {
		t.Errorf("sessions:\n%s", v)
	}
	m.Update(uitest.Key("tab"))

	// exec: form, then the wake question; "n" sends nothing
	m.Update(uitest.Key("e"))
	for _, k := range uitest.Type("true") {
		m.Update(k)
	}
	_, cmd := m.Update(uitest.Key("enter"))
	uitest.Exec(cmd, 50*time.Millisecond)
	if v := m.View(); !strings.Contains(v, "Start the container of box?") {
		t.Fatalf("no wake question before the first request:\n%s", v)
	}
	_, cmd = m.Update(uitest.Key("n"))
	uitest.Exec(cmd, 50*time.Millisecond)

	// the LOST run (the oldest is last; LOST is the newest: first row)
	_, cmd = m.Update(uitest.Key("enter"))
	var view *RunView
	for _, msg := range uitest.Exec(cmd, 50*time.Millisecond) {
		if p, ok := msg.(common.PushScreenMsg); ok {
			view, _ = p.Screen.(*RunView)
		}
	}
	if view == nil {
		t.Fatal("opening a run pushed no run view")
	}
	view.SetSize(140, 20)
	if cmd := view.Init(); cmd != nil {
		t.Error("a LOST run's view starts a read")
	}
	if v := view.View(); !strings.Contains(v, "LOST (inferred)") || !strings.Contains(v, "nothing is asked of the sandbox") {
		t.Errorf("LOST run view:\n%s", v)
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("the screen sent %d requests, want 0", got)
	}

	// Another run, not told yet: opening it asks first.
	m.Update(uitest.Key("down"))
	_, cmd = m.Update(uitest.Key("enter"))
	uitest.Exec(cmd, 50*time.Millisecond)
	if v := m.View(); !strings.Contains(v, "Reading a run's output sends requests") {
		t.Fatalf("opening a run did not ask first:\n%s", v)
	}
	// yes: told is recorded, and the view is pushed
	_, cmd = m.Update(uitest.Key("y"))
	pushed := false
	for _, msg := range uitest.Exec(cmd, 50*time.Millisecond) {
		_, pushed = msg.(common.PushScreenMsg)
	}
	sb, _ := ctx.Record.Stable("box")
	if !pushed || !sb.Told {
		t.Errorf("after yes: pushed %v, told %v", pushed, sb.Told)
	}
}

// A run view settles a run from the recorder's answers: the stream's reported 0 stays
// unconfirmed until the status file says otherwise, and the record keeps each state.
func TestRunViewSettlesFromTheRecorder(t *testing.T) {
	ctx, _ := seeded(t)
	run := record.StableRun{ID: "20260101T000002Z-00000002", Argv: []string{"make", "fake"}, State: string(client.RunRunning)}
	v := NewRunView(ctx, "box", run, nil)
	v.SetSize(120, 20)
	v.Update(runEventsMsg{owner: v, evs: []client.RunEvent{
		{Kind: client.ExecStdout, Text: []byte("partial line")},
	}})
	if !strings.Contains(v.View(), "partial line") {
		t.Errorf("a line being written is not shown:\n%s", v.View())
	}
	_, _ = v.Update(runEventsMsg{owner: v, evs: []client.RunEvent{{Result: &client.RunResult{State: client.RunUnconfirmed, Code: 0, Evidence: "no trailer"}}}, done: true})
	if s := v.View(); !strings.Contains(s, "not confirmed") || strings.Contains(s, "EXITED 0") {
		t.Errorf("after the stream's unconfirmed end:\n%s", s)
	}
	sb, _ := ctx.Record.Stable("box")
	if r, _ := sb.FindRun(run.ID); record.StableStateWord(r) != "REPORTED 0 (unconfirmed)" {
		t.Errorf("the record says %q", record.StableStateWord(r))
	}
	// the recorder: still going, then EXITED 3 with the rest of the output
	v.Update(recoverMsg{owner: v, res: client.RunResult{State: client.RunStillGoing, RecoveredOut: []byte("partial line\n")}})
	v.Update(recoverMsg{owner: v, res: client.RunResult{State: client.RunConfirmed, Code: 3, Evidence: "status file",
		RecoveredOut: []byte("partial line\nmore\n")}})
	s := v.View()
	if !strings.Contains(s, "more") || !strings.Contains(s, "EXITED 3 (confirmed") || strings.Count(s, "partial line") != 1 {
		t.Errorf("after the recorder settled it:\n%s", s)
	}
	sb, _ = ctx.Record.Stable("box")
	if r, _ := sb.FindRun(run.ID); record.StableStateWord(r) != "EXITED 3" {
		t.Errorf("the record says %q", record.StableStateWord(r))
	}
	if v.Attached() != 0 {
		t.Error("a settled run view still counts as attached")
	}
}

// Leaving a run view before anything settled the run records it as INTERRUPTED (sandscope stopped
// following), not as still RUNNING for ever.
func TestRunViewClosedEarlyRecordsInterrupted(t *testing.T) {
	ctx, n := seeded(t)
	id := "20260101T000009Z-00000009"
	_ = ctx.Record.UpdateStable("box", func(sb *record.StableSandbox) {
		sb.SetRun(record.StableRun{ID: id, Argv: []string{"sleep", "60"}}, client.RunResult{State: client.RunRunning, Evidence: "started here"}, uitest.T0)
	})
	v := NewRunView(ctx, "box", record.StableRun{ID: id, Argv: []string{"sleep", "60"}, State: string(client.RunRunning)}, nil)
	v.Close()
	v.Close()
	sb, _ := ctx.Record.Stable("box")
	r, _ := sb.FindRun(id)
	if got := record.StableStateWord(r); got != "INTERRUPTED, outcome unknown" || !strings.Contains(r.Evidence, "stopped following") {
		t.Errorf("after closing: %q (%s)", got, r.Evidence)
	}
	if n.Load() != 0 {
		t.Errorf("closing sent %d requests", n.Load())
	}
}
