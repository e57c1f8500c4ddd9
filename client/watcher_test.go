package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func nextSandboxEvent(t *testing.T, w *Watcher, k SandboxEventKind) SandboxEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watcher closed while waiting for %v", k)
			}
			if ev.Kind == k {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %v event", k)
		}
	}
}

func TestWatchExplicitIncarnation(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	c := fb.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := c.Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond})
	if ev := nextSandboxEvent(t, w, SandboxStarted); ev.Incarnation != (Incarnation{Number: 1}) {
		t.Fatalf("initial %+v", ev)
	}
	if ev := nextSandboxEvent(t, w, ProcessAppeared); ev.Process.ID != "p1" {
		t.Fatalf("%+v", ev)
	}
	fb.exit("p1", 2)
	if ev := nextSandboxEvent(t, w, ProcessChanged); ev.Process.State != "exited" || ev.Process.Exit.Code != 2 {
		t.Fatalf("%+v", ev.Process)
	}
	fb.addProcess("p2")
	nextSandboxEvent(t, w, ProcessAppeared)
	fb.replace()
	ev := nextSandboxEvent(t, w, IncarnationChanged)
	if ev.Incarnation != (Incarnation{Number: 2}) || ev.Previous != (Incarnation{Number: 1}) || !strings.Contains(strings.Join(ev.Evidence, ";"), "reports incarnation 2") {
		t.Fatalf("%+v", ev)
	}
	if v := nextSandboxEvent(t, w, ProcessVanished); !strings.Contains(strings.Join(v.Evidence, ";"), "absent") {
		t.Fatalf("%+v", v)
	}
	cancel()
	for range w.Events() {
	}
}

func TestWatchInferredIncarnation(t *testing.T) {
	fb := newFakeBridge(t)
	fb.hideIncarnation = true
	fb.addProcess("p1")
	c := fb.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := c.Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond})
	if ev := nextSandboxEvent(t, w, ProcessAppeared); ev.Incarnation != (Incarnation{Number: 1, Inferred: true}) {
		t.Fatalf("%+v", ev)
	}
	// The container stops, then a new one starts with a fresh process table.
	fb.mu.Lock()
	fb.running = false
	fb.procs = map[string]*fakeProc{}
	fb.mu.Unlock()
	nextSandboxEvent(t, w, SandboxStopped)
	fb.mu.Lock()
	fb.running = true
	fb.mu.Unlock()
	fb.addProcess("p9")
	ev := nextSandboxEvent(t, w, IncarnationChanged)
	if ev.Incarnation != (Incarnation{Number: 2, Inferred: true}) || !strings.Contains(ev.Evidence[0], "inferred") {
		t.Fatalf("%+v", ev)
	}
}

func TestWatchReportsErrors(t *testing.T) {
	fb := newFakeBridge(t)
	c := fb.client(t)
	bad, _ := New(fb.srv.URL, WithToken("wrong"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := bad.Watch(ctx, "sbx", WatchOptions{FastInterval: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if ev := nextSandboxEvent(t, w, WatchError); ev.Err == nil {
		t.Fatal("no error")
	}
	cancel()
	for range w.Events() {
	}
	_ = c
}

// startedBridge is the fake bridge with /running also reporting when the current incarnation
// started, as sandscope's local bridge does.
type startedBridge struct {
	fb      *fakeBridge
	mu      sync.Mutex
	started time.Time
	srv     *httptest.Server
}

func newStartedBridge(t *testing.T, started time.Time) *startedBridge {
	sb := &startedBridge{fb: newFakeBridge(t), started: started}
	sb.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/sandbox/sbx/running" || r.Header.Get("Authorization") != "Bearer s3cret-token" {
			sb.fb.serve(w, r)
			return
		}
		sb.fb.mu.Lock()
		rs := RunningStatus{Running: sb.fb.running, Incarnation: sb.fb.incarnation}
		sb.fb.mu.Unlock()
		sb.mu.Lock()
		rs.IncarnationStarted = sb.started
		sb.mu.Unlock()
		writeJSONFake(w, 200, rs)
	}))
	t.Cleanup(sb.srv.Close)
	return sb
}

