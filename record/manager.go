package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"sandscope/client"
)

// Bridge is what the manager needs of a bridge. Watch and Follow use only non-waking lookups and
// streams of processes already running; nothing here starts anything in a sandbox.
type Bridge interface {
	// Watch starts a watcher; setFocused switches it between the fast and the slow rate and
	// setSlow changes the slow rate.
	Watch(ctx context.Context, sandbox string, opts client.WatchOptions) (events <-chan client.SandboxEvent, setFocused func(bool), setSlow func(time.Duration))
	Follow(ctx context.Context, sandbox, process string, opts client.FollowOptions) <-chan client.LogEvent
}

// WatchBudget is the request budget of background watching. A poll of a sandbox costs
// PollRequests requests (running, process list, terminal list).
type WatchBudget struct {
	// Fast is the poll interval of the sandbox on screen right after a change (default 1 s: 3
	// requests/s); while nothing changes its polls stretch to client.SettledInterval(Fast, Slow).
	Fast        time.Duration
	Slow        time.Duration // shortest poll interval of any other sandbox (default 10 s)
	Background  float64       // requests per second for all other sandboxes together (default 5)
	MaxCaptures int           // processes whose output is captured at once (default 8)
	// CaptureQuiet is how long a captured process may be silent before its follower checks its
	// status (one request; default 30 s).
	CaptureQuiet time.Duration
}

// PollRequests is what one poll of a sandbox costs.
const PollRequests = 3

// DefaultWatchBudget is the budget when nothing is configured.
var DefaultWatchBudget = WatchBudget{Fast: time.Second, Slow: 10 * time.Second, Background: 5, MaxCaptures: 8, CaptureQuiet: 30 * time.Second}

func (b WatchBudget) withDefaults() WatchBudget {
	d := DefaultWatchBudget
	if b.Fast <= 0 {
		b.Fast = d.Fast
	}
	if b.Slow <= 0 {
		b.Slow = d.Slow
	}
	if b.Background <= 0 {
		b.Background = d.Background
	}
	if b.MaxCaptures <= 0 {
		b.MaxCaptures = d.MaxCaptures
	}
	if b.CaptureQuiet <= 0 {
		b.CaptureQuiet = d.CaptureQuiet
	}
	return b
}

// SlowInterval is the poll interval of each background sandbox when n sandboxes are watched:
// the budget's Slow, stretched so that the n-1 background sandboxes together stay within
// Background requests per second.
func (b WatchBudget) SlowInterval(n int) time.Duration {
	b = b.withDefaults()
	bg := max(n-1, 0)
	need := time.Duration(float64(bg*PollRequests) / b.Background * float64(time.Second))
	return max(b.Slow, need)
}

// Manager watches every known sandbox and captures the output of running processes in the
// background, feeding the record, whatever screen is open.
//
// Capture rule: at most MaxCaptures processes are captured at once. Processes are captured in
// the order they are first seen running, except that those of the sandbox on screen go ahead of
// the queue, and a process the watcher saw end while nothing captured it goes ahead of both: its
// output is retained by the bridge only until the container goes (a replacement, an idle stop),
// and capturing it is short (the retained bytes, then the ending), while a running process can
// wait its turn. When every slot is busy, a process waits; when a slot frees it is captured from
// the oldest byte the bridge still has, and if the bridge evicted bytes meanwhile the capture says
// so.
type Manager struct {
	rec    *Record
	src    Bridge
	budget WatchBudget
	ctx    context.Context
	cancel context.CancelFunc
	// started is when the manager began watching: a process first seen already ended that
	// started after it ended while watched (between two polls).
	started time.Time

	mu       sync.Mutex
	watchers map[string]*watched
	// listed is watchers' names sorted, as Watched last made them (nil: to be made again); the
	// all-runs screen asks at each opening and refresh, and sorting 200 names each time was a
	// tenth of an opening
	listed   []string
	focus    string
	captures map[capKey]context.CancelFunc // running captures
	// notFollowed are the processes the source refused to follow in the background
	// (ErrNotFollowed): asking again would be refused again
	notFollowed map[capKey]bool
	queue       []queued // waiting captures, in the order of the rule
	wg          sync.WaitGroup

	after func(time.Duration) <-chan time.Time // tests: a clock of their own for the first polls
}

