package client

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"
)

// WatchOptions tunes a Watcher.
//
// With SettledInterval set, a focused watcher polls adaptively: FastInterval after a poll that
// saw a change, after gaining focus and after SetFocused(true) again (someone acted on the
// sandbox, or a followed stream saw a process end); each poll that sees nothing new doubles the
// wait, up to SettledInterval. An unfocused watcher polls every SlowInterval.
type WatchOptions struct {
	FastInterval time.Duration // while focused, right after a change (default 1s): the fastest rate
	SlowInterval time.Duration // otherwise (default 10s)
	// SettledInterval is the focused wait once nothing has changed for a while (default
	// FastInterval: no stretching; the TUI's watchers use SettledInterval(fast, slow)).
	SettledInterval time.Duration
	MaxBackoff      time.Duration // on errors (default 30s)
	Buffer          int           // capacity of the Events channel (default 64)
	// Resume, when set, is what an earlier watcher (or an earlier run) last knew of the sandbox:
	// the first poll is compared with it instead of being reported as the initial state, so what
	// changed in between (a vanished process, a new incarnation) is reported with its evidence.
	Resume *WatchResume
	// Unfocused starts the watcher at the slow rate: its first poll is at once, the next one
	// SlowInterval later. Otherwise it starts focused (SetFocused switches either way); a watcher
	// started focused and switched after its first poll ended would poll a second time one
	// FastInterval later.
	Unfocused bool

	timer func(time.Duration) watchTimer // tests: a clock of their own
}

// SettledInterval is the slowest wait of a focused watcher on screen: 4 × fast, not above slow
// (and never below fast). With the defaults, 1 s right after a change, then 2 s, then 4 s.
func SettledInterval(fast, slow time.Duration) time.Duration {
	if fast <= 0 {
		fast = time.Second
	}
	if slow <= 0 {
		slow = 10 * time.Second
	}
	return max(min(4*fast, slow), fast)
}

