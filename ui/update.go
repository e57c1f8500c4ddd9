package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/driver"
	"sandscope/ui/bridgepanel"
	"sandscope/ui/common"
	"sandscope/ui/components"
	"sandscope/ui/logview"
	"sandscope/ui/runs"
	"sandscope/ui/sandbox"
	"sandscope/ui/termpane"
	"sandscope/vocab"
)

const headerHeight = 1
const footerHeight = 2

// statusMaxLines is how many lines a long status message may take (relaunch notices, errors with
// the bridge's words): the screen above gives up the second one while it shows.
const statusMaxLines = 2

func (m *Model) bodySize() (int, int) {
	return m.width, max(m.height-headerHeight-footerHeight-(m.statusLines()-1), 3)
}

// statusLines is how many lines the status area takes now.
func (m *Model) statusLines() int {
	if m.connErr != nil || m.status == "" || m.width <= 0 || m.paneOnTop() {
		return 1 // (a terminal pane is not resized for a message: its program would see it)
	}
	return min(len(common.Wrap(m.status, m.width)), statusMaxLines)
}

// resize gives every screen on the stack the body's size (after the status area grew or shrank).
func (m *Model) resize() {
	w, h := m.bodySize()
	m.ctx.Width, m.ctx.Height = w, h
	for _, c := range m.stack {
		c.SetSize(w, h)
	}
	m.sizeNotes()
}

// Status messages fade: an info after statusLife, a warning or an error after three times that
// (long enough to read a path or an error twice).
const statusLife = 6 * time.Second

// statusExpiredMsg clears the status area if it still shows the message of generation gen.
type statusExpiredMsg struct{ gen int }

// Update routes messages (route) and arms the status area's fade whenever its text changed.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	lines := m.statusLines()
	defer func() {
		if m.statusLines() != lines {
			m.resize()
		}
	}()
	if _, ok := msg.(ageTickMsg); ok {
		return m, m.scheduleAges(msg) // no screen takes it: the frame after it is the point
	}
	var cmd tea.Cmd
	if e, ok := msg.(statusExpiredMsg); ok {
		if e.gen != m.statusGen {
			return m, nil
		}
		m.shownStatus = ""
		if !m.expireStatus() {
			return m, nil
		}
	} else {
		cmd = m.route(msg)
	}
	if p := m.prompting(); p != m.prompted {
		m.prompted = p
		if p {
			// a message is about what came before the dialog; the answer brings its own (a
			// message a notification pushed aside does not come back either)
			m.status, m.displaced = "", ""
		}
	}
	if m.status != m.shownStatus {
		m.shownStatus = m.status
		m.statusGen++
		if m.status != "" {
			life := statusLife
			if m.statusLevel != common.Info {
				life *= 3
			}
			gen := m.statusGen
			cmd = tea.Batch(cmd, tea.Tick(life, func(time.Time) tea.Msg { return statusExpiredMsg{gen} }))
		}
	}
	return m, tea.Batch(cmd, m.scheduleAges(msg))
}

// ageEvery is the shortest time between two redraws for ages alone: a duration under an hour
// reads differently every second, and redrawing a screen costs about as much CPU as a second of
// everything else an idle sandscope does.
const ageEvery = 5 * time.Second

// ageTickMsg redraws the screen for its ages (the generation of the tick the root waits for).
type ageTickMsg struct{ gen int }