func (sb *startedBridge) client(t *testing.T) *Client {
	c, err := New(sb.srv.URL, WithToken("s3cret-token"), WithRequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restart is a bridge restarted with its numbering reset: the same incarnation number, a new
// start time.
func (sb *startedBridge) restart(started time.Time) {
	sb.mu.Lock()
	sb.started = started
	sb.mu.Unlock()
}

// untilKind returns the next event of kind k, failing on an IncarnationChanged met before it.
func untilKind(t *testing.T, w *Watcher, k SandboxEventKind) SandboxEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watcher closed while waiting for %v", k)
			}
			if ev.Kind == k {
				return ev
			}
			if ev.Kind == IncarnationChanged {
				t.Fatalf("unexpected %+v", ev)
			}
		case <-timeout:
			t.Fatalf("no %v event", k)
		}
	}
}

// TestWatchSameNumberNewStart: the bridge reports incarnation 1 again, with a later start: a new
// container life under the same number.
func TestWatchSameNumberNewStart(t *testing.T) {
	t1 := time.Date(2026, 3, 4, 15, 1, 2, 0, time.UTC)
	t2 := t1.Add(3 * time.Minute)
	b := newStartedBridge(t, t1)
	b.fb.addProcess("p1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := b.client(t).Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond})
	first := Incarnation{Number: 1, Started: t1.UnixNano()}
	if ev := untilKind(t, w, SandboxStarted); ev.Incarnation != first {
		t.Fatalf("initial %+v, want %+v", ev.Incarnation, first)
	}
	untilKind(t, w, ProcessAppeared)
	// Same number, same start: the same life, however many polls.
	b.fb.addProcess("p2")
	if ev := untilKind(t, w, ProcessAppeared); ev.Process.ID != "p2" || ev.Incarnation != first {
		t.Fatalf("%+v", ev)
	}
	b.restart(t2)
	ev := nextSandboxEvent(t, w, IncarnationChanged)
	second := Incarnation{Number: 1, Started: t2.UnixNano()}
	if ev.Previous != first || ev.Incarnation != second || len(ev.Evidence) != 1 {
		t.Fatalf("%+v, want %+v after %+v", ev, second, first)
	}
	local := func(t time.Time) string { return t.Local().Format("15:04:05") }
	want := "the bridge reports incarnation #1 again, but this container started at " + local(t2) + " (the earlier #1 started at " + local(t1) + ")"
	if ev.Evidence[0] != want {
		t.Fatalf("evidence %q, want %q", ev.Evidence[0], want)
	}
	b.fb.addProcess("p3")
	if ev := untilKind(t, w, ProcessAppeared); ev.Incarnation != second {
		t.Fatalf("after the change %+v", ev)
	}
	cancel()
	for range w.Events() {
	}
}

// TestWatchResumeSeesNewStart: resuming from a record whose incarnation started earlier than the
// one the bridge now reports under the same number, the first poll reports the new life.
func TestWatchResumeSeesNewStart(t *testing.T) {
	t1 := time.Date(2026, 3, 4, 15, 1, 2, 0, time.UTC)
	b := newStartedBridge(t, t1.Add(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := Incarnation{Number: 1, Started: t1.UnixNano()}
	w := b.client(t).Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond,
		Resume: &WatchResume{Incarnation: old, Running: true}})
	ev := <-w.Events()
	if ev.Kind != IncarnationChanged || ev.Previous != old || ev.Incarnation != (Incarnation{Number: 1, Started: t1.Add(time.Hour).UnixNano()}) {
		t.Fatalf("first event %+v", ev)
	}
	cancel()
	for range w.Events() {
	}
}

// TestWatchSameNumberWithEvidence: a bridge without start times reports incarnation 1 again after
// its processes vanished: a new life, with the evidence.
func TestWatchSameNumberWithEvidence(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := fb.client(t).Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond})
	untilKind(t, w, ProcessAppeared)
	// A restart that numbers from 1 again: a fresh process table, same number.
	fb.mu.Lock()
	fb.procs = map[string]*fakeProc{}
	fb.mu.Unlock()
	fb.addProcess("p9")
	ev := nextSandboxEvent(t, w, IncarnationChanged)
	if ev.Previous != (Incarnation{Number: 1}) || ev.Incarnation != (Incarnation{Number: 1}) || len(ev.Evidence) == 0 ||
		!strings.HasPrefix(ev.Evidence[0], "the bridge reports the same incarnation #1, but: inferred: process p1 was running and is now absent") {
		t.Fatalf("%+v", ev)
	}
	cancel()
	for range w.Events() {
	}
}

