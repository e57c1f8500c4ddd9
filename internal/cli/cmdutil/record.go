package cmdutil

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sandscope/attach"
	"sandscope/client"
	"sandscope/record"
	"sandscope/sanitize"
)

// commandRecordQueue bounds the events a command may queue for its record before it drops them.
const commandRecordQueue = 1024

// CommandRecord writes what a command observes (exec, logs, wait, shell, attach) to the record from a goroutine of
// its own: the record is opened there when the first event comes (the command already follows its
// stream), and events
// reach it through a bounded queue, so recording never delays or blocks the output. An event that
// finds the queue full is dropped and counted. Problems (the record could not be opened or
// written, events dropped) are told on stderr when the command ends, after its output.
type CommandRecord struct {
	q       chan record.Event
	done    chan struct{}
	dropped atomic.Int64
	stderr  io.Writer
	notes   []string // written by the goroutine, read after done

	held lookups // what the command's lookups saw, queued with the next event (see Lookup)

	ahead     chan struct{} // closed by OpenAhead: open the record before the first event
	aheadOnce sync.Once
}

// StartCommandRecord starts recording for a command; open opens the record (nil: not recording).
func StartCommandRecord(open func() (*record.Record, error), stderr io.Writer) *CommandRecord {
	c := &CommandRecord{q: make(chan record.Event, commandRecordQueue), done: make(chan struct{}), ahead: make(chan struct{}), stderr: stderr}
	go c.run(open)
	return c
}

func (c *CommandRecord) run(open func() (*record.Record, error)) {
	defer close(c.done)
	// The record opens when the first event arrives, not before: a command records only its
	// stream's events (interruptions, gaps, the ending), so a command that saw nothing opens
	// nothing. A command sure to record something when its stream ends says so (OpenAhead), and
	// the record opens while the stream runs instead of after its last byte.
	var first record.Event
	haveFirst := false
	select {
	case ev, ok := <-c.q:
		if !ok {
			return
		}
		first, haveFirst = ev, true
	case <-c.ahead:
	}
	// a lock another process holds on the record is waited for: say so while the command goes on
	slow := time.AfterFunc(commandRecordSlowOpen, func() {
		fmt.Fprintf(c.stderr, "sandscope: record: waiting for another sandscope process's lock on the record (the command goes on)\n")
	})
	rec, err := open()
	slow.Stop()
	if err != nil {
		c.notes = append(c.notes, "not recording: "+err.Error())
	}
	if rec == nil {
		for range c.q {
		}
		return
	}
	c.notes = append(c.notes, rec.Notices()...)
	if haveFirst {
		rec.Add(first)
	}
	for q := c.q; q != nil; {
		select {
		case ev, ok := <-q:
			if !ok {
				q = nil
				continue
			}
			rec.Add(ev)
		case <-rec.NoticeC():
			c.takeNotices(rec)
		}
	}
	werr := rec.Err()
	if err := rec.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = rec.Err()
	}
	c.takeNotices(rec)
	if werr != nil {
		c.notes = append(c.notes, fmt.Sprintf("the record could not be written (%v); the output above is complete, but this run may be missing from sandscope report", werr))
	}
}

// commandRecordSlowOpen is how long opening the record may take before the command says it waits.
const commandRecordSlowOpen = 3 * time.Second

// takeNotices keeps what the record says happened to it for the end of the command; a wait for
// another process's lock is told at once.
func (c *CommandRecord) takeNotices(rec *record.Record) {
	for _, n := range rec.TakeNotices() {
		if strings.HasPrefix(n, "waiting ") {
			fmt.Fprintf(c.stderr, "sandscope: record: %s\n", sanitize.Message(n))
			continue
		}
		c.notes = append(c.notes, n)
	}
}

// OpenAhead opens the record now, in the recording goroutine, for a command that will record an
// event when its stream ends whatever happens (a follow of a process that has already ended:
// the replay ends with its ending). Opened after the stream's last byte, the record added about
// 6 ms to the command's end (figure 11a: 8.8 against 2.7 ms from the last byte to exit); opened
// now, that overlaps the replay. A nil commandRecord records nothing.
func (c *CommandRecord) OpenAhead() {
	if c == nil {
		return
	}
	c.aheadOnce.Do(func() { close(c.ahead) })
}

