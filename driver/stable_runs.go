package driver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"sandscope/client"
	"sandscope/record"
	"sandscope/vocab"
)

// Start runs req under the in-sandbox recorder (this starts the container when none runs) and
// returns the run at once, State running. The driver reads the run until it ends or Close, on a
// context of its own (the caller's ctx bounds only the start). Env and Timeout, which the stable
// /exec has no fields for, wrap the command in env(1) and timeout(1). A refused start (e.g. 503
// capacity_exceeded: nothing ran) is the client's error as it is, for the caller to retry.
func (d *Stable) Start(ctx context.Context, sandbox string, req StartRequest) (Run, error) {
	if d.ctx.Err() != nil {
		return Run{}, errors.New("start: the stable driver is closed")
	}
	// Said once per sandbox, here unless the caller asked for it first (WakeNotice).
	d.notice(d.WakeNotice(sandbox, "exec"))
	argv := client.StableArgv(req.Argv, req.Env, time.Duration(req.Timeout)*time.Millisecond)
	rctx, rcancel := context.WithCancel(d.ctx)
	stop := context.AfterFunc(ctx, rcancel) // until the run is under way, the caller may give up
	run, err := d.s.Run(rctx, sandbox, client.ExecOptions{Argv: argv, Cwd: req.Cwd, Session: req.Session})
	callerLeft := !stop()
	if err != nil {
		rcancel()
		if callerLeft && ctx.Err() != nil {
			return Run{}, fmt.Errorf("start in %s: %w", sandbox, ctx.Err())
		}
		return Run{}, err
	}
	now := time.Now()
	// The index keeps the command as asked: the env(1) wrapper would put environment values
	// (often secrets) on disk, and the timeout(1) wrapper is not what the user ran.
	entry := record.StableRun{ID: run.ID, Argv: append([]string(nil), req.Argv...), Session: req.Session, Cwd: req.Cwd, Started: now.UTC()}
	lr := &liveRun{sandbox: sandbox, id: run.ID, changed: make(chan struct{})}
	lr.setEntry(entry, client.RunResult{State: client.RunRunning, Evidence: "started here"}, now)
	if err := d.idx.update(sandbox, func(sb *record.StableSandbox) {
		sb.SetRun(entry, client.RunResult{State: client.RunRunning, Evidence: "started here"}, now)
		if req.Session != "" {
			sb.UseSession(req.Session, false, now)
		}
	}); err != nil {
		d.notice(fmt.Sprintf("sandscope: run %s is not in the record: %s", vocab.Text(run.ID), vocab.Text(err.Error())))
	}
	d.mu.Lock()
	d.live[runKey{sandbox, run.ID}] = lr
	d.mu.Unlock()
	if callerLeft {
		// The caller gave up while the start was answered: the command runs, nobody reads it.
		run.Close()
		d.finish(lr, client.RunResult{State: client.RunInterrupted, Evidence: "sandscope stopped following; the command runs on"})
		return lr.run(d), fmt.Errorf("start in %s: %w", sandbox, ctx.Err())
	}
	if d.opts.Record != nil {
		d.opts.Record.CaptureBegin(sandbox, run.ID, false, "")
	}
	if !d.goFunc(func() { d.read(rctx, rcancel, lr, run) }) {
		run.Close()
		rcancel()
		d.finish(lr, client.RunResult{State: client.RunInterrupted, Evidence: "sandscope stopped following; the command runs on"})
	}
	d.kick(sandbox)
	return lr.run(d), nil
}