// watched is one tracked sandbox. Its watcher starts at its first poll (startWatch): until then
// focus and setSlow are nil and start, signalled, brings that first poll forward.
type watched struct {
	cancel  context.CancelFunc
	start   chan struct{}
	started bool
	focus   func(bool)
	setSlow func(time.Duration)
}

type queued struct {
	k     capKey
	since time.Time
	ended bool // the process ended while watched, uncaptured: its retained output goes first
}

// NewManager starts a manager on rec. Close (or cancelling ctx) stops every watcher and capture.
func NewManager(ctx context.Context, rec *Record, src Bridge, budget WatchBudget) *Manager {
	ctx, cancel := context.WithCancel(ctx)
	return &Manager{rec: rec, src: src, budget: budget.withDefaults(), ctx: ctx, cancel: cancel, started: time.Now(),
		watchers: map[string]*watched{}, captures: map[capKey]context.CancelFunc{}, notFollowed: map[capKey]bool{},
		after: time.After}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Record is the record the manager feeds.
func (m *Manager) Record() *Record { return m.rec }

// Budget is the budget in force.
func (m *Manager) Budget() WatchBudget { return m.budget }

// Close stops every watcher and capture and waits for them.
func (m *Manager) Close() {
	m.cancel()
	m.wg.Wait()
}

// Track watches the sandboxes given (in addition to those watched already). It returns at once:
// each new sandbox's earlier state is read from the record on its own goroutine, right before its
// first poll. The k-th new sandbox of a call (from 0) is first polled k × SlowInterval(n) / n
// later, n being the sandboxes watched after the call, so that the first polls of many sandboxes
// come at the background rate rather than all at once; the sandbox on screen, and a sandbox added
// alone, are polled at once (Focus brings a waiting sandbox's first poll forward too).
func (m *Manager) Track(sandboxes ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	var added []string
	for _, sb := range sandboxes {
		if _, ok := m.watchers[sb]; ok || sb == "" {
			continue
		}
		m.watchers[sb] = nil // a name given twice is added once
		added = append(added, sb)
	}
	if len(added) == 0 {
		return
	}
	m.listed = nil
	n := len(m.watchers)
	spacing := m.budget.SlowInterval(n) / time.Duration(n)
	for k, sb := range added {
		ctx, cancel := context.WithCancel(m.ctx)
		w := &watched{cancel: cancel, start: make(chan struct{}, 1)}
		m.watchers[sb] = w
		delay := time.Duration(k) * spacing
		if sb == m.focus {
			delay = 0
		}
		m.wg.Add(1)
		go m.startWatch(ctx, sb, w, delay)
	}
	if len(added) > 1 {
		m.wg.Add(1)
		go m.warm(added)
	}
	m.rebalanceLocked()
}

// warm reads the states of sandboxes tracked together, in the order of their first polls, ahead
// of those polls: the screens that list every watched sandbox (all runs) then find them in
// memory, as they did when Track read them all itself, and the TUI's event loop is not the one
// that waits.
func (m *Manager) warm(sandboxes []string) {
	defer m.wg.Done()
	for _, sb := range sandboxes {
		m.mu.Lock()
		w := m.watchers[sb]
		skip := m.ctx.Err() != nil || w == nil || w.started // a started watcher read it
		m.mu.Unlock()
		if m.ctx.Err() != nil {
			return
		}
		if !skip {
			m.rec.State(sb)
		}
	}
}

// startWatch starts a sandbox's watcher after delay (sooner when w.start is signalled) and drains
// its events. The watcher resumes from what the record knows of the sandbox at that moment: read
// here, not in Track, as it can take a while for a long history and Track is called from the
// TUI's event loop.
func (m *Manager) startWatch(ctx context.Context, sb string, w *watched, delay time.Duration) {
	if delay > 0 {
		t := m.after(delay)
		select {
		case <-ctx.Done():
			m.wg.Done()
			return
		case <-w.start:
		case <-t:
		}
	}
	resume := m.rec.State(sb).Resume()
	m.mu.Lock()
	if ctx.Err() != nil { // untracked, or the manager closed, meanwhile
		m.mu.Unlock()
		m.wg.Done()
		return
	}
	opts := client.WatchOptions{FastInterval: m.budget.Fast, SlowInterval: m.budget.SlowInterval(len(m.watchers)),
		SettledInterval: client.SettledInterval(m.budget.Fast, m.budget.Slow), Resume: resume, Unfocused: sb != m.focus}
	events, focus, setSlow := m.src.Watch(ctx, sb, opts)
	w.started, w.focus, w.setSlow = true, focus, setSlow
	if focus != nil {
		focus(sb == m.focus)
	}
	m.mu.Unlock()
	m.drain(ctx, sb, events)
}

// Untrack stops watching a sandbox (it was deleted).
func (m *Manager) Untrack(sandbox string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.watchers[sandbox]; ok {
		w.cancel()
		delete(m.watchers, sandbox)
		m.listed = nil
		m.rebalanceLocked()
	}
}

// Watched lists the sandboxes watched, sorted (a copy the caller may keep).
func (m *Manager) Watched() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listed == nil {
		m.listed = make([]string, 0, len(m.watchers))
		for sb := range m.watchers {
			m.listed = append(m.listed, sb)
		}
		sort.Strings(m.listed)
	}
	return slices.Clone(m.listed)
}

