package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/bubbles/key"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// Update handles watcher batches, keys, dialogs and action answers.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	switch msg := msg.(type) {
	case watchMsg:
		if msg.sb != m.id || msg.gen != m.watchGen || m.closed {
			return m, nil
		}
		var cmds []tea.Cmd
		for _, ev := range msg.events {
			if c := m.apply(ev); c != nil {
				cmds = append(cmds, c)
			}
		}
		if !msg.closed {
			cmds = append(cmds, waitForWatch(m.watch.Events, m.id, m.watchGen))
		}
		// rows came or moved (a run just started is selected): the preview follows the selection
		cmds = append(cmds, m.previewFollow())
		return m, tea.Batch(cmds...)
	case changeMsg:
		if msg.sb != m.id || msg.gen != m.watchGen || m.closed || msg.closed {
			return m, nil
		}
		return m, tea.Batch(m.refresh(), waitForChange(m.changes, m.id, m.watchGen), m.previewFollow())
	case previewMsg:
		return m, m.applyPreview(msg)
	case sessionsMsg:
		m.applySessions(msg)
		return m, nil
	case sessionMsg:
		if msg.owner == m {
			m.stir()
		}
		return m, m.applySession(msg)
	case wakeMsg:
		return m, m.applyWake(msg)
	case execMsg:
		m.stir()
		return m, tea.Batch(m.applyExec(msg), m.previewFollow())
	case termMsg:
		m.stir()
		m.note(record.Event{Source: record.FromAction, Kind: "terminal", Action: &record.Action{Kind: "terminal",
			Detail: common.Argv(msg.req.Argv), Outcome: outcome(msg.err), Result: msg.t.ID}})
		if msg.err != nil {
			return m, common.Status(common.Error, common.Describe("new terminal in "+m.id, msg.err))
		}
		t := msg.t
		m.note(record.Event{Source: record.FromLaunch, Kind: "launch", Entity: record.Terminal, EntityID: t.ID, Terminal: &t,
			Launch: record.LaunchOf(msg.req.Argv, msg.req.Cwd, msg.req.Env, 0)})
		m.selectLast(TerminalsTab)
		return m, common.Send(common.OpenTerminalMsg{Sandbox: m.id, Terminal: msg.t})
	case killMsg:
		m.stir()
		m.note(record.Event{Source: record.FromAction, Kind: "kill", Entity: record.Process, EntityID: msg.process,
			Action: &record.Action{Kind: "kill", Detail: common.SignalName(msg.signal), Outcome: outcome(msg.err)}})
		if msg.err != nil {
			return m, common.Status(common.Error, common.Describe(fmt.Sprintf("kill %s with %s", msg.process, common.SignalName(msg.signal)), msg.err))
		}
		return m, common.Status(common.Info, fmt.Sprintf("sent %s to %s; its ending shows once the bridge confirms it", common.SignalName(msg.signal), msg.process))
	case tea.MouseMsg:
		m.mouse(msg)
		return m, nil
	case tea.KeyMsg:
		if open, cmd := common.RouteToDialog(&m.dialog, msg, m.ctx.Keys, m.answer); open {
			return m, cmd
		}
		return m, m.key(msg)
	}
	_, cmd := common.RouteToDialog(&m.dialog, msg, m.ctx.Keys, m.answer)
	return m, cmd
}

// apply folds one watcher event of this screen's own watcher (no record) into its state.
func (m *Model) apply(ev client.SandboxEvent) tea.Cmd {
	notice := m.st.Apply(record.FromSandboxEvent(ev))
	switch ev.Kind {
	case client.WatchError:
		return common.Send(common.ConnMsg{Err: common.WatchFailure(m.id, "", ev.Err)})
	case client.WatchRecovered:
		return common.Send(common.ConnMsg{})
	}
	if notice != "" {
		return common.Status(common.Warn, common.SanitizeText(notice))
	}
	return nil
}

func (m *Model) currentInc() *incEntry {
	if len(m.st.Incarnations) == 0 {
		return nil
	}
	return m.st.Incarnations[len(m.st.Incarnations)-1]
}

// findProc returns the newest entry with that ID.
func (m *Model) findProc(id string) *procEntry { return m.st.Find(record.Process, id) }

