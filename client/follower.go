package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// FollowOptions tunes a Follower. Zero values mean sensible defaults.
type FollowOptions struct {
	Since       string        // resume strictly after this cursor; "" = from the oldest retained byte
	QuietAfter  time.Duration // no data for this long triggers a status check (default 5s)
	RetryBudget int           // consecutive reconnect attempts before Failed (default 10)
	MaxBackoff  time.Duration // cap of the exponential backoff (default 10s)
	MinBackoff  time.Duration // first reconnect delay, doubled per attempt, ±20% jitter (default 100ms)
	// StallAfter, when set, treats a stream that delivered nothing for this long as stalled and
	// reconnects from the cursor (reported as Interrupted). Zero leaves stall detection to the status
	// checks: a silent stream of a process the bridge says has ended is stalled.
	StallAfter time.Duration
	NoFollow   bool // snapshot only: deliver what exists now, then end without waiting
	// Buffer is the capacity of the Events channel (default 256).
	Buffer int
	// ReuseData lets the follower decode output into recycled buffers: a Data event's bytes are
	// then valid only until the next receive from Events, and a consumer that keeps them must copy
	// them. It saves allocating and zeroing a buffer per event on fast logs. Keep Buffer small with
	// it: about Buffer+8 buffers of an event's size are in rotation.
	ReuseData bool
	// Pool, when set (and ReuseData is not), is where the follower takes the buffers it decodes
	// output into: the consumer hands each Data event's bytes back to it (DataPool.Put) once it no
	// longer reads them, at its own pace, so events may be kept across receives. Keep Buffer small
	// with it too: the pool keeps about as many free buffers as are in flight.
	Pool *DataPool
	// AnswerWait, when set, bounds the wait for the bridge to answer each of the follower's
	// requests (lookups and stream opens) below the client's own answer timeout: a bridge that
	// accepts connections and says nothing is then reported (Interrupted) and retried that soon.
	AnswerWait time.Duration
	// Status, when set, is the caller's fresh status of the process (e.g. StartProcess's answer):
	// the follower skips its initial lookup and opens the stream at once.
	Status *Process
	// Sink, when set, receives every event in the follower's own goroutine instead of the Events
	// channel, which then only closes when the follower ends: a consumer that keeps events without
	// blocking (the record's capture) saves a goroutine hand-off, and often a thread's wake-up, per
	// event. Sink must not block. With ReuseData a Data event's bytes are valid during the call only.
	Sink func(LogEvent)
}

func (o *FollowOptions) defaults() {
	if o.QuietAfter <= 0 {
		o.QuietAfter = 5 * time.Second
	}
	if o.RetryBudget <= 0 {
		o.RetryBudget = 10
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MinBackoff > o.MaxBackoff {
		o.MinBackoff = o.MaxBackoff
	}
	if o.Buffer <= 0 {
		o.Buffer = 256
	}
}

// Follower follows one process's log. Events is closed after a final event (Ended, Lost, Failed),
// after the backlog in NoFollow mode, or when the context is cancelled.
type Follower struct {
	events chan LogEvent
	done   chan struct{}

	mu     sync.Mutex
	cursor string
}

// Events is the stream of what happened. Drain it until it is closed, or cancel the context.
func (f *Follower) Events() <-chan LogEvent { return f.events }

// Cursor is the cursor of the last event delivered (the resume point).
func (f *Follower) Cursor() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cursor
}

// Done is closed when the follower's goroutine has ended.
func (f *Follower) Done() <-chan struct{} { return f.done }

// Follow starts following a process's log: it replays from opts.Since (or the oldest retained
// event), then streams live output, resuming from the last delivered cursor whenever the stream
// breaks, and decides endings by checking the process's status.
func (c *Client) Follow(ctx context.Context, sandbox, process string, opts FollowOptions) *Follower {
	opts.defaults()
	if opts.AnswerWait > 0 {
		ctx = WithAnswerWait(ctx, opts.AnswerWait)
	}
	f := &Follower{events: make(chan LogEvent, opts.Buffer), done: make(chan struct{}), cursor: opts.Since}
	r := &follower{
		c: c, ctx: ctx, sandbox: sandbox, process: process, opts: opts, pub: f,
		resume: opts.Since, last: ParseCursor(opts.Since),
	}
	if opts.ReuseData {
		r.ring = newDataRing(opts.Buffer + 8)
	}
	go r.run()
	return f
}