// read reads a run this driver started to its end: the stream, then, when the stream did not
// confirm the ending, the recorder's files every recoverEvery (the user started this run, so
// reading it to its end is asked for) until they confirm it, show it ended without a status, or
// show its container gone.
func (d *Stable) read(ctx context.Context, cancel context.CancelFunc, lr *liveRun, run *client.RecordedRun) {
	defer cancel()
	defer run.Close()
	var res client.RunResult
	noted := false
	for ev := range run.Events() {
		if !noted && run.Incarnation != "" {
			noted = true
			d.noteMarker(lr, run.Incarnation, run.PID)
		}
		switch {
		case ev.Result != nil:
			res = *ev.Result
		case ev.Kind == client.ExecStdout:
			d.output(lr, client.Stdout, ev.Text)
		case ev.Kind == client.ExecStderr:
			d.output(lr, client.Stderr, ev.Text)
		}
	}
	if ctx.Err() != nil {
		d.finish(lr, client.RunResult{State: client.RunInterrupted, Evidence: "sandscope stopped following; the command runs on"})
		return
	}
	if res.State == "" {
		res = client.RunResult{State: client.RunInterrupted, Evidence: "the stream ended early"}
	}
	if res.State == client.RunConfirmed {
		d.finish(lr, res)
		return
	}
	// Not confirmed: say what the stream said, then ask the recorder.
	d.progress(lr, res)
	inc := run.Incarnation
	failures := 0
	for {
		got, err := d.s.Recover(ctx, lr.sandbox, lr.id, inc)
		switch {
		case ctx.Err() != nil:
			d.finish(lr, client.RunResult{State: client.RunInterrupted, Evidence: "sandscope stopped following; the command runs on"})
			return
		case err != nil:
			failures++
			if failures == 1 {
				lr.control(client.LogEvent{Kind: client.Interrupted, Reason: "reading the recorder's files: " + err.Error(), Err: err})
			}
		default:
			if failures > 0 || lr.interrupted() {
				lr.control(client.LogEvent{Kind: client.Resumed, Reason: "the recorder's files answer"})
			}
			failures = 0
			if got.State != client.RunLost {
				d.fromFiles(lr, client.Stdout, got.RecoveredOut)
				d.fromFiles(lr, client.Stderr, got.RecoveredErr)
			}
			switch got.State {
			case client.RunConfirmed, client.RunLost, client.RunUnconfirmed:
				d.finish(lr, got)
				return
			}
			d.progress(lr, got)
		}
		t := time.NewTimer(d.recoverEvery)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// noteMarker compares the container marker a run printed with the one last seen: a different one
// means another container answers now (inferred), which the user is told and Watch reports.
func (d *Stable) noteMarker(lr *liveRun, marker string, pid int) {
	lr.mu.Lock()
	lr.entry.Incarnation, lr.pid = marker, pid
	entry := lr.entry
	lr.mu.Unlock()
	sb, err := d.idx.get(lr.sandbox)
	if err == nil {
		d.learnMarkers(lr.sandbox, sb)
		if sb.Incarnation != "" && sb.Incarnation != marker {
			d.notice(fmt.Sprintf("sandscope: sandbox %s runs in a different container than at sandscope's last contact (%s): its files, sessions and shells were not kept (inferred from sandscope's marker file)",
				vocab.Text(lr.sandbox), sb.MarkerSeen.Local().Format("2006-01-02 15:04")))
		}
	}
	d.mu.Lock()
	known := false
	for _, m := range d.markers[lr.sandbox] {
		known = known || m == marker
	}
	if !known {
		d.markers[lr.sandbox] = append(d.markers[lr.sandbox], marker)
	}
	d.mu.Unlock()
	_ = d.idx.update(lr.sandbox, func(sb *record.StableSandbox) {
		sb.Incarnation, sb.MarkerSeen = marker, time.Now().UTC()
		for i := range sb.Runs {
			if sb.Runs[i].ID == entry.ID {
				sb.Runs[i].Incarnation = marker
			}
		}
	})
	lr.broadcast()
	d.kick(lr.sandbox)
}

// output appends streamed output to a live run, and to the record's capture unless a background
// follower (the record's own capture) receives it.
func (d *Stable) output(lr *liveRun, stream client.Stream, b []byte) {
	if len(b) == 0 {
		return
	}
	lr.mu.Lock()
	ev := lr.appendLocked(stream, b, d.bufferCap)
	if d.opts.Record != nil && lr.bg == 0 {
		d.opts.Record.CaptureData(lr.sandbox, lr.id, ev)
		lr.capOut, lr.capErr = lr.out, lr.err
	}
	lr.mu.Unlock()
	lr.broadcast()
}

// fromFiles appends what a recorder file holds beyond what was delivered of that stream.
func (d *Stable) fromFiles(lr *liveRun, stream client.Stream, file []byte) {
	lr.mu.Lock()
	have := lr.out
	if stream == client.Stderr {
		have = lr.err
	}
	lr.mu.Unlock()
	if int64(len(file)) > have {
		d.output(lr, stream, file[have:])
	}
}

// progress notes a state the run passes through (the stream's ending before the recorder settles
// it, or the recorder saying it still runs): the index and the followers learn it.
func (d *Stable) progress(lr *liveRun, res client.RunResult) {
	lr.mu.Lock()
	before := lr.entry.State
	lr.setEntryLocked(res, time.Now())
	entry := lr.entry
	lr.mu.Unlock()
	if before == entry.State {
		return
	}
	_ = d.idx.update(lr.sandbox, func(sb *record.StableSandbox) { sb.SetRun(entry, res, time.Now()) })
	status := lr.run(d)
	switch res.State {
	case client.RunUnconfirmed:
		lr.control(client.LogEvent{Kind: client.SuspectEnd, Status: &status,
			Reason: "the stream reported exit code " + strconv.Itoa(res.Code) + ", not confirmed: reading the recorder's files"})
	case client.RunErrored:
		lr.control(client.LogEvent{Kind: client.Interrupted, Status: &status,
			Reason: "the bridge sent an error (" + res.ErrCode + ": " + res.Message + "); the outcome is unknown: reading the recorder's files"})
	case client.RunInterrupted:
		lr.control(client.LogEvent{Kind: client.Interrupted, Status: &status, Reason: res.Evidence + ": reading the recorder's files"})
	default:
		lr.broadcast()
	}
	d.kick(lr.sandbox)
}

// finish settles a live run: its final state in the index and the capture, and the final event
// for its followers.
func (d *Stable) finish(lr *liveRun, res client.RunResult) {
	now := time.Now()
	lr.mu.Lock()
	lr.setEntryLocked(res, now)
	entry := lr.entry
	lr.mu.Unlock()
	_ = d.idx.update(lr.sandbox, func(sb *record.StableSandbox) { sb.SetRun(entry, res, now) })
	status := lr.run(d)
	var final client.LogEvent
	switch res.State {
	case client.RunConfirmed, client.RunUnconfirmed:
		final = client.LogEvent{Kind: client.Ended, Status: &status, Reason: res.Evidence}
	case client.RunLost:
		final = client.LogEvent{Kind: client.Lost, Status: &status, Loss: d.lossOf(lr.sandbox, entry.Incarnation, res.Evidence), Reason: "LOST (inferred): " + res.Evidence}
	default:
		final = client.LogEvent{Kind: client.Failed, Status: &status, Err: errStoppedFollowing, Reason: res.Evidence}
	}
	if d.opts.Record != nil {
		d.opts.Record.CaptureEnd(lr.sandbox, lr.id, "run "+record.StableStateWord(entry))
	}
	lr.end(final)
	d.kick(lr.sandbox)
}

// errStoppedFollowing ends the followers of a run the driver stopped reading (Close).
var errStoppedFollowing = errors.New("sandscope stopped following; the command runs on")

// lossOf is the evidence of a run found lost: the recorder's files are gone (inferred).
func (d *Stable) lossOf(sandbox, marker, evidence string) *client.LossEvidence {
	ev := &client.LossEvidence{Lookup: "the recorder's files: " + evidence, Previous: d.incarnationOf(sandbox, marker), Inferred: true}
	d.mu.Lock()
	ev.Incarnation = len(d.markers[sandbox])
	d.mu.Unlock()
	return ev
}

// liveRun is a run this driver started and reads: its output (bounded), its state, its
// followers' wake-up.
type liveRun struct {
	sandbox, id string

	mu    sync.Mutex
	entry record.StableRun // as the index words it, kept current here
	pid   int
	items []item // output and control events, oldest first
	first int64  // seq of items[0]
	next  int64  // seq of the next item
	size  int64  // output bytes held in items
	// baseOut/baseErr: stream positions before the oldest held byte (what was dropped)
	baseOut, baseErr int64
	out, err         int64 // bytes received of each stream
	final            *client.LogEvent
	changed          chan struct{} // closed and replaced on every change
	// the record's capture: bytes the driver captured itself, and how many background followers
	// (the record's own capture) receive the output instead
	capOut, capErr int64
	bg             int
}

// item is one entry of a live run's timeline: output (Data, with positions after it) or a
// control event (Interrupted, Resumed, SuspectEnd).
type item struct {
	seq            int64
	ev             client.LogEvent
	outEnd, errEnd int64
	isData         bool
}

func formatStableCursor(out, err int64) string {
	return stableCursorPrefix + strconv.FormatInt(out, 10) + ":" + strconv.FormatInt(err, 10)
}

// parseStableCursor reads a stable cursor; ok is false for anything else.
func parseStableCursor(s string) (out, err int64, ok bool) {
	rest, found := strings.CutPrefix(s, stableCursorPrefix)
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, ":")
	if !found {
		return 0, 0, false
	}
	o, e1 := strconv.ParseInt(a, 10, 64)
	e, e2 := strconv.ParseInt(b, 10, 64)
	if e1 != nil || e2 != nil || o < 0 || e < 0 {
		return 0, 0, false
	}
	return o, e, true
}

func (lr *liveRun) setEntry(entry record.StableRun, res client.RunResult, now time.Time) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.entry = entry
	lr.setEntryLocked(res, now)
}

