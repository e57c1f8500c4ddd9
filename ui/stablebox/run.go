package stablebox

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
	"sandscope/sanitize"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// RecoverEvery is how often an open run view reads a run's recorder files while the run has not
// ended (each read is a request to the sandbox; the view sends them only while it is open).
const RecoverEvery = 2 * time.Second

// maxRunLines bounds the lines a run view keeps (the oldest give way; the recorder's files keep
// everything, `sandscope logs SANDBOX RUN` prints them).
const maxRunLines = 20000

// runLine is one line of a run view: output (stderr marked) or a marker saying what happened.
type runLine struct {
	text   string
	stderr bool
	marker bool
	bad    bool
}

// RunView follows one run: the live stream of a run started here, then (or, for a run opened from
// the list, at once) its recorder's files, until they say how it ended.
type RunView struct {
	ctx     *common.Context
	sandbox string
	run     record.StableRun
	live    *client.RecordedRun

	lines   []runLine
	partial [2][]byte
	sent    [2]int64 // bytes shown per stream (stdout, stderr), to show only what the files add
	offset  int      // first line shown
	follow  bool     // stick to the bottom
	width   int
	height  int

	polling  bool // reading the recorder's files
	done     bool
	notExact bool
	cancel   context.CancelFunc
	rctx     context.Context
	closed   bool
}

// NewRunView makes the view of a run; live is the stream of a run started here (nil otherwise).
func NewRunView(ctx *common.Context, sandbox string, run record.StableRun, live *client.RecordedRun) *RunView {
	rctx, cancel := context.WithCancel(ctx.BaseCtx())
	return &RunView{ctx: ctx, sandbox: sandbox, run: run, live: live, follow: true, rctx: rctx, cancel: cancel}
}

type runEventsMsg struct {
	owner *RunView
	evs   []client.RunEvent
	done  bool
}

type recoverMsg struct {
	owner *RunView
	res   client.RunResult
	err   error
}

type pollMsg struct{ owner *RunView }

// Init starts reading: the live stream, or the recorder's files (a LOST run sends nothing: its
// files went with its container).
func (v *RunView) Init() tea.Cmd {
	if v.live != nil {
		v.marker(fmt.Sprintf("run %s started under sandscope's recorder; output arrives as text (bytes that are not UTF-8 show as U+FFFD; the recorder's files keep them exactly)", v.run.ID), false)
		return v.wait()
	}
	if client.RunState(v.run.State) == client.RunLost {
		v.marker("LOST (inferred): "+v.run.Evidence+"; nothing is asked of the sandbox", true)
		v.done = true
		return nil
	}
	v.marker("reading the recorder's files of run "+v.run.ID+" (each read is a request to the sandbox)", false)
	return v.recover()
}

// wait reads the next events of the live stream, in batches.
func (v *RunView) wait() tea.Cmd {
	if v.live == nil {
		return nil
	}
	ch, owner := v.live.Events(), v
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return runEventsMsg{owner: owner, done: true}
		}
		evs := []client.RunEvent{ev}
		for len(evs) < 256 {
			select {
			case ev, ok := <-ch:
				if !ok {
					return runEventsMsg{owner: owner, evs: evs, done: true}
				}
				evs = append(evs, ev)
			default:
				return runEventsMsg{owner: owner, evs: evs}
			}
		}
		return runEventsMsg{owner: owner, evs: evs}
	}
}

// recover reads the run's recorder files once.
func (v *RunView) recover() tea.Cmd {
	v.polling = true
	s, base, sandbox, id, inc, owner := v.ctx.Stable, v.rctx, v.sandbox, v.run.ID, v.run.Incarnation, v
	if v.live != nil && v.live.Incarnation != "" {
		inc = v.live.Incarnation
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		res, err := s.Recover(ctx, sandbox, id, inc)
		return recoverMsg{owner: owner, res: res, err: err}
	}
}

