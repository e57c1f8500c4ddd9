package record

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"sandscope/client"
)

// startBridge logs each watcher started (its options) and the calls on its handles.
type startBridge struct {
	mu      sync.Mutex
	started []string
	opts    map[string]client.WatchOptions
	focused map[string]bool
	slow    map[string]time.Duration
}

func newStartBridge() *startBridge {
	return &startBridge{opts: map[string]client.WatchOptions{}, focused: map[string]bool{}, slow: map[string]time.Duration{}}
}

func (b *startBridge) Watch(ctx context.Context, sb string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started = append(b.started, sb)
	b.opts[sb] = o
	b.slow[sb] = o.SlowInterval
	return make(chan client.SandboxEvent), func(f bool) {
			b.mu.Lock()
			b.focused[sb] = f
			b.mu.Unlock()
		}, func(d time.Duration) {
			b.mu.Lock()
			b.slow[sb] = d
			b.mu.Unlock()
		}
}

func (b *startBridge) Follow(ctx context.Context, sb, p string, o client.FollowOptions) <-chan client.LogEvent {
	ch := make(chan client.LogEvent)
	close(ch)
	return ch
}

func (b *startBridge) startedList() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.started...)
}

// fakeAfter is a clock for the manager's first polls: each wait asked for is listed, and fires
// when the test says.
type fakeAfter struct {
	mu    sync.Mutex
	waits map[time.Duration][]chan time.Time
}

func (f *fakeAfter) after(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	f.waits[d] = append(f.waits[d], ch)
	return ch
}

func (f *fakeAfter) asked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, w := range f.waits {
		n += len(w)
	}
	return n
}

// fire ends every wait of d.
func (f *fakeAfter) fire(d time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.waits[d] {
		ch <- time.Now()
	}
	n := len(f.waits[d])
	delete(f.waits, d)
	return n
}

func startManager(t *testing.T, budget WatchBudget) (*Manager, *startBridge, *fakeAfter, *Record) {
	t.Helper()
	rec := open(t, t.TempDir())
	t.Cleanup(func() { rec.Close() })
	b := newStartBridge()
	m := NewManager(context.Background(), rec, b, budget)
	clock := &fakeAfter{waits: map[time.Duration][]chan time.Time{}}
	m.after = clock.after
	t.Cleanup(m.Close)
	return m, b, clock, rec
}

// The first polls of many sandboxes tracked at once are spread over one slow interval, in the
// order given (the k-th of n at k × interval / n), and every watcher starts with the slow interval
// of all n, not of those tracked before it.
func TestTrackSpreadsFirstPollsAndUsesTheFinalInterval(t *testing.T) {
	budget := WatchBudget{Fast: time.Second, Slow: 10 * time.Second, Background: 5}
	m, b, clock, _ := startManager(t, budget)
	const n = 200
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("sb%03d", i)
	}
	m.Track(ids...)
	interval := budget.SlowInterval(n) // 119.4 s
	spacing := interval / n
	waitUntil(t, "the first sandbox's watcher and the others' waits", func() bool {
		return len(b.startedList()) == 1 && clock.asked() == n-1
	})
	if got := b.startedList(); got[0] != ids[0] {
		t.Fatalf("started %v first, want %s (polled at once)", got, ids[0])
	}
	for k := 1; k < n; k++ {
		if got := clock.fire(time.Duration(k) * spacing); got != 1 {
			t.Fatalf("sandbox %d: %d waits of %v, want 1", k, got, time.Duration(k)*spacing)
		}
		waitUntil(t, "the next watcher", func() bool { return len(b.startedList()) == k+1 })
		if got := b.startedList()[k]; got != ids[k] {
			t.Fatalf("watcher %d is %s, want %s", k, got, ids[k])
		}
	}
	b.mu.Lock()
	for _, sb := range ids {
		if o := b.opts[sb]; o.SlowInterval != interval {
			t.Errorf("%s started with a slow interval of %v, want %v", sb, o.SlowInterval, interval)
		}
	}
	b.mu.Unlock()
	if len(m.Watched()) != n {
		t.Fatalf("watched %d", len(m.Watched()))
	}

	// one more sandbox: polled at once, and every watcher's interval stretches to 201's
	m.Track("late")
	waitUntil(t, "the late sandbox's watcher", func() bool { return len(b.startedList()) == n+1 })
	b.mu.Lock()
	defer b.mu.Unlock()
	for sb, d := range b.slow {
		if d != budget.SlowInterval(n+1) {
			t.Errorf("%s: slow interval %v, want %v", sb, d, budget.SlowInterval(n+1))
		}
	}
}

