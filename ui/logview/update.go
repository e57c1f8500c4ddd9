package logview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/components"
	"sandscope/ui/logbuf"
	"sandscope/vocab"
)

// Update handles follower batches, ticks, keys and the answers of searches, filters and saves,
// and keeps the reorder window's release scheduled while lines wait in it.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	if r, ok := msg.(reorderMsg); ok {
		if r.owner != m || r.gen != m.gen {
			return m, nil
		}
		m.reorderArmed = false
		m.release(false)
		if m.filter != nil {
			return m, tea.Batch(m.updateFilter(m.filter), m.armReorder())
		}
		return m, m.armReorder()
	}
	if c, ok := msg.(captureMsg); ok {
		m.applyCapture(c)
		return m, m.armReorder()
	}
	c, cmd := m.update(msg)
	if next := m.armReorder(); next != nil {
		cmd = tea.Batch(cmd, next)
	}
	return c, cmd
}

func (m *Model) update(msg tea.Msg) (common.Component, tea.Cmd) {
	if cmd, ok := m.updateAll(msg); ok {
		return m, cmd
	}
	switch msg := msg.(type) {
	case logBatchMsg:
		if msg.owner != m || msg.gen != m.gen || m.closed || msg.src < 0 || msg.src >= len(m.sources) {
			return m, nil
		}
		s := m.sources[msg.src]
		m.ingest(s, msg.events)
		var cmds []tea.Cmd
		if m.filter != nil {
			cmds = append(cmds, m.updateFilter(m.filter))
		}
		if msg.closed {
			s.done = true
			s.pool.Drop() // nothing decodes into it any more
			if s.state < Ended {
				// the follower stopped without a final word: nothing confirms an ending
				s.state, s.since = Failed, m.ctx.Clock()
				s.endLabel = "stream closed without a confirmed ending"
				m.addMarker(s.name, logbuf.Failed, "FOLLOW STOPPED: the stream closed without a confirmed ending", s.cursor, m.ctx.Clock())
			}
		} else {
			// the batch is placed (the reorder window keeps copies of its events): its array
			// takes the next one
			clear(msg.events)
			cmds = append(cmds, waitForLog(m, s.ch, msg.events[:0], msg.src, m.gen))
		}
		return m, tea.Batch(cmds...)
	case tickMsg:
		if msg.owner != m || msg.gen != m.gen || m.closed {
			return m, nil
		}
		for _, s := range m.sources {
			s.rate = float64(s.rateBytes)
			if s.rateBytes == 0 {
				s.pool.Drop() // a quiet second: the buffers a burst left free are not kept for the next
			}
			s.rateBytes = 0
		}
		return m, m.tick()
	case searchMsg:
		if msg.owner != m || msg.id != m.searchID {
			return m, nil
		}
		m.searching = false
		pending := m.pending
		m.pending = 0
		switch {
		case msg.err != nil && !errors.Is(msg.err, context.Canceled):
			return m, common.Status(common.Error, "search failed: "+msg.err.Error())
		case msg.index < 0:
			return m, common.Status(common.Warn, fmt.Sprintf("%q not found", m.query))
		default:
			m.match = msg.index
			m.show(msg.index)
		}
		if pending != 0 {
			// the next/previous-match keys pressed meanwhile, one search each
			dir := logbuf.Forward
			if pending < 0 {
				dir = logbuf.Backward
			}
			cmd := m.search(m.query, m.match+int(dir), dir)
			m.pending = pending - int(dir)
			return m, cmd
		}
		return m, nil
	case filterMsg:
		if msg.owner != m || msg.f != m.filter {
			return m, nil
		}
		if msg.err != nil {
			return m, common.Status(common.Error, "filter failed: "+msg.err.Error())
		}
		if !msg.caught {
			return m, m.updateFilter(msg.f)
		}
		return m, nil
	case savedMsg:
		if msg.owner != m {
			return m, nil
		}
		if msg.err != nil {
			return m, common.Status(common.Error, "save: "+msg.err.Error())
		}
		return m, common.Status(common.Info, fmt.Sprintf("saved %s of raw output to %s", common.Bytes(msg.bytes), msg.path))
	case tea.MouseMsg:
		if m.dialog == nil && m.inputMode == "" {
			switch msg.Button {
			case tea.MouseButtonWheelUp:
				m.scroll(-3)
			case tea.MouseButtonWheelDown:
				m.scroll(3)
			}
		}
		return m, nil
	case tea.KeyMsg:
		if open, cmd := common.RouteToDialog(&m.dialog, msg, m.ctx.Keys, m.answer); open {
			return m, cmd
		}
		if m.inputMode != "" {
			return m, m.inputKey(msg)
		}
		return m, m.key(msg)
	}
	if m.inputMode != "" {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	}
	_, cmd := common.RouteToDialog(&m.dialog, msg, m.ctx.Keys, m.answer)
	return m, cmd
}

