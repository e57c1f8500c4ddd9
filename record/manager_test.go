package record

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
)

func localBridge(t *testing.T) (*localbridge.Server, *client.Client) {
	t.Helper()
	srv, err := localbridge.New(localbridge.Config{Root: t.TempDir(), Token: "record-token"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	c, err := client.New(srv.URL(), client.WithToken("record-token"))
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The manager watches a sandbox nobody looks at, captures its process, and records the loss of
// that process when the container is replaced; a restart continues from the record.
func TestManagerRecordsReplacementAndCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	srv, c := localBridge(t)
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.StartProcess(ctx, sb, client.ExecRequest{Argv: []string{"sh", "-c", `for i in 1 2 3; do echo "{\"n\":$i}"; done; sleep 600`}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec := open(t, dir)
	budget := WatchBudget{Fast: 50 * time.Millisecond, Slow: 100 * time.Millisecond, Background: 1000}
	m := NewManager(ctx, rec, FromClient(c), budget)
	m.Track(sb) // not focused: the slow rate
	waitUntil(t, "capture of the three lines", func() bool {
		rec.Flush()
		cp, _ := rec.Captured(sb, p.ID)
		return cp.Bytes == int64(len(`{"n":1}`)+1)*3
	})
	if !m.Capturing(sb, p.ID) {
		t.Fatal("not capturing a running process")
	}
	if err := srv.ReplaceSandbox(sb); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the loss", func() bool {
		e := rec.State(sb).Find(Process, p.ID)
		return e != nil && e.Lost && len(rec.State(sb).Incarnations) == 2
	})
	waitUntil(t, "the capture to end", func() bool { return !m.Capturing(sb, p.ID) })
	m.Close()
	rec.Flush()
	cp, _ := rec.Captured(sb, p.ID)
	if cp.Ended != "the process was lost" || cp.EarlierGone || cp.BeganCursor == "" {
		t.Fatalf("capture: %+v", cp)
	}
	st := rec.State(sb)
	if ev := strings.Join(st.Incarnations[1].Evidence, ";"); !strings.Contains(ev, "incarnation") {
		t.Fatalf("boundary evidence: %q", ev)
	}
	rec.Close()

	// a new run continues from the record: the replacement is not reported again, and a stop
	// seen on the first poll is
	rec2 := open(t, dir)
	defer rec2.Close()
	if err := srv.StopSandbox(sb); err != nil {
		t.Fatal(err)
	}
	m2 := NewManager(ctx, rec2, FromClient(c), budget)
	defer m2.Close()
	m2.Focus(sb)
	waitUntil(t, "the stop", func() bool {
		st := rec2.State(sb)
		return st.Running != nil && !*st.Running
	})
	st = rec2.State(sb)
	if len(st.Incarnations) != 2 || !st.Find(Process, p.ID).Earlier {
		t.Fatalf("after restart: %d incarnations, %+v", len(st.Incarnations), st.Find(Process, p.ID))
	}
}

type countingBridge struct {
	polls atomic.Int64
}

func (b *countingBridge) Watch(ctx context.Context, sb string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	ch := make(chan client.SandboxEvent)
	var slow atomic.Int64
	var focused atomic.Bool
	slow.Store(int64(o.SlowInterval))
	go func() {
		defer close(ch)
		for {
			b.polls.Add(1)
			d := time.Duration(slow.Load())
			if focused.Load() {
				d = o.FastInterval
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
	}()
	return ch, focused.Store, func(d time.Duration) { slow.Store(int64(d)) }
}

func (b *countingBridge) Follow(ctx context.Context, sb, p string, o client.FollowOptions) <-chan client.LogEvent {
	ch := make(chan client.LogEvent)
	close(ch)
	return ch
}

func TestSlowIntervalHoldsTheBudget(t *testing.T) {
	b := WatchBudget{Fast: time.Second, Slow: 10 * time.Second, Background: 5}
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{1, 10 * time.Second}, {10, 10 * time.Second}, {50, 29400 * time.Millisecond}, {200, 119400 * time.Millisecond}} {
		got := b.SlowInterval(c.n)
		if got != c.want {
			t.Errorf("SlowInterval(%d) = %v, want %v", c.n, got, c.want)
		}
		if rate := float64((c.n-1)*PollRequests) / got.Seconds(); rate > b.Background+1e-9 {
			t.Errorf("%d sandboxes: %.2f requests/s over the budget", c.n, rate)
		}
	}
}

// scriptedBridge is a fake bridge whose watcher events the test sends, and whose followers
// deliver a process's retained output and then its ending, unless the process is held running
// (then its follower waits until the test releases it).
type scriptedBridge struct {
	events chan client.SandboxEvent
	mu     sync.Mutex
	follow []string                 // processes followed, in order
	held   map[string]chan struct{} // closed to let a held process end
}

func (b *scriptedBridge) Watch(ctx context.Context, sb string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	return b.events, func(bool) {}, func(time.Duration) {}
}

func (b *scriptedBridge) Follow(ctx context.Context, sb, p string, o client.FollowOptions) <-chan client.LogEvent {
	b.mu.Lock()
	b.follow = append(b.follow, p)
	hold := b.held[p]
	b.mu.Unlock()
	ch := make(chan client.LogEvent, 4)
	go func() {
		defer close(ch)
		ch <- client.LogEvent{Kind: client.Data, Cursor: p + "-1", Time: time.Now(), Data: []byte("output of " + p + "\n")}
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				return
			}
		}
		code := 2
		ch <- client.LogEvent{Kind: client.Ended, Cursor: p + "-1", Time: time.Now(), Status: &client.Process{ID: p, State: "exited", Exit: &client.Exit{Code: code}}}
	}()
	return ch
}

func (b *scriptedBridge) followed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.follow...)
}