// watchTimer is the watcher's one timer (a time.Timer outside tests).
type watchTimer interface {
	C() <-chan time.Time
	Reset(time.Duration)
	Stop()
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time       { return r.t.C }
func (r realTimer) Reset(d time.Duration)     { r.t.Reset(d) }
func (r realTimer) Stop()                     { r.t.Stop() }
func newRealTimer(d time.Duration) watchTimer { return realTimer{time.NewTimer(d)} }

// WatchResume is an earlier view of a sandbox to continue from.
type WatchResume struct {
	Incarnation Incarnation
	Running     bool
	// RunningUnknown says the earlier view never saw whether the container ran (a command only
	// looked up a process): the first poll's answer is then no change, where "running" after a
	// known "not running" is evidence of a new container.
	RunningUnknown bool
	Processes      []Process
	Terminals      []Terminal
}

// Watcher polls a sandbox with non-waking lookups (running, process list, terminal list) and
// reports changes. It never starts anything in a sandbox.
type Watcher struct {
	events  chan SandboxEvent
	focused atomic.Bool
	slow    atomic.Int64  // the slow interval in nanoseconds
	wake    chan struct{} // focus gained: poll at once
	hurry   chan struct{} // focused again: back to the fast interval
}

// SetSlowInterval changes the slow poll rate (a value <= 0 is ignored).
func (w *Watcher) SetSlowInterval(d time.Duration) {
	if d > 0 {
		w.slow.Store(int64(d))
	}
}

// Events is the stream of changes; the first poll reports the initial state.
func (w *Watcher) Events() <-chan SandboxEvent { return w.events }

// SetFocused switches between the focused (adaptive) and the slow poll rate; switching to
// focused polls at once. SetFocused(true) on a focused watcher says something may change soon
// (the user acted, a followed stream ended): the next poll comes at most FastInterval after the
// last one, and the waits start doubling from there again.
func (w *Watcher) SetFocused(focused bool) {
	was := w.focused.Swap(focused)
	switch {
	case focused && !was:
		signal(w.wake)
	case focused:
		signal(w.hurry)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Watch starts watching a sandbox. Events is closed when the context is cancelled. The watcher
// starts focused, unless opts.Unfocused.
func (c *Client) Watch(ctx context.Context, sandbox string, opts WatchOptions) *Watcher {
	if opts.FastInterval <= 0 {
		opts.FastInterval = time.Second
	}
	if opts.SlowInterval <= 0 {
		opts.SlowInterval = 10 * time.Second
	}
	opts.SettledInterval = max(opts.SettledInterval, opts.FastInterval)
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 64
	}
	if opts.timer == nil {
		opts.timer = newRealTimer
	}
	w := &Watcher{events: make(chan SandboxEvent, opts.Buffer), wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1)}
	w.focused.Store(!opts.Unfocused)
	w.slow.Store(int64(opts.SlowInterval))
	st := &watchState{c: c, ctx: ctx, sandbox: sandbox, w: w}
	if r := opts.Resume; r != nil {
		st.prev = &snapshot{running: RunningStatus{Running: r.Running}, processes: map[string]Process{}, terminals: map[string]Terminal{},
			incarnation: r.Incarnation.Number, started: r.Incarnation.Started}
		if r.Incarnation.Inferred {
			st.prev.incarnation, st.prev.started = 0, 0
		}
		for _, p := range r.Processes {
			st.prev.processes[p.ID] = p
			st.maxPID = max(st.maxPID, p.PID)
		}
		for _, t := range r.Terminals {
			st.prev.terminals[t.ID] = t
		}
		st.inc = r.Incarnation // with its start, so a restart under the same number shows on the first poll
		st.stopped = !r.Running && !r.RunningUnknown
		st.runningUnknown = r.RunningUnknown
	}
	go st.run(opts)
	return w
}

// snapshot is one poll's view of a sandbox.
type snapshot struct {
	running     RunningStatus
	processes   map[string]Process
	terminals   map[string]Terminal
	incarnation int   // explicit incarnation seen in this poll (0 = none reported)
	started     int64 // when the bridge says that incarnation started, Unix ns (0 = not reported)
}

type watchState struct {
	c       *Client
	ctx     context.Context
	sandbox string
	w       *Watcher

	prev     *snapshot
	inc      Incarnation
	stopped  bool // sandbox seen not running since the current incarnation began
	maxPID   int  // highest PID seen in the current incarnation
	failures int
	emitted  int // events emitted so far: a poll that emitted none saw no change

	// runningUnknown: resumed from a view that never saw whether the container ran; the next
	// poll's answer is told as it is (started or stopped), and is no evidence of a new container
	runningUnknown bool
}

func (s *watchState) run(opts WatchOptions) {
	defer close(s.w.events)
	fast := opts.FastInterval
	// quiet counts the focused polls in a row that saw nothing new since the last change, focus
	// or hurry (fresh): the focused wait is fast << quiet, up to SettledInterval.
	quiet, fresh := 0, true
	var t watchTimer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		before := s.emitted
		snap, err := s.poll()
		if s.ctx.Err() != nil {
			return
		}
		focused := s.w.focused.Load()
		interval := time.Duration(s.w.slow.Load())
		if err != nil {
			s.failures++
			if !s.emit(SandboxEvent{Kind: WatchError, Err: err, Evidence: []string{pollFailures(s.failures)}}) {
				return
			}
			if focused {
				interval = fast
			}
			interval = interval << min(s.failures, 6)
			if interval > opts.MaxBackoff {
				interval = opts.MaxBackoff
			}
		} else {
			if s.failures > 0 {
				s.failures = 0
				if !s.emit(SandboxEvent{Kind: WatchRecovered}) {
					return
				}
			}
			if !s.diff(snap) {
				return
			}
			if s.emitted != before || fresh {
				quiet = 0
			} else if fast<<quiet < opts.SettledInterval {
				quiet++
			}
			if focused {
				interval = min(fast<<quiet, opts.SettledInterval)
			}
		}
		fresh = false
		polled := time.Now()
		if t == nil {
			t = opts.timer(interval)
		} else {
			t.Reset(interval)
		}
		due := polled.Add(interval)
	wait:
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-s.w.wake:
				// focus gained: poll now, and fast after it
				t.Stop()
				fresh = true
				break wait
			case <-s.w.hurry:
				fresh = true
				// at most one fast interval after the last poll (the on-screen budget), unless
				// the bridge is failing: its back-off stands
				if soon := polled.Add(fast); s.failures == 0 && soon.Before(due) {
					due = soon
					t.Reset(max(time.Until(soon), 0))
				}
			case <-t.C():
				break wait
			}
		}
	}
}

