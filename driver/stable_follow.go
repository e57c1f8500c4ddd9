package driver

import (
	"context"
	"fmt"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// stableReadBudget is how many reads of a run's recorder files in a row may fail before a
// follow gives up (Failed).
const stableReadBudget = 5

// Follow streams a run's output and what became of it, as the preview follower's events.
//
//   - A run this driver started (still read, or finished in this process) is replayed from its
//     buffer after opts.Since, then followed live. Nothing is sent to the bridge for it.
//   - Any other run, Background: nothing is sent; one Failed event whose Err matches ErrNotLive.
//   - Any other run, foreground (the user opened it): a run the index holds as LOST is answered
//     from the record (what the capture kept, then Lost), sending nothing; otherwise the
//     recorder's files are read (this starts the container: the wake notice is said first),
//     every StableRecoverEvery while the run goes on, unless opts.NoFollow.
//
// Cursors are "s1:<stdout bytes>:<stderr bytes>" (see stable_ext.go). opts.Pool is not used: Data
// events carry slices of the run's buffer or of a file read, which no pool gave out (a consumer
// that hands them back to its pool hands back nothing).
func (d *Stable) Follow(ctx context.Context, sandbox, id string, opts FollowOptions) <-chan client.LogEvent {
	out := make(chan client.LogEvent, 64)
	failNow := func(ev client.LogEvent) <-chan client.LogEvent {
		ev.Kind, ev.Time, ev.Cursor = client.Failed, time.Now(), opts.Since
		out <- ev
		close(out)
		return out
	}
	lr := d.liveRun(sandbox, id)
	if lr == nil && !opts.Background {
		if sb, err := d.idx.get(sandbox); err == nil {
			if r, err := sb.FindRun(id); err == nil {
				lr = d.liveRun(sandbox, r.ID)
			}
		}
	}
	if lr == nil && opts.Background {
		// Reading it would start its container: nobody asked for that.
		err := fmt.Errorf("follow %s: %w", id, ErrNotLive)
		return failNow(client.LogEvent{Err: err, Reason: err.Error()})
	}
	fctx, done := d.bound(ctx)
	f := &stableFollow{d: d, ctx: fctx, caller: ctx, out: out, sandbox: sandbox, id: id, opts: opts}
	ok := d.goFunc(func() {
		defer done()
		defer close(out)
		if lr != nil {
			f.live(lr)
		} else {
			f.files()
		}
	})
	if !ok {
		done()
		err := fmt.Errorf("follow %s: the stable driver is closed", id)
		return failNow(client.LogEvent{Err: err, Reason: err.Error()})
	}
	return out
}

type stableFollow struct {
	d       *Stable
	ctx     context.Context // the caller's, ended by Close too
	caller  context.Context
	out     chan client.LogEvent
	sandbox string
	id      string
	opts    FollowOptions
	// the positions delivered of each stream
	myOut, myErr int64
}

func (f *stableFollow) emit(ev client.LogEvent) bool {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if ev.Cursor == "" {
		ev.Cursor = f.cursor()
	}
	select {
	case f.out <- ev:
		return true
	case <-f.ctx.Done():
		return false
	}
}

func (f *stableFollow) cursor() string { return formatStableCursor(f.myOut, f.myErr) }

// since reads opts.Since; an unreadable cursor restarts from the beginning with a Gap.
func (f *stableFollow) since() bool {
	if f.opts.Since == "" {
		return true
	}
	o, e, ok := parseStableCursor(f.opts.Since)
	if !ok {
		return f.emit(client.LogEvent{Kind: client.Gap, Cursor: "", Reason: "not a cursor of a stable run: following from the first byte",
			Gap: &client.GapInfo{Reason: client.GapInvalidCursor, Bytes: -1, Events: -1, FromCursor: f.opts.Since}})
	}
	f.myOut, f.myErr = o, e
	return true
}

// data trims a chunk that ends at stream position end to the bytes not delivered yet and emits
// it; false when the context ended.
func (f *stableFollow) data(stream client.Stream, b []byte, end int64, at time.Time) bool {
	my := &f.myOut
	if stream == client.Stderr {
		my = &f.myErr
	}
	if end <= *my || len(b) == 0 {
		return true
	}
	start := end - int64(len(b))
	if start < *my {
		b = b[*my-start:]
	}
	*my = end
	return f.emit(client.LogEvent{Kind: client.Data, Stream: stream, Data: b, Time: at})
}

// live follows a run this driver reads: its buffer after the cursor, then what arrives.
func (f *stableFollow) live(lr *liveRun) {
	if !f.since() {
		return
	}
	lr.mu.Lock()
	handoff := f.opts.capture && f.d.opts.Record != nil
	if handoff {
		// The record's capture receives the output from here on; what the driver captured itself
		// is in the record already.
		lr.bg++
		f.myOut, f.myErr = max(f.myOut, lr.capOut), max(f.myErr, lr.capErr)
	}
	attach := lr.next
	pos := lr.first
	lr.mu.Unlock()
	if handoff {
		defer f.detach(lr)
	}
	for {
		var evs []client.LogEvent
		lr.mu.Lock()
		if pos < lr.first || f.myOut < lr.baseOut || f.myErr < lr.baseErr {
			n := max(lr.baseOut-f.myOut, 0) + max(lr.baseErr-f.myErr, 0)
			if n > 0 {
				from := f.cursor()
				f.myOut, f.myErr = max(f.myOut, lr.baseOut), max(f.myErr, lr.baseErr)
				evs = append(evs, client.LogEvent{Kind: client.Gap, Cursor: f.cursor(), Time: time.Now(),
					Reason: "older output was dropped from sandscope's buffer (the recorder's files keep it)",
					Gap:    &client.GapInfo{Reason: client.GapTruncated, Bytes: n, Events: -1, FromCursor: from, ToCursor: f.cursor()}})
			}
			pos = max(pos, lr.first)
		}
		for _, it := range lr.items[pos-lr.first:] {
			switch {
			case it.isData:
				end := it.outEnd
				my := &f.myOut
				if it.ev.Stream == client.Stderr {
					end, my = it.errEnd, &f.myErr
				}
				if end <= *my {
					continue
				}
				ev := it.ev
				if start := end - int64(len(ev.Data)); start < *my {
					ev.Data = ev.Data[*my-start:]
				}
				*my = end
				ev.Cursor = f.cursor()
				evs = append(evs, ev)
			case it.seq >= attach:
				ev := it.ev
				ev.Cursor = f.cursor()
				evs = append(evs, ev)
			}
		}
		pos = lr.next
		final, changed := lr.final, lr.changed
		lr.mu.Unlock()
		for _, ev := range evs {
			if !f.emit(ev) {
				return
			}
		}
		if final != nil {
			ev := *final
			ev.Cursor = f.cursor()
			f.emit(ev)
			return
		}
		if f.opts.NoFollow {
			st := lr.run(f.d)
			f.emit(client.LogEvent{Kind: client.Quiet, Status: &st, Reason: "snapshot complete; the run is still going"})
			return
		}
		select {
		case <-f.ctx.Done():
			f.closing(lr)
			return
		case <-changed:
		}
	}
}

// closing gives a follower whose caller still listens the run's final event when the driver
// closes (the reader settles the run INTERRUPTED at once), within a short grace: Close must not
// wait on a consumer that stopped reading.
func (f *stableFollow) closing(lr *liveRun) {
	if f.d.ctx.Err() == nil || f.caller.Err() != nil {
		return
	}
	grace := time.NewTimer(time.Second)
	defer grace.Stop()
	for {
		lr.mu.Lock()
		final, changed := lr.final, lr.changed
		lr.mu.Unlock()
		if final != nil {
			ev := *final
			ev.Cursor = f.cursor()
			select {
			case f.out <- ev:
			case <-grace.C:
			case <-f.caller.Done():
			}
			return
		}
		select {
		case <-changed:
		case <-grace.C:
			return
		case <-f.caller.Done():
			return
		}
	}
}

// detach ends a background follower's share of the capture: the driver captures again, starting
// with what arrived after the follower's last delivered byte.
func (f *stableFollow) detach(lr *liveRun) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.bg--
	if lr.bg > 0 {
		return
	}
	rec := f.d.opts.Record
	for _, it := range lr.items {
		if !it.isData {
			continue
		}
		end, my := it.outEnd, &f.myOut
		if it.ev.Stream == client.Stderr {
			end, my = it.errEnd, &f.myErr
		}
		if end <= *my {
			continue
		}
		ev := it.ev
		if start := end - int64(len(ev.Data)); start < *my {
			ev.Data = ev.Data[*my-start:]
		}
		*my = end
		ev.Cursor = formatStableCursor(f.myOut, f.myErr)
		rec.CaptureData(f.sandbox, f.id, ev)
	}
	lr.capOut, lr.capErr = lr.out, lr.err
}