// TestWatchResumeRunningUnknown: an earlier view that never saw whether the container ran (a
// command only looked up an exited process) is not "stopped": the first poll finding it running
// under the same number is no new container, and says it runs. A view that saw it stopped still
// infers a new one.
func TestWatchResumeRunningUnknown(t *testing.T) {
	t1 := time.Date(2026, 3, 4, 15, 1, 2, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		resume   WatchResume
		boundary bool
	}{
		{"unknown", WatchResume{Incarnation: Incarnation{Number: 1}, RunningUnknown: true}, false},
		{"stopped", WatchResume{Incarnation: Incarnation{Number: 1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newStartedBridge(t, t1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := tc.resume
			w := b.client(t).Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond, Resume: &r})
			b.fb.addProcess("p2")
			var kinds []SandboxEventKind
			for {
				ev := <-w.Events()
				kinds = append(kinds, ev.Kind)
				if ev.Kind == ProcessAppeared {
					break
				}
			}
			if got := slices.Contains(kinds, IncarnationChanged); got != tc.boundary {
				t.Fatalf("events %v: a new container %v, want %v", kinds, got, tc.boundary)
			}
			if !slices.Contains(kinds, SandboxStarted) {
				t.Fatalf("events %v: the running container is not told", kinds)
			}
			cancel()
			for range w.Events() {
			}
		})
	}
}

// TestWatchLearnsStart: a resumed incarnation without a start time takes the bridge's when nothing
// says the container changed.
func TestWatchLearnsStart(t *testing.T) {
	t1 := time.Date(2026, 3, 4, 15, 1, 2, 0, time.UTC)
	b := newStartedBridge(t, t1)
	b.fb.addProcess("p1")
	b.fb.mu.Lock()
	p1 := b.fb.procs["p1"].p
	b.fb.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := b.client(t).Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond,
		Resume: &WatchResume{Incarnation: Incarnation{Number: 1}, Running: true, Processes: []Process{p1}}})
	b.fb.addProcess("p2")
	if ev := untilKind(t, w, ProcessAppeared); ev.Process.ID != "p2" || ev.Incarnation != (Incarnation{Number: 1, Started: t1.UnixNano()}) {
		t.Fatalf("%+v", ev)
	}
	cancel()
	for range w.Events() {
	}
}

// fakeWatchTimer hands the watcher's waits to the test, which fires them: each wait asked
// follows exactly one poll (or a hurry), so the sequence of waits is the poll schedule.
type fakeWatchTimer struct {
	c     chan time.Time
	asked chan time.Duration
}

func (f *fakeWatchTimer) new(d time.Duration) watchTimer { f.asked <- d; return f }
func (f *fakeWatchTimer) C() <-chan time.Time            { return f.c }
func (f *fakeWatchTimer) Reset(d time.Duration)          { f.asked <- d }
func (f *fakeWatchTimer) Stop()                          {}

