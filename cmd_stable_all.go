package main

// logs --all and wait on stable bridges: they cover the runs sandscope started (the record keeps
// them; the bridge has no process list) and learn their output and endings from the in-sandbox
// recorder's files, one request per run and read.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"sandscope/client"
	"sandscope/followall"
	"sandscope/record"
	"sandscope/sanitize"
	"sandscope/vocab"
)

// stableReadBudget is how many reads of a run's recorder files in a row may fail before
// sandscope gives up on it (its ending then stays unknown: exit 4).
const stableReadBudget = 5

// stableRunState maps a recorded run to the --state words: running, exited (a confirmed
// ending), error (an error event, or an ending without a status).
func stableRunState(r record.StableRun) string {
	switch client.RunState(r.State) {
	case client.RunConfirmed:
		return "exited"
	case client.RunErrored:
		return "error"
	case client.RunUnconfirmed:
		if r.Reported == nil {
			return "error"
		}
	case client.RunLost:
		return "lost"
	}
	return "running"
}

// stableRunName is a run's prefix: its command's name and the random part of its ID.
func stableRunName(r record.StableRun) string {
	id := r.ID
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		id = id[i+1:]
	}
	return followall.Name(client.Process{ID: id, Command: r.Argv})
}

// stableFollowed is one run logs --all follows.
type stableFollowed struct {
	run      record.StableRun
	name     string
	sent     [2]int64
	lines    [2]lineBuffer
	failures int
	done     bool
	out      outcome
}