// Update handles the stream, the recorder's answers and keys.
func (v *RunView) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	switch msg := msg.(type) {
	case runEventsMsg:
		if msg.owner != v || v.closed {
			return v, nil
		}
		var res *client.RunResult
		for _, ev := range msg.evs {
			switch {
			case ev.Result != nil:
				res = ev.Result
			case ev.Kind == client.ExecStdout:
				v.output(0, ev.Text)
				v.sent[0] += int64(len(ev.Text))
			case ev.Kind == client.ExecStderr:
				v.output(1, ev.Text)
				v.sent[1] += int64(len(ev.Text))
			}
		}
		if res == nil && !msg.done {
			return v, v.wait()
		}
		if res == nil {
			res = &client.RunResult{State: client.RunInterrupted, Evidence: "the stream ended early"}
		}
		return v, v.streamEnded(*res)
	case recoverMsg:
		if msg.owner != v || v.closed {
			return v, nil
		}
		v.polling = false
		if msg.err != nil {
			if v.rctx.Err() != nil {
				return v, nil
			}
			v.marker("reading the recorder's files: "+msg.err.Error()+" (trying again)", true)
			return v, v.pollLater()
		}
		v.fromFiles(0, msg.res.RecoveredOut)
		v.fromFiles(1, msg.res.RecoveredErr)
		v.setState(msg.res)
		switch msg.res.State {
		case client.RunConfirmed:
			v.marker(fmt.Sprintf("EXITED %d (confirmed: %s)", msg.res.Code, msg.res.Evidence), msg.res.Code != 0)
		case client.RunLost:
			v.marker("LOST (inferred): "+msg.res.Evidence, true)
		case client.RunUnconfirmed:
			v.marker("ENDED, exit code unknown: "+msg.res.Evidence, true)
		default:
			return v, v.pollLater()
		}
		v.done = true
		v.flushPartial()
		return v, nil
	case pollMsg:
		if msg.owner != v || v.closed {
			return v, nil
		}
		return v, v.recover()
	case tea.KeyMsg:
		return v, v.key(msg)
	}
	return v, nil
}

func (v *RunView) pollLater() tea.Cmd {
	owner := v
	v.polling = true
	return tea.Tick(RecoverEvery, func(time.Time) tea.Msg { return pollMsg{owner} })
}

// streamEnded classifies the end of the live stream: confirmed only with the recorder's trailer;
// anything else is said as it is and settled from the recorder's files.
func (v *RunView) streamEnded(res client.RunResult) tea.Cmd {
	if v.live != nil && v.live.Incarnation != "" {
		v.run.Incarnation = v.live.Incarnation
		if v.ctx.Record != nil {
			marker := v.live.Incarnation
			var seen record.StableSandbox
			_ = v.ctx.Record.UpdateStable(v.sandbox, func(sb *record.StableSandbox) {
				seen = *sb
				sb.Incarnation, sb.MarkerSeen = marker, time.Now().UTC()
			})
			if seen.Incarnation != "" && seen.Incarnation != marker {
				v.marker(fmt.Sprintf("sandbox %s runs in a different container than at sandscope's last contact (%s): its files, sessions and shells were not kept (inferred from sandscope's marker file)",
					v.sandbox, seen.MarkerSeen.Local().Format("2006-01-02 15:04")), true)
			}
		}
	}
	switch res.State {
	case client.RunConfirmed:
		v.flushPartial()
		v.setState(res)
		v.marker(fmt.Sprintf("EXITED %d (confirmed: %s)", res.Code, res.Evidence), res.Code != 0)
		v.done = true
		return nil
	case client.RunUnconfirmed:
		v.marker(fmt.Sprintf("the stream reported exit code %d, not confirmed: %s", res.Code, res.Evidence), true)
	case client.RunErrored:
		v.marker(fmt.Sprintf("the bridge sent an error: %s: %s; the outcome is unknown", res.ErrCode, res.Message), true)
	case client.RunInterrupted:
		msg := res.Evidence
		if res.Message != "" {
			msg += " (" + res.Message + ")"
		}
		v.marker("INTERRUPTED, outcome unknown: "+msg, true)
	}
	v.setState(res)
	v.marker("reading the recorder's files (each read is a request to the sandbox)", false)
	return v.recover()
}

// setState keeps the run's state in the view and the record (not a passing INTERRUPTED of a run
// the recorder can still settle: that is recorded too, so a crash leaves the truth so far).
func (v *RunView) setState(res client.RunResult) {
	if (res.State == client.RunStillGoing || res.State == client.RunRunning) &&
		(client.RunState(v.run.State) == client.RunRunning || client.RunState(v.run.State) == client.RunStillGoing) {
		return // nothing new to record (the recorder is read every RecoverEvery)
	}
	run, now := v.run, time.Now()
	sb := record.StableSandbox{Runs: []record.StableRun{run}}
	sb.SetRun(run, res, now)
	v.run = sb.Runs[0]
	if v.ctx.Record != nil {
		_ = v.ctx.Record.UpdateStable(v.sandbox, func(s *record.StableSandbox) { s.SetRun(run, res, now) })
	}
}