func (m *Model) findTerm(id string) *termEntry { return m.st.Find(record.Terminal, id) }

// stale reports whether an entry of incarnation inc belongs to an earlier container.
func (m *Model) stale(inc int) bool {
	return inc > 0 && m.st.Current.Number > 0 && inc < m.st.Current.Number
}

func (m *Model) procCond(e *procEntry) common.Condition {
	switch {
	case e.Lost:
		return common.Lost
	case m.stale(e.Incarnation):
		return common.Stale
	case m.st.WatchErr != "" && e.Process.State == "running":
		return common.Unknown
	}
	return common.Current
}

func (m *Model) termCond(e *termEntry) common.Condition {
	switch {
	case e.Lost:
		return common.Lost
	case m.stale(e.Incarnation):
		return common.Stale
	case m.st.WatchErr != "" && e.Terminal.Status == "running":
		return common.Unknown
	}
	return common.Current
}

func (m *Model) curProc() *procEntry {
	if m.tab != ProcessesTab {
		return nil
	}
	m.syncLists()
	if i := m.lists[ProcessesTab].Cursor(); i >= 0 && i < len(m.st.Processes) {
		return m.st.Processes[i]
	}
	return nil
}

func (m *Model) curTerm() *termEntry {
	if m.tab != TerminalsTab {
		return nil
	}
	m.syncLists()
	if i := m.lists[TerminalsTab].Cursor(); i >= 0 && i < len(m.st.Terminals) {
		return m.st.Terminals[i]
	}
	return nil
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	m.syncLists()
	if m.tabs.Update(msg) {
		m.tab = m.kinds[m.tabs.Active()]
		if m.tab == SessionsTab {
			return m.loadSessions() // sessions made by `sandscope session` beside the TUI show
		}
		return m.previewFollow()
	}
	if ok, cmd := m.list().Update(msg); ok {
		return tea.Batch(cmd, m.previewFollow())
	}
	if cmd, ok := m.actions().Handle(msg); ok {
		return cmd
	}
	cmd, _ := m.unavailable().Handle(msg)
	return cmd
}

// unavailable answers the keys of actions this bridge cannot do: they are not in the help, and
// pressing one says why nothing happens.
func (m *Model) unavailable() components.KeyActions {
	k := m.ctx.Keys
	var out components.KeyActions
	no := func(b key.Binding, what string) {
		out = append(out, components.Act(b, func() tea.Cmd { return common.Unsupported(what) }))
	}
	if _, ok := m.ctx.Driver.(driver.Killer); !ok {
		no(k.Kill, "kill (the bridge cannot signal a run)")
	}
	if _, ok := m.ctx.Driver.(driver.Terminals); !ok {
		no(k.Attach, "terminals (open a shell with "+k.Shell.Help().Key+")")
		no(k.Interrupt, "terminals (open a shell with "+k.Shell.Help().Key+")")
		no(k.Terminate, "terminals (open a shell with "+k.Shell.Help().Key+")")
		if _, ok := m.ctx.Driver.(driver.Shells); !ok {
			no(k.Shell, "shells and terminals")
		}
	}
	if _, ok := m.ctx.Driver.(driver.Sessions); !ok {
		no(k.Create, "sessions")
		no(k.Delete, "sessions")
	}
	return out
}