// ingest appends a batch to the buffer and folds it into the source's stream state.
func (m *Model) ingest(s *source, evs []client.LogEvent) {
	if m.buf == nil {
		return
	}
	m.record(s, evs)
	m.place(s.name, s.pool, evs)
	now := m.ctx.Clock()
	for i := range evs {
		ev := &evs[i]
		if ev.Cursor != "" {
			s.cursor = ev.Cursor
		}
		set := func(st State) {
			if s.state != st {
				s.state, s.since = st, now
			}
		}
		switch ev.Kind {
		case client.Data:
			s.bytes += int64(len(ev.Data))
			s.rateBytes += int64(len(ev.Data))
			s.lastData = now
			if s.state != Ended && s.state != Lost && s.state != Failed {
				set(Live)
			}
		case client.Gap, client.Resumed:
			set(Live)
			s.attempt = 0
			if ev.Kind == client.Gap {
				s.gaps++
			}
		case client.Interrupted:
			s.breaks++
			set(Reconnecting)
			s.reason = ev.Reason
			if s.reason == "" && ev.Err != nil {
				s.reason = ev.Err.Error()
			}
		case client.Reconnecting:
			set(Reconnecting)
			s.attempt = ev.Attempt
		case client.Quiet:
			set(Quiet)
			s.checkedAt = ev.Time
			if s.checkedAt.IsZero() {
				s.checkedAt = now
			}
		case client.SuspectEnd:
			set(SuspectEnd)
			s.checkedAt = ev.Time
			s.reason = ev.Reason
		case client.Ended:
			set(Ended)
			s.endLabel, s.endBadge = "exit not reported", int(themes.BadgeEnded)
			if ev.Status != nil {
				if b, label, ok := common.ExitLabel(ev.Status.State, ev.Status.Exit, ev.Status.Error); ok {
					s.endLabel, s.endBadge = label, int(b)
				}
			}
			s.done = true
		case client.Lost:
			set(Lost)
			s.endLabel = lossText(ev.Loss)
			s.done = true
		case client.Failed:
			set(Failed)
			s.reason = ev.Reason
			if s.reason == "" && ev.Err != nil {
				s.reason = ev.Err.Error()
			}
			s.done = true
		}
	}
}

// record writes a followed stream's events (not its output) to the record, unless the record's
// background capture follows the same process and records them itself.
func (m *Model) record(s *source, evs []client.LogEvent) {
	rec := m.ctx.Record
	if rec == nil || s.ch == nil || (m.ctx.Watch != nil && m.ctx.Watch.Capturing(s.target.Sandbox, s.target.Process.ID)) {
		return
	}
	for _, ev := range evs {
		if ev.Kind != client.Data && ev.Kind != client.Quiet {
			rec.Add(record.FromLogEvent(s.target.Sandbox, s.target.Process.ID, ev))
		}
	}
}

// lossText says where a lost process went, from the evidence.
func lossText(l *client.LossEvidence) string {
	if l == nil {
		return "gone with its container"
	}
	var parts []string
	if l.SandboxRunning != nil && !*l.SandboxRunning {
		parts = append(parts, "sandbox now stopped")
	} else if l.Incarnation > 0 {
		s := fmt.Sprintf("sandbox now runs incarnation #%d", l.Incarnation)
		if l.Inferred {
			s += " (inferred)"
		}
		parts = append(parts, s)
	}
	if l.Lookup != "" {
		parts = append(parts, common.SanitizeText(l.Lookup))
	}
	if len(parts) == 0 {
		return "gone with its container"
	}
	return strings.Join(parts, "; ")
}

// total is the number of entries the view scrolls over (filter matches when filtering).
func (m *Model) total() int {
	if m.buf == nil {
		return 0
	}
	if m.filter != nil {
		return m.filter.Len()
	}
	return m.buf.Len()
}

func (m *Model) bodyHeight() int { return max(m.height-3, 1) }