// scheduleAges keeps one age tick pending while the screen on top shows text that changes with
// the clock alone (common.Timed, asked about the frame on screen when a tick fires): the next
// tick comes when that text changes, but not sooner than ageEvery. Any other message arms a tick
// ageEvery away unless one is due sooner (the frame after it may hold a new age); a tick that
// finds nothing timed on screen arms no other, so an idle screen without ages wakes nobody.
func (m *Model) scheduleAges(msg tea.Msg) tea.Cmd {
	if len(m.stack) == 0 {
		return nil
	}
	timed, ok := m.top().(common.Timed)
	now := m.ctx.Clock()
	var due time.Time
	if t, fired := msg.(ageTickMsg); fired {
		if t.gen != m.ageGen {
			return nil // superseded
		}
		m.ageDue = time.Time{}
		if !ok {
			return nil
		}
		if due = timed.NextChange(now); due.IsZero() {
			return nil
		}
		due = later(due, now.Add(ageEvery))
	} else {
		if !ok || (!m.ageDue.IsZero() && !m.ageDue.After(now.Add(ageEvery))) {
			return nil
		}
		due = now.Add(ageEvery)
	}
	m.ageDue = due
	m.ageGen++
	gen := m.ageGen
	return tea.Tick(due.Sub(now), func(time.Time) tea.Msg { return ageTickMsg{gen} })
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// prompting reports a dialog open: the root's own (a confirmation, a pick) or the top screen's.
func (m *Model) prompting() bool {
	return m.dialog != nil || m.confirm != nil || m.top().Prompting()
}

// route routes messages: size to every screen, keys and mouse to the top screen (after the
// global keys), everything else to every screen (each ignores what is not its own).
func (m *Model) route(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		w, h := m.bodySize()
		m.ctx.Width, m.ctx.Height = w, h
		for _, c := range m.stack {
			c.SetSize(w, h)
		}
		m.sizeNotes()
		return nil
	case alertsMsg:
		return m.takeAlerts(msg)
	case signalDoneMsg:
		if msg.err != nil {
			m.status, m.statusLevel = "notification signal: "+common.SanitizeText(msg.err.Error()), common.Warn
		}
		return nil
	case tea.KeyMsg:
		if keys := splitRunes(msg); keys != nil && !m.paneFocused() {
			cmds := make([]tea.Cmd, 0, len(keys))
			for _, k := range keys {
				cmds = append(cmds, m.key(k))
			}
			return tea.Batch(cmds...)
		}
		return m.key(msg)
	case tea.MouseMsg:
		if m.help || m.notesOpen || m.panelOpen || m.confirm != nil || m.dialog != nil {
			return nil
		}
		msg.Y -= headerHeight
		if msg.Y < 0 {
			return nil
		}
		return m.toTop(msg)
	case common.OpenSandboxMsg:
		// history lives in the record: a new screen shows it all
		s := sandbox.New(m.ctx, msg.ID)
		if msg.Terminal != "" {
			s.ShowTerminal(msg.Terminal)
		}
		return m.push(s)
	case common.PushScreenMsg:
		if msg.Screen == nil {
			return nil
		}
		return m.push(msg.Screen)
	case common.OpenLogsMsg:
		if len(msg.Targets) == 0 && msg.All == "" {
			return nil
		}
		if w, ok := m.ctx.Driver.(driver.Waker); ok && !msg.Told && msg.NeedsRead() {
			// opened from a screen that did not ask (all runs, notifications): reading it
			// starts the sandbox's container, so the user is told first
			msg.Told = true
			return m.askWake(w, msg.Targets[0].Sandbox, "reading a run's output", msg)
		}
		return m.push(logview.New(m.ctx, msg.Targets, logview.Options{MemLines: m.ctx.LogMemLines, All: msg.All}))
	case common.OpenTerminalMsg:
		return m.openTerminal(msg)
	case common.AttachTerminalMsg:
		return m.attachFull(common.OpenTerminalMsg{Sandbox: msg.Sandbox, Terminal: msg.Terminal, Shell: msg.Shell, Session: msg.Session})
	case attachConnMsg:
		return m.runAttach(msg)
	case attachDoneMsg:
		m.attachDone(msg)
		return nil
	case termpane.FocusLeftMsg:
		k := m.ctx.Keys
		m.status, m.statusLevel = fmt.Sprintf("keys back to sandscope: %s refocuses the terminal, %s attaches full screen, %s closes the pane",
			k.FocusPane.Help().Key, k.Attach.Help().Key, k.Back.Help().Key), common.Info
		return m.broadcast(msg)
	case termpane.ActionMsg:
		return m.paneAction(msg)
	case contextTargetMsg:
		return m.switchTo(msg)
	case recordFailedMsg:
		return m.recordFailed(msg)
	case recordNoticeMsg:
		return m.recordNotice(msg)
	case driverNoticeMsg:
		m.status, m.statusLevel, m.statusAt = common.SanitizeText(msg.text), common.Warn, m.ctx.Clock()
		return waitDriverNotice(m.baseCtx, m.driverNotes)
	case wakeNoticeMsg:
		return m.wakeNotice(msg)
	case demoDoneMsg:
		m.demoDone(msg)
		return nil
	case common.BackMsg:
		return m.pop()
	case common.StatusMsg:
		// status text often quotes bridge answers and process IDs: untrusted
		m.status, m.statusLevel, m.statusAt = common.SanitizeText(msg.Text), msg.Level, m.ctx.Clock()
		return nil
	case BridgeLabelMsg:
		if msg.BridgeURL == m.ctx.BridgeURL {
			m.ctx.BridgeLabel = common.SanitizeText(msg.Label)
		}
		return nil
	case common.ConnMsg:
		m.connErr, m.retryAt, m.attempts = msg.Err, msg.RetryAt, msg.Attempts
		if m.connErr != nil && !m.ticking {
			m.ticking = true
			return tea.Tick(time.Second, func(time.Time) tea.Msg { return rootTickMsg{} })
		}
		return nil
	case rootTickMsg:
		if m.connErr == nil {
			m.ticking = false
			return nil
		}
		return tea.Tick(time.Second, func(time.Time) tea.Msg { return rootTickMsg{} })
	case termConnectedMsg:
		return m.attachPane(msg)
	case common.KnownMsg:
		_, cmd := m.stack[0].Update(msg)
		return cmd
	}
	if bridgepanel.Owns(msg) {
		_, cmd := m.panel.Update(msg)
		return cmd
	}
	return m.broadcast(msg)
}