func TestWatchAdaptiveInterval(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	c := fb.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ft := &fakeWatchTimer{c: make(chan time.Time), asked: make(chan time.Duration, 16)}
	const s = time.Second
	w := c.Watch(ctx, "sbx", WatchOptions{FastInterval: s, SlowInterval: 10 * s, SettledInterval: SettledInterval(s, 10*s), timer: ft.new})
	go func() {
		for range w.Events() {
		}
	}()
	step := 0
	expect := func(want time.Duration) {
		t.Helper()
		step++
		if got := <-ft.asked; got != want {
			t.Fatalf("wait %d: %v, want %v", step, got, want)
		}
	}
	poll := func(want time.Duration) { // the timer fires: one poll, then the next wait
		t.Helper()
		ft.c <- time.Now()
		expect(want)
	}
	expect(s) // the first poll reports the initial state: a change
	poll(2 * s)
	poll(4 * s)
	poll(4 * s) // settled: nothing new, the wait stays at 4 × fast
	fb.exit("p1", 0)
	poll(s) // a change: fast again
	poll(2 * s)
	poll(4 * s)

	// focused again (an action, a stream's ending): the pending 4 s wait ends at most one fast
	// interval after the last poll, and the waits start over from fast
	w.SetFocused(true)
	step++
	if got := <-ft.asked; got > s {
		t.Fatalf("hurried wait %v, want at most %v", got, s)
	}
	poll(s)
	poll(2 * s)

	// unfocused: the slow interval; focus gained: a poll at once, fast after it
	w.SetFocused(false)
	poll(10 * s)
	poll(10 * s)
	w.SetFocused(true)
	expect(s)
	fb.addProcess("p2")
	poll(s)
	poll(2 * s)
	select {
	case d := <-ft.asked:
		t.Fatalf("an extra wait %v: a poll nobody asked for", d)
	default:
	}
}

func TestSettledInterval(t *testing.T) {
	for _, c := range []struct{ fast, slow, want time.Duration }{
		{0, 0, 4 * time.Second},
		{time.Second, 10 * time.Second, 4 * time.Second},
		{2 * time.Second, 5 * time.Second, 5 * time.Second},
		{3 * time.Second, 2 * time.Second, 3 * time.Second}, // never below fast
		{100 * time.Millisecond, time.Hour, 400 * time.Millisecond},
	} {
		if got := SettledInterval(c.fast, c.slow); got != c.want {
			t.Errorf("SettledInterval(%v, %v) = %v, want %v", c.fast, c.slow, got, c.want)
		}
	}
}

// Without SettledInterval a focused watcher keeps its fast interval (`logs --all -f`).
func TestWatchFixedIntervalByDefault(t *testing.T) {
	fb := newFakeBridge(t)
	c := fb.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ft := &fakeWatchTimer{c: make(chan time.Time), asked: make(chan time.Duration, 16)}
	w := c.Watch(ctx, "sbx", WatchOptions{FastInterval: time.Second, timer: ft.new})
	go func() {
		for range w.Events() {
		}
	}()
	for i := 0; i < 4; i++ {
		if i > 0 {
			ft.c <- time.Now()
		}
		if got := <-ft.asked; got != time.Second {
			t.Fatalf("wait %d: %v", i, got)
		}
	}
}

// An Unfocused watcher waits the slow interval after its very first poll (started focused and
// switched later, its second poll would come one fast interval after the first); focused, it
// polls at once and fast after.
func TestWatchStartsUnfocused(t *testing.T) {
	fb := newFakeBridge(t)
	c := fb.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ft := &fakeWatchTimer{c: make(chan time.Time), asked: make(chan time.Duration, 16)}
	const s = time.Second
	w := c.Watch(ctx, "sbx", WatchOptions{FastInterval: s, SlowInterval: 10 * s, SettledInterval: SettledInterval(s, 10*s),
		Unfocused: true, timer: ft.new})
	go func() {
		for range w.Events() {
		}
	}()
	for i := 0; i < 3; i++ {
		if i > 0 {
			ft.c <- time.Now()
		}
		if got := <-ft.asked; got != 10*s {
			t.Fatalf("wait %d: %v, want the slow interval", i, got)
		}
	}
	w.SetFocused(true)
	if got := <-ft.asked; got != s {
		t.Fatalf("focused: wait %v, want %v", got, s)
	}
}