// actions are the keys of the current tab (after the tab strip's and the list's): one table for
// dispatch and help, so help offers exactly what acts here.
func (m *Model) actions() components.KeyActions {
	k := m.ctx.Keys
	exec := components.Act(k.Exec, m.execForm)
	// a shell: a new terminal where the bridge has them, else the driver's shell (in the chosen
	// session); neither: no key
	var shell components.KeyActions
	if _, ok := m.ctx.Driver.(driver.Terminals); ok {
		shell = components.KeyActions{components.Act(k.Shell, m.shellForm)}
	} else if _, ok := m.ctx.Driver.(driver.Shells); ok {
		desc := "shell"
		if m.session != "" {
			desc = "shell in session " + common.SanitizeText(m.session)
		}
		shell = components.KeyActions{components.Act(components.Relabel(k.Shell, desc), m.openShell)}
	}
	// following every process and the report are the sandbox's, whatever the tab
	all := components.Act(k.FollowAll, m.followAll)
	report := components.Act(k.Report, m.report)
	switch m.tab {
	case ProcessesTab:
		acts := components.KeyActions{
			components.Act(components.Relabel(k.Open, "open its log"), m.open),
			exec,
		}
		if _, ok := m.ctx.Driver.(driver.Killer); ok {
			acts = append(acts, components.Act(k.Kill, m.kill))
		}
		acts = append(acts,
			components.Act(k.Relaunch, m.relaunch),
			components.Act(k.Preview, m.togglePreview))
		acts = append(acts, shell...)
		return append(acts, all, report)
	case SessionsTab:
		acts := append(m.sessionActions(), exec)
		acts = append(acts, shell...)
		return append(acts, all, report)
	case TerminalsTab:
		return components.KeyActions{
			components.Act(components.Relabel(k.Open, "open in the pane"), m.open),
			components.Act(k.Shell, m.shellForm),
			components.Act(k.Attach, func() tea.Cmd {
				e, refused := m.actionTerm("attach")
				if e == nil {
					return refused
				}
				return common.Send(common.AttachTerminalMsg{Sandbox: m.id, Terminal: e.Terminal})
			}),
			components.Act(k.Interrupt, func() tea.Cmd { return m.signalTerm("interrupt") }),
			components.Act(k.Terminate, func() tea.Cmd {
				e, refused := m.actionTerm("end")
				if e == nil {
					return refused
				}
				m.dialog = common.NewEndTerminal(e.Terminal.ID, e)
				return nil
			}),
			exec, all, report,
		}
	}
	acts := components.KeyActions{exec}
	acts = append(acts, shell...)
	return append(acts, all, report)
}

// openShell opens the driver's shell (in the chosen session) in the terminal pane, once the user
// knows it starts the container.
func (m *Model) openShell() tea.Cmd {
	if _, ok := m.ctx.Driver.(driver.Shells); !ok {
		return common.Unsupported("shells")
	}
	id, session := m.id, m.session
	name := session
	if name == "" {
		name = "shell"
	}
	return m.wake("opening a shell", func() tea.Cmd {
		return common.Send(common.OpenTerminalMsg{Sandbox: id, Shell: true, Session: session,
			Terminal: client.Terminal{ID: name, Status: "running", Command: []string{"shell"}}})
	})
}

// report writes a triage report of the sandbox, about the selected process or terminal.
func (m *Model) report() tea.Cmd {
	entity := ""
	if e := m.curProc(); e != nil {
		entity = e.ID
	} else if e := m.curTerm(); e != nil {
		entity = e.ID
	}
	return common.WriteReport(m.ctx, m.id, entity)
}

func (m *Model) execForm() tea.Cmd {
	labels := []string{"Command", "Working dir", "Env", "Timeout"}
	values := []string{"", "", "", ""}
	hints := []string{"e.g. npm test -- --watch=false", "/workspace", "KEY=value KEY2=value", "e.g. 90s or 10m (empty: none)"}
	if _, ok := m.ctx.Driver.(driver.Sessions); ok {
		labels, values = append(labels, "Session"), append(values, m.session)
		hints = append(hints, "a session ID (empty: none)")
	}
	m.dialog = common.NewForm("exec", "Run a process in "+m.id, labels, values, hints)
	m.dialog.Validate = func(v []string) error { _, err := parseExec(v); return err }
	return nil
}

func (m *Model) shellForm() tea.Cmd {
	m.dialog = common.NewForm("terminal", "New terminal in "+m.id,
		[]string{"Command", "Working dir", "Env", "Size"},
		[]string{"bash", "", "", ""},
		[]string{"e.g. bash -l", "/workspace", "KEY=value KEY2=value", "COLSxROWS, e.g. 120x40 (empty: fit the pane)"})
	m.dialog.Validate = func(v []string) error {
		_, err := parseTerminal(v, m.width, max(m.height-1, 1))
		return err
	}
	return nil
}