// fromFiles shows what a recorder file holds beyond what was shown.
func (v *RunView) fromFiles(stream int, data []byte) {
	switch n := int64(len(data)); {
	case n > v.sent[stream]:
		if v.sent[stream] == 0 && v.live == nil && n > 0 {
			v.marker("output from the recorder's files (byte-exact)", false)
		}
		v.output(stream, data[v.sent[stream]:])
		v.sent[stream] = n
	case n < v.sent[stream] && !v.notExact:
		v.notExact = true
		v.marker("the recorder's file differs from the text the stream delivered (U+FFFD replaced bytes that were not UTF-8): `sandscope logs "+v.sandbox+" "+v.run.ID+"` prints the exact bytes", false)
	}
}

// output adds bytes of one stream, line by line.
func (v *RunView) output(stream int, data []byte) {
	buf := append(v.partial[stream], data...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		v.add(runLine{text: clean(buf[:i]), stderr: stream == 1})
		buf = buf[i+1:]
	}
	v.partial[stream] = append([]byte(nil), buf...)
}

func (v *RunView) flushPartial() {
	for s := range v.partial {
		if len(v.partial[s]) > 0 {
			v.add(runLine{text: clean(v.partial[s]), stderr: s == 1})
			v.partial[s] = nil
		}
	}
}

func clean(b []byte) string {
	s, _ := sanitize.Text(bytes.TrimRight(b, "\r"), sanitize.Options{StripSGR: true, TabWidth: 4, MaxRunes: 4000})
	return s
}

func (v *RunView) marker(text string, bad bool) {
	v.flushPartial()
	v.add(runLine{text: "── " + common.SanitizeText(text), marker: true, bad: bad})
}

func (v *RunView) add(l runLine) {
	v.lines = append(v.lines, l)
	if len(v.lines) > maxRunLines {
		drop := len(v.lines) - maxRunLines
		v.lines = append([]runLine(nil), v.lines[drop:]...)
		v.offset = max(v.offset-drop, 0)
	}
	if v.follow {
		v.offset = v.bottom()
	}
}

func (v *RunView) body() int   { return max(v.height-3, 1) }
func (v *RunView) bottom() int { return max(len(v.lines)-v.body(), 0) }

func (v *RunView) key(msg tea.KeyMsg) tea.Cmd {
	cmd, _ := v.actions().Handle(msg)
	return cmd
}

// actions are the view's keys: one table for dispatch and help.
func (v *RunView) actions() components.KeyActions {
	k := v.ctx.Keys
	act := func(b key.Binding, do func()) components.KeyAction {
		return components.Act(b, func() tea.Cmd { do(); return nil })
	}
	bottom := func() { v.offset, v.follow = v.bottom(), true }
	return components.KeyActions{
		act(k.Up, func() { v.offset, v.follow = max(v.offset-1, 0), false }),
		act(k.Down, func() {
			v.offset = min(v.offset+1, v.bottom())
			v.follow = v.offset == v.bottom()
		}),
		act(k.PageUp, func() { v.offset, v.follow = max(v.offset-v.body(), 0), false }),
		act(k.PageDown, func() {
			v.offset = min(v.offset+v.body(), v.bottom())
			v.follow = v.offset == v.bottom()
		}),
		act(k.Top, func() { v.offset, v.follow = 0, false }),
		act(k.Bottom, bottom),
		act(relabel(k.Follow, "follow (to the bottom)"), bottom),
		components.Act(k.LogReport, func() tea.Cmd { return common.WriteReport(v.ctx, v.sandbox, v.run.ID) }),
	}
}

