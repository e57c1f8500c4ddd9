package logs

// logs --all: follow every process of a sandbox at once, new ones joining as the sandbox watcher
// finds them, each output line prefixed with the process's short name.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/followall"
	"sandscope/internal/cli/cmdutil"
	"sandscope/record"
	"sandscope/sanitize"
	"sandscope/vocab"
)

// allOptions tunes runLogsAll.
type allOptions struct {
	follow bool
	filter followall.Filter // which processes are followed (state, command pattern)
	// colorOut/colorErr colour the prefixes on stdout/stderr; cleanOut/cleanErr sanitise the
	// process's lines (they go to a terminal: no cursor moves or screen clears from a process may
	// break the prefixed lines apart). noSGR drops the process's own colours too (NO_COLOR).
	colorOut, colorErr bool
	cleanOut, cleanErr bool
	noSGR              bool
	// bell receives a BEL when a followed process ends, is lost or cannot be followed (--notify;
	// nil: none).
	bell io.Writer
	// poll is the watcher's interval; settle how long after the last followed process ended,
	// when one was lost, sandscope waits before it looks once more for new ones and exits.
	poll, settle time.Duration
	// rec records what the command sees: the sandbox's state, every process its lookups and its
	// watcher found, each followed stream's events (nil: nothing is recorded).
	rec *cmdutil.CommandRecord
}

// prefixColors are the SGR colours of the prefixes (no red: it reads as an error).
var prefixColors = []string{"32", "33", "34", "35", "36", "92", "93", "94", "95", "96"}

// colorOf is the colour of a process's prefix: a hash of its ID, so it stays the same across runs.
func colorOf(id string) string { return prefixColors[followall.Color(id, len(prefixColors))] }

// allOut writes whole prefixed lines to stdout and stderr; lines of different processes never
// interleave.
type allOut struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
	opts           *allOptions
}

func (o *allOut) prefix(color bool, name, id string) string {
	if color {
		return "\x1b[" + colorOf(id) + "m" + name + "\x1b[0m | "
	}
	return name + " | "
}

// notice writes "sandscope: NAME | message" to stderr; message is sanitised.
func (o *allOut) notice(name, id, format string, a ...any) {
	line := "sandscope: " + o.prefix(o.opts.colorErr, name, id) + sanitize.Message(fmt.Sprintf(format, a...)).String() + "\n"
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = io.WriteString(o.stderr, line)
}

// ring writes the bell (--notify), after the notice that says why.
func (o *allOut) ring() {
	if o.opts.bell == nil || !o.opts.follow {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = o.opts.bell.Write([]byte{'\a'})
}

// plain writes "sandscope: message" to stderr.
func (o *allOut) plain(format string, a ...any) {
	line := "sandscope: " + sanitize.Message(fmt.Sprintf(format, a...)).String() + "\n"
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = io.WriteString(o.stderr, line)
}

// allBatch is how many bytes of prefixed lines logs --all gathers before it writes them: a pipe's
// capacity.
const allBatch = 64 << 10

// pieceEnd is where the first piece of data that logs --all frames at once ends: after the last
// newline within allBatch bytes, or after the first one beyond (a piece never ends inside a line,
// so the lines are the same as if the data were framed whole).
func pieceEnd(data []byte) int {
	if len(data) <= allBatch {
		return len(data)
	}
	if i := bytes.LastIndexByte(data[:allBatch], '\n'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexByte(data[allBatch:], '\n'); i >= 0 {
		return allBatch + i + 1
	}
	return len(data)
}

// maxPartial is how long a line without newline may grow before it is written as a line of its own.
const maxPartial = 64 << 10

// lineBuffer cuts one stream of one process into prefixed lines.
type lineBuffer struct {
	partial []byte
	batch   []byte
}

// feed adds data and appends its complete lines, prefixed, to the batch (take returns them).
// final also writes out a partial line, ended with a newline.
func (lb *lineBuffer) feed(data []byte, prefix string, clean, noSGR, final bool) {
	if len(lb.partial) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lb.partial = append(lb.partial, data...)
			data = nil
		} else {
			lb.partial = append(lb.partial, data[:i]...)
			lb.line(lb.partial, prefix, clean, noSGR)
			lb.partial = lb.partial[:0]
			data = data[i+1:]
		}
	}
	if !clean {
		data = lb.rawLines(data, prefix)
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			// the data's buffer may be recycled: the partial line is copied
			lb.partial = append(lb.partial, data...)
			break
		}
		lb.line(data[:i], prefix, clean, noSGR)
		data = data[i+1:]
	}
	if len(lb.partial) >= maxPartial || (final && len(lb.partial) > 0) {
		lb.line(lb.partial, prefix, clean, noSGR)
		lb.partial = lb.partial[:0]
	}
}

