package runs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
	"sandscope/record/recordtest"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// watchedScene is scene with twenty more sandboxes listed before it (batch-00 to batch-19, three
// runs each: one running, one exited 0, one exited 3), every sandbox listed by a background
// watcher as in the program: more runs than one screen shows.
func watchedScene(t *testing.T) (*common.Context, *record.Record) {
	t.Helper()
	ctx, rec := scene(t)
	at := func(ago time.Duration) time.Time { return uitest.T0.Add(-ago) }
	inc := client.Incarnation{Number: 1}
	for i := range 20 {
		sb := fmt.Sprintf("batch-%02d", i)
		rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: sb, Time: at(2 * time.Hour), Incarnation: inc}))
		for j, end := range []*client.Exit{nil, {Code: 0}, {Code: 3}} {
			p := &client.Process{ID: fmt.Sprintf("%s-job-%d", sb, j), PID: 10 + j, Command: []string{"job", fmt.Sprint(i, j)}, State: "running",
				StartedAt: at(time.Duration(90-j*20) * time.Minute), Incarnation: 1, Exit: end}
			if end != nil {
				p.State = "exited"
			}
			rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: sb, Time: p.StartedAt, Incarnation: inc, Process: p}))
		}
	}
	mgr := record.NewManager(context.Background(), rec, recordtest.IdleBridge{}, record.DefaultWatchBudget)
	t.Cleanup(mgr.Close)
	sbs, err := rec.Sandboxes()
	if err != nil {
		t.Fatal(err)
	}
	mgr.Track(sbs...)
	ctx.Watch = mgr
	return ctx, rec
}

// opened is the screen as the program opens it: sized, then Init (its commands not run).
func opened(ctx *common.Context, w, h int) *Model {
	m := New(ctx)
	m.SetSize(w, h)
	_ = m.Init()
	return m
}

// readAllNow is the screen once every sandbox is read.
func readAllNow(ctx *common.Context, w, h int) *Model {
	m := opened(ctx, w, h)
	m.readAll()
	return m
}

// TestFirstFrameReadsWhatItShowsAndCountsTheRest: the first frame reads the sandboxes whose rows
// it shows and counts the others' runs, and those needing attention, from the record's memory;
// its title and rows are those of the screen with every sandbox read, and once readRest's answer
// is taken the whole frame is.
func TestFirstFrameReadsWhatItShowsAndCountsTheRest(t *testing.T) {
	ctx, _ := watchedScene(t)
	m := opened(ctx, 200, 24)
	if m.loaded() || len(m.unread) == 0 {
		t.Fatalf("the first frame read every sandbox (%d unread)", len(m.unread))
	}
	if _, read := m.states["shopweb"]; read {
		t.Fatal("shopweb, listed last, was read for the first frame")
	}
	first := m.View()
	full := readAllNow(ctx, 200, 24)
	want := full.View()
	title := func(v string) string { return strings.SplitN(v, "\n", 2)[0] }
	if !strings.Contains(title(want), "All runs (67)") || !strings.Contains(title(want), "23 sandboxes") || !strings.Contains(title(want), "3 need attention") {
		t.Fatalf("the screen read whole says:\n%s", want)
	}
	if title(first) != title(want) {
		t.Errorf("the first frame's title %q, read whole %q", title(first), title(want))
	}
	for _, i := range m.list.Window() {
		if m.rowAt(i) == nil {
			t.Fatalf("row %d on screen is not read", i)
		}
	}
	for i := 0; i < m.rowCount(); i++ {
		if r := m.rowAt(i); r != nil && strings.Join(r.cells, "|") != strings.Join(full.rowAt(i).cells, "|") {
			t.Errorf("row %d: %q, read whole %q", i, r.cells, full.rowAt(i).cells)
		}
	}

	cmd := m.readRest()
	if cmd == nil {
		t.Fatal("no command reads the rest")
	}
	m.Update(cmd())
	if !m.loaded() {
		t.Fatalf("%d sandboxes unread after readRest's answer", len(m.unread))
	}
	if got := m.View(); got != want {
		t.Errorf("after readRest's answer:\n%s\nread whole:\n%s", got, want)
	}
}