// View draws the run: its state and evidence, the output, and what the view is doing.
func (v *RunView) View() string {
	st := v.ctx.Styles
	w := max(v.width, 20)
	var b strings.Builder
	head := st.Title.Render("run "+common.SanitizeText(v.run.ID)) + " " + st.Badge(badge(v.run)).Render(record.StableStateWord(v.run)) +
		st.Faint.Render(" "+common.Argv(v.run.Argv))
	b.WriteString(common.Fit(head, w) + "\n")
	b.WriteString(common.Fit(st.Faint.Render(common.SanitizeText(v.run.Evidence)), w) + "\n")
	for _, row := range v.rows(w) {
		b.WriteString(row + "\n")
	}
	status := "ended"
	switch {
	case !v.done && v.polling:
		status = fmt.Sprintf("following: reading the recorder's files every %s while the run goes on (each read is a request to the sandbox; esc stops)", RecoverEvery)
	case !v.done:
		status = "following the stream"
	}
	if !v.follow {
		status += " · scrolled (G follows)"
	}
	b.WriteString(common.Fit(st.Faint.Render(status), w))
	return b.String()
}

// render draws one logical line as screen rows (markers wrap; output is cut to the width).
func (v *RunView) render(l runLine, w int) []string {
	st := v.ctx.Styles
	switch {
	case l.marker:
		style := st.Marker
		if l.bad {
			style = st.MarkerBad
		}
		var out []string
		for _, part := range common.Wrap(l.text, w) {
			out = append(out, style.Render(common.Fit(part, w)))
		}
		return out
	case l.stderr:
		return []string{st.Stderr.Render(common.Fit(l.text, w))}
	}
	return []string{common.Fit(l.text, w)}
}

// rows are the body's rows: from the offset, or (following) the tail, with the line still being
// written shown as it is.
func (v *RunView) rows(w int) []string {
	lines := v.lines
	for s := range v.partial {
		if len(v.partial[s]) > 0 {
			lines = append(append([]runLine(nil), lines...), runLine{text: clean(v.partial[s]), stderr: s == 1})
		}
	}
	h := v.body()
	var out []string
	if v.follow {
		for i := len(lines) - 1; i >= 0 && len(out) < h; i-- {
			out = append(v.render(lines[i], w), out...)
		}
		if len(out) > h {
			out = out[len(out)-h:]
		}
	} else {
		for i := min(v.offset, len(lines)); i < len(lines) && len(out) < h; i++ {
			out = append(out, v.render(lines[i], w)...)
		}
		if len(out) > h {
			out = out[:h]
		}
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out
}

// SetSize sets the view's area.
func (v *RunView) SetSize(w, h int) {
	v.width, v.height = w, h
	if v.follow {
		v.offset = v.bottom()
	}
}

// Title is the screen's crumb.
func (v *RunView) Title() string { return "run " + v.run.ID }

// Close stops reading (the run goes on in the sandbox). A run left before anything settled it is
// recorded as INTERRUPTED (sandscope stopped following), as `exec` records a detach: opening it
// again, `logs -f` or `wait` read what became of it.
func (v *RunView) Close() {
	if v.closed {
		return
	}
	v.closed = true
	v.cancel()
	if v.live != nil {
		go func() { _ = v.live.Close() }()
	}
	if !v.done && v.ctx.Record != nil {
		switch client.RunState(v.run.State) {
		case client.RunRunning, client.RunStillGoing:
			run := v.run
			_ = v.ctx.Record.UpdateStable(v.sandbox, func(s *record.StableSandbox) {
				s.SetRun(run, client.RunResult{State: client.RunInterrupted,
					Evidence: "sandscope stopped following; the command may still be running (open it, or sandscope wait / logs -f)"}, time.Now())
			})
		}
	}
}

// SetFocus is a no-op.
func (v *RunView) SetFocus(bool) {}

// Capturing is false: the root's keys work.
func (v *RunView) Capturing() bool { return false }

// Prompting is false: the run view opens no dialog.
func (v *RunView) Prompting() bool { return false }

// Attached counts the live stream or the recorder reads.
func (v *RunView) Attached() int {
	if v.done || v.closed {
		return 0
	}
	return 1
}

// Back is the root's esc.
func (v *RunView) Back() bool { return false }

// ShortHelp lists the view's keys.
func (v *RunView) ShortHelp() []key.Binding {
	k := v.ctx.Keys
	return []key.Binding{k.Up, k.Down, k.Bottom, k.LogReport, k.Back}
}

// FullHelp lists the view's keys, from the table that dispatches them.
func (v *RunView) FullHelp() [][]key.Binding {
	return v.ctx.Keys.HelpColumns(v.actions().Bindings())
}