// rawLines appends data's complete lines, prefixed and unchanged, to the batch and returns the
// rest (a partial line). A fast log has millions of short lines: each costs one search, and a
// prefix and a line of up to 64 bytes are stored as whole 64-byte blocks into room made
// beforehand (the bytes past the line are overwritten by the next one, or lie beyond the batch's
// length), not copied by three appends.
func (lb *lineBuffer) rawLines(data []byte, prefix string) []byte {
	const block = 64
	var pre [block]byte
	shortPrefix := len(prefix) <= block
	copy(pre[:], prefix)
	b := lb.batch
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		n, need := len(b), len(prefix)+i+1
		if cap(b)-n < need+block {
			// room for the rest of data as lines of this one's length at least
			b = slices.Grow(b, need+block+len(data)+len(data)/(i+1)*len(prefix))
		}
		out := b[n:cap(b)] // at least need+block bytes
		if shortPrefix {
			*(*[block]byte)(out) = pre
		} else {
			copy(out, prefix)
		}
		out = out[len(prefix):] // at least i+1+block bytes
		if i < block && len(data) >= block {
			*(*[block]byte)(out) = *(*[block]byte)(data)
		} else {
			copy(out, data[:i+1])
		}
		b = b[:n+need]
		data = data[i+1:]
	}
	lb.batch = b
	return data
}

// take returns the lines batched so far (nil when none); they are valid until the next feed.
func (lb *lineBuffer) take() []byte {
	if len(lb.batch) == 0 {
		return nil
	}
	b := lb.batch
	lb.batch = lb.batch[:0]
	return b
}

func (lb *lineBuffer) line(l []byte, prefix string, clean, noSGR bool) {
	lb.batch = append(lb.batch, prefix...)
	if clean {
		t, _ := sanitize.Text(bytes.TrimSuffix(l, []byte{'\r'}), sanitize.Options{StripSGR: noSGR})
		lb.batch = append(lb.batch, t...)
	} else {
		lb.batch = append(lb.batch, l...)
	}
	lb.batch = append(lb.batch, '\n')
}

// outcome is how one followed process's stream ended.
type outcome int

const (
	outEnded   outcome = iota // confirmed ending
	outLost                   // lost with its container
	outFailed                 // the stream could not be resumed
	outUsage                  // the bridge refused (token, not found)
	outNoFinal                // closed without a final event (snapshot done, or cancelled)
)

