package driver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
	"sandscope/record"
)

// The driver conformance table: every case runs against the preview driver and the stable driver,
// each over sandscope's local bridge speaking its dialect. A case that one dialect cannot express
// says so (skip) rather than pass vacuously.

// harness is one driver over one local bridge.
type harness struct {
	name    string
	stable  bool
	b       *bridgetest.Bridge
	c       *client.Client
	d       driver.Driver
	rec     *record.Record
	notices *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHarness(t *testing.T, stable bool) *harness {
	t.Helper()
	var opts []bridgetest.Option
	name := "preview"
	if stable {
		opts, name = append(opts, bridgetest.WithDialect(localbridge.DialectStable)), "stable"
	}
	b := bridgetest.Start(t, opts...)
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.Open(record.Options{Dir: t.TempDir(), Bridge: b.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	h := &harness{name: name, stable: stable, b: b, c: c, rec: rec, notices: &syncBuffer{}}
	h.d = h.open(t)
	return h
}

// open opens another driver over the same bridge and record (as another sandscope process
// would); it is closed when the test ends.
func (h *harness) open(t *testing.T) driver.Driver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := driver.Open(ctx, h.c, driver.Options{Record: h.rec, Notices: h.notices})
	if err != nil {
		t.Fatal(err)
	}
	if _, isStable := d.(*driver.Stable); isStable != h.stable {
		t.Fatalf("Open gave %T for the %s dialect", d, h.name)
	}
	if s, ok := d.(*driver.Stable); ok {
		driver.SetStableRecoverEvery(s, 150*time.Millisecond)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// sandbox makes a sandbox for a case.
func (h *harness) sandbox(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := h.d.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (h *harness) start(t *testing.T, sandbox string, argv ...string) driver.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := h.d.Start(ctx, sandbox, driver.StartRequest{ExecRequest: client.ExecRequest{Argv: argv}})
	if err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	if r.State != driver.StateRunning || r.ID == "" {
		t.Fatalf("start answered %+v, want a running run", r)
	}
	return r
}

// followed is what a follow delivered.
type followed struct {
	events         []client.LogEvent
	stdout, stderr bytes.Buffer
	final          *client.LogEvent
}

func (f *followed) kinds() []client.LogEventKind {
	var out []client.LogEventKind
	for _, ev := range f.events {
		out = append(out, ev.Kind)
	}
	return out
}

func (f *followed) add(ev client.LogEvent) {
	f.events = append(f.events, ev)
	switch ev.Kind {
	case client.Data:
		if ev.Stream == client.Stderr {
			f.stderr.Write(ev.Data)
		} else {
			f.stdout.Write(ev.Data)
		}
	case client.Ended, client.Lost, client.Failed:
		e := ev
		f.final = &e
	}
}

// collect reads a follow to its end (the channel closes).
func collect(t *testing.T, ch <-chan client.LogEvent, within time.Duration) *followed {
	t.Helper()
	f := &followed{}
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return f
			}
			f.add(ev)
		case <-deadline:
			t.Fatalf("follow did not end within %s (have %v, stdout %q)", within, f.kinds(), f.stdout.String())
		}
	}
}

// until reads a follow until cond holds.
func until(t *testing.T, ch <-chan client.LogEvent, f *followed, what string, cond func(*followed) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond(f) {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("follow ended before %s (have %v)", what, f.kinds())
			}
			f.add(ev)
		case <-deadline:
			t.Fatalf("timed out waiting for %s (have %v, stdout %q)", what, f.kinds(), f.stdout.String())
		}
	}
}

func endedWith(t *testing.T, f *followed, state string, code int) {
	t.Helper()
	if f.final == nil || f.final.Kind != client.Ended || f.final.Status == nil {
		t.Fatalf("final event %+v (events %v), want Ended", f.final, f.kinds())
	}
	st := f.final.Status
	if st.State != state || st.Exit == nil || st.Exit.Code != code {
		t.Fatalf("ended %s %+v, want %s %d", st.State, st.Exit, state, code)
	}
}