// splitRunes splits a key message carrying several runes into one message per rune, or returns
// nil when msg is one key. Bubble Tea reports the printable runes that arrive in one read as one
// KeyRunes message ("jj" when j is typed twice quickly, on key repeat or on a busy machine), and
// such a message matches no single-key binding: every key typed together would be lost. A paste
// stays one message (it is text, not keys).
func splitRunes(msg tea.KeyMsg) []tea.KeyMsg {
	if msg.Type != tea.KeyRunes || len(msg.Runes) < 2 || msg.Paste {
		return nil
	}
	out := make([]tea.KeyMsg, len(msg.Runes))
	for i, r := range msg.Runes {
		out[i] = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}
	}
	return out
}

// paneOnTop reports a terminal pane on top.
func (m *Model) paneOnTop() bool {
	for _, p := range m.panes {
		if p.pane.AsScreen() == m.top() {
			return true
		}
	}
	return false
}

// paneFocused reports a focused terminal pane on top: it takes runes as text for the remote
// terminal, several at once.
func (m *Model) paneFocused() bool {
	for _, p := range m.panes {
		if p.pane.AsScreen() == m.top() {
			return p.pane.Focused()
		}
	}
	return false
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.ctx.Keys
	if m.confirm != nil {
		res, _ := m.confirm.Update(msg, k)
		if res != nil {
			m.confirm = nil
			if res.OK {
				m.quitting = true
				return tea.Quit
			}
		}
		return nil
	}
	if m.dialog != nil {
		if m.dialog.ID == "demo" && msg.Type == tea.KeyCtrlC {
			// leaving is not an answer: the offer stays for the next run
			m.dialog = nil
			return m.quit()
		}
		res, cmd := m.dialog.Update(msg, k)
		if res == nil {
			return cmd
		}
		m.dialog = nil
		switch res.ID {
		case "demo":
			return m.answerDemo(res.OK)
		case "context":
			if res.OK {
				return m.chooseContext(res.Choice)
			}
		case common.EndTerminalID:
			return m.endTerminal(res)
		case "wake":
			if !res.OK {
				return nil
			}
			delete(m.declined, res.Data.(wakeNoticeMsg).sandbox)
			return common.Send(res.Data.(wakeNoticeMsg).then)
		}
		return nil
	}
	if m.help {
		m.helpKey(msg)
		return nil
	}
	if msg.Type == tea.KeyCtrlC && !m.capturing() {
		return m.quit()
	}
	if m.notesOpen {
		return m.notesKey(msg)
	}
	if m.panelOpen {
		return m.panelKey(msg)
	}
	if !m.capturing() {
		if cmd, ok := m.actions().Handle(msg); ok {
			return cmd
		}
	}
	return m.toTop(msg)
}