// followOne copies one process's log as prefixed lines and reports its events as notices.
func (o *allOut) followOne(ctx context.Context, d driver.Driver, sandbox string, p client.Process) outcome {
	name := followall.Name(p)
	po := o.prefix(o.opts.colorOut, name, p.ID)
	pe := o.prefix(o.opts.colorErr, name, p.ID)
	// p is the status of a lookup just made (the list, or the watcher's last poll): the follower
	// opens the stream at once instead of asking again.
	fopts := client.FollowOptions{NoFollow: !o.opts.follow, ReuseData: true, Buffer: 1, Status: &p}
	if o.opts.follow {
		fopts = cmdutil.FollowOptions(fopts)
	} else {
		fopts.RetryBudget, fopts.MaxBackoff = 2, time.Second
	}
	events := d.Follow(ctx, sandbox, p.ID, driver.FollowOptions{FollowOptions: fopts})
	observe := o.opts.rec.Observe(sandbox, p.ID)
	// a batch holds up to allBatch bytes plus one piece's prefixed lines: sized once, not grown
	// through every power of two for each of 20 processes
	outBuf := lineBuffer{batch: make([]byte, 0, 3*allBatch)}
	var errBuf lineBuffer
	// writeOut writes the batched whole lines of both streams (one write each, under the lock).
	writeOut := func() {
		for _, s := range []struct {
			lb *lineBuffer
			w  io.Writer
		}{{&outBuf, o.stdout}, {&errBuf, o.stderr}} {
			if b := s.lb.take(); b != nil {
				o.mu.Lock()
				_, _ = s.w.Write(b)
				o.mu.Unlock()
			}
		}
	}
	flush := func() {
		outBuf.feed(nil, po, o.opts.cleanOut, o.opts.noSGR, true)
		errBuf.feed(nil, pe, o.opts.cleanErr, o.opts.noSGR, true)
		writeOut()
	}
	for ev := range events {
		if ev.Kind != client.Data {
			writeOut() // the lines before a notice come before it
			if observe != nil {
				observe(ev)
			}
		}
		switch ev.Kind {
		case client.Data:
			lb, prefix, clean := &outBuf, po, o.opts.cleanOut
			if ev.Stream == client.Stderr {
				lb, prefix, clean = &errBuf, pe, o.opts.cleanErr
			}
			// Write when a batch is large or nothing more is queued: fewer, larger writes on a
			// fast log, no delay on a slow one. A large event is cut in batch-sized pieces, so
			// the batches stay small and warm (20 processes' batches grown to a whole event each
			// were a tenth of logs --all's page faults).
			for data := ev.Data; len(data) > 0; {
				n := pieceEnd(data)
				lb.feed(data[:n], prefix, clean, o.opts.noSGR, false)
				data = data[n:]
				if len(outBuf.batch)+len(errBuf.batch) >= allBatch {
					writeOut()
				}
			}
			if len(events) == 0 {
				writeOut()
			}
		case client.Gap:
			flush() // what follows a gap does not continue the line before it
			o.notice(name, p.ID, "gap: %s%s", ev.Reason, cmdutil.GapSize(ev.Gap))
		case client.Interrupted:
			o.notice(name, p.ID, "stream interrupted: %s; resuming after the last cursor received", ev.Reason)
		case client.Reconnecting:
			if o.opts.follow {
				o.notice(name, p.ID, "%s", cmdutil.DescribeRetry(ev))
			}
		case client.Resumed:
			o.notice(name, p.ID, "resumed (attempt %d), no gap", ev.Attempt)
		case client.SuspectEnd:
			o.notice(name, p.ID, "suspect end: %s; still following", ev.Reason)
		case client.Ended:
			flush()
			o.notice(name, p.ID, "%s", cmdutil.DescribeEnd(ev.Status))
			o.ring()
			if o.opts.follow && cmdutil.Unsettled(ev.Status) {
				return outFailed // how it ended is unknown
			}
			return outEnded
		case client.Lost:
			flush()
			o.notice(name, p.ID, "%s: %s", vocab.Lost, ev.Reason)
			o.ring()
			return outLost
		case client.Failed:
			flush()
			o.notice(name, p.ID, "failed: %s", ev.Reason)
			o.ring()
			if cmdutil.UsageKind(ev.Err) {
				return outUsage
			}
			return outFailed
		}
	}
	flush()
	return outNoFinal
}

// allExit is the exit status of logs --all -f once every followed process has ended: 2 when the
// bridge refused (token, not found), else 4 when a stream could not be resumed (how those ended
// is unknown), else 3 when a process was lost, else 0.
func allExit(counts map[outcome]int, follow bool) error {
	switch {
	case counts[outUsage] > 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage}
	case counts[outFailed] > 0 && !follow:
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure}
	case counts[outFailed] > 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitNoResume}
	case counts[outLost] > 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitLost}
	}
	return nil
}

type allResult struct {
	id  string
	out outcome
}