// follower is the state of one Follow goroutine.
type follower struct {
	c                *Client
	ctx              context.Context
	sandbox, process string
	opts             FollowOptions
	pub              *Follower

	last        Cursor    // last delivered event's cursor (the dedupe mark when Known)
	resume      string    // since= for the next open; "" = from the oldest retained
	proc        *Process  // last known status
	interrupted bool      // Interrupted emitted, Resumed not yet
	attempt     int       // consecutive failed attempts
	outage      time.Time // when the current outage began (Interrupted emitted)
	lastFailure string    // why the last attempt failed
	suspects    int       // consecutive suspect endings (spaces out re-checks)
	pendingGap  *GapInfo
	// withheld is the sequence number of a terminal event received but not delivered (a suspect
	// ending): the next event following it is in sequence, not after a gap
	withheld    int64
	hasWithheld bool
	// restarted: the stream was reopened from the oldest retained event after the bridge refused
	// the resume cursor. Whether that lost anything is decided by the first new event's sequence
	// number (or marked at once when cursors are opaque).
	restarted bool
	quietSent bool
	dataAt    time.Time // when the current stream last delivered output (the quiet and stall timers)

	// An ending is confirmed only when the bridge's status says the process ended AND a stream
	// opened after that answer carries the terminal event as the first thing after the last
	// delivered cursor. Otherwise a forged or early terminal event could hide output.
	endSeen        *Process // status that said ended
	openedAfterEnd bool     // the current stream was opened after endSeen was learned
	fresh          int      // events delivered on the current stream

	// A bridge that ignores the resume cursor replays what was already shown on every resume.
	// first is the cursor of the first output delivered; on a stream opened with a resume cursor,
	// resent counts events at or before that cursor (dropped, never shown twice) and skipping is
	// set while opaque cursors are being replayed up to the resume point. replays counts resumed
	// streams in a row that brought nothing new (see noteReplay).
	first    string
	resumed  bool
	resent   int
	skipping bool
	replays  int

	// ReuseData: ring recycles Data buffers; held are those delivered and possibly still read by
	// the consumer (oldest first); emitted counts events sent on Events.
	ring    *dataRing
	held    []heldData
	emitted uint64
}

// action is what the loop does after one stream attempt.
type action int

const (
	actEnd     action = iota // final event emitted (or ctx done)
	actRetry                 // interrupted: back off, counts against the budget
	actSuspect               // suspect end: reopen after a pause, not counted
	actVerify                // status says ended: reopen at once to confirm the terminal event
)