func (m *Model) scroll(d int) {
	if m.follow && d < 0 {
		m.offset = m.bottomOffset()
	}
	m.offset += d
	m.clampOffset()
	m.follow = m.offset >= m.bottomOffset() && d > 0
}

func (m *Model) bottomOffset() int { return max(m.total()-m.bodyHeight(), 0) }

func (m *Model) clampOffset() {
	if m.offset > m.bottomOffset() {
		m.offset = m.bottomOffset()
	}
	if m.offset < 0 {
		m.offset = 0
	}
}

// show brings entry index i (a buffer index) into view, a few lines from the top, and stops
// following.
func (m *Model) show(i int) {
	if m.filter != nil {
		i = m.filter.Position(i)
	}
	m.follow = false
	m.offset = i - m.bodyHeight()/3
	m.clampOffset()
}

// topIndex is the buffer index of the first visible entry.
func (m *Model) topIndex() int {
	off := m.offset
	if m.follow {
		off = m.bottomOffset()
	}
	if m.filter != nil {
		return m.filter.Index(off)
	}
	return off
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	cmd, _ := m.actions().Handle(msg)
	return cmd
}

// actions are the log view's keys: one table for dispatch and help.
func (m *Model) actions() components.KeyActions {
	k := m.ctx.Keys
	act := func(b key.Binding, do func()) components.KeyAction {
		return components.Act(b, func() tea.Cmd { do(); return nil })
	}
	return components.KeyActions{
		act(k.Up, func() { m.scroll(-1) }),
		act(k.Down, func() { m.scroll(1) }),
		act(k.PageUp, func() { m.scroll(-m.bodyHeight()) }),
		act(k.PageDown, func() { m.scroll(m.bodyHeight()) }),
		act(k.Top, func() { m.follow, m.offset, m.match = false, 0, -1 }),
		act(k.Bottom, func() {
			m.follow, m.match = true, -1
			m.offset = m.bottomOffset()
		}),
		act(k.Follow, func() {
			m.follow = !m.follow
			if !m.follow {
				m.offset = m.bottomOffset()
			}
		}),
		act(k.Timestamps, func() {
			m.stamps = !m.stamps
			if !m.stamps {
				m.release(true) // arrival order again: nothing waits
			}
		}),
		act(k.Wrap, func() { m.wrap = !m.wrap }),
		act(k.Search, func() { m.openInput("search", m.query) }),
		components.Act(k.NextMatch, func() tea.Cmd { return m.step(logbuf.Forward) }),
		components.Act(k.PrevMatch, func() tea.Cmd { return m.step(logbuf.Backward) }),
		act(k.Filter, func() { m.openInput("filter", m.filterText) }),
		components.Act(k.NextMarker, func() tea.Cmd { return m.marker(logbuf.Forward) }),
		components.Act(k.PrevMarker, func() tea.Cmd { return m.marker(logbuf.Backward) }),
		components.Act(k.Save, m.saveForm),
		components.Act(k.CopyCursor, m.copyCursor),
		act(k.JSONL, func() { m.jsonl = !m.jsonl }),
		components.Act(k.LogReport, m.report),
	}
}

// report writes the report of the process the view points at (its sandbox's timeline and
// incidents); with several processes in the view the message names the one it is of.
func (m *Model) report() tea.Cmd {
	s, which := m.lineSource()
	if s == nil {
		return nil
	}
	t := s.target
	cmd := common.WriteReport(m.ctx, t.Sandbox, t.Process.ID)
	if which == "" {
		return cmd
	}
	name := vocab.Text(s.name)
	return func() tea.Msg {
		msg := cmd()
		if sm, ok := msg.(common.StatusMsg); ok {
			sm.Text = "report of " + name + " (" + which + "): " + sm.Text
			return sm
		}
		return msg
	}
}

// step moves to the next match in dir. While a search runs, the step waits for its answer and
// goes on from there: keys typed together (nnn) each move one match.
func (m *Model) step(dir logbuf.Direction) tea.Cmd {
	if m.searching && m.query != "" {
		m.pending += int(dir)
		return nil
	}
	return m.search(m.query, m.nextFrom(dir), dir)
}

// marker moves to the next marker (gap, loss, ending…) in dir.
func (m *Model) marker(dir logbuf.Direction) tea.Cmd {
	if m.buf == nil {
		return nil
	}
	base := m.match
	if base < 0 {
		base = m.topIndex() - 1
	}
	from := base + 1
	if dir == logbuf.Backward {
		if m.match < 0 {
			base = m.topIndex() + m.bodyHeight()
		}
		from = base - 1
	}
	if i := m.buf.NextMarker(from, dir); i >= 0 {
		m.match = i
		m.show(i)
		return nil
	}
	return common.Status(common.Info, "no more markers that way")
}