// runLogsAll follows every process of sandbox that passes the filters.
func runLogsAll(ctx context.Context, d driver.Driver, sandbox string, opts allOptions, stdout, stderr io.Writer) error {
	if err := cmdutil.CheckSandboxArg(sandbox); err != nil {
		return err
	}
	if opts.poll <= 0 {
		opts.poll = time.Second
	}
	if opts.settle <= 0 {
		opts.settle = time.Second
	}
	out := &allOut{stdout: stdout, stderr: stderr, opts: &opts}
	growPipe(stdout, 1<<20)
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	results := make(chan allResult)
	joiner := followall.Joiner{Filter: opts.filter}
	counts := map[outcome]int{}
	active := 0

	start := func(p client.Process, late bool) {
		if !joiner.Join(p, late) {
			return
		}
		_, word, _ := vocab.State(p.State, p.Exit, p.Error)
		if p.Incarnation > 0 {
			word += fmt.Sprintf(", incarnation %d", p.Incarnation)
		}
		out.notice(followall.Name(p), p.ID, "following %s (%s)", followall.Summary(p.Command), word)
		active++
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := allResult{id: p.ID, out: out.followOne(fctx, d, sandbox, p)}
			select {
			case results <- r:
			case <-fctx.Done():
			}
		}()
	}
	interrupted := func() error {
		cancel()
		wg.Wait()
		out.plain("interrupted; %s still being followed", vocab.Count(active, "process|processes"))
		return &cmdutil.ExitError{Code: cmdutil.InterruptStatus(ctx)}
	}

	// The processes there now; the watcher then reports what changes after this look.
	// A driver without a status lookup that starts nothing (driver.Statuses) is not asked.
	var rs client.RunningStatus
	var ps []client.Process
	statuses, hasStatus := d.(driver.Statuses)
	err := cmdutil.FirstLook(ctx, opts.follow, stderr, func() error {
		var err error
		if hasStatus {
			if rs, err = statuses.Running(ctx, sandbox); err != nil {
				return err
			}
		}
		ps, err = d.Runs(ctx, sandbox)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return interrupted()
		}
		code := cmdutil.ExitFailure
		if opts.follow && client.IsRetryable(err) {
			code = cmdutil.ExitNoResume
		}
		return cmdutil.BridgeFailure("sandbox "+sandbox, err, code)
	}
	if hasStatus {
		opts.rec.Lookup(record.LookupRunning(sandbox, rs, ""))
	}
	for _, p := range ps {
		opts.rec.Lookup(record.LookupProcess(sandbox, p))
		start(p, false)
	}
	if !opts.follow {
		for active > 0 {
			select {
			case r := <-results:
				active--
				counts[r.out]++
			case <-ctx.Done():
				return interrupted()
			}
		}
		return allExit(counts, false)
	}
	if active == 0 {
		out.plain("no process of %s matches yet; waiting for one to start", sandbox)
	}
	var resume *client.WatchResume
	if hasStatus {
		resume = &client.WatchResume{Incarnation: client.Incarnation{Number: rs.Incarnation, Inferred: rs.Incarnation == 0}, Running: rs.Running, Processes: ps}
		if !rs.IncarnationStarted.IsZero() {
			resume.Incarnation.Started = rs.IncarnationStarted.UnixNano()
		}
	}
	events := d.Watch(fctx, sandbox, client.WatchOptions{FastInterval: opts.poll, Resume: resume}).Events
	var settle <-chan time.Time
	var settleTimer *time.Timer
	watchFailing := false
	for {
		select {
		case <-ctx.Done():
			return interrupted()
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			opts.rec.Watched(ev)
			switch ev.Kind {
			case client.ProcessAppeared, client.ProcessChanged:
				if ev.Process != nil {
					start(*ev.Process, true)
				}
			case client.IncarnationChanged:
				if ev.Previous.Number == 0 {
					out.plain("sandbox %s: %s", sandbox, vocab.Sandbox(true, ev.Incarnation.Number))
				} else {
					out.plain("sandbox %s: incarnation %d replaced incarnation %d (%s)", sandbox, ev.Incarnation.Number, ev.Previous.Number, strings.Join(ev.Evidence, "; "))
				}
			case client.SandboxStopped:
				out.plain("sandbox %s: %s", sandbox, vocab.Stopped)
			case client.WatchError:
				if !watchFailing {
					out.plain("watching sandbox %s: %v; retrying (new processes join once it answers)", sandbox, ev.Err)
				}
				watchFailing = true
				if cmdutil.UsageKind(ev.Err) {
					return cmdutil.BridgeExit("watch "+sandbox, ev.Err, cmdutil.ExitUsage)
				}
			case client.WatchRecovered:
				watchFailing = false
				out.plain("watching sandbox %s again", sandbox)
			}
		case r := <-results:
			active--
			counts[r.out]++
			if active == 0 {
				// A container replaced under a process is often followed by a relaunch: give it
				// a moment to appear. Otherwise look once more right away.
				wait := time.Duration(0)
				if counts[outLost] > 0 {
					wait = opts.settle
				}
				if settleTimer == nil {
					settleTimer = time.NewTimer(wait)
					defer settleTimer.Stop()
				} else {
					settleTimer.Reset(wait)
				}
				settle = settleTimer.C
			}
		case <-settle:
			settle = nil
			if active > 0 {
				continue
			}
			// Every followed process has ended: one more look for a process that started meanwhile
			// (an agent relaunched right after its container was replaced).
			ps, err := d.Runs(ctx, sandbox)
			if err == nil {
				for _, p := range ps {
					if !joiner.Seen(p.ID) {
						opts.rec.Lookup(record.LookupProcess(sandbox, p))
					}
					start(p, true)
				}
			}
			if active > 0 {
				continue
			}
			if errors.Is(err, context.Canceled) {
				return interrupted()
			}
			return allExit(counts, true)
		}
	}
}

