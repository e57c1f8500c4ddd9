package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"sandscope/client"
	"sandscope/record"
	"sandscope/vocab"
)

// Stable is the driver of the stable 0.12 API (POST /exec, GET /pty, sessions).
//
// On a stable bridge every request to /v1/sandbox/{id}/… starts that sandbox's container, so the
// driver answers lookups (Runs, Run, Watch, Sessions) from its run index — the record's stable
// entries, or memory without a record — and from the runs it streams itself. It sends a sandbox
// request only from Start, a foreground Follow of a run it does not stream, and the optional
// interfaces the user acts through (sessions, shells).
//
// Runs it starts run under the in-sandbox recorder (client.Stable.Run): their stream is read by
// the driver until the run ends or Close, whoever follows; output is kept in a bounded buffer for
// followers and in the record's capture; an ending the stream does not confirm is settled from
// the recorder's files.
type Stable struct {
	c    *client.Client
	s    *client.Stable
	caps client.Capabilities
	opts Options
	idx  runIndex

	// recoverEvery is how often the recorder's files are read while a run has not ended (each
	// read is a request that keeps the container awake); bufferCap bounds a live run's buffer.
	recoverEvery time.Duration
	bufferCap    int64

	ctx    context.Context // owns the readers of live runs, watchers and followers
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	live     map[runKey]*liveRun
	markers  map[string][]string // per sandbox, the container markers seen, oldest first
	told     map[string]bool
	watchers map[chan struct{}]string // kicked when something of that sandbox changes

	noticeMu sync.Mutex
}

type runKey struct{ sandbox, id string }

// Defaults of the stable driver.
const (
	// StableRecoverEvery is how often the recorder's files of an unfinished run are read.
	StableRecoverEvery = 2 * time.Second
	// StableBufferCap bounds the output a live run keeps for followers (the oldest bytes give
	// way; a follower that starts before them gets a Gap).
	StableBufferCap = 8 << 20
)

// NewStable makes the stable driver over c.
func NewStable(c *client.Client, caps client.Capabilities, opts Options) *Stable {
	ctx, cancel := context.WithCancel(context.Background())
	d := &Stable{c: c, s: client.NewStable(c), caps: caps, opts: opts, recoverEvery: StableRecoverEvery, bufferCap: StableBufferCap,
		ctx: ctx, cancel: cancel, live: map[runKey]*liveRun{}, markers: map[string][]string{}, told: map[string]bool{},
		watchers: map[chan struct{}]string{}}
	if opts.Record != nil {
		d.idx = recordIndex{opts.Record}
	} else {
		d.idx = &memIndex{m: map[string]*record.StableSandbox{}}
	}
	return d
}

var (
	_ Driver   = (*Stable)(nil)
	_ Sessions = (*Stable)(nil)
	_ Shells   = (*Stable)(nil)
	_ Waker    = (*Stable)(nil)
)

func (d *Stable) BaseURL() string                   { return d.c.BaseURL() }
func (d *Stable) Capabilities() client.Capabilities { return d.caps }
func (d *Stable) Features() Features                { return d.caps.Features() }
func (d *Stable) Health(ctx context.Context) error  { return d.c.Health(ctx) }

// ListSandboxes lists sandboxes where the bridge has a list (sandscope's local bridge; the
// request names no sandbox, so no container starts).
func (d *Stable) ListSandboxes(ctx context.Context) ([]client.SandboxInfo, error) {
	return d.c.ListSandboxes(ctx)
}

// CreateSandbox mints a sandbox ID (no container starts).
func (d *Stable) CreateSandbox(ctx context.Context) (string, error) { return d.c.CreateSandbox(ctx) }

// Close stops reading the runs this driver started (they run on in the sandbox; the index says
// INTERRUPTED for those still going), ends its watchers and followers, and waits for them.
func (d *Stable) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
	return nil
}

// goFunc runs f on a goroutine Close waits for; false when the driver is closed.
func (d *Stable) goFunc(f func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
	return true
}