// actionTerm is the selected terminal for an action, or a refusal when its handle is stale or lost.
func (m *Model) actionTerm(what string) (*termEntry, tea.Cmd) {
	e := m.curTerm()
	if e == nil {
		return nil, nil
	}
	switch m.termCond(e) {
	case common.Stale, common.Lost:
		return nil, common.Status(common.Warn, fmt.Sprintf("refused: %s: terminal %s belonged to incarnation #%d; its container is gone and the handle is stale", what, e.Terminal.ID, e.Incarnation))
	}
	if e.Terminal.Status != "" && e.Terminal.Status != "running" {
		return nil, common.Status(common.Info, fmt.Sprintf("terminal %s already ended (%s); nothing to %s", e.Terminal.ID, common.SanitizeText(e.Terminal.Status), what))
	}
	return e, nil
}

// signalTerm interrupts (SIGINT) the selected terminal's process tree through the bridge (T asks
// how to end it first: NewEndTerminal).
func (m *Model) signalTerm(what string) tea.Cmd {
	e, refused := m.actionTerm(what)
	if e == nil {
		return refused
	}
	return common.SignalTerminal(m.ctx, m.id, e.Terminal.ID, what == "interrupt", "its ending shows once the bridge confirms it")
}

// entryKey is a process row's identity: its ID at its incarnation. Made on every redraw for every
// row (selection, cursor), so without fmt.
func entryKey(e *procEntry) string { return e.Process.ID + "@" + strconv.Itoa(e.Incarnation) }

func (m *Model) mouse(msg tea.MouseMsg) {
	if m.dialog != nil {
		return
	}
	switch {
	case msg.Button == tea.MouseButtonWheelUp:
		m.list().Move(-3)
	case msg.Button == tea.MouseButtonWheelDown:
		m.list().Move(3)
	case msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft:
		if msg.Y == 1 { // the tab bar
			x := 0
			for _, t := range m.kinds {
				w := len(m.tabLabel(t)) + 3
				if msg.X >= x && msg.X < x+w {
					m.tab = t
					return
				}
				x += w
			}
			return
		}
		m.list().ClickRow(msg.Y - 3) // title, tabs, table head
	}
}

func (m *Model) open() tea.Cmd {
	switch m.tab {
	case ProcessesTab:
		var targets []common.LogTarget
		procs := m.lists[ProcessesTab]
		for _, e := range m.st.Processes {
			if procs.Marked(entryKey(e)) {
				targets = append(targets, m.target(e))
			}
		}
		if len(targets) == 0 {
			e := m.curProc()
			if e == nil {
				return nil
			}
			targets = append(targets, m.target(e))
		}
		procs.ClearMarks()
		open := common.OpenLogsMsg{Targets: targets, Told: true}
		if open.NeedsRead() {
			return m.wake("reading a run's output", func() tea.Cmd { return common.Send(open) })
		}
		return common.Send(open)
	case TerminalsTab:
		e := m.curTerm()
		if e == nil {
			return nil
		}
		switch m.termCond(e) {
		case common.Stale, common.Lost:
			return common.Status(common.Warn, fmt.Sprintf("refused: terminal %s belonged to incarnation #%d; its container is gone and the handle is stale", e.Terminal.ID, e.Incarnation))
		}
		return common.Send(common.OpenTerminalMsg{Sandbox: m.id, Terminal: e.Terminal})
	}
	return nil
}

// followAll opens one log view following every process of the sandbox: those of the current
// incarnation, the LOST ones (what the record captured, then the LOST marker), and every process
// that starts while the view is open.
func (m *Model) followAll() tea.Cmd {
	_, waker := m.ctx.Driver.(driver.Waker)
	var targets []common.LogTarget
	for _, e := range m.st.Processes {
		if c := m.procCond(e); c == common.Stale {
			continue
		}
		t := m.target(e)
		// on a bridge whose reads start containers, following everything reads what the driver
		// already receives (the runs started here that still stream) and sends nothing
		t.Background = waker
		targets = append(targets, t)
	}
	return common.Send(common.OpenLogsMsg{Targets: targets, All: m.id})
}

func (m *Model) target(e *procEntry) common.LogTarget {
	c := m.procCond(e)
	return common.LogTarget{Sandbox: m.id, Process: e.Process, Incarnation: e.Incarnation, Stale: c == common.Stale, Lost: c == common.Lost}
}