// TestAKeyReadsEverySandbox: a key pressed before readRest's answer (a filter, the attention
// narrowing) sees every run.
func TestAKeyReadsEverySandbox(t *testing.T) {
	ctx, _ := watchedScene(t)
	m := opened(ctx, 200, 24)
	press(m, "/")
	for _, k := range uitest.Type("checkout") {
		m.Update(k)
	}
	if !m.loaded() || m.list.Len() != 2 {
		t.Fatalf("filter: %d unread, %d rows match:\n%s", len(m.unread), m.list.Len(), m.View())
	}
	m2 := opened(ctx, 200, 24)
	press(m2, "!")
	if !m2.Attention() || m2.list.Len() != 3 {
		t.Fatalf("attention: %v, %d rows:\n%s", m2.Attention(), m2.list.Len(), m2.View())
	}
}

// TestReadRestKeepsNewerReads: readRest's answer was read before a sandbox changed; a change
// notice read the sandbox again meanwhile, so the older answer must not replace it. And a
// change after the answer is taken shows at the next refresh: nothing read earlier is kept for
// a run the record says changed.
func TestReadRestKeepsNewerReads(t *testing.T) {
	ctx, rec := watchedScene(t)
	m := opened(ctx, 200, 24)
	if _, unread := m.unread["nightly"]; !unread {
		t.Fatal("nightly was read for the first frame")
	}
	stale := m.readRest()() // read now, taken after the change below

	// nightly's build is relaunched and runs again: a new run of the same process
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "nightly", Time: uitest.T0, Incarnation: client.Incarnation{Number: 1},
		Process: &client.Process{ID: "f0e1d2c3-build", Command: []string{"make", "release"}, State: "running", StartedAt: uitest.T0.Add(-3 * time.Hour), Incarnation: 1}}))
	m.Update(changeMsg{owner: m, gen: m.gen, sbs: map[string]bool{"nightly": true}})
	m.Update(stale)
	if !m.loaded() {
		t.Fatalf("%d sandboxes unread", len(m.unread))
	}
	build := func() *row {
		for r := range m.all.Read() {
			if r.sandbox == "nightly" && r.e.ID == "f0e1d2c3-build" {
				return r
			}
		}
		t.Fatal("nightly's build is not listed")
		return nil
	}
	if r := build(); r.label != "RUNNING" || r.cells[0] != "RUNNING" {
		t.Fatalf("the build shows %q (cells %q) after readRest's older answer; the record says it runs", r.label, r.cells)
	}

	// it ends: the refresh shows it, not the row read before
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "nightly", Time: uitest.T0, Incarnation: client.Incarnation{Number: 1},
		Process: &client.Process{ID: "f0e1d2c3-build", Command: []string{"make", "release"}, State: "exited", Exit: &client.Exit{Code: 2},
			StartedAt: uitest.T0.Add(-3 * time.Hour), Incarnation: 1}}))
	refreshNow(t, m)
	if r := build(); r.label != "EXITED 2" || r.cells[0] != "EXITED 2" || !strings.Contains(r.text, "exited 2") {
		t.Fatalf("the build shows %q (cells %q, filter text %q) after it ended", r.label, r.cells, r.text)
	}
	if v := m.View(); !strings.Contains(v, "All runs (67)") {
		t.Fatalf("after the refresh:\n%s", v)
	}
}

// TestCountIsClassify: the count of an unread sandbox (what the title shows before it is read)
// is what its rows say once read, whatever the watcher's state.
func TestCountIsClassify(t *testing.T) {
	ctx, rec := watchedScene(t)
	for _, failing := range []bool{false, true} {
		if failing {
			for _, sb := range []string{"shopweb", "batch-03"} {
				rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.WatchError, Sandbox: sb, Time: uitest.T0, Err: fmt.Errorf("bridge down")}))
			}
		}
		m := readAllNow(ctx, 120, 30)
		for sb, rows := range m.bySandbox {
			want := counted{runs: len(rows)}
			for _, r := range rows {
				if r.attention {
					want.attention++
				}
			}
			if got := m.count(sb); got != want {
				t.Errorf("watch failing %v, %s: counted %+v, its rows say %+v", failing, sb, got, want)
			}
		}
	}
}