// saveForm asks where to save the raw bytes.
func (m *Model) saveForm() tea.Cmd {
	name := "sandscope"
	if len(m.sources) == 1 {
		name += "-" + m.sources[0].name
	}
	def := filepath.Join(m.saveDir(), fmt.Sprintf("%s-%s.log", name, m.ctx.Clock().Format("20060102-150405")))
	m.dialog = common.NewForm("save", "Save raw output", []string{"File"}, []string{def}, nil)
	m.dialog.Text = "Every byte received, stdout and stderr in arrival order, from the first byte. A relative name is saved in " + m.saveDir() + "."
	m.dialog.Validate = func(v []string) error {
		if len(v) == 0 || strings.TrimSpace(v[0]) == "" {
			return errors.New("a file name is required")
		}
		return nil
	}
	return nil
}

func (m *Model) nextFrom(dir logbuf.Direction) int {
	if m.match < 0 {
		return m.topIndex() // from the top row, in either direction
	}
	return m.match + int(dir)
}

func (m *Model) openInput(mode, value string) {
	m.inputMode = mode
	m.input.SetValue(value)
	m.input.CursorEnd()
	m.input.Focus()
}

func (m *Model) inputKey(msg tea.KeyMsg) tea.Cmd {
	k := m.ctx.Keys
	switch {
	case key.Matches(msg, k.Confirm):
		mode, val := m.inputMode, m.input.Value()
		m.inputMode = ""
		m.input.Blur()
		if mode == "search" {
			m.query, m.match, m.pending = val, -1, 0
			if val == "" {
				return nil
			}
			return m.search(val, m.topIndex(), logbuf.Forward)
		}
		return m.setFilter(val)
	case key.Matches(msg, k.Cancel):
		m.inputMode = ""
		m.input.Blur()
		return nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

// search looks for q from buffer index from, off the UI goroutine.
func (m *Model) search(q string, from int, dir logbuf.Direction) tea.Cmd {
	if q == "" || m.buf == nil {
		if q == "" {
			return common.Status(common.Info, "no search yet: press "+m.ctx.Keys.Search.Help().Key)
		}
		return nil
	}
	m.searchID++
	m.searching = true
	id, buf, base := m.searchID, m.buf, m.ctx.BaseCtx()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, time.Minute)
		defer cancel()
		i, err := buf.Search(ctx, logbuf.Query{Text: q, IgnoreCase: true}, from, dir)
		return searchMsg{owner: m, id: id, index: i, err: err}
	}
}

func (m *Model) setFilter(text string) tea.Cmd {
	top := m.topIndex()
	m.filterText = text
	if text == "" || m.buf == nil {
		m.filter = nil
		m.offset = top
		m.clampOffset()
		return nil
	}
	q := logbuf.Query{Text: text, IgnoreCase: true}
	// markers stay visible in a filtered view: they explain what the filtered lines went through
	f := m.buf.NewFilter(func(l logbuf.Line) bool { return l.IsMarker() || q.Match(l) })
	m.filter = f
	// the first pass runs here so the view is right at once for small logs; the rest continues in
	// commands
	caught, _ := f.Update(m.ctx.BaseCtx(), 20000)
	m.offset = f.Position(top)
	m.clampOffset()
	if !caught {
		return m.updateFilter(f)
	}
	return nil
}

func (m *Model) updateFilter(f *logbuf.Filter) tea.Cmd {
	base := m.ctx.BaseCtx()
	return func() tea.Msg {
		caught, err := f.Update(base, 200000)
		return filterMsg{owner: m, f: f, caught: caught, err: err}
	}
}

func (m *Model) answer(res *common.DialogResult) tea.Cmd {
	if !res.OK || res.ID != "save" || m.buf == nil {
		return nil
	}
	path := ""
	if len(res.Values) > 0 {
		path = strings.TrimSpace(res.Values[0])
	}
	if path == "" {
		return common.Status(common.Error, "save: a file name is required")
	}
	path = m.savePath(path)
	buf := m.buf
	return func() tea.Msg {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return savedMsg{owner: m, path: path, err: fmt.Errorf("%s: %w", path, err)}
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return savedMsg{owner: m, path: path, err: fmt.Errorf("%s: %w", path, err)}
		}
		cw := &countWriter{w: f}
		err = buf.SaveRaw(cw)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return savedMsg{owner: m, path: path, err: fmt.Errorf("%s: %w", path, err)}
		}
		return savedMsg{owner: m, path: path, bytes: cw.n}
	}
}