// bound returns a context that ends with ctx or when the driver closes.
func (d *Stable) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(d.ctx, cancel)
	return c, func() { stop(); cancel() }
}

// notice writes one line to Options.Notices.
func (d *Stable) notice(line string) {
	if d.opts.Notices == nil || line == "" {
		return
	}
	d.noticeMu.Lock()
	defer d.noticeMu.Unlock()
	_, _ = io.WriteString(d.opts.Notices, line+"\n")
}

// WakeNotice returns, once per sandbox ever (the index keeps that it was said), the sentence that
// an action starts the sandbox's container; "" when it was said already. Start and a foreground
// Follow write it to Options.Notices themselves when the caller did not ask for it first.
func (d *Stable) WakeNotice(sandbox, what string) string {
	d.mu.Lock()
	if d.told[sandbox] {
		d.mu.Unlock()
		return ""
	}
	d.told[sandbox] = true
	d.mu.Unlock()
	if sb, err := d.idx.get(sandbox); err == nil && sb.Told {
		return ""
	}
	_ = d.idx.update(sandbox, func(sb *record.StableSandbox) { sb.Told = true })
	return fmt.Sprintf("sandscope: stable bridge: %s starts the container of sandbox %s when it is not running (on 0.12 every request to a sandbox does); sandscope sends none on its own",
		what, vocab.Text(sandbox))
}