// setEntryLocked applies a result the way the index does (record.StableSandbox.SetRun).
func (lr *liveRun) setEntryLocked(res client.RunResult, now time.Time) {
	sb := record.StableSandbox{Runs: []record.StableRun{lr.entry}}
	sb.SetRun(lr.entry, res, now)
	lr.entry = sb.Runs[0]
}

// run is the live run as a neutral Run.
func (lr *liveRun) run(d *Stable) Run {
	lr.mu.Lock()
	entry, pid := lr.entry, lr.pid
	lr.mu.Unlock()
	r := d.toRun(lr.sandbox, entry)
	r.PID = pid
	return r
}

func (lr *liveRun) interrupted() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return client.RunState(lr.entry.State) == client.RunInterrupted || client.RunState(lr.entry.State) == client.RunErrored
}

// appendLocked adds output and drops the oldest beyond cap; it returns the Data event.
func (lr *liveRun) appendLocked(stream client.Stream, b []byte, cap int64) client.LogEvent {
	data := append([]byte(nil), b...)
	if stream == client.Stderr {
		lr.err += int64(len(data))
	} else {
		lr.out += int64(len(data))
	}
	ev := client.LogEvent{Kind: client.Data, Stream: stream, Data: data, Time: time.Now(), Cursor: formatStableCursor(lr.out, lr.err)}
	lr.items = append(lr.items, item{seq: lr.next, ev: ev, outEnd: lr.out, errEnd: lr.err, isData: true})
	lr.next++
	lr.size += int64(len(data))
	for lr.size > cap && len(lr.items) > 1 {
		old := lr.items[0]
		lr.items = lr.items[1:]
		lr.first++
		if old.isData {
			lr.size -= int64(len(old.ev.Data))
			lr.baseOut, lr.baseErr = old.outEnd, old.errEnd
		}
	}
	return ev
}

// control adds a control event for the followers attached now.
func (lr *liveRun) control(ev client.LogEvent) {
	lr.mu.Lock()
	ev.Time = time.Now()
	ev.Cursor = formatStableCursor(lr.out, lr.err)
	lr.items = append(lr.items, item{seq: lr.next, ev: ev, outEnd: lr.out, errEnd: lr.err})
	lr.next++
	lr.mu.Unlock()
	lr.broadcast()
}

func (lr *liveRun) end(final client.LogEvent) {
	lr.mu.Lock()
	final.Time = time.Now()
	final.Cursor = formatStableCursor(lr.out, lr.err)
	lr.final = &final
	lr.mu.Unlock()
	lr.broadcast()
}

func (lr *liveRun) broadcast() {
	lr.mu.Lock()
	close(lr.changed)
	lr.changed = make(chan struct{})
	lr.mu.Unlock()
}
