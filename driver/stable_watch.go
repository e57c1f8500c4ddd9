package driver

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// Watch reports what changes in a sandbox without a single request to the bridge: the runs of
// the index and of this driver (ProcessAppeared, ProcessChanged, ProcessVanished for a run found
// LOST), and a new container marker (IncarnationChanged, inferred). What this driver learns
// itself arrives at once; the index is read again every FastInterval while focused, SlowInterval
// otherwise (runs started by another sandscope process, e.g. an `exec` beside the TUI). With
// opts.Resume, what the resume knew is not announced again; with opts.Unfocused it starts at the
// slow rate (the record's background watchers). The events end with ctx.
func (d *Stable) Watch(ctx context.Context, sandbox string, opts client.WatchOptions) WatchHandle {
	if opts.FastInterval <= 0 {
		opts.FastInterval = time.Second
	}
	if opts.SlowInterval <= 0 {
		opts.SlowInterval = 10 * time.Second
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 64
	}
	w := &stableWatch{d: d, sandbox: sandbox, events: make(chan client.SandboxEvent, opts.Buffer),
		wake: make(chan struct{}, 1), known: map[string]Run{}, fast: opts.FastInterval}
	w.focused.Store(!opts.Unfocused) // a background watcher starts at the slow rate, as the client's does
	w.slow.Store(int64(opts.SlowInterval))
	if r := opts.Resume; r != nil {
		w.resumed = true
		w.inc = r.Incarnation
		for _, p := range r.Processes {
			w.known[p.ID] = p
		}
	}
	h := WatchHandle{Events: w.events, SetFocused: w.setFocused, SetSlow: func(v time.Duration) {
		if v > 0 {
			w.slow.Store(int64(v))
		}
	}}
	wctx, done := d.bound(ctx)
	w.ctx = wctx
	d.mu.Lock()
	d.watchers[w.wake] = sandbox
	d.mu.Unlock()
	if !d.goFunc(func() {
		defer done()
		defer close(w.events)
		defer func() {
			d.mu.Lock()
			delete(d.watchers, w.wake)
			d.mu.Unlock()
		}()
		w.run()
	}) {
		done()
		d.mu.Lock()
		delete(d.watchers, w.wake)
		d.mu.Unlock()
		close(w.events)
	}
	return h
}

type stableWatch struct {
	d       *Stable
	ctx     context.Context
	sandbox string
	events  chan client.SandboxEvent
	wake    chan struct{}
	focused atomic.Bool
	slow    atomic.Int64
	fast    time.Duration

	resumed bool
	primed  bool
	known   map[string]Run
	inc     client.Incarnation
	marker  string // the last marker, for the evidence
	failed  bool
}

func (w *stableWatch) setFocused(f bool) {
	if w.focused.Swap(f) != f && f {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (w *stableWatch) emit(ev client.SandboxEvent) bool {
	ev.Sandbox = w.sandbox
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if ev.Incarnation == (client.Incarnation{}) {
		ev.Incarnation = w.inc
	}
	select {
	case w.events <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

func (w *stableWatch) run() {
	for {
		if !w.look() {
			return
		}
		interval := time.Duration(w.slow.Load())
		if w.focused.Load() {
			interval = w.fast
		}
		t := time.NewTimer(interval)
		select {
		case <-w.ctx.Done():
			t.Stop()
			return
		case <-w.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// look compares what the driver knows now with what was reported; false when ctx ended.
func (w *stableWatch) look() bool {
	runs, markers, err := w.d.snapshot(w.sandbox)
	if err != nil {
		if w.ctx.Err() != nil {
			return false
		}
		w.failed = true
		return w.emit(client.SandboxEvent{Kind: client.WatchError, Err: err, Evidence: []string{"reading sandscope's run index failed (nothing was asked of the bridge)"}})
	}
	if w.failed {
		w.failed = false
		if !w.emit(client.SandboxEvent{Kind: client.WatchRecovered}) {
			return false
		}
	}
	cur := len(markers)
	switch {
	case cur == 0:
	case !w.primed && !w.resumed || w.inc.Number == 0:
		w.inc = client.Incarnation{Number: cur, Inferred: true}
	case cur != w.inc.Number:
		old := w.inc
		w.inc = client.Incarnation{Number: cur, Inferred: true}
		was := "one sandscope saw earlier"
		if cur >= 2 {
			was = markers[cur-2]
		}
		if !w.emit(client.SandboxEvent{Kind: client.IncarnationChanged, Previous: old, Incarnation: w.inc, Evidence: []string{
			fmt.Sprintf("the container marker changed (was %s, now %s): a different container answers, its files, sessions and shells are new (inferred from sandscope's marker file)", was, markers[cur-1]),
		}}) {
			return false
		}
	}
	w.primed = true
	for _, r := range runs {
		old, seen := w.known[r.ID]
		if !seen && r.State == StateRunning && r.Incarnation == 0 && time.Since(r.StartedAt) < markerGrace {
			// Just started: which container runs it is known when the recorder's header arrives
			// (noteMarker kicks the watcher then). Reported now, it would be placed in the
			// container seen last, and moved to the new one a moment later as a second entry.
			continue
		}
		w.known[r.ID] = r
		switch {
		case !seen:
			if r.State == StateLost && w.d.recordKnowsGone(w.sandbox, r.ID) {
				continue // the record holds it as gone already: nothing new
			}
			if !w.emit(client.SandboxEvent{Kind: client.ProcessAppeared, Process: ptrRun(r)}) {
				return false
			}
			if r.State == StateLost && !w.vanished(r) {
				return false
			}
		case !sameRun(old, r):
			if r.State == StateLost {
				if !w.vanished(r) {
					return false
				}
				continue
			}
			if !w.emit(client.SandboxEvent{Kind: client.ProcessChanged, Process: ptrRun(r)}) {
				return false
			}
		}
	}
	return true
}

// markerGrace is how long a run just started waits to be reported until its container marker is
// known; one whose header never comes is reported after it, in no known container.
const markerGrace = 10 * time.Second

// vanished reports a run found LOST: its container is gone with its files (inferred).
func (w *stableWatch) vanished(r Run) bool {
	evidence := []string{"inferred: the run's files are gone with the container that ran it (sandscope's recorder)"}
	if e := w.d.runEvidence(w.sandbox, r.ID); e != "" {
		evidence = append(evidence, e)
	}
	return w.emit(client.SandboxEvent{Kind: client.ProcessVanished, Process: ptrRun(r), Evidence: evidence})
}

// runEvidence is the index's evidence for a run's state.
func (d *Stable) runEvidence(sandbox, id string) string {
	if lr := d.liveRun(sandbox, id); lr != nil {
		lr.mu.Lock()
		defer lr.mu.Unlock()
		return lr.entry.Evidence
	}
	sb, err := d.idx.get(sandbox)
	if err != nil {
		return ""
	}
	r, err := sb.FindRun(id)
	if err != nil {
		return ""
	}
	return r.Evidence
}

// recordKnowsGone reports whether the record's watch state holds the run as gone already.
func (d *Stable) recordKnowsGone(sandbox, id string) bool {
	if d.opts.Record == nil {
		return false
	}
	e := d.opts.Record.State(sandbox).Find(record.Process, id)
	return e != nil && e.Gone
}

func sameRun(a, b Run) bool {
	return a.State == b.State && a.Incarnation == b.Incarnation && sameExit(a.Exit, b.Exit) && (a.Error == nil) == (b.Error == nil)
}

func sameExit(a, b *client.Exit) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func ptrRun(r Run) *Run { return &r }