func forBoth(t *testing.T, f func(t *testing.T, h *harness)) {
	for _, stable := range []bool{false, true} {
		name := "preview"
		if stable {
			name = "stable"
		}
		t.Run(name, func(t *testing.T) { f(t, newHarness(t, stable)) })
	}
}

func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"exits with the exact bytes", caseExitExact},
		{"non-zero exit", caseNonZero},
		{"reported ending is never exited", caseReported},
		{"lost after the container is replaced", caseLost},
		{"resume from a cursor: no byte twice, none lost", caseResume},
		{"cut stream is interrupted and resumed", caseCut},
		{"shell round trip", caseShell},
		{"watch: appeared, changed, incarnation", caseWatch},
		{"zero wakes", caseZeroWakes},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { forBoth(t, c.run) })
	}
}

func caseExitExact(t *testing.T, h *harness) {
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", `printf 'hello\nno newline'; printf 'err\n' >&2`)
	f := collect(t, h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{}), 20*time.Second)
	if f.stdout.String() != "hello\nno newline" || f.stderr.String() != "err\n" {
		t.Fatalf("output %q %q", f.stdout.String(), f.stderr.String())
	}
	endedWith(t, f, driver.StateExited, 0)
	got, err := h.d.Run(context.Background(), sb, r.ID)
	if err != nil || got.State != driver.StateExited || got.Exit == nil || got.Exit.Code != 0 {
		t.Fatalf("Run: %+v %v, want exited 0", got, err)
	}
	runs, err := h.d.Runs(context.Background(), sb)
	if err != nil || len(runs) != 1 || runs[0].ID != r.ID {
		t.Fatalf("Runs: %+v %v", runs, err)
	}
	if _, err := h.d.Run(context.Background(), sb, "no-such-run"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Run of an unknown ID: %v, want ErrNotFound", err)
	}
}

func caseNonZero(t *testing.T, h *harness) {
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", "echo failing; exit 7")
	f := collect(t, h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{}), 20*time.Second)
	if f.stdout.String() != "failing\n" {
		t.Fatalf("stdout %q", f.stdout.String())
	}
	endedWith(t, f, driver.StateExited, 7)
}

// The stable stream's exit-code-less completion ({"exit_code":0} while the command runs on):
// shown reported, never exited; the recorder then confirms the real code.
func caseReported(t *testing.T, h *harness) {
	if !h.stable {
		t.Skip("the preview bridge's endings are its own status: nothing is only reported")
	}
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", "echo started; sleep 1; echo finished; exit 3")
	ch := h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{})
	f := &followed{}
	until(t, ch, f, "the first output", func(f *followed) bool { return f.stdout.Len() > 0 })
	if n := h.b.Server.CompleteWithoutExit(sb); n != 1 {
		t.Fatalf("fabricated %d completions", n)
	}
	until(t, ch, f, "the suspect end", func(f *followed) bool {
		return len(f.events) > 0 && f.events[len(f.events)-1].Kind == client.SuspectEnd
	})
	suspect := f.events[len(f.events)-1]
	if suspect.Status == nil || suspect.Status.State != driver.StateReported || suspect.Status.Exit == nil || suspect.Status.Exit.Code != 0 {
		t.Fatalf("suspect end status %+v, want reported 0", suspect.Status)
	}
	if got, err := h.d.Run(context.Background(), sb, r.ID); err != nil || got.State == driver.StateExited {
		t.Fatalf("Run after the fabricated completion: %+v %v, must not be exited", got, err)
	}
	for ev := range ch {
		f.add(ev)
	}
	for _, ev := range f.events {
		if ev.Status != nil && ev.Status.State == driver.StateExited && ev.Status.Exit.Code == 0 {
			t.Fatalf("the fabricated code was shown confirmed: %+v", ev)
		}
	}
	endedWith(t, f, driver.StateExited, 3)
	if f.stdout.String() != "started\nfinished\n" {
		t.Fatalf("stdout %q", f.stdout.String())
	}
}

