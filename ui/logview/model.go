package logview

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/followall"
	"sandscope/keymap"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/logbuf"
)

// State is a followed stream's state as the status line shows it.
type State int

const (
	Connecting State = iota
	Live
	Quiet
	Reconnecting
	SuspectEnd
	Ended
	Lost
	Failed
)

// followQueue is how many events a follower may queue for the view: a few MiB of a fast log. The
// queue lets the follower decode on while the view places a batch or waits for a core. With 16, a
// 256 MiB replay reached its end 5-7 % later than with 32 (figure 3's ingest, 21 alternating pairs
// twice: 0.93 and 0.95); 64 gained little more (0.94, 0.90) for 28 MiB more at figure 5's peak of
// a flood (114 against 86 MiB; 69 with 16), where every queued event is a 256 KiB read.
const followQueue = 32

// followPool is how many free decode buffers a follower's pool may keep: more than are in flight
// between the follower and the view (its queue, the follower's read-ahead of 32 events, one drained
// batch and a channel a driver may add in between), so that a flood needs no new ones. The pool never holds
// more than were in flight at once, and lets them go after a quiet second (see tickMsg).
const followPool = 8 * followQueue

// source is one followed process.
type source struct {
	name   string // the label in the buffer and the prefix ("p1", or "p1#1" when stale duplicates)
	color  int    // the prefix's colour among the theme's prefix colours
	target common.LogTarget
	ch     <-chan client.LogEvent
	cancel context.CancelFunc
	// pool is where the follower decodes output: each Data event's bytes go back to it once the
	// buffer has taken them (see place).
	pool *client.DataPool
	done bool

	state     State
	since     time.Time // when the state began
	checkedAt time.Time // last status lookup (Quiet, SuspectEnd)
	attempt   int
	cursor    string
	bytes     int64
	endLabel  string // Ended: the confirmed ending ("EXITED 0"); Lost/Failed: why
	endBadge  int
	rateBytes int64 // bytes since the last rate tick
	rate      float64
	lastData  time.Time
	reason    string
	gaps      int // gaps seen (bytes the bridge no longer had)
	breaks    int // interruptions survived
}

// Model is the log view.
type Model struct {
	ctx     *common.Context
	sources []*source
	buf     *logbuf.Buffer
	bufErr  error
	gen     int
	width   int
	height  int

	offset int  // first visible entry (a filter position when a filter is active)
	follow bool // keep the newest line in view
	stamps bool
	wrap   bool
	jsonl  bool

	input     textinput.Model
	inputMode string // "", "search", "filter"

	query     string
	match     int // entry index of the current match, -1 none
	searchID  int
	searching bool
	pending   int // next (+1) and previous (-1) match steps asked while a search ran

	filterText string
	filter     *logbuf.Filter

	dialog     *common.Dialog
	quietAfter time.Duration
	plain      bool
	closed     bool

	// all is the sandbox whose every process the view follows ("" when it follows the targets it
	// was given only); joiner decides which processes join, allCancel ends the watch for new ones.
	all       string
	joiner    followall.Joiner
	allCancel context.CancelFunc
	allCh     <-chan string              // the record's change notices
	allWatch  <-chan client.SandboxEvent // the view's own watcher when nothing is recorded

	// held waits in the reorder window (order.go) while lines are placed by timestamp; lastKey
	// is each name's last placing timestamp.
	held         []held
	lastKey      map[string]time.Time
	reorderArmed bool
}

// Options tunes a log view.
type Options struct {
	MemLines   int           // built lines kept ready in memory (logbuf default when 0)
	QuietAfter time.Duration // passed to the follower
	// All follows every process of this sandbox: the targets given and each process that starts
	// later, prefixed with a short stable name (followall.Name) in a colour chosen by its ID.
	All string
}