func (r *follower) run() {
	defer close(r.pub.done)
	defer close(r.pub.events)
	if r.opts.Status != nil {
		st := *r.opts.Status
		r.proc = &st
	} else if p, err := r.c.GetProcess(r.ctx, r.sandbox, r.process); err == nil {
		r.proc = &p
	} else if r.ctx.Err() != nil {
		return
	} else if errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrInvalidRequest) {
		r.emit(LogEvent{Kind: Failed, Reason: "cannot follow: " + err.Error(), Err: err})
		return
	} else if IsRetryable(err) {
		// say at once that the bridge does not answer; the stream's open is the first attempt
		if r.interrupt("status lookup: "+describeOpenError(err), err) == actEnd {
			return
		}
	}
	for {
		act := r.stream()
		if act != actEnd && r.noteReplay(act) {
			r.emit(LogEvent{Kind: Failed, Err: ErrResumeIgnored, Reason: fmt.Sprintf(
				"stopped: the bridge ignores the resume cursor (%d resumed streams in a row re-sent output already shown and nothing new); following further would replay the same log forever", r.replays)})
			return
		}
		switch act {
		case actEnd:
			return
		case actVerify:
			continue
		case actSuspect:
			r.suspects++
			if !r.sleep(r.backoff(r.suspects)) {
				return
			}
			continue
		}
		r.attempt++
		if r.attempt > r.opts.RetryBudget {
			reason := fmt.Sprintf("could not resume after %d attempts", r.opts.RetryBudget)
			if !r.outage.IsZero() {
				reason += fmt.Sprintf(" over %v", time.Since(r.outage).Round(time.Second))
			}
			if r.lastFailure != "" {
				reason += "; last: " + r.lastFailure
			}
			r.emit(LogEvent{Kind: Failed, Reason: reason, Err: ErrTransport})
			return
		}
		// Reconnecting comes before the pause: it says when the next attempt is made
		delay := r.backoff(r.attempt)
		reason := "resuming from the last delivered cursor"
		if r.lastFailure != "" {
			reason = r.lastFailure
		}
		if !r.emit(LogEvent{Kind: Reconnecting, Attempt: r.attempt, Budget: r.opts.RetryBudget, Delay: delay, Since: r.outage, Reason: reason}) {
			return
		}
		if !r.sleep(delay) {
			return
		}
	}
}

// maxReplays is how many resumed streams in a row may bring nothing beyond the resume cursor while
// re-sending output already shown before the follower stops with ErrResumeIgnored.
const maxReplays = 3

// noteReplay counts, after a stream attempt ended with act, whether it was a replay that brought
// nothing new: a resumed stream that re-sent events already shown (or was still replaying them)
// and delivered none beyond the cursor, or an end check (a stream opened after the status said
// ended) that needed checking again because output came before the terminal event once more —
// a bridge that honours the cursor sends only the terminal event by then. It reports whether the
// follower should stop.
func (r *follower) noteReplay(act action) bool {
	switch {
	case r.resumed && (r.resent > 0 || r.skipping) && r.fresh == 0:
		r.replays++
	case act == actVerify && r.openedAfterEnd && r.fresh > 0:
		r.replays++
	case r.fresh > 0:
		r.replays = 0
	}
	return r.replays >= maxReplays
}

// backoff is the wait before the n-th retry, with ±20% jitter.
func (r *follower) backoff(n int) time.Duration {
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(doubling(r.opts.MinBackoff, r.opts.MaxBackoff, n)) * jitter)
}

func (r *follower) sleep(d time.Duration) bool { return sleepCtx(r.ctx, d) }

// emit delivers ev unless the context is done.
func (r *follower) emit(ev LogEvent) bool {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if ev.Kind != Data && ev.Cursor == "" {
		ev.Cursor = r.last.Raw
	}
	if r.opts.Sink != nil {
		if r.ctx.Err() != nil {
			return false
		}
		r.opts.Sink(ev)
		r.emitted++
		r.release()
		return true
	}
	select {
	case r.pub.events <- ev:
		r.emitted++
		r.release()
		return true
	case <-r.ctx.Done():
		return false
	}
}

// release recycles the buffers of events the consumer is done with: after event e was sent, the
// channel holds at most cap(events) events, so the consumer has received event e-cap and, by the
// ReuseData contract, no longer reads events before it.
func (r *follower) release() {
	if r.ring == nil {
		return
	}
	limit := uint64(cap(r.pub.events)) + 1
	i := 0
	for ; i < len(r.held) && r.held[i].seq+limit <= r.emitted; i++ {
		r.ring.put(r.held[i].buf)
		r.held[i].buf = nil
	}
	if i > 0 {
		r.held = append(r.held[:0], r.held[i:]...)
	}
}

// interrupt reports a broken stream (once per outage) and asks for a retry.
func (r *follower) interrupt(reason string, err error) action {
	r.lastFailure = reason
	if !r.interrupted {
		r.interrupted = true
		r.outage = time.Now()
		if !r.emit(LogEvent{Kind: Interrupted, Reason: reason, Err: err, Since: r.outage}) {
			return actEnd
		}
	}
	return actRetry
}