// TestARefreshShowsAChangedEnding: a run whose state word stays ("exited", "error") but whose
// ending the bridge reports differently shows the new ending after the refresh: a row's word is
// kept only when everything it says is the same.
func TestARefreshShowsAChangedEnding(t *testing.T) {
	ctx, rec := scene(t)
	m := known(New(ctx))
	m.SetSize(200, 60)
	if v := m.View(); !strings.Contains(v, "EXITED 0") {
		t.Fatalf("the scene has no EXITED 0:\n%s", v)
	}
	inc := client.Incarnation{Number: 1}
	build := func(exit *client.Exit, state string, rerr *client.RunError) {
		rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "nightly", Time: uitest.T0, Incarnation: inc,
			Process: &client.Process{ID: "f0e1d2c3-build", PID: 100, Command: []string{"make", "release"}, State: state, Exit: exit, Error: rerr,
				StartedAt: uitest.T0.Add(-3 * time.Hour), Incarnation: 1}}))
		refreshNow(t, m)
	}
	for _, step := range []struct {
		exit  *client.Exit
		state string
		rerr  *client.RunError
		want  string
	}{
		{&client.Exit{Code: 0, Signal: 9}, "exited", nil, "KILLED KILL"},
		{&client.Exit{Code: 0, Signal: 15}, "exited", nil, "KILLED TERM"},
		{nil, "error", &client.RunError{Code: "oom", Message: "out of memory"}, "ERROR oom"},
		{nil, "error", &client.RunError{Code: "spawn", Message: "no such file"}, "ERROR spawn"},
	} {
		build(step.exit, step.state, step.rerr)
		var got *row
		for r := range m.all.Read() {
			if r.e.ID == "f0e1d2c3-build" {
				got = r
			}
		}
		if got == nil || got.label != step.want || got.cells[0] != step.want || !strings.Contains(m.View(), step.want) {
			t.Fatalf("after the bridge said %s %+v %+v, the build shows %+v", step.state, step.exit, step.rerr, got)
		}
	}
}

// TestReadRestRunsBesideTheScreen: readRest's command runs on a goroutine of its own while the
// screen refreshes and draws and the record changes (go test -race checks they share nothing);
// once its answer is taken and a refresh has run, the screen is the one read whole.
func TestReadRestRunsBesideTheScreen(t *testing.T) {
	ctx, rec := watchedScene(t)
	m := opened(ctx, 200, 24)
	cmd := m.readRest()
	answer := make(chan any, 1)
	go func() { answer <- cmd() }()
	for i := range 5 {
		rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "idle", Time: uitest.T0, Incarnation: client.Incarnation{Number: 1},
			Process: &client.Process{ID: fmt.Sprintf("late-%d", i), Command: []string{"late"}, State: "running", StartedAt: uitest.T0, Incarnation: 1}}))
		refreshNow(t, m)
		_ = m.View()
	}
	m.Update((<-answer).(readMsg))
	refreshNow(t, m)
	if got, want := m.View(), readAllNow(ctx, 200, 24).View(); got != want {
		t.Errorf("after readRest's answer and a refresh:\n%s\nread whole:\n%s", got, want)
	}
}

// TestARefreshIsReadInACommand: the refresh tick reads nothing on the UI goroutine; its answer
// shows what changed without a change notice, is not taken for a sandbox a change notice read
// again meanwhile (that read is newer), and a sandbox listed meanwhile is read when it is taken.
func TestARefreshIsReadInACommand(t *testing.T) {
	ctx, rec := watchedScene(t)
	m := readAllNow(ctx, 200, 24)
	inc := client.Incarnation{Number: 1}
	build := func(state string, exit *client.Exit) {
		rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "nightly", Time: uitest.T0, Incarnation: inc,
			Process: &client.Process{ID: "f0e1d2c3-build", Command: []string{"make", "release"}, State: state, Exit: exit,
				StartedAt: uitest.T0.Add(-3 * time.Hour), Incarnation: 1}}))
	}
	shows := func(sb, id string) string {
		for r := range m.all.Read() {
			if r != nil && r.sandbox == sb && r.e.ID == id {
				return r.label
			}
		}
		return ""
	}
	// no change notice for these: only a refresh shows them
	build("running", nil)
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "batch-03", Time: uitest.T0, Incarnation: inc,
		Process: &client.Process{ID: "quiet", Command: []string{"quiet"}, State: "running", StartedAt: uitest.T0, Incarnation: 1}}))

	_, cmd := m.Update(tickMsg{owner: m, gen: m.gen})
	if got := shows("nightly", "f0e1d2c3-build"); got != "EXITED 0" {
		t.Fatalf("the tick itself read the record: the build shows %q", got)
	}
	answer := reloadAnswer(t, cmd) // read while the build runs
	if _, again := m.Update(tickMsg{owner: m, gen: m.gen}); again != nil && hasReload(again) {
		t.Fatal("a second refresh was asked while the first one's answer was on its way")
	}

	// meanwhile the build ends and its notice is read; a sandbox is listed
	build("exited", &client.Exit{Code: 2})
	m.Update(changeMsg{owner: m, gen: m.gen, sbs: map[string]bool{"nightly": true}})
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "late", Time: uitest.T0, Incarnation: inc,
		Process: &client.Process{ID: "late-1", Command: []string{"late"}, State: "running", StartedAt: uitest.T0, Incarnation: 1}}))
	ctx.Watch.Track("late")

	m.Update(answer)
	if got := shows("nightly", "f0e1d2c3-build"); got != "EXITED 2" {
		t.Fatalf("the build shows %q after the older answer was taken; the notice read EXITED 2", got)
	}
	if got := shows("batch-03", "quiet"); got != "RUNNING" {
		t.Fatalf("the run the refresh read shows %q", got)
	}
	if got := shows("late", "late-1"); got != "RUNNING" {
		t.Fatalf("the sandbox listed meanwhile shows %q", got)
	}
	if got, want := m.View(), readAllNow(ctx, 200, 24).View(); got != want {
		t.Errorf("after the refresh:\n%s\nread whole:\n%s", got, want)
	}
	refreshNow(t, m) // the next tick asks again
}