// kick tells the watchers of a sandbox that something changed.
func (d *Stable) kick(sandbox string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for ch, sb := range d.watchers {
		if sb == sandbox {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// Runs lists the runs of a sandbox the index knows and those this driver streams, oldest first.
// It sends nothing to the bridge.
func (d *Stable) Runs(_ context.Context, sandbox string) ([]Run, error) {
	runs, _, err := d.snapshot(sandbox)
	return runs, err
}

// Run is one run by ID (or a unique ID prefix), from the index and the live runs.
func (d *Stable) Run(_ context.Context, sandbox, id string) (Run, error) {
	if lr := d.liveRun(sandbox, id); lr != nil {
		return lr.run(d), nil
	}
	sb, err := d.idx.get(sandbox)
	if err != nil {
		return Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	d.learnMarkers(sandbox, sb)
	r, err := sb.FindRun(id)
	if errors.Is(err, record.ErrNoRun) {
		return Run{}, fmt.Errorf("run %s: %w (a stable bridge has no process list: only runs sandscope started are known)", id, client.ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	if lr := d.liveRun(sandbox, r.ID); lr != nil {
		return lr.run(d), nil
	}
	return d.toRun(sandbox, r), nil
}

func (d *Stable) liveRun(sandbox, id string) *liveRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.live[runKey{sandbox, id}]
}

// snapshot is what the driver knows of a sandbox without asking it: its runs (live ones as they
// stand here, the others as the index has them) and the container markers seen.
func (d *Stable) snapshot(sandbox string) ([]Run, []string, error) {
	sb, err := d.idx.get(sandbox)
	if err != nil {
		return nil, nil, fmt.Errorf("runs of %s: %w", sandbox, err)
	}
	markers := d.learnMarkers(sandbox, sb)
	d.mu.Lock()
	var live []*liveRun
	for k, lr := range d.live {
		if k.sandbox == sandbox {
			live = append(live, lr)
		}
	}
	d.mu.Unlock()
	seen := map[string]bool{}
	var out []Run
	for _, r := range sb.Runs {
		if lr := d.liveRun(sandbox, r.ID); lr != nil {
			out = append(out, lr.run(d))
		} else {
			out = append(out, d.toRun(sandbox, r))
		}
		seen[r.ID] = true
	}
	for _, lr := range live {
		if !seen[lr.id] {
			out = append(out, lr.run(d)) // the index could not be written, or was not read back yet
		}
	}
	return out, markers, nil
}

// learnMarkers numbers the container markers the index names, in the order its runs saw them
// (the sandbox's last marker after them), keeping the numbers this process gave earlier. It
// returns the markers, oldest first.
func (d *Stable) learnMarkers(sandbox string, sb record.StableSandbox) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	list := d.markers[sandbox]
	add := func(m string) {
		if m == "" {
			return
		}
		for _, x := range list {
			if x == m {
				return
			}
		}
		list = append(list, m)
	}
	for _, r := range sb.Runs {
		add(r.Incarnation)
	}
	add(sb.Incarnation)
	d.markers[sandbox] = list
	return append([]string(nil), list...)
}

// incarnationOf is the number of a container marker in a sandbox (0: none or unknown).
func (d *Stable) incarnationOf(sandbox, marker string) int {
	if marker == "" {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, m := range d.markers[sandbox] {
		if m == marker {
			return i + 1
		}
	}
	return 0
}

// toRun maps an index entry onto the neutral Run (see the state table in stable_ext.go).
func (d *Stable) toRun(sandbox string, r record.StableRun) Run {
	cwd := r.Cwd
	if cwd == "" {
		cwd = "/workspace" // the stable /exec's default
	}
	out := Run{ID: r.ID, Command: append([]string(nil), r.Argv...), Cwd: cwd, StartedAt: r.Started, State: neutralState(r),
		Incarnation: d.incarnationOf(sandbox, r.Incarnation)}
	switch out.State {
	case StateExited:
		if r.Code != nil {
			out.Exit = &client.Exit{Code: *r.Code}
		}
	case StateReported:
		if r.Reported != nil {
			out.Exit = &client.Exit{Code: *r.Reported}
		}
	case StateError:
		out.Error = &client.RunError{Code: r.ErrCode, Message: r.Message}
	}
	if r.Ended() && !r.Updated.IsZero() {
		// when sandscope learned the ending: the stable API reports no end time
		t := r.Updated
		out.EndedAt = &t
	}
	return out
}

// neutralState is the state word of an index entry.
func neutralState(r record.StableRun) string {
	switch client.RunState(r.State) {
	case client.RunRunning, client.RunStillGoing:
		return StateRunning
	case client.RunConfirmed:
		return StateExited
	case client.RunUnconfirmed:
		if r.Reported != nil {
			return StateReported
		}
		return StateEnded
	case client.RunInterrupted:
		return StateInterrupted
	case client.RunErrored:
		return StateError
	case client.RunLost:
		return StateLost
	}
	return StateInterrupted // an entry written by a newer sandscope: its outcome is unknown here
}

// runIndex is where the driver keeps its runs, sessions, markers and notices.
type runIndex interface {
	get(sandbox string) (record.StableSandbox, error)
	update(sandbox string, f func(*record.StableSandbox)) error
}

// recordIndex is the index in the record: shared with every sandscope process on the bridge.
type recordIndex struct{ r *record.Record }

func (x recordIndex) get(sandbox string) (record.StableSandbox, error) { return x.r.Stable(sandbox) }
func (x recordIndex) update(sandbox string, f func(*record.StableSandbox)) error {
	return x.r.UpdateStable(sandbox, f)
}

// memIndex keeps the index for this process only (no record could be opened).
type memIndex struct {
	mu sync.Mutex
	m  map[string]*record.StableSandbox
}

func (x *memIndex) get(sandbox string) (record.StableSandbox, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sb := x.m[sandbox]
	if sb == nil {
		return record.StableSandbox{}, nil
	}
	c := *sb
	c.Runs = append([]record.StableRun(nil), sb.Runs...)
	c.Sessions = append([]record.StableSession(nil), sb.Sessions...)
	return c, nil
}

func (x *memIndex) update(sandbox string, f func(*record.StableSandbox)) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	sb := x.m[sandbox]
	if sb == nil {
		sb = &record.StableSandbox{}
		x.m[sandbox] = sb
	}
	f(sb)
	if len(sb.Runs) > record.MaxStableRuns {
		sb.Runs = append([]record.StableRun(nil), sb.Runs[len(sb.Runs)-record.MaxStableRuns:]...)
	}
	return nil
}