// A process that ended while watched, with nothing capturing it, gets its retained output
// captured ahead of processes that merely run, as soon as a slot frees.
func TestManagerCapturesAnEndedProcessFirst(t *testing.T) {
	rec := open(t, t.TempDir())
	defer rec.Close()
	b := &scriptedBridge{events: make(chan client.SandboxEvent, 16), held: map[string]chan struct{}{
		"busy": make(chan struct{}), "waiting": make(chan struct{}),
	}}
	m := NewManager(context.Background(), rec, b, WatchBudget{MaxCaptures: 1})
	defer m.Close()
	m.Track("sb")
	now := time.Now()
	run := func(id string) client.SandboxEvent {
		return client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: now,
			Process: &client.Process{ID: id, State: "running", StartedAt: now}}
	}
	b.events <- run("busy")    // takes the one slot
	b.events <- run("waiting") // queued behind it
	code := 2
	// started and ended between two polls: first seen already exited
	b.events <- client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: now.Add(time.Second),
		Process: &client.Process{ID: "failed", State: "exited", StartedAt: now.Add(time.Millisecond), Exit: &client.Exit{Code: code}}}
	// an old process that ended before the manager watched is history, not captured
	b.events <- client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: now.Add(time.Second),
		Process: &client.Process{ID: "old", State: "exited", StartedAt: now.Add(-time.Hour), Exit: &client.Exit{Code: code}}}
	waitUntil(t, "the first capture", func() bool { return m.Capturing("sb", "busy") })
	time.Sleep(50 * time.Millisecond) // let the manager take the other events in
	close(b.held["busy"])
	waitUntil(t, "the ended process's capture", func() bool {
		rec.Flush()
		c, _ := rec.Captured("sb", "failed")
		return c.Ended == "the process ended" && c.Bytes > 0
	})
	if got := b.followed(); len(got) < 2 || got[1] != "failed" {
		t.Fatalf("followed %v: the ended process must go ahead of the running one", got)
	}
	waitUntil(t, "the running process's turn", func() bool { return m.Capturing("sb", "waiting") })
	close(b.held["waiting"])
	waitUntil(t, "the running process's capture to end", func() bool { return !m.Capturing("sb", "waiting") })
	for _, p := range b.followed() {
		if p == "old" {
			t.Fatal("captured a process that ended before the manager watched")
		}
	}
	// seen ending after it ran: a process already captured to its end is not captured again
	b.events <- client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "sb", Time: time.Now(),
		Process: &client.Process{ID: "waiting", State: "exited", StartedAt: now, Exit: &client.Exit{Code: code}}}
	time.Sleep(50 * time.Millisecond)
	if got := b.followed(); len(got) != 3 {
		t.Fatalf("followed %v", got)
	}
}