func (m *Model) refuseStale(what string, e *procEntry) tea.Cmd {
	switch m.procCond(e) {
	case common.Stale:
		return common.Status(common.Warn, fmt.Sprintf("refused: %s: process %s belongs to incarnation #%d and the sandbox now runs #%d; the handle is stale (relaunch with %s)",
			what, e.Process.ID, e.Incarnation, m.st.Current.Number, m.ctx.Keys.Relaunch.Help().Key))
	case common.Lost:
		return common.Status(common.Warn, fmt.Sprintf("refused: %s: process %s was lost with its container (relaunch with %s)", what, e.Process.ID, m.ctx.Keys.Relaunch.Help().Key))
	}
	return nil
}

func (m *Model) kill() tea.Cmd {
	e := m.curProc()
	if e == nil {
		if m.tab == TerminalsTab {
			return common.Status(common.Info, "kill applies to processes; a terminal ends when its shell exits")
		}
		return nil
	}
	if c := m.refuseStale("kill", e); c != nil {
		return c
	}
	if _, label, ended := common.ExitLabel(e.Process.State, e.Process.Exit, e.Process.Error); ended {
		return common.Status(common.Info, fmt.Sprintf("process %s already ended (%s); nothing to kill", e.Process.ID, label))
	}
	var opts []string
	for _, s := range common.KillSignals() {
		opts = append(opts, fmt.Sprintf("%-5s (%d)", common.SignalName(s), s))
	}
	m.dialog = common.NewPick("kill", "Kill "+e.Process.ID, "Signal to send to the whole process tree:", opts)
	m.dialog.Data = e
	return nil
}

func (m *Model) relaunch() tea.Cmd {
	e := m.curProc()
	if e == nil {
		return nil
	}
	if m.procCond(e) == common.Current && e.Process.State == "running" {
		return common.Status(common.Warn, fmt.Sprintf("refused: relaunch: process %s is still running in the current incarnation; kill it first or exec a new one", e.Process.ID))
	}
	if len(e.Process.Command) == 0 {
		return common.Status(common.Error, "relaunch: the bridge did not report the command of "+e.Process.ID)
	}
	req := client.ExecRequest{Argv: e.Process.Command, Cwd: e.Process.Cwd}
	known := e.Request != nil
	if known {
		req = *e.Request
	}
	pid := e.Process.ID
	return m.wake("relaunching a run", func() tea.Cmd {
		return m.launch(driver.StartRequest{ExecRequest: req, Session: m.session}, pid, known)
	})
}

func (m *Model) launch(req driver.StartRequest, relaunch string, known bool) tea.Cmd {
	br := m.ctx.Driver
	base := m.ctx.BaseCtx()
	id := m.id
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		p, err := br.Start(ctx, id, req)
		return execMsg{req: req.ExecRequest, p: p, relaunch: relaunch, known: known, err: err}
	}
}

func (m *Model) applyExec(msg execMsg) tea.Cmd {
	what := "exec " + common.Argv(msg.req.Argv)
	if msg.relaunch != "" {
		what = "relaunch " + msg.relaunch
	}
	kind := "exec"
	if msg.relaunch != "" {
		kind = "relaunch"
	}
	m.note(record.Event{Source: record.FromAction, Kind: kind, Entity: record.Process, EntityID: msg.relaunch,
		Action: &record.Action{Kind: kind, Detail: common.Argv(msg.req.Argv), Outcome: outcome(msg.err), Result: msg.p.ID}})
	if msg.err != nil {
		return common.Status(common.Error, common.Describe(what, msg.err))
	}
	inc := msg.p.Incarnation
	if inc == 0 {
		inc = m.st.Current.Number
	}
	p, req := msg.p, msg.req
	// the incarnation is the one the bridge reported with the process (else the record's current)
	m.note(record.Event{Source: record.FromLaunch, Kind: "launch", Entity: record.Process, EntityID: p.ID, Process: &p,
		Launch: record.LaunchOf(req.Argv, req.Cwd, req.Env, req.Timeout)})
	if m.ctx.Record != nil {
		m.ctx.Record.SetRequest(m.id, p.ID, req)
		m.st = m.ctx.Record.State(m.id)
	} else if e := m.findProc(p.ID); e != nil {
		e.Request = &req
	}
	m.selectLast(ProcessesTab)
	text := fmt.Sprintf("started %s: %s", msg.p.ID, common.Argv(msg.req.Argv))
	if msg.relaunch != "" {
		text = fmt.Sprintf("relaunched %s as %s in incarnation #%d", msg.relaunch, msg.p.ID, inc)
		if !msg.known {
			text += " (same argv and cwd; it was not launched from here, so its env is unknown)"
		}
	}
	return common.Status(common.Info, text)
}