// New makes a log view over targets and creates its buffer; Init starts following.
func New(ctx *common.Context, targets []common.LogTarget, o Options) *Model {
	m := &Model{ctx: ctx, follow: true, match: -1}
	m.input = textinput.New()
	m.input.Prompt = ""
	m.input.CharLimit = 512
	buf, err := logbuf.New(logbuf.Options{Dir: ctx.CacheDir, MemLines: o.MemLines})
	m.buf, m.bufErr = buf, err
	m.all = o.All
	if m.all != "" {
		for _, t := range targets {
			m.joiner.Join(t.Process, false)
			m.addSource(t)
		}
		m.quietAfter = o.QuietAfter
		m.plain = ctx.Styles.Renderer.ColorProfile() == termenv.Ascii
		return m
	}
	names := map[string]int{}
	var ids []string
	for _, t := range targets {
		names[t.Process.ID]++
		ids = append(ids, t.Process.ID)
	}
	short := shortNames(ids)
	for _, t := range targets {
		name := common.SanitizeText(short[t.Process.ID])
		if names[t.Process.ID] > 1 && t.Incarnation > 0 {
			name = fmt.Sprintf("%s#%d", name, t.Incarnation)
		}
		m.sources = append(m.sources, &source{name: name, color: len(m.sources), target: t, since: ctx.Clock()})
	}
	m.quietAfter = o.QuietAfter
	// with no colour (NO_COLOR, a dumb terminal) the process's own SGR colours go too
	m.plain = ctx.Styles.Renderer.ColorProfile() == termenv.Ascii
	return m
}

// Init starts a follower per target and the status tick.
func (m *Model) Init() tea.Cmd {
	if m.buf == nil || m.closed {
		return nil // a closed view starts no follower
	}
	m.gen++
	var cmds []tea.Cmd
	for i := range m.sources {
		cmds = append(cmds, m.startSource(i))
	}
	if m.all != "" {
		cmds = append(cmds, m.watchAll())
	}
	cmds = append(cmds, m.tick())
	return tea.Batch(cmds...)
}

// startSource starts following source i (or replays what the record captured of a LOST or
// STALE one) and returns the command that waits for its events.
func (m *Model) startSource(i int) tea.Cmd {
	s := m.sources[i]
	if s.target.Stale || s.target.Lost {
		// its container is gone, and its log with it: what sandscope captured is all there is
		if !s.done {
			return m.loadCapture(i)
		}
		return nil
	}
	if m.ctx.Driver == nil {
		return nil
	}
	if s.cancel != nil {
		s.cancel() // a second Init replaces the follower; the first must not run on unseen
	}
	ctx, cancel := context.WithCancel(m.ctx.BaseCtx())
	s.cancel = cancel
	s.pool = client.NewDataPool(followPool)
	// A short queue: bridge events carry up to 256 KiB each, so the default depth would let a
	// producer that outruns the screen park tens of MiB in the channel. The buffer, not the
	// queue, is where history lives (and it spills to disk).
	s.ch = m.ctx.Driver.Follow(ctx, s.target.Sandbox, s.target.Process.ID, driver.FollowOptions{
		FollowOptions: client.FollowOptions{QuietAfter: m.quietAfter, Buffer: followQueue, Pool: s.pool}, Background: s.target.Background})
	return waitForLog(m, s.ch, nil, i, m.gen)
}

// captureMsg is what the record captured of source i (read in a command: the record's file is
// never queried on the UI goroutine).
type captureMsg struct {
	owner *Model
	gen   int
	i     int
	c     record.Capture
	st    *record.State
	err   error
}

// loadCapture reads what the record captured of source i.
func (m *Model) loadCapture(i int) tea.Cmd {
	s := m.sources[i]
	rec, sb, id, owner, gen := m.ctx.Record, s.target.Sandbox, s.target.Process.ID, m, m.gen
	return func() tea.Msg {
		msg := captureMsg{owner: owner, gen: gen, i: i, st: record.NewState(sb)}
		if rec != nil {
			_ = rec.Flush()
			msg.c, msg.err = rec.Captured(sb, id)
			msg.st = rec.State(sb)
		}
		return msg
	}
}