// Focusing a sandbox whose first poll is still to come starts its watcher at once, focused; an
// untracked one never starts.
func TestFocusBringsTheFirstPollForward(t *testing.T) {
	m, b, clock, _ := startManager(t, WatchBudget{})
	m.Track("a", "b", "c", "d")
	waitUntil(t, "the waits", func() bool { return clock.asked() == 3 })
	// a's watcher starts without a wait, but on a busy machine after the others began theirs
	waitUntil(t, "a's watcher", func() bool { return len(b.startedList()) == 1 })
	m.Untrack("b")
	m.Focus("c")
	waitUntil(t, "c's watcher", func() bool { return len(b.startedList()) == 2 })
	b.mu.Lock()
	if got := fmt.Sprint(b.started); got != "[a c]" {
		t.Errorf("started %s, want [a c]", got)
	}
	if !b.focused["c"] || b.focused["a"] {
		t.Errorf("focus %v: want c only", b.focused)
	}
	// a background watcher starts at the slow rate (its second poll one slow interval after its
	// first), the one on screen at the fast rate
	if !b.opts["a"].Unfocused || b.opts["c"].Unfocused {
		t.Errorf("unfocused: a %v, c %v; want true, false", b.opts["a"].Unfocused, b.opts["c"].Unfocused)
	}
	b.mu.Unlock()
	m.Close() // ends the waits of b and d
	if got := fmt.Sprint(b.startedList()); got != "[a c]" {
		t.Errorf("started %s after close, want [a c]", got)
	}
}

// Track and Focus do not read the record on the caller's goroutine (the TUI's event loop): with
// the record held, both return. The watcher resumes from what the record knows at its first
// poll, including what was recorded after Track.
func TestTrackDoesNotReadTheRecordOnTheCallersGoroutine(t *testing.T) {
	m, b, clock, rec := startManager(t, WatchBudget{})
	now := time.Now()
	inc := client.Incarnation{Number: 1}
	rec.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "b", Time: now, Incarnation: inc}))
	rec.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "b", Time: now, Incarnation: inc,
		Process: &client.Process{ID: "p1", State: "running", PID: 7, Incarnation: 1, StartedAt: now}}))
	rec.mu.Lock() // every State read waits
	m.Track("a", "b")
	m.Focus("a")
	m.Nudge("a")
	if got := b.startedList(); len(got) != 0 {
		rec.mu.Unlock()
		t.Fatalf("started %v with the record held: the record was read before", got)
	}
	rec.mu.Unlock()
	waitUntil(t, "a's watcher", func() bool { return len(b.startedList()) == 1 })
	b.mu.Lock()
	if !b.focused["a"] || b.opts["a"].Resume != nil {
		t.Errorf("a: focused %v, resume %+v: want focused, nothing to resume", b.focused["a"], b.opts["a"].Resume)
	}
	b.mu.Unlock()

	// recorded while b waits for its first poll: its watcher knows it
	rec.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "b", Time: now, Incarnation: inc,
		Process: &client.Process{ID: "p2", State: "running", PID: 8, Incarnation: 1, StartedAt: now}}))
	waitUntil(t, "b's wait", func() bool { return clock.asked() == 1 })
	clock.fire(WatchBudget{}.SlowInterval(2) / 2)
	waitUntil(t, "b's watcher", func() bool { return len(b.startedList()) == 2 })
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.opts["b"].Resume
	if r == nil || !r.Running || r.Incarnation.Number != 1 || len(r.Processes) != 2 {
		t.Fatalf("b resumed from %+v: want incarnation 1 running with p1 and p2", r)
	}
}

// The states of sandboxes tracked together are read into memory ahead of their first polls (off
// the caller's goroutine), so a screen listing them all finds them there.
func TestTrackWarmsTheStatesAhead(t *testing.T) {
	m, b, clock, rec := startManager(t, WatchBudget{})
	m.Track("a", "b", "c", "d")
	waitUntil(t, "the states in memory", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, sb := range []string{"a", "b", "c", "d"} {
			if _, ok := rec.states[sb]; !ok {
				return false
			}
		}
		return true
	})
	waitUntil(t, "the waits", func() bool { return clock.asked() == 3 })
	if got := b.startedList(); len(got) != 1 {
		t.Fatalf("started %v, %d waiting: the first polls must still wait their turn", got, clock.asked())
	}
}

// TestWatchedFollowsTrackAndUntrack: Watched lists the sandboxes watched, sorted, as they are
// after each Track and Untrack (its answer is kept between changes), and what a caller does to
// an answer does not reach the next.
func TestWatchedFollowsTrackAndUntrack(t *testing.T) {
	m, _, _, _ := startManager(t, DefaultWatchBudget)
	m.Track("c", "a")
	got := m.Watched()
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("watched %v", got)
	}
	got[0] = "changed by the caller"
	if got := m.Watched(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("after a caller's change, watched %v", got)
	}
	m.Track("b", "a")
	if got := m.Watched(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("after Track, watched %v", got)
	}
	m.Untrack("a")
	if got := m.Watched(); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("after Untrack, watched %v", got)
	}
}