func (m *Model) answer(res *common.DialogResult) tea.Cmd {
	if !res.OK {
		return nil
	}
	switch res.ID {
	case "wake":
		do, _ := res.Data.(func() tea.Cmd)
		m.declined = ""
		if do == nil {
			return nil
		}
		return do()
	case "session":
		opts, err := parseSession(res.Values)
		if err != nil {
			return common.Status(common.Error, "session: "+err.Error())
		}
		return m.wake("creating a session", func() tea.Cmd { return m.createSession(opts) })
	case "rm-session":
		sid, _ := res.Data.(string)
		return m.wake("deleting a session", func() tea.Cmd { return m.deleteSession(sid) })
	case "kill":
		e, _ := res.Data.(*procEntry)
		sigs := common.KillSignals()
		if e == nil || res.Choice < 0 || res.Choice >= len(sigs) {
			return nil
		}
		sig := sigs[res.Choice]
		br, ok := m.ctx.Driver.(driver.Killer)
		if !ok {
			return common.Unsupported("kill")
		}
		base, id, pid := m.ctx.BaseCtx(), m.id, e.Process.ID
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(base, common.CallTimeout)
			defer cancel()
			return killMsg{process: pid, signal: sig, err: br.Kill(ctx, id, pid, sig)}
		}
	case common.EndTerminalID:
		e, _ := res.Data.(*termEntry)
		if e == nil {
			return nil
		}
		const hint = "its ending shows once the bridge confirms it"
		if res.Choice == common.EndByEOF {
			return common.EndTerminalInput(m.ctx, m.id, e.Terminal.ID, hint)
		}
		return common.SignalTerminal(m.ctx, m.id, e.Terminal.ID, false, hint)
	case "terminal":
		req, err := parseTerminal(res.Values, m.width, max(m.height-1, 1))
		if err != nil {
			return common.Status(common.Error, "new terminal: "+err.Error())
		}
		br, ok := m.ctx.Driver.(driver.Terminals)
		if !ok {
			return common.Unsupported("terminals")
		}
		base, id := m.ctx.BaseCtx(), m.id
		return m.wake("opening a terminal", func() tea.Cmd {
			return func() tea.Msg {
				ctx, cancel := context.WithTimeout(base, common.CallTimeout)
				defer cancel()
				t, err := br.CreateTerminal(ctx, id, req)
				return termMsg{t: t, req: req, err: err}
			}
		})
	case "exec":
		req, err := parseExec(res.Values)
		if err != nil {
			return common.Status(common.Error, "exec: "+err.Error())
		}
		return m.wake("running a command", func() tea.Cmd { return m.launch(req, "", true) })
	}
	return nil
}

// parseExec turns the exec form (command, cwd, env, timeout and, where the bridge has sessions,
// the session) into a request.
func parseExec(v []string) (driver.StartRequest, error) {
	for len(v) < 5 {
		v = append(v, "")
	}
	argv, err := SplitArgs(v[0])
	if err != nil {
		return driver.StartRequest{}, err
	}
	if len(argv) == 0 {
		return driver.StartRequest{}, fmt.Errorf("a command is required")
	}
	req := client.ExecRequest{Argv: argv, Cwd: strings.TrimSpace(v[1])}
	if req.Env, err = parseEnv(v[2]); err != nil {
		return driver.StartRequest{}, err
	}
	if t := strings.TrimSpace(v[3]); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return driver.StartRequest{}, fmt.Errorf("timeout %q: want a positive duration like 90s or 10m", t)
		}
		req.Timeout = d.Milliseconds()
		if req.Timeout < 1 {
			req.Timeout = 1
		}
	}
	sess := strings.TrimSpace(v[4])
	if sess != "" && !client.ValidSessionID(sess) {
		return driver.StartRequest{}, fmt.Errorf("session %q: want 1-128 of a-z A-Z 0-9 . _ - (no \"..\")", sess)
	}
	return driver.StartRequest{ExecRequest: req, Session: sess}, nil
}