// fail reports a final failure.
func (r *follower) fail(reason string, err error) action {
	r.emit(LogEvent{Kind: Failed, Reason: reason, Err: err})
	return actEnd
}

// stream opens the log once and consumes it until it ends, breaks or a decision is made.
//
// One goroutine reads, decodes and handles the stream's events (the follower's state is its own
// while it runs); the calling goroutine meanwhile waits on the context and the quiet and stall
// timers, and takes the follower's state (mu) only when one of them fires. Handing each event from
// a reading goroutine to a handling one cost a goroutine wake-up, and often a thread's, per event:
// the largest cost of a follow that is not the bytes themselves.
func (r *follower) stream() action {
	ls, err := r.c.Logs(r.ctx, r.sandbox, r.process, LogQuery{Since: r.resume, Replay: true, Follow: !r.opts.NoFollow})
	if err != nil {
		return r.openFailed(err)
	}
	defer ls.Close()
	r.openedAfterEnd = r.endSeen != nil
	r.fresh = 0
	r.resumed, r.resent, r.skipping = r.resume != "", 0, false
	if r.interrupted {
		r.interrupted = false
		r.outage, r.lastFailure = time.Time{}, ""
		if !r.emit(LogEvent{Kind: Resumed, Attempt: r.attempt, Reason: "stream open again from the last delivered cursor"}) {
			return actEnd
		}
	}
	switch {
	case r.ring != nil:
		ls.alloc = r.ring.get
	case r.opts.Pool != nil:
		ls.alloc = r.opts.Pool.Get
	}
	r.quietSent = false
	r.dataAt = time.Now()

	var (
		mu      sync.Mutex
		over    bool // a decision was made: the reader no longer touches the follower's state
		decided = make(chan action, 1)
		read    = make(chan struct{})
	)
	go func() {
		defer close(read)
		for {
			m, err := ls.Next()
			mu.Lock()
			if over {
				mu.Unlock()
				return
			}
			var act action
			done := true
			if err != nil {
				act = r.streamError(err)
			} else if act, done = r.handle(m); !done && (m.Type == "stdout" || m.Type == "stderr") {
				r.dataAt = time.Now()
				r.quietSent = false
			}
			if done {
				over = true
				mu.Unlock()
				decided <- act
				return
			}
			mu.Unlock()
		}
	}()
	// end stops the reader (closing the stream unblocks its read) and waits for it: nothing of
	// this stream is delivered after stream returns.
	end := func(act action) action {
		ls.Close()
		<-read
		return act
	}

	quiet := time.NewTimer(r.opts.QuietAfter)
	defer quiet.Stop()
	var stall <-chan time.Time
	var stallTimer *time.Timer
	if r.opts.StallAfter > 0 {
		stallTimer = time.NewTimer(r.opts.StallAfter)
		defer stallTimer.Stop()
		stall = stallTimer.C
	}
	// decide runs a timer's check on the follower's state unless the reader decided first, or
	// data came since the timer was set (it is set again for what remains of after).
	decide := func(t *time.Timer, after time.Duration, check func() (action, bool)) (action, bool) {
		mu.Lock()
		if over {
			mu.Unlock()
			return end(<-decided), true
		}
		if since := time.Since(r.dataAt); since < after {
			t.Reset(after - since)
			mu.Unlock()
			return 0, false
		}
		act, done := check()
		over = done
		mu.Unlock()
		if done {
			return end(act), true
		}
		t.Reset(after)
		return 0, false
	}
	for {
		select {
		case <-r.ctx.Done():
			return end(actEnd)
		case act := <-decided:
			return end(act)
		case <-stall:
			if act, done := decide(stallTimer, r.opts.StallAfter, func() (action, bool) {
				return r.interrupt(fmt.Sprintf("stalled: no data for %v", r.opts.StallAfter), nil), true
			}); done {
				return act
			}
		case <-quiet.C:
			if act, done := decide(quiet, r.opts.QuietAfter, r.quietCheck); done {
				return act
			}
		}
	}
}