// saveDir is where saved logs go by default: <state dir>/saved (~/.local/state/sandscope/saved),
// or the working directory when sandscope has no state directory.
func (m *Model) saveDir() string {
	if m.ctx.StateDir != "" {
		return filepath.Join(m.ctx.StateDir, "saved")
	}
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "."
}

// savePath makes the typed name absolute: ~/ is the home directory, a relative name goes into
// saveDir.
func (m *Model) savePath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(m.saveDir(), p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// lineSource is the process the view points at, for the keys that act on one process (copy
// cursor, report): the only one, else the process of the current match (a search or marker
// jump), else of the newest line on screen while following, else of the top line. which says
// which line it was ("" when the view follows one process). A line of the view's own (a sandbox
// note) gives the nearest process line above it.
func (m *Model) lineSource() (s *source, which string) {
	if len(m.sources) == 0 {
		return nil, ""
	}
	if len(m.sources) == 1 && m.all == "" {
		return m.sources[0], ""
	}
	idx, which := m.topIndex(), "the top line"
	switch {
	case m.match >= 0:
		idx, which = m.match, "the matched line"
	case m.follow && m.total() > 0:
		idx, which = m.total()-1, "the newest line"
		if m.filter != nil {
			idx = m.filter.Index(idx)
		}
	}
	if m.buf != nil {
		for i := idx; i >= 0 && i > idx-200; i-- {
			l, ok := m.buf.Line(i)
			if !ok {
				break
			}
			for _, x := range m.sources {
				if x.name == l.Source {
					return x, which
				}
			}
		}
	}
	return m.sources[0], "the first process: no process line in view"
}

// copyCursor copies the live cursor of the process the view points at (lineSource) to the
// clipboard with OSC 52, only because the user asked, and shows it in full.
func (m *Model) copyCursor() tea.Cmd {
	s, which := m.lineSource()
	if s == nil {
		return nil
	}
	if which != "" {
		which = " (" + which + ")"
	}
	if s.cursor == "" {
		return common.Status(common.Info, fmt.Sprintf("no cursor yet for %s%s: nothing delivered", vocab.Text(s.name), which))
	}
	text := fmt.Sprintf("cursor of %s%s: %s", vocab.Text(s.name), which, vocab.Text(s.cursor))
	if !plainToken(s.cursor) {
		// pasted into a shell, a cursor with spaces or controls could do harm: it is shown, not copied
		return common.Status(common.Warn, text+" (not copied: the bridge's cursor holds characters a cursor never has)")
	}
	if m.ctx.Clipboard == nil {
		return common.Status(common.Info, text+" (no clipboard on this terminal)")
	}
	if err := m.ctx.Clipboard(s.cursor); err != nil {
		return common.Status(common.Warn, text+" (clipboard failed: "+err.Error()+")")
	}
	return common.Status(common.Info, text+" — copied (OSC 52)")
}

// plainToken says c is printable ASCII without spaces (what a resume cursor is).
func plainToken(c string) bool {
	for i := 0; i < len(c); i++ {
		if c[i] <= ' ' || c[i] >= 0x7f {
			return false
		}
	}
	return c != ""
}

// badgeOf maps a stream state to its badge.
func badgeOf(s *source) (themes.Badge, string) {
	switch s.state {
	case Live:
		return themes.BadgeLive, "LIVE"
	case Quiet:
		return themes.BadgeQuiet, "QUIET"
	case Reconnecting:
		if s.attempt > 0 {
			return themes.BadgeReconnecting, fmt.Sprintf("RECONNECTING %d", s.attempt)
		}
		return themes.BadgeReconnecting, "INTERRUPTED"
	case SuspectEnd:
		return themes.BadgeSuspectEnd, "SUSPECT END"
	case Ended:
		return themes.Badge(s.endBadge), "ENDED (" + s.endLabel + ")"
	case Lost:
		return themes.BadgeLost, "LOST"
	case Failed:
		return themes.BadgeFailed, "FAILED"
	}
	return themes.BadgeConnecting, "CONNECTING"
}