// refusingBridge follows nothing in the background: every follow is one Failed event whose
// error is ErrNotFollowed (a stable bridge, for runs no sandscope process streams).
type refusingBridge struct {
	events  chan client.SandboxEvent
	follows atomic.Int32
}

func (b *refusingBridge) Watch(ctx context.Context, sb string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	return b.events, func(bool) {}, func(time.Duration) {}
}

func (b *refusingBridge) Follow(ctx context.Context, sb, p string, o client.FollowOptions) <-chan client.LogEvent {
	b.follows.Add(1)
	ch := make(chan client.LogEvent, 1)
	ch <- client.LogEvent{Kind: client.Failed, Time: time.Now(), Err: fmt.Errorf("follow %s: %w", p, ErrNotFollowed)}
	close(ch)
	return ch
}

// A follow the source refuses (reading would start a container) leaves no capture in the record
// and is not asked for again when the process changes.
func TestManagerNotFollowedLeavesNoCapture(t *testing.T) {
	rec := open(t, t.TempDir())
	defer rec.Close()
	b := &refusingBridge{events: make(chan client.SandboxEvent, 16)}
	m := NewManager(context.Background(), rec, b, WatchBudget{})
	defer m.Close()
	m.Track("sb")
	now := time.Now()
	b.events <- client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: now,
		Process: &client.Process{ID: "r1", State: "running", StartedAt: now}}
	waitUntil(t, "the refused follow", func() bool { return b.follows.Load() == 1 && !m.Capturing("sb", "r1") })
	code := 0
	b.events <- client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "sb", Time: now.Add(time.Second),
		Process: &client.Process{ID: "r1", State: "exited", StartedAt: now, Exit: &client.Exit{Code: code}}}
	waitUntil(t, "the change recorded", func() bool {
		e := rec.State("sb").Find(Process, "r1")
		return e != nil && e.State() == "exited"
	})
	time.Sleep(50 * time.Millisecond)
	if n := b.follows.Load(); n != 1 {
		t.Errorf("followed %d times, want 1 (a refused follow is not retried)", n)
	}
	rec.Flush()
	if c, err := rec.Captured("sb", "r1"); err != nil || c.Found {
		t.Errorf("capture %+v %v: a refused follow must leave no capture", c, err)
	}
	if o := rec.OutputOf("sb", "r1"); o.Found {
		t.Errorf("output summary %+v: want none", o)
	}
}

// focusBridge is the scripted bridge with each watcher's focus calls logged ("sb:true").
type focusBridge struct {
	scriptedBridge
	fmu   sync.Mutex
	calls []string
}

func (b *focusBridge) Watch(ctx context.Context, sb string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	events := b.events // the test's events are sandbox a's
	if sb != "a" {
		events = make(chan client.SandboxEvent)
	}
	return events, func(f bool) {
		b.fmu.Lock()
		b.calls = append(b.calls, fmt.Sprintf("%s:%v", sb, f))
		b.fmu.Unlock()
	}, func(time.Duration) {}
}

func (b *focusBridge) focusCalls() string {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	return strings.Join(b.calls, " ")
}