// runStableLogsAll prints (and with follow, follows) every run sandscope started in sandbox,
// from the recorder's files. Runs started while it follows join.
func runStableLogsAll(ctx context.Context, s *client.Stable, book runBook, bridge, sandbox string, opts allOptions, stdout, stderr io.Writer) error {
	if err := checkSandboxArg(sandbox); err != nil {
		return err
	}
	o := &allOut{stdout: stdout, stderr: stderr, opts: &opts}
	keep := func(r record.StableRun) bool {
		st := stableRunState(r)
		if opts.filter.States != nil && !opts.filter.States[st] && !(st == "lost" && opts.filter.States["exited"] && opts.filter.States["error"]) {
			return false
		}
		return opts.filter.Pattern == nil || opts.filter.Pattern.MatchString(strings.Join(r.Argv, " "))
	}
	followed := map[string]*stableFollowed{}
	var order []string
	told := false
	counts := map[outcome]int{}
	look := func() error {
		sb, err := book.Sandbox(bridge, sandbox)
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		for _, r := range sb.Runs {
			if followed[r.ID] != nil || !keep(r) {
				continue
			}
			f := &stableFollowed{run: r, name: stableRunName(r)}
			followed[r.ID], order = f, append(order, r.ID)
			o.notice(f.name, r.ID, "run %s %s: %s", r.ID, record.StableStateWord(r), followall.Summary(r.Argv))
			if client.RunState(r.State) == client.RunLost {
				// the files went with the container: nothing to read, nothing to ask; what the
				// record kept of the stream's output is all there is
				o.keptLines(book, sandbox, f)
				f.done, f.out = true, outLost
				counts[outLost]++
			}
		}
		return nil
	}
	if err := look(); err != nil {
		return err
	}
	if len(order) == 0 && !opts.follow {
		o.plain("no runs of sandbox %s in the record (a stable bridge has no process list: only runs sandscope started are known)", sandbox)
		return nil
	}
	read := func(f *stableFollowed) {
		if !told {
			wakeNotice(book, bridge, sandbox, "reading runs' output", stderr)
			told = true
		}
		res, err := s.Recover(ctx, sandbox, f.run.ID, f.run.Incarnation)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.failures++
			o.notice(f.name, f.run.ID, "reading the recorder's files: %s", err.Error())
			if f.failures >= stableReadBudget || !opts.follow {
				f.done, f.out = true, outFailed
				counts[outFailed]++
				if !errors.Is(err, client.ErrNotFound) {
					o.notice(f.name, f.run.ID, "gave up after %d reads; how the run ended is unknown", f.failures)
				}
			}
			return
		}
		f.failures = 0
		final := res.State == client.RunConfirmed || res.State == client.RunLost || res.State == client.RunUnconfirmed || !opts.follow
		for i, p := range []struct {
			data []byte
			w    io.Writer
			c    bool
			col  bool
		}{{res.RecoveredOut, stdout, opts.cleanOut, opts.colorOut}, {res.RecoveredErr, stderr, opts.cleanErr, opts.colorErr}} {
			if int64(len(p.data)) > f.sent[i] {
				f.lines[i].feed(p.data[f.sent[i]:], o.prefix(p.col, f.name, f.run.ID), p.c, opts.noSGR, final)
				f.sent[i] = int64(len(p.data))
			} else if final {
				f.lines[i].feed(nil, o.prefix(p.col, f.name, f.run.ID), p.c, opts.noSGR, true)
			}
			if b := f.lines[i].take(); b != nil {
				o.mu.Lock()
				_, _ = p.w.Write(b)
				o.mu.Unlock()
			}
		}
		if res.State != client.RunStillGoing && string(res.State) != f.run.State {
			run := f.run
			_ = book.Update(bridge, sandbox, func(sb *bookSandbox) { sb.SetRun(run, res, time.Now()) })
		}
		switch res.State {
		case client.RunConfirmed:
			o.notice(f.name, f.run.ID, "EXITED %d (confirmed: %s)", res.Code, res.Evidence)
			f.done, f.out = true, outEnded
		case client.RunLost:
			o.notice(f.name, f.run.ID, "LOST (inferred): %s", res.Evidence)
			f.done, f.out = true, outLost
		case client.RunUnconfirmed:
			o.notice(f.name, f.run.ID, "ENDED, exit code unknown: %s", res.Evidence)
			f.done, f.out = true, outFailed
		default:
			if !opts.follow {
				o.notice(f.name, f.run.ID, "%s: %s", res.State, res.Evidence)
				f.done, f.out = true, outNoFinal
			}
			return
		}
		counts[f.out]++
	}
	for {
		for _, id := range order {
			if f := followed[id]; !f.done {
				read(f)
			}
			if ctx.Err() != nil {
				return &exitError{code: interruptStatus(ctx)}
			}
		}
		open := 0
		for _, id := range order {
			if !followed[id].done {
				open++
			}
		}
		if !opts.follow {
			return allExit(counts, false)
		}
		if open == 0 {
			// one more look for runs started meanwhile
			n := len(order)
			if err := look(); err != nil {
				return err
			}
			if len(order) == n {
				if n == 0 {
					o.plain("no runs of sandbox %s in the record (a stable bridge has no process list: only runs sandscope started are known)", sandbox)
				}
				return allExit(counts, true)
			}
			continue
		}
		t := time.NewTimer(stableRecoverEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return &exitError{code: interruptStatus(ctx)}
		case <-t.C:
		}
		if err := look(); err != nil {
			return err
		}
	}
}

