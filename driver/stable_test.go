package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/record"
)

// A start refused for capacity (nothing ran) is the client's error, for the caller to retry; the
// index holds no run.
func TestConformanceCapacityRefusal(t *testing.T) {
	forBoth(t, func(t *testing.T, h *harness) {
		sb := h.sandbox(t)
		h.b.Server.SetCapacityExceeded(true)
		_, err := h.d.Start(context.Background(), sb, driver.StartRequest{ExecRequest: client.ExecRequest{Argv: []string{"true"}}})
		h.b.Server.SetCapacityExceeded(false)
		var ae *client.APIError
		if !errors.Is(err, client.ErrCapacity) || !errors.As(err, &ae) || !ae.Retryable() {
			t.Fatalf("start on a full pool: %v, want the client's retryable capacity error", err)
		}
		if runs, err := h.d.Runs(context.Background(), sb); err != nil || len(runs) != 0 {
			t.Fatalf("runs after a refused start: %+v %v", runs, err)
		}
	})
}

// A follower that starts after the buffer dropped older output gets a Gap that counts the bytes,
// then the rest: nothing is silently missing. The output comes in two bursts 0.3 s apart, so it
// reaches the driver in more than one chunk: the buffer keeps its newest chunk whole, however
// large, and a loaded machine can read 100 quick lines as one.
func TestStableBufferGap(t *testing.T) {
	h := newHarness(t, true)
	driver.SetStableBufferCap(h.d.(*driver.Stable), 256)
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", `i=0; while [ $i -lt 100 ]; do echo "line-$i"; i=$((i+1)); [ $i -eq 50 ] && sleep 0.3; done; true`)
	collect(t, h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{}), 20*time.Second)
	f := collect(t, h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{}), 10*time.Second)
	var want strings.Builder
	for i := 0; i < 100; i++ {
		want.WriteString("line-" + itoa(i) + "\n")
	}
	if len(f.events) == 0 || f.events[0].Kind != client.Gap || f.events[0].Gap == nil {
		t.Fatalf("events %v, want a Gap first", f.kinds())
	}
	gap := f.events[0].Gap.Bytes
	if gap <= 0 || gap+int64(f.stdout.Len()) != int64(want.Len()) || !strings.HasSuffix(want.String(), f.stdout.String()) {
		t.Fatalf("gap %d + %d bytes delivered, want %d in all, the newest", gap, f.stdout.Len(), want.Len())
	}
	endedWith(t, f, driver.StateExited, 0)
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// Another sandscope process (no live run there) opens a running run: it reads the recorder's
// files, NoFollow gives what exists now and the current state, a full follow the ending.
func TestStableForegroundFollowFromAnotherProcess(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", "echo first; sleep 3; echo second; exit 5")
	ch := h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{})
	f := &followed{}
	until(t, ch, f, "the first output", func(f *followed) bool { return f.stdout.Len() > 0 })
	other := h.open(t)
	snap := collect(t, other.Follow(context.Background(), sb, r.ID, driver.FollowOptions{FollowOptions: client.FollowOptions{NoFollow: true}}), 10*time.Second)
	last := snap.events[len(snap.events)-1]
	if snap.stdout.String() != "first\n" || last.Kind != client.Quiet || last.Status == nil || last.Status.State != driver.StateRunning {
		t.Fatalf("NoFollow: %q %v %+v", snap.stdout.String(), snap.kinds(), last.Status)
	}
	full := collect(t, other.Follow(context.Background(), sb, r.ID, driver.FollowOptions{FollowOptions: client.FollowOptions{Since: last.Cursor}}), 20*time.Second)
	if full.stdout.String() != "second\n" {
		t.Fatalf("follow from the NoFollow's cursor: %q", full.stdout.String())
	}
	endedWith(t, full, driver.StateExited, 5)
	for range ch {
	}
}