func (s *watchState) poll() (*snapshot, error) {
	rs, err := s.c.Running(s.ctx, s.sandbox)
	if err != nil {
		return nil, err
	}
	ps, err := s.c.ListProcesses(s.ctx, s.sandbox)
	if err != nil {
		return nil, err
	}
	ts, err := s.c.ListTerminals(s.ctx, s.sandbox)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{running: rs, processes: map[string]Process{}, terminals: map[string]Terminal{}, incarnation: rs.Incarnation}
	if rs.Incarnation > 0 && !rs.IncarnationStarted.IsZero() {
		snap.started = rs.IncarnationStarted.UnixNano()
	}
	for _, p := range ps {
		snap.processes[p.ID] = p
		if snap.incarnation == 0 && p.Incarnation > 0 && p.State == "running" {
			snap.incarnation = p.Incarnation
		}
	}
	for _, t := range ts {
		snap.terminals[t.ID] = t
		if snap.incarnation == 0 && t.Incarnation > 0 && t.Status == "running" {
			snap.incarnation = t.Incarnation
		}
	}
	return snap, nil
}

func (s *watchState) emit(ev SandboxEvent) bool {
	ev.Sandbox = s.sandbox
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if ev.Incarnation == (Incarnation{}) {
		ev.Incarnation = s.inc
	}
	s.emitted++
	select {
	case s.w.events <- ev:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// diff compares snap with the previous poll and emits what changed. It returns false when the
// context ended.
func (s *watchState) diff(snap *snapshot) bool {
	prev := s.prev
	s.prev = snap
	if prev == nil {
		return s.initial(snap)
	}

	// Incarnation boundary, explicit first.
	var evidence []string
	explicit := false
	switch {
	case snap.incarnation == 0:
		evidence = s.inferBoundary(prev, snap)
	case s.inc.Inferred:
		// First explicit report: adopt it, and call it a boundary only if there is evidence of one.
		if inferred := s.inferBoundary(prev, snap); len(inferred) > 0 {
			explicit = true
			evidence = append([]string{fmt.Sprintf("the bridge reports incarnation %d", snap.incarnation)}, inferred...)
		} else {
			s.inc = Incarnation{Number: snap.incarnation, Started: snap.started}
		}
	case snap.incarnation != s.inc.Number:
		explicit = true
		evidence = append(evidence, fmt.Sprintf("the bridge reports incarnation %d (was %d)", snap.incarnation, s.inc.Number))
	case snap.started != 0 && s.inc.Started != 0:
		// The same number from a bridge that numbers from 1 again after a restart: the start
		// time tells the two container lives apart.
		if snap.started != s.inc.Started {
			explicit = true
			now, before := startTimes(snap.started, s.inc.Started)
			evidence = append(evidence, fmt.Sprintf("the bridge reports incarnation #%d again, but this container started at %s (the earlier #%d started at %s)",
				snap.incarnation, now, snap.incarnation, before))
		}
	default:
		// The same number, and a start time unknown on one side: only evidence tells.
		if inferred := s.inferBoundary(prev, snap); len(inferred) > 0 {
			explicit = true
			evidence = append([]string{fmt.Sprintf("the bridge reports the same incarnation #%d, but: %s", snap.incarnation, inferred[0])}, inferred[1:]...)
		} else if s.inc.Started == 0 {
			s.inc.Started = snap.started
		}
	}

	ok := true
	unknown := s.runningUnknown
	s.runningUnknown = false
	if (prev.running.Running || unknown) && !snap.running.Running {
		s.stopped = true
		ok = ok && s.emit(SandboxEvent{Kind: SandboxStopped, Evidence: []string{"GET running: false"}})
	}

	if len(evidence) > 0 {
		old := s.inc
		if explicit {
			s.inc = Incarnation{Number: snap.incarnation, Started: snap.started}
		} else {
			s.inc = Incarnation{Number: old.Number + 1, Inferred: true}
		}
		s.stopped = !snap.running.Running
		s.maxPID = 0
		ok = ok && s.emit(SandboxEvent{Kind: IncarnationChanged, Previous: old, Incarnation: s.inc, Evidence: evidence})
	}
	if (!prev.running.Running || unknown) && snap.running.Running {
		ok = ok && s.emit(SandboxEvent{Kind: SandboxStarted, Evidence: []string{"GET running: true"}})
	}

	// Processes.
	for _, id := range sortedKeys(snap.processes) {
		p := snap.processes[id]
		old, seen := prev.processes[id]
		switch {
		case !seen:
			ok = ok && s.emit(SandboxEvent{Kind: ProcessAppeared, Process: ptr(p)})
		case processChanged(old, p):
			ok = ok && s.emit(SandboxEvent{Kind: ProcessChanged, Process: ptr(p)})
		}
		if p.PID > s.maxPID {
			s.maxPID = p.PID
		}
	}
	for _, id := range sortedKeys(prev.processes) {
		if _, still := snap.processes[id]; !still {
			old := prev.processes[id]
			ok = ok && s.emit(SandboxEvent{Kind: ProcessVanished, Process: ptr(old), Evidence: vanishEvidence("process list", old.State == "running", snap)})
		}
	}
	// Terminals.
	for _, id := range sortedKeys(snap.terminals) {
		t := snap.terminals[id]
		old, seen := prev.terminals[id]
		switch {
		case !seen:
			ok = ok && s.emit(SandboxEvent{Kind: TerminalAppeared, Terminal: ptr(t)})
		case terminalChanged(old, t):
			ok = ok && s.emit(SandboxEvent{Kind: TerminalChanged, Terminal: ptr(t)})
		}
	}
	for _, id := range sortedKeys(prev.terminals) {
		if _, still := snap.terminals[id]; !still {
			old := prev.terminals[id]
			ok = ok && s.emit(SandboxEvent{Kind: TerminalVanished, Terminal: ptr(old), Evidence: vanishEvidence("terminal list", old.Status == "running", snap)})
		}
	}
	return ok
}

func (s *watchState) initial(snap *snapshot) bool {
	if snap.incarnation != 0 {
		s.inc = Incarnation{Number: snap.incarnation, Started: snap.started}
	} else {
		s.inc = Incarnation{Number: 1, Inferred: true}
	}
	s.stopped = !snap.running.Running
	ok := true
	if snap.running.Running {
		ok = s.emit(SandboxEvent{Kind: SandboxStarted, Evidence: []string{"GET running: true (first poll)"}})
	} else {
		ok = s.emit(SandboxEvent{Kind: SandboxStopped, Evidence: []string{"GET running: false (first poll)"}})
	}
	for _, id := range sortedKeys(snap.processes) {
		p := snap.processes[id]
		if p.PID > s.maxPID {
			s.maxPID = p.PID
		}
		ok = ok && s.emit(SandboxEvent{Kind: ProcessAppeared, Process: ptr(p)})
	}
	for _, id := range sortedKeys(snap.terminals) {
		ok = ok && s.emit(SandboxEvent{Kind: TerminalAppeared, Terminal: ptr(snap.terminals[id])})
	}
	return ok
}

// inferBoundary looks for evidence that the container behind the sandbox changed, when the bridge
// does not report incarnations.
func (s *watchState) inferBoundary(prev, snap *snapshot) []string {
	var ev []string
	if !snap.running.Running {
		return nil // a boundary is only visible once something runs again
	}
	if s.stopped || !prev.running.Running && !s.runningUnknown {
		ev = append(ev, "inferred: GET running went false → true (the container stopped and a new one started)")
	}
	for id, p := range prev.processes {
		if p.State == "running" {
			if _, still := snap.processes[id]; !still {
				ev = append(ev, fmt.Sprintf("inferred: process %s was running and is now absent", id))
				break
			}
		}
	}
	for id, t := range prev.terminals {
		if t.Status == "running" {
			if _, still := snap.terminals[id]; !still {
				ev = append(ev, fmt.Sprintf("inferred: terminal %s was running and is now absent", id))
				break
			}
		}
	}
	if len(prev.processes)+len(prev.terminals) > 0 && len(snap.processes)+len(snap.terminals) > 0 {
		shared := false
		for id := range snap.processes {
			if _, ok := prev.processes[id]; ok {
				shared = true
				break
			}
		}
		for id := range snap.terminals {
			if _, ok := prev.terminals[id]; ok {
				shared = true
				break
			}
		}
		if !shared {
			ev = append(ev, "inferred: the set of process and terminal IDs reset")
		}
	}
	if s.maxPID > 0 {
		for id, p := range snap.processes {
			if _, known := prev.processes[id]; !known && p.PID > 0 && p.PID < s.maxPID && len(ev) > 0 {
				ev = append(ev, fmt.Sprintf("inferred: new process %s has PID %d, below the highest seen (%d)", id, p.PID, s.maxPID))
				break
			}
		}
	}
	return ev
}

// startTimes formats two container start times (Unix ns) in local time, as precisely as needed to
// tell them apart.
func startTimes(a, b int64) (string, string) {
	ta, tb := time.Unix(0, a), time.Unix(0, b)
	for _, layout := range []string{"15:04:05", "15:04:05.000", "15:04:05.000000000"} {
		if ta.Format(layout) != tb.Format(layout) {
			if ta.YearDay() != tb.YearDay() || ta.Year() != tb.Year() {
				layout = "2006-01-02 " + layout
			}
			return ta.Format(layout), tb.Format(layout)
		}
	}
	return ta.Format("2006-01-02 15:04:05.000000000"), tb.Format("2006-01-02 15:04:05.000000000")
}

func vanishEvidence(list string, wasRunning bool, snap *snapshot) []string {
	ev := []string{"absent from the " + list}
	if wasRunning {
		ev = append(ev, "it was running")
	} else {
		ev = append(ev, "it had finished (the bridge keeps a limited number of finished entries)")
	}
	if !snap.running.Running {
		ev = append(ev, "the sandbox is not running")
	}
	return ev
}

func processChanged(a, b Process) bool {
	return a.State != b.State || a.PID != b.PID || a.Incarnation != b.Incarnation ||
		!sameExit(a.Exit, b.Exit) || (a.Error == nil) != (b.Error == nil)
}

func terminalChanged(a, b Terminal) bool {
	return a.Status != b.Status || a.PID != b.PID || a.Incarnation != b.Incarnation ||
		!sameExit(a.Exit, b.Exit) || (a.Error == nil) != (b.Error == nil)
}

func sameExit(a, b *Exit) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }

// pollFailures says how many polls in a row failed: "poll failed once", "poll failed 3 times in a
// row".
func pollFailures(n int) string {
	if n == 1 {
		return "poll failed once"
	}
	return fmt.Sprintf("poll failed %d times in a row", n)
}