func (r *follower) openFailed(err error) action {
	switch {
	case r.ctx.Err() != nil:
		return actEnd
	case errors.Is(err, ErrNotFound):
		return r.lost("GET logs: 404 not_found")
	case errors.Is(err, ErrUnauthorized), errors.Is(err, ErrUnsupported), errors.Is(err, ErrInvalidRequest):
		return r.fail("cannot follow: "+err.Error(), err)
	case errors.Is(err, ErrServerText) && r.resume != "":
		// The bridge turns an invalid or foreign cursor into a bare 500; so do stale handles and
		// interrupted runtimes. Tell them apart by looking the process up.
		p, gerr := r.c.GetProcess(r.ctx, r.sandbox, r.process)
		if r.ctx.Err() != nil {
			return actEnd
		}
		if errors.Is(gerr, ErrNotFound) {
			return r.lost("GET process: 404 not_found (after a 500 on resume)")
		}
		if gerr != nil {
			return r.interrupt("bridge error on resume (5xx): "+err.Error(), err)
		}
		r.proc = &p
		act := r.interrupt("bridge rejected the resume cursor (text 500)", err)
		if act == actEnd {
			return act
		}
		// Restart from the oldest retained event. With parseable cursors, events at or before the
		// last delivered one are dropped by sequence number and a gap is marked only if the first
		// new event skips numbers (see settleGap). With opaque cursors nothing can be proved, so
		// the restart itself is marked.
		if !r.last.Known {
			text := "the bridge rejected the resume cursor; restarting from the beginning (output may repeat)"
			if !r.emit(LogEvent{Kind: Gap, Reason: text, Gap: &GapInfo{Reason: GapRestarted, Bytes: -1, Events: -1, FromCursor: r.last.Raw}}) {
				return actEnd
			}
		} else {
			r.restarted = true
		}
		r.resume = ""
		return actRetry
	case IsRetryable(err):
		return r.interrupt(describeOpenError(err), err)
	default:
		return r.fail("cannot follow: "+err.Error(), err)
	}
}

func describeOpenError(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("bridge answered %d (5xx) on open: %s", ae.Status, ae.Message)
	}
	if errors.Is(err, ErrTransport) {
		return err.Error() // a *TransportError says "bridge unreachable" (or "no answer") itself
	}
	return "bridge unreachable: " + err.Error()
}

// streamError decides what a read failure means.
func (r *follower) streamError(err error) action {
	if r.ctx.Err() != nil {
		return actEnd
	}
	var me *MalformedEventError
	if errors.As(err, &me) {
		// The bridge still holds that event: resume from the last good cursor to get it again.
		return r.interrupt("malformed event: "+me.Error(), err)
	}
	if errors.Is(err, ErrEventTooLarge) {
		return r.interrupt(err.Error(), err)
	}
	if err != io.EOF {
		return r.interrupt(describeReadError(err), err)
	}
	if r.pendingGap != nil {
		if !r.flushGap("") {
			return actEnd
		}
	}
	// Clean end without a terminal event.
	p, gerr := r.c.GetProcess(r.ctx, r.sandbox, r.process)
	if r.ctx.Err() != nil {
		return actEnd
	}
	if errors.Is(gerr, ErrNotFound) {
		return r.lost("GET process: 404 not_found (stream ended without a terminal event)")
	}
	if r.opts.NoFollow {
		if gerr == nil && p.State != "running" {
			r.proc = &p
			r.emit(LogEvent{Kind: Ended, Status: &p, Reason: "snapshot complete; the bridge says the process has ended"})
		}
		return actEnd
	}
	if gerr != nil {
		return r.interrupt("stream ended without a terminal event (status unknown: "+gerr.Error()+")", gerr)
	}
	r.proc = &p
	if p.State == "running" {
		if !r.emit(LogEvent{Kind: SuspectEnd, Status: &p, Reason: "stream ended without a terminal event while the bridge says running"}) {
			return actEnd
		}
		return actSuspect
	}
	return r.interrupt("stream ended without a terminal event", io.ErrUnexpectedEOF)
}