// The record's manager over the stable driver: a run another process started is not followed
// in the background (no request, no capture rows); the driver's own run is captured once; a run
// found LOST is marked lost in the record.
func TestStableUnderTheRecordManager(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	exec := h.open(t) // `sandscope exec` beside the TUI
	r1 := h.start(t, sb, "sh", "-c", "echo mine; sleep 0.3")
	r2, err := exec.Start(context.Background(), sb, driver.StartRequest{ExecRequest: client.ExecRequest{Argv: []string{"sh", "-c", "echo theirs; sleep 0.3"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []driver.Driver{h.d, exec} {
		for _, id := range []string{r1.ID, r2.ID} {
			if id == r2.ID && d == h.d {
				continue
			}
			collect(t, d.Follow(context.Background(), sb, id, driver.FollowOptions{}), 20*time.Second)
		}
	}
	before := h.b.Server.Allocations(sb)
	m := record.NewManager(context.Background(), h.rec, driver.ForRecord(h.d), record.WatchBudget{Fast: 50 * time.Millisecond})
	m.Track(sb)
	m.Focus(sb)
	waitFor(t, "both runs in the record", func() bool {
		st := h.rec.State(sb)
		return st.Find(record.Process, r1.ID) != nil && st.Find(record.Process, r2.ID) != nil
	})
	time.Sleep(300 * time.Millisecond)
	m.Close()
	if n := h.b.Server.Allocations(sb) - before; n != 0 {
		t.Fatalf("%d sandbox requests under the manager, want 0", n)
	}
	h.rec.Flush()
	// Each run is captured once, by the driver that read it (the manager's background follow of
	// its own run starts after what it captured; the other's run it does not follow at all).
	for id, want := range map[string]string{r1.ID: "mine\n", r2.ID: "theirs\n"} {
		c, _ := h.rec.Captured(sb, id)
		var got strings.Builder
		for _, ch := range c.Chunks {
			got.Write(ch.Data)
		}
		if got.String() != want {
			t.Errorf("capture of %s: %q, want %q once", id, got.String(), want)
		}
	}

	// A run lost with its container: the watcher's vanish marks it lost in the record.
	r3 := h.start(t, sb, "sh", "-c", "echo going; sleep 30")
	ch := h.d.Follow(context.Background(), sb, r3.ID, driver.FollowOptions{})
	f := &followed{}
	until(t, ch, f, "output", func(f *followed) bool { return f.stdout.Len() > 0 })
	m = record.NewManager(context.Background(), h.rec, driver.ForRecord(h.d), record.WatchBudget{Fast: 50 * time.Millisecond})
	defer m.Close()
	m.Track(sb)
	m.Focus(sb)
	if err := h.b.Server.ReplaceSandbox(sb); err != nil {
		t.Fatal(err)
	}
	for range ch {
	}
	waitFor(t, "the loss in the record", func() bool {
		e := h.rec.State(sb).Find(record.Process, r3.ID)
		return e != nil && e.Lost && len(e.Evidence) > 0
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The wake notice is said once per sandbox, ever (the record keeps it), and Start says it when
// the caller did not.
func TestStableWakeNoticeOnce(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	w := h.d.(driver.Waker)
	h.start(t, sb, "true")
	if n := strings.Count(h.notices.String(), "starts the container of sandbox "+sb); n != 1 {
		t.Fatalf("notices %q: want the wake notice once", h.notices.String())
	}
	if s := w.WakeNotice(sb, "a shell"); s != "" {
		t.Fatalf("said again: %q", s)
	}
	other := h.open(t).(driver.Waker)
	if s := other.WakeNotice(sb, "a shell"); s != "" {
		t.Fatalf("another process said it again: %q", s)
	}
	sb2 := h.sandbox(t)
	if s := other.WakeNotice(sb2, "a shell"); !strings.Contains(s, "a shell starts the container of sandbox "+sb2) {
		t.Fatalf("first notice for a new sandbox: %q", s)
	}
}

// Sessions are recorded where they are created, listed without a request, and gone when deleted.
func TestStableSessions(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	s := h.d.(driver.Sessions)
	ctx := context.Background()
	id, err := s.CreateSession(ctx, sb, client.SessionOptions{ID: "dev", Env: map[string]string{"GREETING": "hi"}})
	if err != nil || id != "dev" {
		t.Fatalf("create: %q %v", id, err)
	}
	r, err := h.d.Start(ctx, sb, driver.StartRequest{ExecRequest: client.ExecRequest{Argv: []string{"sh", "-c", `echo "$GREETING"`}}, Session: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	f := collect(t, h.d.Follow(ctx, sb, r.ID, driver.FollowOptions{}), 20*time.Second)
	if f.stdout.String() != "hi\n" {
		t.Fatalf("run in the session: %q", f.stdout.String())
	}
	before := h.b.Server.Allocations(sb)
	list, err := s.Sessions(ctx, sb)
	if err != nil || len(list) != 1 || list[0].ID != "dev" || !list[0].Created {
		t.Fatalf("sessions %+v %v", list, err)
	}
	if h.b.Server.Allocations(sb) != before {
		t.Fatal("listing sessions sent a request")
	}
	if err := s.DeleteSession(ctx, sb, "dev"); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.Sessions(ctx, sb); len(list) != 0 {
		t.Fatalf("after delete: %+v", list)
	}
	if _, ok := h.d.(driver.Killer); ok {
		t.Error("the stable driver must not offer Killer")
	}
	if _, ok := h.d.(driver.Terminals); ok {
		t.Error("the stable driver must not offer Terminals")
	}
}

// The record's capture takes over a run's output from the driver mid-run and hands it back when
// it stops: every byte is in the record exactly once.
func TestStableCaptureHandoff(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	m := record.NewManager(context.Background(), h.rec, driver.ForRecord(h.d), record.WatchBudget{Fast: 30 * time.Millisecond})
	m.Track(sb)
	m.Focus(sb)
	r := h.start(t, sb, "sh", "-c", `i=0; while [ $i -lt 40 ]; do echo "n$i"; i=$((i+1)); sleep 0.02; done`)
	waitFor(t, "the manager's capture", func() bool { return m.Capturing(sb, r.ID) })
	time.Sleep(200 * time.Millisecond)
	m.Close() // the background follower stops mid-run: the driver captures again
	collect(t, h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{}), 20*time.Second)
	h.rec.Flush()
	c, _ := h.rec.Captured(sb, r.ID)
	var got, want strings.Builder
	for _, ch := range c.Chunks {
		got.Write(ch.Data)
	}
	for i := 0; i < 40; i++ {
		want.WriteString("n" + itoa(i) + "\n")
	}
	if got.String() != want.String() {
		t.Fatalf("captured:\n%q\nwant\n%q", got.String(), want.String())
	}
}

// A watcher resumed from what the record knew announces only what changed since.
func TestStableWatchResume(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", "echo a")
	collect(t, h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{}), 20*time.Second)
	known, err := h.d.Run(context.Background(), sb, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := h.open(t).Watch(ctx, sb, client.WatchOptions{FastInterval: 30 * time.Millisecond,
		Resume: &client.WatchResume{Incarnation: client.Incarnation{Number: known.Incarnation, Inferred: true}, Processes: []client.Process{known}}})
	r2 := h.start(t, sb, "sh", "-c", "echo b")
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-w.Events:
			if ev.Process != nil && ev.Process.ID == r.ID {
				t.Fatalf("the resumed run was announced again: %v %+v", ev.Kind, ev.Process)
			}
			if ev.Kind == client.IncarnationChanged {
				t.Fatalf("no container change happened: %+v", ev)
			}
			if ev.Kind == client.ProcessAppeared && ev.Process.ID == r2.ID {
				return
			}
		case <-deadline:
			t.Fatal("the new run never appeared")
		}
	}
}

// A watcher started unfocused reads the run index at the slow rate until it is focused, as the
// client's watcher polls: a run started elsewhere is announced only then.
func TestStableWatchUnfocusedStartsSlow(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := h.open(t).Watch(ctx, sb, client.WatchOptions{FastInterval: 20 * time.Millisecond, SlowInterval: time.Hour, Unfocused: true})
	time.Sleep(300 * time.Millisecond) // its first look is done
	r := h.start(t, sb, "sh", "-c", "echo elsewhere")
	appeared := func(d time.Duration) bool {
		deadline := time.After(d)
		for {
			select {
			case ev := <-w.Events:
				if ev.Kind == client.ProcessAppeared && ev.Process.ID == r.ID {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	if appeared(600 * time.Millisecond) {
		t.Fatal("an unfocused watcher read the index at the fast rate")
	}
	w.SetFocused(true)
	if !appeared(20 * time.Second) {
		t.Fatal("the run never appeared once the watcher was focused")
	}
}

// Env and Timeout reach the command (wrapped in env(1) and timeout(1)); the index keeps the
// command as asked, without the environment's values.
func TestStableEnvAndTimeout(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	ctx := context.Background()
	r, err := h.d.Start(ctx, sb, driver.StartRequest{ExecRequest: client.ExecRequest{
		Argv: []string{"sh", "-c", `echo "$SECRET_WORD"; sleep 5`}, Env: map[string]string{"SECRET_WORD": "hunter2"}, Timeout: 500}})
	if err != nil {
		t.Fatal(err)
	}
	f := collect(t, h.d.Follow(ctx, sb, r.ID, driver.FollowOptions{}), 20*time.Second)
	if f.stdout.String() != "hunter2\n" {
		t.Fatalf("stdout %q", f.stdout.String())
	}
	endedWith(t, f, driver.StateExited, 124) // timeout(1)'s status
	sbx, err := h.rec.Stable(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range sbx.Runs {
		if strings.Contains(strings.Join(run.Argv, " "), "hunter2") {
			t.Fatalf("the index keeps an environment value: %q", run.Argv)
		}
	}
	if got, _ := h.d.Run(ctx, sb, r.ID); strings.Join(got.Command, " ") != `sh -c echo "$SECRET_WORD"; sleep 5` {
		t.Fatalf("command %q", got.Command)
	}
}