// actions are the keys the root handles on every screen (unless the screen takes every key): one
// table for dispatch and for the help overlay, which adds them after the screen's.
func (m *Model) actions() components.KeyActions {
	k := m.ctx.Keys
	acts := components.KeyActions{}
	if len(m.stack) > 1 {
		acts = append(acts, components.Act(k.Back, func() tea.Cmd {
			if !m.top().Back() { // else the screen used esc itself (an active filter cleared)
				return m.pop()
			}
			return nil
		}))
	}
	acts = append(acts, components.Act(k.Contexts, m.openContexts))
	if _, onRuns := m.top().(*runs.Model); !onRuns {
		acts = append(acts, components.Act(k.AllRuns, m.openRuns))
	}
	return append(acts,
		components.Act(k.Notifications, func() tea.Cmd { m.toggleNotes(); return nil }),
		components.Act(k.BridgePanel, m.togglePanel),
		components.Act(k.Help, func() tea.Cmd { m.help, m.helpOffset = true, 0; return nil }),
		components.Act(k.Quit, m.quit))
}

// helpKey handles a key while the help overlay is open: the keys that close it, and the moving
// keys, which scroll it when it does not fit.
func (m *Model) helpKey(msg tea.KeyMsg) {
	k := m.ctx.Keys
	page := max(m.helpRows()-1, 1)
	switch {
	case key.Matches(msg, k.Help, k.Back, k.Quit):
		m.help = false
	case key.Matches(msg, k.Up):
		m.helpOffset--
	case key.Matches(msg, k.Down):
		m.helpOffset++
	case key.Matches(msg, k.PageUp):
		m.helpOffset -= page
	case key.Matches(msg, k.PageDown):
		m.helpOffset += page
	case key.Matches(msg, k.Top):
		m.helpOffset = 0
	case key.Matches(msg, k.Bottom):
		m.helpOffset = len(m.helpLines())
	}
	m.helpOffset = max(min(m.helpOffset, len(m.helpLines())-m.helpRows()), 0)
}

func (m *Model) quit() tea.Cmd {
	if n := m.attached(); n > 0 {
		after := "Processes keep running in their sandboxes."
		if strings.HasPrefix(m.ctx.BridgeURL, "local:") {
			after = "This stops the embedded bridge and every process and terminal it runs."
		}
		m.confirm = common.NewConfirm("quit", "Quit sandscope?",
			fmt.Sprintf("%s attached (log followers, watchers).\n%s", attachedStreams(n), after))
		return nil
	}
	m.quitting = true
	return tea.Quit
}

// attachedStreams says "1 live stream is" or "3 live streams are".
func attachedStreams(n int) string {
	if n == 1 {
		return vocab.Count(n, "live stream") + " is"
	}
	return vocab.Count(n, "live stream") + " are"
}

func (m *Model) toTop(msg tea.Msg) tea.Cmd {
	_, cmd := m.top().Update(msg)
	return cmd
}