func caseLost(t *testing.T, h *harness) {
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", "echo before; sleep 30")
	ch := h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{})
	f := &followed{}
	until(t, ch, f, "the first output", func(f *followed) bool { return f.stdout.Len() > 0 })
	if err := h.b.Server.ReplaceSandbox(sb); err != nil {
		t.Fatal(err)
	}
	for ev := range ch {
		f.add(ev)
	}
	if f.final == nil || f.final.Kind != client.Lost || f.final.Loss == nil {
		t.Fatalf("final %+v (events %v), want Lost with evidence", f.final, f.kinds())
	}
	if h.stable {
		if !f.final.Loss.Inferred {
			t.Errorf("stable loss %+v must be inferred", f.final.Loss)
		}
		got, err := h.d.Run(context.Background(), sb, r.ID)
		if err != nil || got.State != driver.StateLost {
			t.Errorf("Run after the loss: %+v %v, want lost", got, err)
		}
		// what the stream delivered before the loss is kept by the record
		other := h.open(t)
		kept := collect(t, other.Follow(context.Background(), sb, r.ID, driver.FollowOptions{}), 10*time.Second)
		if kept.stdout.String() != "before\n" || kept.final == nil || kept.final.Kind != client.Lost {
			t.Errorf("another process's follow of the lost run: %q %v", kept.stdout.String(), kept.kinds())
		}
	}
}

// A follower that stops and starts again from its last cursor gets every byte once.
func caseResume(t *testing.T, h *harness) {
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", `for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "line $i"; echo "err $i" >&2; sleep 0.05; done`)
	var want, wantErr strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
		fmt.Fprintf(&wantErr, "err %d\n", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := h.d.Follow(ctx, sb, r.ID, driver.FollowOptions{})
	first := &followed{}
	until(t, ch, first, "some output", func(f *followed) bool { return strings.Count(f.stdout.String(), "\n") >= 3 })
	cursor := first.events[len(first.events)-1].Cursor
	cancel()
	for range ch {
	}
	rest := collect(t, h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{FollowOptions: client.FollowOptions{Since: cursor}}), 20*time.Second)
	if got := first.stdout.String() + rest.stdout.String(); got != want.String() {
		t.Fatalf("stdout across the resume:\n%q\nwant\n%q", got, want.String())
	}
	if got := first.stderr.String() + rest.stderr.String(); got != wantErr.String() {
		t.Fatalf("stderr across the resume:\n%q\nwant\n%q", got, wantErr.String())
	}
	endedWith(t, rest, driver.StateExited, 0)
}

// The stable stream cut between bridge and sandscope: the driver says Interrupted, reads the
// recorder's files, says Resumed, and delivers the rest once.
func caseCut(t *testing.T, h *harness) {
	if !h.stable {
		t.Skip("the preview follower's own resume is covered by client/follower_resume_test.go")
	}
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", "echo one; sleep 0.5; echo two; exit 4")
	ch := h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{})
	f := &followed{}
	until(t, ch, f, "the first output", func(f *followed) bool { return f.stdout.Len() > 0 })
	if n := h.b.Server.CutExecStreams(sb); n != 1 {
		t.Fatalf("cut %d streams", n)
	}
	for ev := range ch {
		f.add(ev)
	}
	k := f.kinds()
	interrupted, resumed := -1, -1
	for i, kind := range k {
		if kind == client.Interrupted && interrupted < 0 {
			interrupted = i
		}
		if kind == client.Resumed && resumed < 0 {
			resumed = i
		}
	}
	if interrupted < 0 || resumed < interrupted {
		t.Fatalf("events %v, want Interrupted then Resumed", k)
	}
	if f.stdout.String() != "one\ntwo\n" {
		t.Fatalf("stdout %q", f.stdout.String())
	}
	endedWith(t, f, driver.StateExited, 4)
}