// Focus makes a sandbox the one on screen (polled fast; its processes are captured first); ""
// focuses none.
func (m *Manager) Focus(sandbox string) {
	if sandbox != "" {
		m.Track(sandbox)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.focus == sandbox {
		return
	}
	if w := m.watchers[m.focus]; w != nil && w.focus != nil {
		w.focus(false)
	}
	m.focus = sandbox
	if w := m.watchers[sandbox]; w != nil {
		if w.focus != nil {
			w.focus(true)
		} else if !w.started {
			signal(w.start) // its watcher starts now, focused
		}
	}
	m.sortQueueLocked()
}

// Nudge says the sandbox may change soon (the user acted on it, a followed stream saw a process
// end): if it is the one on screen, its next poll comes at most one fast interval after the last,
// and its polls start over from the fast interval (client.WatchOptions).
func (m *Manager) Nudge(sandbox string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sandbox == "" || sandbox != m.focus {
		return
	}
	if w := m.watchers[sandbox]; w != nil && w.focus != nil {
		w.focus(true)
	}
}

func (m *Manager) rebalanceLocked() {
	slow := m.budget.SlowInterval(len(m.watchers))
	for _, w := range m.watchers {
		if w.setSlow != nil {
			w.setSlow(slow)
		}
	}
}

// Capturing reports whether the manager is capturing a process's output (its stream events are
// then recorded by the capture; a screen following it too need not record them again).
func (m *Manager) Capturing(sandbox, process string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.captures[capKey{sandbox, process}]
	return ok
}

func (m *Manager) drain(ctx context.Context, sb string, events <-chan client.SandboxEvent) {
	defer m.wg.Done()
	for {
		ev, ok := recv(ctx, events)
		if !ok {
			return
		}
		m.rec.Add(FromSandboxEvent(ev))
		switch ev.Kind {
		case client.ProcessAppeared, client.ProcessChanged:
			p := ev.Process
			switch {
			case p == nil:
			case p.State == "running":
				m.want(capKey{sb, p.ID}, ev.Time, false)
			case p.State != "" && (ev.Kind == client.ProcessChanged || p.StartedAt.After(m.started)):
				// it ended while watched (seen running before, or it ran between two polls)
				m.wantEnded(capKey{sb, p.ID}, ev.Time)
			}
		case client.ProcessVanished:
			if ev.Process != nil {
				m.unqueue(capKey{sb, ev.Process.ID}, "the process vanished before a capture slot was free")
			}
		}
	}
}

// want asks for a process to be captured; ended says it ended while watched (it goes ahead of
// processes that merely run).
func (m *Manager) want(k capKey, seen time.Time, ended bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	if _, ok := m.captures[k]; ok || m.notFollowed[k] {
		return
	}
	for i := range m.queue {
		if m.queue[i].k == k {
			if ended && !m.queue[i].ended {
				m.queue[i].ended = true
				m.sortQueueLocked()
			}
			return
		}
	}
	m.queue = append(m.queue, queued{k: k, since: seen, ended: ended})
	m.sortQueueLocked()
	m.startLocked()
}

// Why a capture stopped, as the record keeps it.
const (
	whyEnded = "the process ended"
	whyLost  = "the process was lost"
)

// wantEnded asks for the retained output of a process that ended while watched, unless a capture
// already holds all of it (it followed the process to its ending).
func (m *Manager) wantEnded(k capKey, seen time.Time) {
	if o := m.rec.OutputOf(k.sandbox, k.process); o.Found && (o.Ended == whyEnded || o.Ended == whyLost) {
		return
	}
	m.want(k, seen, true)
}

func (m *Manager) unqueue(k capKey, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, q := range m.queue {
		if q.k == k {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			m.rec.Add(Event{Sandbox: k.sandbox, Source: FromCapture, Kind: "capture skipped", Entity: Process, EntityID: k.process, Reason: why})
			return
		}
	}
}

func (m *Manager) sortQueueLocked() {
	sort.SliceStable(m.queue, func(i, j int) bool {
		if ei, ej := m.queue[i].ended, m.queue[j].ended; ei != ej {
			return ei
		}
		fi, fj := m.queue[i].k.sandbox == m.focus, m.queue[j].k.sandbox == m.focus
		if fi != fj {
			return fi
		}
		return m.queue[i].since.Before(m.queue[j].since)
	})
}

// startLocked starts queued captures while slots are free.
func (m *Manager) startLocked() {
	for len(m.captures) < m.budget.MaxCaptures && len(m.queue) > 0 {
		q := m.queue[0]
		m.queue = m.queue[1:]
		ctx, cancel := context.WithCancel(m.ctx)
		m.captures[q.k] = cancel
		m.wg.Add(1)
		go m.capture(ctx, q.k, q.since)
	}
}

// ErrNotFollowed is a follow's Failed error when the source does not follow that process in the
// background because reading it would start its container (a stable bridge, for a run no
// sandscope process streams here). The capture then records nothing and does not ask again.
var ErrNotFollowed = errors.New("not followed: reading this run would start its container")

// capture follows one process and keeps its output until it ends, is lost, or sandscope quits.
func (m *Manager) capture(ctx context.Context, k capKey, queuedAt time.Time) {
	defer m.wg.Done()
	since := m.rec.captureCursor(k.sandbox, k.process)
	run := &captureRun{m: m, k: k, first: since == "", why: "sandscope stopped capturing (it quit)"}
	// CaptureData copies each chunk before the next receive, so the follower may decode into
	// recycled buffers (a capture of a busy process otherwise clears and faults in a fresh buffer
	// per event); a short queue keeps the buffers in rotation few. A source that can hands the
	// events over in its own goroutine (Sink): keeping them never blocks, and each event then
	// wakes one goroutine instead of two.
	events := m.src.Follow(ctx, k.sandbox, k.process, client.FollowOptions{Since: since, QuietAfter: m.budget.CaptureQuiet,
		ReuseData: true, Buffer: 8, Sink: run.take})
	for {
		ev, ok := recv(ctx, events)
		if !ok {
			break
		}
		run.take(ev) // a source that sends on the channel instead
	}
	began, why, notFollowed := run.finish()
	if notFollowed {
		m.mu.Lock()
		delete(m.captures, k)
		m.notFollowed[k] = true
		m.startLocked()
		m.mu.Unlock()
		return
	}
	if !began {
		m.rec.CaptureBegin(k.sandbox, k.process, false, "")
	}
	m.rec.CaptureEnd(k.sandbox, k.process, why)
	m.mu.Lock()
	delete(m.captures, k)
	m.startLocked()
	m.mu.Unlock()
}

// captureRun keeps one capture's events, from the follower's goroutine (Sink) or the capture's
// own (the channel); once finished it takes no more (a source may outlive the capture's context).
type captureRun struct {
	m *Manager
	k capKey

	mu          sync.Mutex
	done        bool
	began       bool // the first event came: the capture began (or the source does not follow it)
	first       bool // no output captured yet from the first byte
	notFollowed bool // the source does not follow this process in the background
	why         string
}

func (c *captureRun) take(ev client.LogEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.notFollowed {
		return
	}
	m, k := c.m, c.k
	// The capture begins with the first event: a source that does not follow the process says
	// so in it, and then nothing of this capture belongs in the record.
	if !c.began {
		if ev.Kind == client.Failed && errors.Is(ev.Err, ErrNotFollowed) {
			c.notFollowed = true
			return
		}
		c.began = true
		m.rec.CaptureBegin(k.sandbox, k.process, false, "")
	}
	switch ev.Kind {
	case client.Data:
		c.first = false
		m.rec.CaptureData(k.sandbox, k.process, ev)
		return
	case client.Gap:
		if c.first && ev.Gap != nil {
			m.rec.CaptureGap(k.sandbox, k.process, fmt.Sprintf("the bridge no longer had the first bytes when capture began (%s)", GapReasonText(ev.Gap.Reason)))
		}
	case client.Quiet:
		return // not worth a row: the status lookup says running
	case client.Ended:
		c.why = whyEnded
		m.Nudge(k.sandbox) // the watcher confirms the ending (and what came after) soon
	case client.Lost:
		c.why = whyLost
		m.Nudge(k.sandbox)
	case client.Failed:
		c.why = "capture failed: " + ev.Reason
	}
	m.rec.Add(FromLogEvent(k.sandbox, k.process, ev))
}

// finish stops taking events and says what the capture saw.
func (c *captureRun) finish() (began bool, why string, notFollowed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	return c.began, c.why, c.notFollowed
}

// recv receives from ch unless ctx ends first (a source that does not close its channel on
// cancel cannot hold the manager up).
func recv[T any](ctx context.Context, ch <-chan T) (T, bool) {
	select {
	case <-ctx.Done():
		var zero T
		return zero, false
	case v, ok := <-ch:
		return v, ok
	}
}

// Resume is the earlier view a watcher continues from: the current incarnation, and the
// entries of it that were not lost, in their last known state. Nil when nothing is known.
func (s *State) Resume() *client.WatchResume {
	if s.Events == 0 || s.Current.Number == 0 {
		return nil
	}
	r := &client.WatchResume{Incarnation: s.Current, Running: s.Running != nil && *s.Running, RunningUnknown: s.Running == nil}
	if cur := s.currentInc(); cur != nil && cur.Bridge > 0 {
		// the watcher compares the bridge's numbers: resume from the bridge's name for this life
		r.Incarnation = client.Incarnation{Number: cur.Bridge, Started: cur.Started}
	}
	for _, e := range s.Processes {
		if !e.Lost && !e.Gone && e.Incarnation == s.Current.Number && e.Process.State != "" {
			r.Processes = append(r.Processes, e.Process)
		}
	}
	for _, e := range s.Terminals {
		if !e.Lost && !e.Gone && e.Incarnation == s.Current.Number && e.Terminal.Status != "" {
			r.Terminals = append(r.Terminals, e.Terminal)
		}
	}
	return r
}

// FromClient adapts a bridge client to the manager.
func FromClient(c *client.Client) Bridge { return clientBridge{c} }

type clientBridge struct{ c *client.Client }

func (b clientBridge) Watch(ctx context.Context, sb string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	w := b.c.Watch(ctx, sb, o)
	return w.Events(), w.SetFocused, w.SetSlowInterval
}

func (b clientBridge) Follow(ctx context.Context, sb, p string, o client.FollowOptions) <-chan client.LogEvent {
	return b.c.Follow(ctx, sb, p, o).Events()
}

// Blur says the sandbox is no longer on screen (nothing happens when another one is focused).
func (m *Manager) Blur(sandbox string) {
	m.mu.Lock()
	focused := m.focus == sandbox
	m.mu.Unlock()
	if focused {
		m.Focus("")
	}
}