func (m *Model) broadcast(msg tea.Msg) tea.Cmd {
	var cmds []tea.Cmd
	for _, c := range m.stack {
		_, cmd := c.Update(msg)
		if cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	return tea.Batch(cmds...)
}

func (m *Model) push(c common.Screen) tea.Cmd {
	m.top().SetFocus(false)
	w, h := m.bodySize()
	c.SetSize(w, h)
	m.stack = append(m.stack, c)
	m.status = ""
	return c.Init()
}

// pop closes the screen on top; the command is what the screen below needs to catch up (a
// list that paused its refresh while hidden).
func (m *Model) pop() tea.Cmd {
	if len(m.stack) <= 1 {
		return nil
	}
	top := m.top()
	top.SetFocus(false)
	top.Close()
	for id, p := range m.panes {
		if common.Screen(p.pane.AsScreen()) == top {
			delete(m.panes, id)
		}
	}
	m.stack = m.stack[:len(m.stack)-1]
	m.status = "" // a message belongs to the screen it was about
	m.top().SetFocus(true)
	if _, ok := top.(*sandbox.Model); ok {
		// the watcher's errors no longer apply
		m.connErr = nil
	}
	if r, ok := m.top().(resumer); ok {
		return r.Resume()
	}
	return nil
}

// resumer is a screen that stops its own polling while hidden and resumes it, at once, when it
// is on top again.
type resumer interface{ Resume() tea.Cmd }

func (m *Model) openTerminal(msg common.OpenTerminalMsg) tea.Cmd {
	m.status = "connecting to terminal " + common.SanitizeText(msg.Terminal.ID) + "…"
	m.statusLevel = common.Info
	br, base := m.ctx.Driver, m.ctx.BaseCtx()
	w, h := m.bodySize()
	return func() tea.Msg {
		// the connection outlives this command: it is bound to the program's context
		conn, err := connectTerm(base, br, msg, w, h-1)
		return termConnectedMsg{open: msg, conn: conn, err: err}
	}
}

// termConnectedMsg is the answer to a terminal connection attempt.
type termConnectedMsg struct {
	open common.OpenTerminalMsg
	conn common.TermConn
	err  error
}

func (m *Model) attachPane(msg termConnectedMsg) tea.Cmd {
	if msg.err != nil {
		m.status = common.Describe(fmt.Sprintf("terminal %s: cannot attach here; try: sandscope attach %s %s", common.SanitizeText(msg.open.Terminal.ID), msg.open.Sandbox, common.SanitizeText(msg.open.Terminal.ID)), msg.err)
		m.statusLevel = common.Error
		return nil
	}
	w, h := m.bodySize()
	pane := termpane.New(msg.conn, w, h, termpane.Options{
		TerminalID: msg.open.Terminal.ID,
		Command:    common.DisplayArgv(msg.open.Terminal.Command),
		Context:    m.ctx,
		Replays:    !m.ctx.Driver.Features().TerminalResume, // a reconnect replays the whole buffer
		NoSignals:  !canSignal(m.ctx.Driver),
	})
	m.panes[pane.ID()] = paneEntry{pane: pane, open: msg.open}
	pane.SetOrigin(0, headerHeight)
	pane.Focus()
	cmd := m.push(pane.AsScreen())
	k := m.ctx.Keys
	m.status = fmt.Sprintf("keys go to the terminal; %s gives them back, then %s refocuses, %s attaches full screen, %s closes the pane",
		pane.LeaveBinding().Help().Key, k.FocusPane.Help().Key, k.Attach.Help().Key, k.Back.Help().Key)
	m.statusLevel = common.Info
	return cmd
}

// openRuns shows the all-runs screen: the one on the stack (closing the screens above it), or a
// new one on top.
func (m *Model) openRuns() tea.Cmd {
	for i, c := range m.stack {
		if _, ok := c.(*runs.Model); ok {
			var cmds []tea.Cmd
			for len(m.stack) > i+1 {
				cmds = append(cmds, m.pop())
			}
			return tea.Batch(cmds...)
		}
	}
	return m.push(runs.New(m.ctx))
}

// wakeNoticeMsg is the driver's wake notice for an action the root was asked to take (then).
type wakeNoticeMsg struct {
	sandbox string
	text    string
	then    tea.Msg
}

// askWake asks the driver for its wake notice in a command (it may read the record); then is
// sent once the user agreed, or at once when there is nothing to say.
func (m *Model) askWake(w driver.Waker, sandbox, what string, then tea.Msg) tea.Cmd {
	if text, ok := m.declined[sandbox]; ok {
		return common.Send(wakeNoticeMsg{sandbox: sandbox, text: text, then: then})
	}
	return func() tea.Msg { return wakeNoticeMsg{sandbox: sandbox, text: w.WakeNotice(sandbox, what), then: then} }
}

// wakeNotice shows the notice in a confirm dialog (nothing is sent before yes); a notice the user
// said no to is asked again next time (the driver says it once).
func (m *Model) wakeNotice(msg wakeNoticeMsg) tea.Cmd {
	if msg.text == "" {
		return common.Send(msg.then)
	}
	m.declined[msg.sandbox] = msg.text
	m.dialog = common.NewConfirm("wake", "Start the container of "+common.SanitizeText(msg.sandbox)+"?", common.WakeQuestion(msg.text))
	m.dialog.Data = msg
	return nil
}

// canSignal reports whether the driver interrupts and terminates terminals (driver.Terminals).
func canSignal(d driver.Driver) bool {
	_, ok := d.(driver.Terminals)
	return ok
}