// Add queues ev without waiting; a nil commandRecord records nothing.
func (c *CommandRecord) Add(ev record.Event) {
	if c == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	if ev.Source == record.FromLaunch {
		c.lookedLocked(ev) // a launch's answer is a lookup of what it started
	}
	c.releaseLocked()
	c.enqueue(ev)
}

// enqueue queues ev without waiting, or drops and counts it when the queue is full.
func (c *CommandRecord) enqueue(ev record.Event) {
	select {
	case c.q <- ev:
	default:
		c.dropped.Add(1)
	}
}

// Close writes what is queued, closes the record and tells what went wrong, if anything.
func (c *CommandRecord) Close() {
	if c == nil {
		return
	}
	c.held.mu.Lock()
	c.releaseLocked()
	c.held.mu.Unlock()
	close(c.q)
	<-c.done
	if n := c.dropped.Load(); n > 0 {
		c.notes = append(c.notes, fmt.Sprintf("%d events were not recorded (the record's writer fell behind)", n))
	}
	for _, n := range c.notes {
		fmt.Fprintf(c.stderr, "sandscope: record: %s\n", sanitize.Message(n))
	}
}

// Observe returns an observer that records a follower's events (nil without a record). Quiet
// events are not recorded: a status lookup saying "still running" is no news.
func (c *CommandRecord) Observe(sandbox, process string) func(client.LogEvent) {
	if c == nil {
		return nil
	}
	return func(ev client.LogEvent) {
		if ev.Kind == client.Quiet {
			return
		}
		if ev.Status != nil && !c.lookedUp(sandbox, process) {
			// no lookup of this process was recorded (its list failed): the status the follower
			// checked makes the entry the stream's events are about
			l := record.LookupProcess(sandbox, *ev.Status)
			l.Incarnation = client.Incarnation{} // the process's, perhaps not the sandbox's now
			c.Lookup(l)
		}
		c.Add(record.FromLogEvent(sandbox, process, ev))
		if ev.Kind == client.Lost {
			c.loss(sandbox, "process "+process, ev.Loss, ev.Time)
		}
	}
}

// lookups are the events of a command's own lookups (record.Lookup…, a command's watcher) not
// yet queued: they go to the queue in front of the next event, or at Close, so a command whose
// stream has nothing to say still opens the record only when it ends (a clean replay is not
// slowed by it) and the lookup of a process always comes before its stream's events.
type lookups struct {
	mu      sync.Mutex
	pending []record.Event
	looked  map[string]bool // "sandbox\x00id" of the processes and terminals looked up
	incs    map[string]int  // the incarnation of the last boundary recorded per sandbox
}

// heldMax is how many lookups wait for the next event before they are queued anyway.
const heldMax = 64

// Lookup records what a lookup saw (record.LookupProcess, LookupRunning, …), queued with the next
// event. A nil commandRecord records nothing.
func (c *CommandRecord) Lookup(evs ...record.Event) {
	if c == nil {
		return
	}
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	for _, ev := range evs {
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		c.lookedLocked(ev)
		if ev.Kind == client.IncarnationChanged.String() {
			if !c.newBoundaryLocked(ev.Sandbox, ev.Incarnation) {
				continue // the same boundary, seen again by another observer of this command
			}
		}
		c.held.pending = append(c.held.pending, ev)
	}
	if len(c.held.pending) >= heldMax {
		c.releaseLocked()
	}
}

// releaseLocked queues the held lookups.
func (c *CommandRecord) releaseLocked() {
	for _, ev := range c.held.pending {
		c.enqueue(ev)
	}
	c.held.pending = c.held.pending[:0]
}