// Nudge brings the sandbox on screen back to its fast polls (focused again), and only that one;
// a captured process of it ending nudges it too.
func TestManagerNudgesTheSandboxOnScreen(t *testing.T) {
	rec := open(t, t.TempDir())
	defer rec.Close()
	b := &focusBridge{scriptedBridge: scriptedBridge{events: make(chan client.SandboxEvent, 16), held: map[string]chan struct{}{"p1": make(chan struct{})}}}
	m := NewManager(context.Background(), rec, b, WatchBudget{})
	defer m.Close()
	m.Track("a", "b") // b is first polled one slow interval / 2 later: it stays unstarted here
	m.Focus("a")
	waitUntil(t, "a's watcher", func() bool { return b.focusCalls() != "" })
	m.Nudge("b") // not on screen: nothing
	m.Nudge("a")
	m.Nudge("")
	if got, want := b.focusCalls(), "a:true a:true"; got != want {
		t.Fatalf("focus calls %q, want %q", got, want)
	}
	now := time.Now()
	b.events <- client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "a", Time: now,
		Process: &client.Process{ID: "p1", State: "running", StartedAt: now}}
	waitUntil(t, "the capture", func() bool { return m.Capturing("a", "p1") })
	close(b.held["p1"]) // its stream ends
	waitUntil(t, "the capture's end", func() bool { return !m.Capturing("a", "p1") })
	if got, want := b.focusCalls(), "a:true a:true a:true"; got != want {
		t.Fatalf("focus calls %q, want %q", got, want)
	}
}

// reusingBridge follows like a client follower under ReuseData: each Data event's bytes live in
// one of two buffers, rewritten as soon as the consumer has received the event after it.
type reusingBridge struct {
	events chan client.SandboxEvent
	want   bytes.Buffer // what the process wrote
	reuse  atomic.Bool  // the manager asked for ReuseData
}

func (b *reusingBridge) Watch(ctx context.Context, sb string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	return b.events, func(bool) {}, func(time.Duration) {}
}

func (b *reusingBridge) Follow(ctx context.Context, sb, p string, o client.FollowOptions) <-chan client.LogEvent {
	b.reuse.Store(o.ReuseData)
	ch := make(chan client.LogEvent) // unbuffered: a send returns once the consumer has the event
	bufs := [2][]byte{make([]byte, 0, 64<<10), make([]byte, 0, 64<<10)}
	var chunks [][]byte
	for i := 0; i < 200; i++ {
		chunks = append(chunks, bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i*97))
		b.want.Write(chunks[i])
	}
	go func() {
		defer close(ch)
		for i, c := range chunks {
			buf := append(bufs[i%2][:0], c...)
			select {
			case ch <- client.LogEvent{Kind: client.Data, Cursor: fmt.Sprintf("%s-%d", p, i+1), Time: time.Now(), Data: buf}:
			case <-ctx.Done():
				return
			}
			// the consumer received event i, so it is done with event i-1: its buffer is reused
			if i > 0 {
				prev := bufs[(i-1)%2][:cap(bufs[(i-1)%2])]
				for j := range prev {
					prev[j] = 'X'
				}
			}
		}
		code := 0
		ch <- client.LogEvent{Kind: client.Ended, Cursor: fmt.Sprintf("%s-%d", p, len(chunks)), Time: time.Now(), Status: &client.Process{ID: p, State: "exited", Exit: &client.Exit{Code: code}}}
	}()
	return ch
}

// The manager's captures let the follower recycle its decode buffers, and what they record is
// still every byte in order: nothing it keeps refers to a buffer after the next receive.
func TestCaptureCopiesRecycledData(t *testing.T) {
	rec := open(t, t.TempDir())
	defer rec.Close()
	b := &reusingBridge{events: make(chan client.SandboxEvent, 4)}
	m := NewManager(context.Background(), rec, b, WatchBudget{MaxCaptures: 1})
	defer m.Close()
	m.Track("sb")
	now := time.Now()
	b.events <- client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: now,
		Process: &client.Process{ID: "busy", State: "running", StartedAt: now}}
	var c Capture
	waitUntil(t, "the capture to end", func() bool {
		rec.Flush()
		c, _ = rec.Captured("sb", "busy")
		return c.Ended != ""
	})
	if !b.reuse.Load() {
		t.Error("captures follow without ReuseData: every event gets a fresh buffer")
	}
	var got []byte
	for _, ch := range c.Chunks {
		got = append(got, ch.Data...)
	}
	if !bytes.Equal(got, b.want.Bytes()) {
		t.Fatalf("captured %d bytes, want %d; equal prefix %d", len(got), b.want.Len(), commonPrefix(got, b.want.Bytes()))
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