// hasReload reports whether a tick's commands ask reloadLater: its answer comes at once, the
// next tick's after a second.
func hasReload(cmd tea.Cmd) bool {
	select {
	case msg := <-runCmds(cmd):
		_, ok := msg.(reloadMsg)
		return ok
	case <-time.After(300 * time.Millisecond):
		return false
	}
}

// TestFirstFrameLeavesHistoriesNotReadToReadRest: at a start, the record has read no sandbox's
// history into memory yet (the manager reads them on a goroutine of its own, 12 s of them at
// 10,000 runs). The first frame reads the sandboxes it shows and leaves the others to readRest,
// saying its counts are so far; a key pressed meanwhile works on the runs read, without reading
// the others on the UI goroutine; readRest's answers, a slice at a time, bring the screen to what
// it is with every sandbox read.
func TestFirstFrameLeavesHistoriesNotReadToReadRest(t *testing.T) {
	ctx, rec := watchedScene(t)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	reopen := func() *record.Record {
		_ = ctx.Record.Close()
		again, err := record.Open(record.Options{Dir: filepath.Join(ctx.StateDir, "record"), Bridge: "test", Now: func() time.Time { return uitest.T0 }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = again.Close() })
		ctx.Record = again
		return again
	}
	title := func(v string) string { return strings.SplitN(v, "\n", 2)[0] }

	again := reopen()
	narrow := opened(ctx, 80, 24)
	checkFrame(t, "the first frame while sandboxes are still being read", narrow.View(), 80, 24)
	if v := title(narrow.View()); strings.Contains(v, "none needs attention") {
		t.Errorf("the first frame claims no run needs attention before every sandbox is read: %q", v)
	}
	again = reopen()
	m := opened(ctx, 200, 24)
	if !again.Loaded("batch-00") {
		t.Fatal("batch-00, listed first, was not read for the first frame")
	}
	if again.Loaded("shopweb") {
		t.Fatal("shopweb, listed last, was read for the first frame")
	}
	first := title(m.View())
	for _, want := range []string{"All runs (", " so far)", "23 sandboxes, ", " still being read"} {
		if !strings.Contains(first, want) {
			t.Fatalf("the first frame's title has no %q: %q", want, first)
		}
	}
	for cmd := m.readRest(); cmd != nil; {
		_, cmd = m.Update(cmd())
	}
	if !m.loaded() {
		t.Fatalf("%d sandboxes unread after readRest's answers", len(m.unread))
	}
	got := m.View()
	if want := readAllNow(ctx, 200, 24).View(); got != want {
		t.Errorf("after readRest's answers:\n%s\nread whole:\n%s", got, want)
	}
	if !strings.Contains(title(got), "All runs (67)") || strings.Contains(title(got), "so far") || strings.Contains(title(got), "being read") {
		t.Errorf("the title once every sandbox is read: %q", title(got))
	}

	// opened again on a record just opened: a filter typed before readRest's answer reads nothing
	// more on the UI goroutine, and finds shopweb's runs once they are read
	again = reopen()
	m = opened(ctx, 200, 24)
	press(m, "/")
	for _, k := range uitest.Type("checkout") {
		m.Update(k)
	}
	if again.Loaded("shopweb") {
		t.Fatal("a key read shopweb's history on the UI goroutine")
	}
	for cmd := m.readRest(); cmd != nil; {
		_, cmd = m.Update(cmd())
	}
	if v := m.View(); !strings.Contains(v, "fix the failing checkout test") {
		t.Errorf("the filter does not find shopweb's runs once they are read:\n%s", v)
	}
}