func (c *CommandRecord) lookedLocked(ev record.Event) {
	if ev.EntityID != "" {
		if c.held.looked == nil {
			c.held.looked = map[string]bool{}
		}
		c.held.looked[ev.Sandbox+"\x00"+ev.EntityID] = true
	}
}

func (c *CommandRecord) lookedUp(sandbox, id string) bool {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	return c.held.looked[sandbox+"\x00"+id]
}

// newBoundaryLocked notes a boundary into incarnation inc and reports whether this command had
// not recorded it yet (the watcher's poll and a follower's loss evidence may both see it).
func (c *CommandRecord) newBoundaryLocked(sandbox string, inc client.Incarnation) bool {
	if c.held.incs == nil {
		c.held.incs = map[string]int{}
	}
	if inc.Number > 0 && c.held.incs[sandbox] == inc.Number {
		return false
	}
	c.held.incs[sandbox] = inc.Number
	return true
}

// loss records what a follower's loss evidence says of the sandbox (stopped, a new incarnation,
// running), after the loss itself.
func (c *CommandRecord) loss(sandbox, entity string, ev *client.LossEvidence, at time.Time) {
	evs := record.LookupLoss(sandbox, entity, ev, at)
	if len(evs) == 0 {
		return
	}
	c.Lookup(evs...)
	c.held.mu.Lock()
	c.releaseLocked() // now: a loss is news
	c.held.mu.Unlock()
}

// Watched records an event of a watcher the command runs (logs --all -f), as the TUI's watcher
// would, except what is not the sandbox's history (see record.FromCommandWatch).
func (c *CommandRecord) Watched(ev client.SandboxEvent) {
	if c == nil {
		return
	}
	if e, ok := record.FromCommandWatch(ev); ok {
		c.Lookup(e)
	}
}

// LookedUpProcess records a process as a lookup found it (nothing when p is nil) and, when it
// runs, that its sandbox runs in its incarnation. lookup names the lookup ("the process list").
func (c *CommandRecord) LookedUpProcess(sandbox string, p *client.Process, lookup string) {
	if c == nil || p == nil {
		return
	}
	if ev, ok := record.LookupRunningProcess(sandbox, *p, lookup); ok {
		c.Lookup(ev)
	}
	c.Lookup(record.LookupProcess(sandbox, *p))
}

// LaunchedTerminal records a terminal the command created (shell): the action and its outcome,
// and on success the sandbox running in the terminal's incarnation and the terminal's launch.
func (c *CommandRecord) LaunchedTerminal(sandbox string, t client.Terminal, argv []string, cwd string, err error) {
	if c == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = err.Error()
	}
	if err == nil {
		if ev, ok := record.LookupRunningTerminal(sandbox, t, "the new terminal"); ok {
			c.Lookup(ev)
		}
	}
	// held like lookups: the record opens when the attachment ends, not while it starts
	c.Lookup(record.Event{Sandbox: sandbox, Source: record.FromAction, Kind: "terminal", Entity: record.Terminal, EntityID: t.ID,
		Action: &record.Action{Kind: "terminal", Detail: record.ShellJoin(argv), Outcome: outcome, Result: t.ID}})
	if err == nil {
		tt := t
		c.Lookup(record.Event{Sandbox: sandbox, Source: record.FromLaunch, Kind: "launch", Entity: record.Terminal, EntityID: t.ID, Terminal: &tt,
			Incarnation: client.Incarnation{Number: t.Incarnation}, Launch: record.LaunchOf(argv, cwd, nil, 0)})
	}
}

// TerminalEnded records how an attachment ended when the connection said so (its final event:
// exited, lost with its evidence, an error); a detach or Ctrl-C says nothing of the terminal.
func (c *CommandRecord) TerminalEnded(sandbox, tid string, res attach.Result) {
	if c == nil || res.Event == nil || res.Event.Kind == client.TermOutput {
		return
	}
	c.Add(record.FromTermEvent(sandbox, tid, *res.Event))
	if res.Event.Kind == client.TermLost {
		c.loss(sandbox, "terminal "+tid, res.Event.Loss, res.Event.Time)
	}
}