// parseTerminal turns the new-terminal form (command, cwd, env, size) into a request; an empty
// size fits the pane (cols × rows).
func parseTerminal(v []string, cols, rows int) (client.TerminalRequest, error) {
	for len(v) < 4 {
		v = append(v, "")
	}
	argv, err := SplitArgs(v[0])
	if err != nil {
		return client.TerminalRequest{}, err
	}
	req := client.TerminalRequest{Argv: argv, Cwd: strings.TrimSpace(v[1]), Cols: max(cols, 1), Rows: max(rows, 1)}
	envs, err := SplitArgs(v[2])
	if err != nil {
		return client.TerminalRequest{}, fmt.Errorf("env: %w", err)
	}
	for _, kv := range envs {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return client.TerminalRequest{}, fmt.Errorf("env: %q is not KEY=value", kv)
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = val
	}
	if sz := strings.TrimSpace(v[3]); sz != "" {
		cs, rs, ok := strings.Cut(strings.ToLower(sz), "x")
		c, err1 := strconv.Atoi(strings.TrimSpace(cs))
		r, err2 := strconv.Atoi(strings.TrimSpace(rs))
		if !ok || err1 != nil || err2 != nil || c < 1 || r < 1 || c > 1000 || r > 1000 {
			return client.TerminalRequest{}, fmt.Errorf("size %q: want COLSxROWS like 120x40 (1…1000 each)", sz)
		}
		req.Cols, req.Rows = c, r
	}
	return req, nil
}

// SplitArgs splits a command line like a POSIX shell would for words: spaces separate, single quotes
// keep everything, double quotes keep spaces (with \" and \\ escapes), a backslash escapes one
// character. No expansion happens.
func SplitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\'':
			inWord = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				cur.WriteRune(rs[j])
				j++
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated single quote")
			}
			i = j
		case r == '"':
			inWord = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[j+1]) {
					j++
				}
				cur.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			i = j
		case r == '\\':
			inWord = true
			if i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
			}
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteRune(r)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// note records an action or a launch (or, without a record, folds it into the screen's own
// state).
func (m *Model) note(ev record.Event) {
	ev.Sandbox = m.id
	if ev.Time.IsZero() {
		ev.Time = m.ctx.Clock()
	}
	if m.ctx.Record != nil {
		m.ctx.Record.Add(ev)
		m.st = m.ctx.Record.State(m.id)
		return
	}
	m.st.Apply(ev)
}

// refresh re-reads the record, and tells the user what changed that matters now: a new
// container, the watcher failing or recovering.
func (m *Model) refresh() tea.Cmd {
	old := m.st
	m.st = m.ctx.Record.State(m.id)
	var cmds []tea.Cmd
	if n := len(m.st.Incarnations); n > len(old.Incarnations) && len(old.Incarnations) > 0 {
		inc := m.st.Incarnations[n-1]
		cmds = append(cmds, common.Status(common.Warn, common.SanitizeText(fmt.Sprintf("sandbox %s: new container, incarnation #%d (%s); older entries are STALE", m.id, inc.Number, inc.How()))))
	}
	switch {
	case m.st.WatchErr != "" && m.st.WatchErr != old.WatchErr:
		cmds = append(cmds, common.Send(common.ConnMsg{Err: common.WatchFailure(m.id, m.st.WatchErr, m.st.WatchCause)}))
	case m.st.WatchErr == "" && old.WatchErr != "":
		cmds = append(cmds, common.Send(common.ConnMsg{}))
	}
	return tea.Batch(cmds...)
}

func outcome(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

func sanitizeAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = common.SanitizeText(s)
	}
	return out
}