// files follows a run this driver does not read, from the recorder's files (foreground only).
func (f *stableFollow) files() {
	d := f.d
	sb, err := d.idx.get(f.sandbox)
	if err != nil {
		err = fmt.Errorf("follow %s: %w", f.id, err)
		f.emit(client.LogEvent{Kind: client.Failed, Err: err, Reason: err.Error()})
		return
	}
	d.learnMarkers(f.sandbox, sb)
	entry, err := sb.FindRun(f.id)
	if err != nil {
		// both: callers branch on not found; the run index says which (none, or several)
		err = fmt.Errorf("follow %s: %w (%w; a stable bridge has no process list: only runs sandscope started are known)", f.id, client.ErrNotFound, err)
		f.emit(client.LogEvent{Kind: client.Failed, Err: err, Reason: err.Error()})
		return
	}
	f.id = entry.ID
	if !f.since() {
		return
	}
	if client.RunState(entry.State) == client.RunLost {
		// The record settled it: its files went with its container, and a request would only
		// start another one.
		if !f.kept() {
			return
		}
		st := d.toRun(f.sandbox, entry)
		f.emit(client.LogEvent{Kind: client.Lost, Status: &st, Loss: d.lossOf(f.sandbox, entry.Incarnation, entry.Evidence),
			Reason: "LOST (inferred; from the record, no request sent): " + entry.Evidence})
		return
	}
	d.notice(d.WakeNotice(f.sandbox, "reading a run's output"))
	failures := 0
	for {
		res, err := d.s.Recover(f.ctx, f.sandbox, entry.ID, entry.Incarnation)
		if f.ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			if failures >= stableReadBudget || f.opts.NoFollow {
				err = fmt.Errorf("follow %s: %w", entry.ID, err)
				f.emit(client.LogEvent{Kind: client.Failed, Err: err, Reason: fmt.Sprintf("gave up after %d reads of the recorder's files: %s", failures, err)})
				return
			}
			if failures == 1 && !f.emit(client.LogEvent{Kind: client.Interrupted, Err: err, Reason: "reading the recorder's files: " + err.Error()}) {
				return
			}
		} else {
			if failures > 0 && !f.emit(client.LogEvent{Kind: client.Resumed, Attempt: failures, Reason: "the recorder's files answer"}) {
				return
			}
			failures = 0
			if res.State == client.RunLost {
				if !f.kept() {
					return
				}
				if entry.Ended() {
					// its ending was settled before its container went
					st := d.toRun(f.sandbox, entry)
					f.emit(client.LogEvent{Kind: client.Ended, Status: &st, Reason: "the ending recorded earlier; the recorder's files went with the container since"})
					return
				}
				entry = f.settle(entry, res)
				st := d.toRun(f.sandbox, entry)
				f.emit(client.LogEvent{Kind: client.Lost, Status: &st, Loss: d.lossOf(f.sandbox, entry.Incarnation, res.Evidence), Reason: "LOST (inferred): " + res.Evidence})
				return
			}
			if !f.data(client.Stdout, res.RecoveredOut, int64(len(res.RecoveredOut)), time.Now()) ||
				!f.data(client.Stderr, res.RecoveredErr, int64(len(res.RecoveredErr)), time.Now()) {
				return
			}
			switch res.State {
			case client.RunConfirmed, client.RunUnconfirmed:
				entry = f.settle(entry, res)
				st := d.toRun(f.sandbox, entry)
				f.emit(client.LogEvent{Kind: client.Ended, Status: &st, Reason: res.Evidence})
				return
			}
			if f.opts.NoFollow {
				entry = f.settle(entry, res)
				st := d.toRun(f.sandbox, entry)
				f.emit(client.LogEvent{Kind: client.Quiet, Status: &st, Reason: "snapshot complete; " + res.Evidence})
				return
			}
		}
		t := time.NewTimer(d.recoverEvery)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// settle records what the recorder's files said of a run in the index, and returns the entry.
func (f *stableFollow) settle(entry record.StableRun, res client.RunResult) record.StableRun {
	now := time.Now()
	_ = f.d.idx.update(f.sandbox, func(sb *record.StableSandbox) { sb.SetRun(entry, res, now) })
	tmp := record.StableSandbox{Runs: []record.StableRun{entry}}
	tmp.SetRun(entry, res, now)
	f.d.kick(f.sandbox)
	return tmp.Runs[0]
}

// kept emits what the record's capture kept of a run's output after the cursor (its files went
// with its container: this is all there is). False when the context ended.
func (f *stableFollow) kept() bool {
	rec := f.d.opts.Record
	if rec == nil {
		return true
	}
	_ = rec.Flush()
	c, err := rec.Captured(f.sandbox, f.id)
	if err != nil || !c.Found {
		return true
	}
	if c.Dropped > 0 || c.EarlierGone {
		if !f.emit(client.LogEvent{Kind: client.Gap, Reason: "the record kept only the newest output of this run",
			Gap: &client.GapInfo{Reason: client.GapNotKept, Bytes: -1, Events: -1, FromCursor: f.cursor()}}) {
			return false
		}
	}
	for _, ch := range c.Chunks {
		if ch.Lost != nil {
			// the record no longer has these bytes (record.ErrOutputLost): a gap in their place
			if !f.emit(client.LogEvent{Kind: client.Gap, Reason: ch.Lost.Error(),
				Gap: &client.GapInfo{Reason: client.GapNotKept, Bytes: ch.LostBytes, Events: -1, FromCursor: f.cursor()}}) {
				return false
			}
			continue
		}
		out, errN, ok := parseStableCursor(ch.Cursor)
		end := out
		if ch.Stream == client.Stderr {
			end = errN
		}
		if !ok {
			// not positioned: only a follow from the start takes it
			if f.myOut != 0 || f.myErr != 0 {
				continue
			}
			end = int64(len(ch.Data))
		}
		if !f.data(ch.Stream, ch.Data, end, ch.Time) {
			return false
		}
	}
	return true
}