// colorFor reports whether w is a terminal, and whether prefixes on it get colours (a terminal
// and NO_COLOR unset).
func colorFor(w io.Writer) (tty, color bool) {
	tty = cmdutil.IsTerminal(w)
	return tty, tty && os.Getenv("NO_COLOR") == ""
}

// logsAllOptions checks logs --all's arguments and flags and looks at the terminals the output
// goes to. bell receives a BEL for each followed ending (--notify; nil: none).
func logsAllOptions(args []string, follow bool, since string, states []string, pattern string, bell, stdout, stderr io.Writer) (allOptions, error) {
	opts := allOptions{follow: follow, bell: bell}
	if len(args) != 1 {
		return opts, &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("logs --all takes the sandbox only (no PROCESS)")}
	}
	if since != "" {
		return opts, &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("logs --all: --since names a cursor of one process; use it without --all")}
	}
	var err error
	if opts.filter.States, err = followall.ParseStates(states); err != nil {
		return opts, &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	if pattern != "" {
		if opts.filter.Pattern, err = regexp.Compile(pattern); err != nil {
			return opts, &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--command: %w", err)}
		}
	}
	opts.cleanOut, opts.colorOut = colorFor(stdout)
	opts.cleanErr, opts.colorErr = colorFor(stderr)
	opts.noSGR = os.Getenv("NO_COLOR") != ""
	return opts, nil
}

// runLogsAllCommand connects and runs logs --all with the options Validate made; unless
// noRecord, what it sees is recorded.
func runLogsAllCommand(ctx context.Context, g *cmdutil.Factory, streams cmdutil.IOStreams, sandbox string, follow, noRecord bool, opts allOptions) error {
	ctx, stop := cmdutil.InterruptContext(ctx)
	defer stop()
	if follow {
		ctx = cmdutil.FollowContext(ctx)
	}
	cn, err := g.ConnectIO(ctx, streams, cmdutil.ConnectOptions{Op: "logs --all", Follow: follow, NoAnswerExit: cmdutil.ExitFailure})
	if err != nil {
		return err
	}
	defer cn.Close()
	opts.rec = cn.Recorder(noRecord)
	defer opts.rec.Close()
	return runLogsAll(ctx, cn.D, sandbox, opts, cn.Out, cn.ErrOut)
}