// runStableWait blocks until the recorder settles a run sandscope started, and exits with the
// run's own code only when its status file confirms it: 3 LOST, 255 ended without a status, 4 the
// files could not be read past the budget, 75 --timeout, 130 Ctrl-C. A run the record already
// settled is answered from the record, without a request.
func runStableWait(ctx context.Context, s *client.Stable, book runBook, bridge, sandbox, id string, timeout time.Duration, stderr, bell io.Writer) error {
	run, err := recordedRun(book, bridge, sandbox, id)
	if err != nil {
		return err
	}
	notice := func(format string, a ...any) {
		fmt.Fprintf(stderr, "sandscope: %s\n", sanitize.Message(fmt.Sprintf(format, a...)))
	}
	ring := func() { _, _ = bell.Write([]byte{'\a'}) }
	settled := func(res client.RunResult, from string) error {
		ring()
		switch res.State {
		case client.RunConfirmed:
			notice("run %s EXITED %d (confirmed: %s)%s", run.ID, res.Code, res.Evidence, from)
			return stableExit(ctx, res, run.ID, io.Discard)
		case client.RunLost:
			notice("run %s LOST (inferred): %s%s", run.ID, res.Evidence, from)
			return &exitError{code: exitLost}
		}
		notice("run %s ended, exit code unknown: %s%s", run.ID, res.Evidence, from)
		return &exitError{code: exitExecUnsure}
	}
	// What the record already settled needs no request.
	switch {
	case client.RunState(run.State) == client.RunConfirmed && run.Code != nil:
		return settled(client.RunResult{State: client.RunConfirmed, Code: *run.Code, Evidence: run.Evidence}, " (from the record)")
	case client.RunState(run.State) == client.RunLost:
		return settled(client.RunResult{State: client.RunLost, Evidence: run.Evidence}, " (from the record)")
	}
	wakeNotice(book, bridge, sandbox, "waiting for a run (it reads the recorder's files)", stderr)
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	failures := 0
	for {
		res, err := s.Recover(ctx, sandbox, run.ID, run.Incarnation)
		switch {
		case ctx.Err() != nil:
			return &exitError{code: interruptStatus(ctx)}
		case err != nil:
			failures++
			notice("reading run %s: %s", run.ID, err.Error())
			if failures >= stableReadBudget {
				ring()
				return &exitError{code: exitNoResume, err: fmt.Errorf("wait %s: the recorder's files could not be read %d times in a row; how the run ended is unknown", run.ID, failures)}
			}
		default:
			failures = 0
			if res.State == client.RunConfirmed || res.State == client.RunLost || res.State == client.RunUnconfirmed {
				_ = book.Update(bridge, sandbox, func(sb *bookSandbox) { sb.SetRun(run, res, time.Now()) })
				return settled(res, "")
			}
		}
		t := time.NewTimer(stableRecoverEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return &exitError{code: interruptStatus(ctx)}
		case <-expired:
			t.Stop()
			notice("timed out after %v; run %s is still not confirmed ended", timeout, run.ID)
			ring()
			return &exitError{code: exitWaitTimeout}
		case <-t.C:
		}
	}
}

// keptLines writes, prefixed, what the record kept of a LOST run's output (what sandscope's exec
// received before the loss), and says what it is.
func (o *allOut) keptLines(book runBook, sandbox string, f *stableFollowed) {
	rb, ok := book.(interface{ Record() *record.Record })
	if !ok || rb.Record() == nil {
		return
	}
	_ = rb.Record().Flush()
	kept, err := rb.Record().Captured(sandbox, f.run.ID)
	if err != nil || len(kept.Chunks) == 0 {
		o.notice(f.name, f.run.ID, "its files went with its container, and the record holds none of its output")
		return
	}
	var n int
	for _, ch := range kept.Chunks {
		i, w, clean, col := 0, o.stdout, o.opts.cleanOut, o.opts.colorOut
		if ch.Stream == client.Stderr {
			i, w, clean, col = 1, o.stderr, o.opts.cleanErr, o.opts.colorErr
		}
		f.lines[i].feed(ch.Data, o.prefix(col, f.name, f.run.ID), clean, o.opts.noSGR, false)
		n += len(ch.Data)
		if b := f.lines[i].take(); b != nil {
			o.mu.Lock()
			_, _ = w.Write(b)
			o.mu.Unlock()
		}
	}
	for i, w := range []io.Writer{o.stdout, o.stderr} {
		clean, col := o.opts.cleanOut, o.opts.colorOut
		if i == 1 {
			clean, col = o.opts.cleanErr, o.opts.colorErr
		}
		f.lines[i].feed(nil, o.prefix(col, f.name, f.run.ID), clean, o.opts.noSGR, true)
		if b := f.lines[i].take(); b != nil {
			o.mu.Lock()
			_, _ = w.Write(b)
			o.mu.Unlock()
		}
	}
	o.notice(f.name, f.run.ID, "its files went with its container; above: the %s the stream delivered before the loss, as the record kept them", vocab.Count(n, "byte"))
}