// applyCapture replays a capture read by loadCapture (a read for a view since closed, or for an
// earlier Init, is dropped).
func (m *Model) applyCapture(msg captureMsg) {
	if msg.owner != m || msg.gen != m.gen || m.closed || msg.i >= len(m.sources) || m.sources[msg.i].done {
		return
	}
	m.replayCapture(m.sources[msg.i], msg.c, msg.st, msg.err)
}

// replayCapture fills a LOST or STALE process's log from the record: a marker where capture
// began (and whether output before it was already gone), the captured output, and the ending
// the record knows (the LOST marker). Without captured output it says so in one plain line.
func (m *Model) replayCapture(s *source, c record.Capture, st *record.State, err error) {
	now := m.ctx.Clock()
	id := s.target.Process.ID
	if err != nil {
		m.addMarker(s.name, logbuf.Failed, common.SanitizeText(err.Error()), "", now)
	}
	where := "it went with its container"
	if !s.target.Lost {
		where = fmt.Sprintf("it belongs to incarnation #%d, an earlier container, and its log went with it", s.target.Incarnation)
	}
	s.done = true
	s.state, s.since = Ended, now
	if s.target.Lost {
		s.state = Lost
	}
	s.endLabel = "container gone"
	if !c.Found || c.Bytes == 0 {
		text := "no output was captured: " + where
		if c.Found && c.Dropped > 0 {
			text = fmt.Sprintf("its captured output (%s) was %s: %s", common.Bytes(c.Dropped), common.SanitizeText(c.Ended), where)
		}
		m.addMarker(s.name, logbuf.Note, text, "", now)
		return
	}
	began := "CAPTURE BEGAN " + common.Clock(c.Began)
	if c.EarlierGone {
		began += ": output before this point was already gone (" + common.SanitizeText(c.GoneReason) + ")"
	} else {
		began += ": from the first byte the bridge had"
	}
	if c.Dropped > 0 {
		began += fmt.Sprintf("; the oldest %s captured were dropped to keep the per-process budget", common.Bytes(c.Dropped))
	}
	m.addMarker(s.name, logbuf.Note, began, c.BeganCursor, c.Began)
	evs := make([]client.LogEvent, 0, len(c.Chunks)+1)
	for _, ch := range c.Chunks {
		if ch.Lost != nil {
			// the record no longer has these bytes: a gap says so where they were
			evs = append(evs, client.LogEvent{Kind: client.Gap, Cursor: ch.Cursor, Time: ch.Time, Reason: common.SanitizeText(ch.Lost.Error()),
				Gap: &client.GapInfo{Reason: client.GapNotKept, Bytes: ch.LostBytes, Events: -1, ToCursor: ch.Cursor}})
			continue
		}
		evs = append(evs, client.LogEvent{Kind: client.Data, Cursor: ch.Cursor, Time: ch.Time, Stream: ch.Stream, Data: ch.Data})
	}
	e := st.Find(record.Process, id)
	switch {
	case s.target.Lost:
		loss := &client.LossEvidence{Incarnation: st.Current.Number, Inferred: st.Current.Inferred, Previous: s.target.Incarnation, SandboxRunning: st.Running}
		at := now
		if e != nil {
			loss.Lookup = common.SanitizeText(strings.Join(e.Evidence, "; "))
			if strings.Contains(loss.Lookup, "incarnation") {
				// the evidence already says where the sandbox went
				loss.Incarnation, loss.Previous, loss.SandboxRunning = 0, 0, nil
			}
			if !e.LostAt.IsZero() {
				at = e.LostAt
			}
		}
		evs = append(evs, client.LogEvent{Kind: client.Lost, Cursor: c.LastCursor, Time: at, Loss: loss})
	case e != nil && e.Process.State != "" && e.Process.State != "running":
		p := e.Process
		evs = append(evs, client.LogEvent{Kind: client.Ended, Cursor: c.LastCursor, Time: e.LastSeen, Status: &p})
	default:
		m.ingest(s, evs)
		m.addMarker(s.name, logbuf.Note, "CAPTURE ENDED: "+common.SanitizeText(c.Ended)+"; "+where, c.LastCursor, now)
		return
	}
	m.ingest(s, evs)
	s.done = true
}