func describeReadError(err error) string {
	s := err.Error()
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(s, "unexpected EOF"):
		return "connection cut mid-stream (unexpected EOF)"
	case strings.Contains(s, "reset"):
		return "connection reset"
	}
	return "stream broke: " + s
}

// quietCheck runs when no data arrived for QuietAfter.
func (r *follower) quietCheck() (action, bool) {
	p, err := r.c.GetProcess(r.ctx, r.sandbox, r.process)
	if r.ctx.Err() != nil {
		return actEnd, true
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return r.lost("GET process: 404 not_found (while the stream was quiet)"), true
	case err != nil && r.opts.NoFollow:
		// a snapshot does not wait on a bridge that holds the stream open despite follow=false
		return r.fail(fmt.Sprintf("snapshot stopped: no data for %v on a stream the bridge kept open, and the status lookup failed: %v", r.opts.QuietAfter, err), err), true
	case err != nil:
		return 0, false // the stream itself will say if the bridge is gone
	}
	r.proc = &p
	if p.State == "running" && r.opts.NoFollow {
		return actEnd, true // the backlog was delivered; the bridge holds the stream open as if following
	}
	if p.State == "running" {
		if !r.quietSent {
			r.quietSent = true
			if !r.emit(LogEvent{Kind: Quiet, Status: &p, Reason: fmt.Sprintf("no output for %v; the bridge says running", r.opts.QuietAfter)}) {
				return actEnd, true
			}
		}
		return 0, false
	}
	// Ended, yet its terminal event never came: the stream is stuck.
	return r.interrupt("stalled: no data although the bridge says the process has ended", nil), true
}

// handle processes one decoded event. done is true when the stream should stop.
func (r *follower) handle(m LogMessage) (action, bool) {
	switch m.Type {
	case "stdout", "stderr":
		cur := parseCursorAfter(m.Cursor, r.last)
		after, ok := cur.After(r.last)
		if ok && !after || !ok && r.replayed(m.Cursor) {
			if r.ring != nil {
				r.ring.put(m.Data)
			} else {
				r.opts.Pool.Put(m.Data) // no one else has seen it
			}
			if r.resumed {
				r.resent++
			}
			return 0, false // already delivered
		}
		if !r.settleGap(cur) {
			return actEnd, true
		}
		st := Stdout
		if m.Type == "stderr" {
			st = Stderr
		}
		t := m.Time
		if t.IsZero() {
			t = time.Now()
		}
		if !r.emit(LogEvent{Kind: Data, Cursor: m.Cursor, Time: t, Stream: st, Data: m.Data}) {
			return actEnd, true
		}
		if r.ring != nil {
			r.held = append(r.held, heldData{seq: r.emitted, buf: m.Data})
		}
		r.delivered(cur)
		r.fresh++
		if r.first == "" {
			r.first = m.Cursor
		}
		return 0, false
	case "truncated":
		// Only a claim that the reader's next event was evicted: whether anything this follower
		// has not shown is missing is decided by the next delivered event (settleGap).
		if r.pendingGap == nil {
			r.pendingGap = &GapInfo{Reason: GapTruncated, Bytes: -1, Events: -1, FromCursor: r.last.Raw}
		}
		return 0, false
	case "terminal":
		return r.terminal(m), true
	}
	return 0, false // unknown event types are ignored
}

// replayed reports whether an event whose cursor cannot be ordered against the last delivered
// one (opaque cursors) was already shown: on a resumed stream, the event at the resume cursor
// itself, or the first output ever delivered, starts a replay that lasts up to and including the
// event at the resume cursor.
func (r *follower) replayed(cursor string) bool {
	if !r.resumed || cursor == "" {
		return false
	}
	if r.skipping {
		r.skipping = cursor != r.resume
		return true
	}
	if cursor == r.resume || (r.fresh == 0 && cursor == r.first) {
		r.skipping = cursor != r.resume
		return true
	}
	return false
}