func caseShell(t *testing.T, h *harness) {
	sb := h.sandbox(t)
	sh, ok := h.d.(driver.Shells)
	if !ok {
		t.Fatalf("%T offers no shells", h.d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := sh.OpenShell(ctx, sb, driver.ShellRequest{Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("echo mark-$((6*7))\n")); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for !strings.Contains(out.String(), "mark-42") {
		select {
		case ev, ok := <-conn.Events():
			if !ok {
				t.Fatalf("shell closed (have %q)", out.String())
			}
			out.Write(ev.Data)
		case <-ctx.Done():
			t.Fatalf("no echo (have %q)", out.String())
		}
	}
}

func caseWatch(t *testing.T, h *harness) {
	sb := h.sandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := h.d.Watch(ctx, sb, client.WatchOptions{FastInterval: 100 * time.Millisecond})
	r := h.start(t, sb, "sh", "-c", "sleep 0.5; exit 2")
	var appeared, changed bool
	deadline := time.After(20 * time.Second)
	for !changed {
		select {
		case ev := <-w.Events:
			if ev.Process == nil || ev.Process.ID != r.ID {
				continue
			}
			switch {
			case ev.Kind == client.ProcessAppeared && ev.Process.State == driver.StateRunning:
				appeared = true
			case ev.Kind == client.ProcessChanged && ev.Process.State == driver.StateExited:
				if !appeared {
					t.Fatal("changed before appeared")
				}
				if ev.Process.Exit == nil || ev.Process.Exit.Code != 2 {
					t.Fatalf("changed to %+v, want exited 2", ev.Process.Exit)
				}
				changed = true
			}
		case <-deadline:
			t.Fatalf("appeared %v changed %v", appeared, changed)
		}
	}
	// Another container: on stable the next run's marker differs (inferred).
	if err := h.b.Server.ReplaceSandbox(sb); err != nil {
		t.Fatal(err)
	}
	r2 := h.start(t, sb, "sh", "-c", "echo again")
	for {
		select {
		case ev := <-w.Events:
			if ev.Process != nil && ev.Process.ID == r2.ID {
				// placed in the old container, it would be one run shown twice (stale, and new)
				t.Fatalf("run %s reported before the container change, in incarnation %d (%v)", r2.ID, ev.Process.Incarnation, ev.Incarnation)
			}
			if ev.Kind != client.IncarnationChanged {
				continue
			}
			if ev.Incarnation.Number <= ev.Previous.Number || len(ev.Evidence) == 0 {
				t.Fatalf("incarnation change %+v", ev)
			}
			if h.stable && !ev.Incarnation.Inferred {
				t.Fatalf("stable incarnation change must be inferred: %+v", ev)
			}
			return
		case <-deadline:
			t.Fatalf("no incarnation change after the replacement (run %s)", r2.ID)
		}
	}
}

// On stable, nothing but Start (and what the user opens) may send a sandbox request.
func caseZeroWakes(t *testing.T, h *harness) {
	if !h.stable {
		t.Skip("preview lookups start no container")
	}
	sb := h.sandbox(t)
	r := h.start(t, sb, "sh", "-c", "echo done")
	endedWith(t, collect(t, h.d.Follow(context.Background(), sb, r.ID, driver.FollowOptions{}), 20*time.Second), driver.StateExited, 0)
	before := h.b.Server.Allocations(sb)
	other := h.open(t) // another sandscope process: the run is not live there
	ctx, cancel := context.WithCancel(context.Background())
	for _, d := range []driver.Driver{h.d, other} {
		if runs, err := d.Runs(ctx, sb); err != nil || len(runs) != 1 || runs[0].State != driver.StateExited {
			t.Fatalf("Runs: %+v %v", runs, err)
		}
		if got, err := d.Run(ctx, sb, r.ID); err != nil || got.State != driver.StateExited {
			t.Fatalf("Run: %+v %v", got, err)
		}
		if sess, ok := d.(driver.Sessions); ok {
			if _, err := sess.Sessions(ctx, sb); err != nil {
				t.Fatal(err)
			}
		}
	}
	w1 := h.d.Watch(ctx, sb, client.WatchOptions{FastInterval: 30 * time.Millisecond})
	w2 := other.Watch(ctx, sb, client.WatchOptions{FastInterval: 30 * time.Millisecond})
	w2.SetFocused(false)
	w2.SetSlow(40 * time.Millisecond)
	bg := collect(t, other.Follow(ctx, sb, r.ID, driver.FollowOptions{Background: true}), 5*time.Second)
	if bg.final == nil || bg.final.Kind != client.Failed || !errors.Is(bg.final.Err, driver.ErrNotLive) || len(bg.events) != 1 {
		t.Fatalf("background follow of a run not live here: %v %+v", bg.kinds(), bg.final)
	}
	if !errors.Is(bg.final.Err, record.ErrNotFollowed) {
		t.Fatalf("ErrNotLive must be the record's ErrNotFollowed: %v", bg.final.Err)
	}
	// The driver's own run: followed without a request. The driver captured its output into the
	// record itself, so the record's background follow starts after it (nothing twice).
	live := collect(t, driver.ForRecord(h.d).Follow(ctx, sb, r.ID, client.FollowOptions{}), 5*time.Second)
	if live.stdout.Len() != 0 || live.final == nil || live.final.Kind != client.Ended {
		t.Fatalf("the record's capture of the driver's own run: %q %v", live.stdout.String(), live.kinds())
	}
	// Any other background follower (a preview pane, follow-all) gets the whole run, and sends
	// nothing either.
	pane := collect(t, h.d.Follow(ctx, sb, r.ID, driver.FollowOptions{Background: true}), 5*time.Second)
	if pane.stdout.String() != "done\n" || pane.final == nil || pane.final.Kind != client.Ended {
		t.Fatalf("a background follow of the driver's own run: %q %v", pane.stdout.String(), pane.kinds())
	}
	if err := h.rec.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := h.rec.Captured(sb, r.ID)
	var kept []byte
	for _, ch := range c.Chunks { // the stream may deliver a line in pieces
		kept = append(kept, ch.Data...)
	}
	if err != nil || string(kept) != "done\n" {
		t.Fatalf("the record's capture of the run (%q): %+v %v", kept, c, err)
	}
	time.Sleep(400 * time.Millisecond) // many watch intervals
	var seen int
	for _, w := range []driver.WatchHandle{w1, w2} {
	drain:
		for {
			select {
			case ev := <-w.Events:
				if ev.Kind == client.ProcessAppeared && ev.Process.ID == r.ID {
					seen++
				}
			default:
				break drain
			}
		}
	}
	if seen != 2 {
		t.Errorf("the run appeared %d times in two watchers, want 2", seen)
	}
	cancel()
	if after := h.b.Server.Allocations(sb); after != before {
		t.Fatalf("%d sandbox requests during lookups, watches and background follows; want 0", after-before)
	}
}

// Goroutines of the stable driver (readers, followers, watchers) end with Close.
func TestStableCloseEndsGoroutines(t *testing.T) {
	h := newHarness(t, true)
	sb := h.sandbox(t)
	r := h.start(t, sb, "sleep", "30") // silent: the recorder's header alone names its container
	ctx := context.Background()
	ch := h.d.Follow(ctx, sb, r.ID, driver.FollowOptions{})
	w := h.d.Watch(ctx, sb, client.WatchOptions{FastInterval: 50 * time.Millisecond})
	f := &followed{}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got, _ := h.d.Run(ctx, sb, r.ID); got.Incarnation > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recorder's header never arrived")
		}
	}
	if err := h.d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.d.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	for ev := range ch {
		f.add(ev)
	}
	if f.final == nil || f.final.Kind != client.Failed {
		t.Fatalf("a follower at Close ends with %v", f.kinds())
	}
	for range w.Events {
	}
	got, err := h.d.Run(ctx, sb, r.ID)
	if err != nil || got.State != driver.StateInterrupted {
		t.Fatalf("after Close: %+v %v, want interrupted (the command runs on)", got, err)
	}
	if _, err := h.d.Start(ctx, sb, driver.StartRequest{ExecRequest: client.ExecRequest{Argv: []string{"true"}}}); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := driverGoroutines()
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left after Close:\n%s", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// driverGoroutines lists the goroutines running driver or stable-run code.
func driverGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "sandscope/driver.") && !strings.Contains(g, "driver_test.") ||
			strings.Contains(g, "client.(*RecordedRun)") || strings.Contains(g, "client.(*ExecRun)") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