// Close stops every follower and removes the buffer's files.
func (m *Model) Close() {
	m.closed = true
	if m.allCancel != nil {
		m.allCancel()
	}
	for _, s := range m.sources {
		if s.cancel != nil {
			s.cancel()
		}
	}
	if m.buf != nil {
		m.buf.Close()
	}
}

// SetSize sets the view's area.
func (m *Model) SetSize(w, h int) { m.width, m.height = w, h }

// Held is how many bytes of output the view holds (what saving the raw log writes).
func (m *Model) Held() int64 {
	if m.buf == nil {
		return 0
	}
	return m.buf.RawBytes()
}

// Title is the view's crumb in the header.
func (m *Model) Title() string { return "logs" }

// SetFocus does nothing: followers run at the same pace on top or behind.
func (m *Model) SetFocus(bool) {}

// Back leaves esc to the root (input fields and dialogs take it while open).
func (m *Model) Back() bool { return false }

// Capturing reports whether an input field or dialog takes every key.
func (m *Model) Capturing() bool { return m.inputMode != "" || m.dialog != nil }

// Prompting reports an open dialog.
func (m *Model) Prompting() bool { return m.dialog != nil }

// Attached counts followers still running.
func (m *Model) Attached() int {
	n := 0
	for _, s := range m.sources {
		if s.cancel != nil && !s.done {
			n++
		}
	}
	return n
}

// ShortHelp is the one-line help.
func (m *Model) ShortHelp() []key.Binding { return m.ctx.Keys.ShortHelp(keymap.Logs) }

// FullHelp is the help overlay: the keys of the table that dispatches them.
func (m *Model) FullHelp() [][]key.Binding { return m.ctx.Keys.HelpColumns(m.actions().Bindings()) }

// logBatchMsg carries a batch of events from one follower.
type logBatchMsg struct {
	owner  *Model
	src    int
	gen    int
	events []client.LogEvent
	closed bool
}

// waitForLog drains a follower: everything already queued is one message, so a flood of output is
// one update per frame. The batch goes into spare's array (the last batch's, which the view has
// placed: nil at first).
func waitForLog(owner *Model, ch <-chan client.LogEvent, spare []client.LogEvent, src, gen int) tea.Cmd {
	return func() tea.Msg {
		batch, closed := common.DrainInto(ch, spare, 4096)
		return logBatchMsg{owner: owner, src: src, gen: gen, events: batch, closed: closed}
	}
}

type tickMsg struct {
	owner *Model
	gen   int
}

func (m *Model) tick() tea.Cmd {
	gen := m.gen
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tickMsg{owner: m, gen: gen} })
}

type searchMsg struct {
	owner *Model
	id    int
	index int
	err   error
}

type filterMsg struct {
	owner  *Model
	f      *logbuf.Filter
	caught bool
	err    error
}

type savedMsg struct {
	owner *Model
	path  string
	bytes int64
	err   error
}

// shortNames gives each process ID the shortest prefix of at least 8 characters that tells it
// apart from the others (bridge IDs are often UUIDs; prefixes keep the log readable).
func shortNames(ids []string) map[string]string {
	out := map[string]string{}
	shorts := map[string]int{}
	for _, id := range ids {
		shorts[client.ShortID(id)]++
	}
	for _, id := range ids {
		// what the other screens show, when it tells this one apart (a recorded run's random
		// tail, rather than the launch date every run of a day starts with)
		if s := client.ShortID(id); shorts[s] == 1 {
			out[id] = s
			continue
		}
		n := min(8, len(id))
		for ; n < len(id); n++ {
			unique := true
			for _, other := range ids {
				if other != id && len(other) >= n && other[:n] == id[:n] {
					unique = false
					break
				}
			}
			if unique {
				break
			}
		}
		out[id] = id[:n]
	}
	return out
}

// The root holds it as a common.Screen.
var _ common.Screen = (*Model)(nil)