func (r *follower) delivered(cur Cursor) {
	r.last = cur
	r.resume = cur.Raw
	r.attempt = 0
	r.suspects = 0
	r.pub.mu.Lock()
	r.pub.cursor = cur.Raw
	r.pub.mu.Unlock()
}

// settleGap decides, just before the event at cur is delivered, whether a Gap comes first. When
// cur and the last delivered cursor are comparable the sequence numbers are the evidence: a gap
// exactly when cur skips numbers, with Events the count skipped; a `truncated` claim or a restart
// followed by the next number in line is dropped silently (the evicted output was already shown).
// Otherwise a pending claim or restart is marked conservatively. It reports false when the context
// ended while emitting.
func (r *follower) settleGap(cur Cursor) bool {
	restarted := r.restarted
	r.restarted = false
	if after, ok := cur.After(r.last); ok && after {
		if cur.Seq == r.last.Seq+1 {
			r.pendingGap = nil
			return true
		}
		if r.hasWithheld && r.withheld == r.last.Seq+1 && cur.Seq == r.last.Seq+2 && r.pendingGap == nil {
			// the only number skipped is the suspect ending's own: nothing is missing
			r.hasWithheld = false
			return true
		}
		g := r.pendingGap
		if g == nil {
			// a marker states only the reason observed: no `truncated` arrived
			g = &GapInfo{Reason: GapSkipped, Bytes: -1, Events: -1, FromCursor: r.last.Raw}
		}
		if restarted {
			g.Reason = GapInvalidCursor
		}
		r.pendingGap = g
		return r.flushGap(cur.Raw)
	}
	if r.pendingGap == nil && restarted {
		r.pendingGap = &GapInfo{Reason: GapRestarted, Bytes: -1, Events: -1, FromCursor: r.last.Raw}
	}
	if r.pendingGap != nil {
		return r.flushGap(cur.Raw)
	}
	return true
}

func (r *follower) flushGap(to string) bool {
	g := r.pendingGap
	r.pendingGap = nil
	g.ToCursor = to
	if to != "" {
		if after, ok := ParseCursor(to).After(ParseCursor(g.FromCursor)); ok && after {
			g.Events = ParseCursor(to).Seq - ParseCursor(g.FromCursor).Seq - 1
		}
	}
	text := "the bridge no longer holds this output (retention limit or slow reader)"
	switch g.Reason {
	case GapInvalidCursor:
		text = "the bridge rejected the resume cursor; output between here and the oldest retained event is missing"
	case GapRestarted:
		text = "the bridge rejected the resume cursor; restarted from the oldest retained output (output may repeat or be missing)"
	case GapSkipped:
		text = "the bridge skipped sequence numbers without saying why (no truncated event)"
	}
	switch {
	case g.Events == 1:
		text += " (1 event)"
	case g.Events > 1:
		text += fmt.Sprintf(" (%d events)", g.Events)
	}
	return r.emit(LogEvent{Kind: Gap, Gap: g, Reason: text})
}

// terminal checks a terminal event against the process's status.
func (r *follower) terminal(m LogMessage) action {
	cur := ParseCursor(m.Cursor)
	if cur.Known {
		// not delivered yet (it may be suspect, or be verified first): its number is not a gap
		r.withheld, r.hasWithheld = cur.Seq, true
	}
	after, comparable := cur.After(r.last)
	// while opaque output is being replayed up to the resume point, nothing proves order
	inSequence := !comparable && !r.skipping || after
	if r.openedAfterEnd && r.fresh == 0 && inSequence {
		return r.ended(m, cur, r.endSeen)
	}
	p, err := r.c.GetProcess(r.ctx, r.sandbox, r.process)
	if r.ctx.Err() != nil {
		return actEnd
	}
	if errors.Is(err, ErrNotFound) {
		return r.lost("GET process: 404 not_found (after a terminal event)")
	}
	if err != nil {
		return r.interrupt("terminal event could not be confirmed: "+err.Error(), err)
	}
	r.proc = &p
	if !inSequence {
		// A terminal event at or before output already delivered cannot be genuine; resume
		// from the cursor to get the real one.
		return r.suspect(m, fmt.Sprintf("terminal event out of sequence (bridge status: %s)", p.State))
	}
	if p.State == "running" {
		return r.suspect(m, "terminal event while the bridge says running")
	}
	// Status agrees. Confirm that nothing precedes the terminal event by asking again from the
	// last delivered cursor (one cheap request; a finished log is a short replay).
	r.endSeen = &p
	return actVerify
}

func (r *follower) ended(m LogMessage, cur Cursor, p *Process) action {
	if !r.settleGap(cur) {
		return actEnd
	}
	r.delivered(cur)
	reason := "ended; the bridge confirms"
	if m.Exit != nil && p.Exit != nil && (m.Exit.Code != p.Exit.Code || m.Exit.Signal != p.Exit.Signal) {
		reason = fmt.Sprintf("ended; the bridge's status (exit %d) differs from the stream's terminal event (exit %d); status wins", p.Exit.Code, m.Exit.Code)
	}
	r.emit(LogEvent{Kind: Ended, Cursor: cur.Raw, Status: p, Reason: reason})
	return actEnd
}

func (r *follower) suspect(m LogMessage, why string) action {
	desc := why
	if m.Exit != nil {
		desc += fmt.Sprintf(" (stream claimed exit %d)", m.Exit.Code)
	}
	if !r.emit(LogEvent{Kind: SuspectEnd, Status: r.proc, Reason: desc}) {
		return actEnd
	}
	return actSuspect
}

// lost reports the process gone, with what the sandbox looks like now.
func (r *follower) lost(lookup string) action {
	previous := 0
	if r.proc != nil {
		previous = r.proc.Incarnation
	}
	rs, err := r.c.Running(r.ctx, r.sandbox)
	ev := lossEvidence(lookup, previous, rs, err)
	r.emit(LogEvent{Kind: Lost, Loss: ev, Status: r.proc, Reason: DescribeLoss(ev)})
	return actEnd
}

// lossEvidence is what a GET /running answer (rs, or its failure err) says about the sandbox
// after something of incarnation previous (0: unknown) vanished, found by lookup. The change is
// inferred unless both incarnations are known.
func lossEvidence(lookup string, previous int, rs RunningStatus, err error) *LossEvidence {
	ev := &LossEvidence{Lookup: lookup, Previous: previous, Inferred: true}
	if err == nil {
		running := rs.Running
		ev.SandboxRunning = &running
		ev.Incarnation = rs.Incarnation
		ev.Inferred = previous == 0 || rs.Incarnation == 0
	}
	return ev
}

// DescribeLoss says in words what a LossEvidence shows.
func DescribeLoss(ev *LossEvidence) string {
	if ev == nil {
		return "process lost"
	}
	var b strings.Builder
	b.WriteString("process gone (")
	b.WriteString(ev.Lookup)
	b.WriteString(")")
	switch {
	case ev.SandboxRunning == nil:
		b.WriteString("; sandbox state unknown")
	case !*ev.SandboxRunning:
		b.WriteString("; the sandbox is stopped")
	case ev.Incarnation != 0 && ev.Previous != 0 && ev.Incarnation != ev.Previous:
		fmt.Fprintf(&b, "; the sandbox now runs incarnation %d (the process belonged to %d)", ev.Incarnation, ev.Previous)
	case ev.Incarnation != 0 && ev.Incarnation == ev.Previous:
		fmt.Fprintf(&b, "; the sandbox still runs incarnation %d", ev.Incarnation)
	default:
		b.WriteString("; the sandbox runs, likely a new container (inferred)")
	}
	return b.String()
}
