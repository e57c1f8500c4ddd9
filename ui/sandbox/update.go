package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/ui/common"
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
		return m, tea.Batch(cmds...)
	case execMsg:
		return m, m.applyExec(msg)
	case termMsg:
		if msg.err != nil {
			return m, common.Status(common.Error, common.Describe("new terminal in "+m.id, msg.err))
		}
		inc := msg.t.Incarnation
		if inc == 0 {
			inc = m.current.Number
		}
		if m.findTerm(msg.t.ID) == nil {
			m.terms = append(m.terms, &termEntry{t: msg.t, incarnation: inc, inferred: m.current.Inferred, lastSeen: m.ctx.Clock()})
		}
		m.tab = TerminalsTab
		m.cursor[TerminalsTab] = len(m.terms) - 1
		return m, common.Send(common.OpenTerminalMsg{Sandbox: m.id, Terminal: msg.t})
	case killMsg:
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

// apply folds one watcher event into the screen's knowledge.
func (m *Model) apply(ev client.SandboxEvent) tea.Cmd {
	m.events++
	if ev.Kind != client.WatchError && ev.Incarnation.Number > 0 {
		if len(m.incs) == 0 {
			why := "first seen by sandscope (number reported by the bridge)"
			if ev.Incarnation.Inferred {
				why = "first seen by sandscope (numbered by sandscope; the bridge reports no identity)"
			}
			m.incs = append(m.incs, &incEntry{number: ev.Incarnation.Number, inferred: ev.Incarnation.Inferred,
				firstSeen: ev.Time, lastSeen: ev.Time, evidence: []string{why}})
		}
		if ev.Kind != client.IncarnationChanged {
			m.adopt(ev.Incarnation)
		}
	}
	var cmd tea.Cmd
	switch ev.Kind {
	case client.ProcessAppeared, client.ProcessChanged:
		if ev.Process != nil {
			m.upsertProc(*ev.Process, ev)
		}
	case client.ProcessVanished:
		if ev.Process != nil {
			if e := m.findProc(ev.Process.ID); e != nil {
				e.evidence = ev.Evidence
				if e.p.State == "running" {
					e.lost = true
				}
			}
		}
	case client.TerminalAppeared, client.TerminalChanged:
		if ev.Terminal != nil {
			m.upsertTerm(*ev.Terminal, ev)
		}
	case client.TerminalVanished:
		if ev.Terminal != nil {
			if e := m.findTerm(ev.Terminal.ID); e != nil {
				if e.t.Status == "running" {
					e.lost = true
				}
			}
		}
	case client.SandboxStarted:
		t := true
		m.running = &t
	case client.SandboxStopped:
		f := false
		m.running = &f
		if inc := m.currentInc(); inc != nil {
			inc.evidence = append(inc.evidence, "stopped at "+common.Clock(ev.Time)+": "+strings.Join(sanitizeAll(ev.Evidence), "; "))
		}
	case client.IncarnationChanged:
		ev2 := sanitizeAll(ev.Evidence)
		if len(ev2) == 0 {
			ev2 = []string{"no evidence given"}
		}
		if cur := m.currentInc(); cur != nil && cur.number == ev.Incarnation.Number {
			// the same number, now reported by the bridge: not a new container as far as the
			// numbering goes, but keep the evidence on the timeline
			cur.inferred = ev.Incarnation.Inferred
			cur.evidence = append(cur.evidence, ev2...)
			m.current = ev.Incarnation
			t := true
			m.running = &t
			break
		}
		if prev := m.currentInc(); prev != nil {
			prev.lastSeen = ev.Time
		}
		m.incs = append(m.incs, &incEntry{number: ev.Incarnation.Number, inferred: ev.Incarnation.Inferred,
			firstSeen: ev.Time, lastSeen: ev.Time, evidence: ev2})
		m.current = ev.Incarnation
		t := true
		m.running = &t
		how := "reported by the bridge"
		if ev.Incarnation.Inferred {
			how = "inferred: " + strings.Join(ev2, "; ")
		}
		cmd = common.Status(common.Warn, fmt.Sprintf("sandbox %s: new container, incarnation #%d (%s); older entries are STALE", m.id, ev.Incarnation.Number, how))
	case client.WatchError:
		if m.watchErr == nil {
			m.errSince = ev.Time
		}
		m.watchErr = ev.Err
		return common.Send(common.ConnMsg{Err: fmt.Errorf("watch %s: %w", m.id, ev.Err)})
	case client.WatchRecovered:
		m.watchErr = nil
		cmd = common.Send(common.ConnMsg{})
	}
	if ev.Kind != client.WatchError {
		m.lastOK = ev.Time
		if inc := m.currentInc(); inc != nil && ev.Time.After(inc.lastSeen) {
			inc.lastSeen = ev.Time
		}
	}
	return cmd
}

// adopt makes inc the current incarnation. When sandscope had numbered the current container
// itself and the bridge now reports a different number for it (no boundary seen), the entries and
// the timeline row take the bridge's number.
func (m *Model) adopt(inc client.Incarnation) {
	if m.current.Inferred && !inc.Inferred && m.current.Number > 0 && inc.Number != m.current.Number {
		old := m.current.Number
		for _, e := range m.procs {
			if e.incarnation == old && e.inferred {
				e.incarnation, e.inferred = inc.Number, false
			}
		}
		for _, e := range m.terms {
			if e.incarnation == old && e.inferred {
				e.incarnation, e.inferred = inc.Number, false
			}
		}
		if cur := m.currentInc(); cur != nil && cur.number == old {
			cur.number, cur.inferred = inc.Number, false
			cur.evidence = append(cur.evidence, fmt.Sprintf("the bridge reports this container as incarnation #%d", inc.Number))
		}
	}
	m.current = inc
}

func (m *Model) currentInc() *incEntry {
	if len(m.incs) == 0 {
		return nil
	}
	return m.incs[len(m.incs)-1]
}

func incOf(reported int, ev client.SandboxEvent) (int, bool) {
	if reported > 0 {
		return reported, false
	}
	return ev.Incarnation.Number, ev.Incarnation.Inferred
}

func (m *Model) upsertProc(p client.Process, ev client.SandboxEvent) {
	inc, inferred := incOf(p.Incarnation, ev)
	for i := len(m.procs) - 1; i >= 0; i-- {
		e := m.procs[i]
		if e.p.ID == p.ID && (e.incarnation == inc || e.incarnation == 0 || inc == 0) {
			e.p, e.lastSeen, e.lost = p, ev.Time, false
			if inc > 0 {
				e.incarnation, e.inferred = inc, inferred
			}
			return
		}
	}
	m.procs = append(m.procs, &procEntry{p: p, incarnation: inc, inferred: inferred, lastSeen: ev.Time})
}

func (m *Model) upsertTerm(t client.Terminal, ev client.SandboxEvent) {
	inc, inferred := incOf(t.Incarnation, ev)
	for i := len(m.terms) - 1; i >= 0; i-- {
		e := m.terms[i]
		if e.t.ID == t.ID && (e.incarnation == inc || e.incarnation == 0 || inc == 0) {
			e.t, e.lastSeen, e.lost = t, ev.Time, false
			if inc > 0 {
				e.incarnation, e.inferred = inc, inferred
			}
			return
		}
	}
	m.terms = append(m.terms, &termEntry{t: t, incarnation: inc, inferred: inferred, lastSeen: ev.Time})
}

// findProc returns the newest entry with that ID.
func (m *Model) findProc(id string) *procEntry {
	for i := len(m.procs) - 1; i >= 0; i-- {
		if m.procs[i].p.ID == id {
			return m.procs[i]
		}
	}
	return nil
}

func (m *Model) findTerm(id string) *termEntry {
	for i := len(m.terms) - 1; i >= 0; i-- {
		if m.terms[i].t.ID == id {
			return m.terms[i]
		}
	}
	return nil
}

// stale reports whether an entry of incarnation inc belongs to an earlier container.
func (m *Model) stale(inc int) bool {
	return inc > 0 && m.current.Number > 0 && inc < m.current.Number
}

func (m *Model) procCond(e *procEntry) common.Condition {
	switch {
	case e.lost:
		return common.Lost
	case m.stale(e.incarnation):
		return common.Stale
	case m.watchErr != nil && e.p.State == "running":
		return common.Unknown
	}
	return common.Current
}

func (m *Model) termCond(e *termEntry) common.Condition {
	switch {
	case e.lost:
		return common.Lost
	case m.stale(e.incarnation):
		return common.Stale
	case m.watchErr != nil && e.t.Status == "running":
		return common.Unknown
	}
	return common.Current
}

func (m *Model) rowCount() int {
	switch m.tab {
	case ProcessesTab:
		return len(m.procs)
	case TerminalsTab:
		return len(m.terms)
	}
	return len(m.incs)
}

func (m *Model) move(d int) {
	c := m.cursor[m.tab] + d
	if c >= m.rowCount() {
		c = m.rowCount() - 1
	}
	if c < 0 {
		c = 0
	}
	m.cursor[m.tab] = c
}

func (m *Model) curProc() *procEntry {
	if m.tab != ProcessesTab || m.cursor[ProcessesTab] >= len(m.procs) {
		return nil
	}
	return m.procs[m.cursor[ProcessesTab]]
}

func (m *Model) curTerm() *termEntry {
	if m.tab != TerminalsTab || m.cursor[TerminalsTab] >= len(m.terms) {
		return nil
	}
	return m.terms[m.cursor[TerminalsTab]]
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.ctx.Keys
	switch {
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down):
		m.move(1)
	case key.Matches(msg, k.PageUp):
		m.move(-m.listHeight())
	case key.Matches(msg, k.PageDown):
		m.move(m.listHeight())
	case key.Matches(msg, k.Top):
		m.move(-m.rowCount())
	case key.Matches(msg, k.Bottom):
		m.move(m.rowCount())
	case key.Matches(msg, k.NextTab):
		m.tab = (m.tab + 1) % tabCount
	case key.Matches(msg, k.PrevTab):
		m.tab = (m.tab + tabCount - 1) % tabCount
	case key.Matches(msg, k.Select):
		if e := m.curProc(); e != nil {
			k := entryKey(e)
			if m.marked[k] {
				delete(m.marked, k)
			} else {
				m.marked[k] = true
			}
			m.move(1)
		}
	case key.Matches(msg, k.Open):
		return m.open()
	case key.Matches(msg, k.Exec):
		m.dialog = common.NewForm("exec", "Run a process in "+m.id,
			[]string{"Command", "Working dir", "Env", "Timeout"},
			[]string{"", "", "", ""},
			[]string{"e.g. npm test -- --watch=false", "/workspace", "KEY=value KEY2=value", "e.g. 90s or 10m (empty: none)"})
		m.dialog.Validate = func(v []string) error { _, err := parseExec(v); return err }
	case key.Matches(msg, k.Kill):
		return m.kill()
	case key.Matches(msg, k.Relaunch):
		return m.relaunch()
	case key.Matches(msg, k.Shell):
		m.dialog = common.NewForm("terminal", "New terminal in "+m.id,
			[]string{"Command", "Working dir", "Env", "Size"},
			[]string{"bash", "", "", ""},
			[]string{"e.g. bash -l", "/workspace", "KEY=value KEY2=value", "COLSxROWS, e.g. 120x40 (empty: fit the pane)"})
		m.dialog.Validate = func(v []string) error {
			_, err := parseTerminal(v, m.width, max(m.height-1, 1))
			return err
		}
	case m.tab == TerminalsTab && key.Matches(msg, k.Attach):
		e, refused := m.actionTerm("attach")
		if e == nil {
			return refused
		}
		return common.Send(common.AttachTerminalMsg{Sandbox: m.id, Terminal: e.t})
	case m.tab == TerminalsTab && key.Matches(msg, k.Interrupt):
		return m.signalTerm("interrupt")
	case m.tab == TerminalsTab && key.Matches(msg, k.Terminate):
		return m.signalTerm("terminate")
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
		return nil, common.Status(common.Warn, fmt.Sprintf("refused: %s: terminal %s belonged to incarnation #%d; its container is gone and the handle is stale", what, e.t.ID, e.incarnation))
	}
	if e.t.Status != "" && e.t.Status != "running" {
		return nil, common.Status(common.Info, fmt.Sprintf("terminal %s already ended (%s); nothing to %s", e.t.ID, common.SanitizeText(e.t.Status), what))
	}
	return e, nil
}

// signalTerm interrupts (SIGINT) or terminates (SIGTERM, then SIGKILL) the selected terminal's
// process tree through the bridge.
func (m *Model) signalTerm(what string) tea.Cmd {
	e, refused := m.actionTerm(what)
	if e == nil {
		return refused
	}
	return common.SignalTerminal(m.ctx, m.id, e.t.ID, what == "interrupt", "its ending shows once the bridge confirms it")
}

func entryKey(e *procEntry) string { return fmt.Sprintf("%s@%d", e.p.ID, e.incarnation) }

func (m *Model) mouse(msg tea.MouseMsg) {
	if m.dialog != nil {
		return
	}
	switch {
	case msg.Button == tea.MouseButtonWheelUp:
		m.move(-3)
	case msg.Button == tea.MouseButtonWheelDown:
		m.move(3)
	case msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft:
		if msg.Y == 1 { // the tab bar
			x := 0
			for t := Tab(0); t < tabCount; t++ {
				w := len(m.tabLabel(t)) + 3
				if msg.X >= x && msg.X < x+w {
					m.tab = t
					return
				}
				x += w
			}
			return
		}
		i := m.offset[m.tab] + msg.Y - 3 // title, tabs, table head
		if i >= 0 && i < m.rowCount() {
			m.cursor[m.tab] = i
		}
	}
}

func (m *Model) open() tea.Cmd {
	switch m.tab {
	case ProcessesTab:
		var targets []common.LogTarget
		for _, e := range m.procs {
			if m.marked[entryKey(e)] {
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
		m.marked = map[string]bool{}
		return common.Send(common.OpenLogsMsg{Targets: targets})
	case TerminalsTab:
		e := m.curTerm()
		if e == nil {
			return nil
		}
		switch m.termCond(e) {
		case common.Stale, common.Lost:
			return common.Status(common.Warn, fmt.Sprintf("refused: terminal %s belonged to incarnation #%d; its container is gone and the handle is stale", e.t.ID, e.incarnation))
		}
		return common.Send(common.OpenTerminalMsg{Sandbox: m.id, Terminal: e.t})
	}
	return nil
}

func (m *Model) target(e *procEntry) common.LogTarget {
	c := m.procCond(e)
	return common.LogTarget{Sandbox: m.id, Process: e.p, Incarnation: e.incarnation, Stale: c == common.Stale, Lost: c == common.Lost}
}

func (m *Model) refuseStale(what string, e *procEntry) tea.Cmd {
	switch m.procCond(e) {
	case common.Stale:
		return common.Status(common.Warn, fmt.Sprintf("refused: %s: process %s belongs to incarnation #%d and the sandbox now runs #%d; the handle is stale (relaunch with %s)",
			what, e.p.ID, e.incarnation, m.current.Number, m.ctx.Keys.Relaunch.Help().Key))
	case common.Lost:
		return common.Status(common.Warn, fmt.Sprintf("refused: %s: process %s was lost with its container (relaunch with %s)", what, e.p.ID, m.ctx.Keys.Relaunch.Help().Key))
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
	if _, label, ended := common.ExitLabel(e.p.State, e.p.Exit, e.p.Error); ended {
		return common.Status(common.Info, fmt.Sprintf("process %s already ended (%s); nothing to kill", e.p.ID, label))
	}
	var opts []string
	for _, s := range common.KillSignals() {
		opts = append(opts, fmt.Sprintf("%-5s (%d)", common.SignalName(s), s))
	}
	m.dialog = common.NewPick("kill", "Kill "+e.p.ID, "Signal to send to the whole process tree:", opts)
	m.dialog.Data = e
	return nil
}

func (m *Model) relaunch() tea.Cmd {
	e := m.curProc()
	if e == nil {
		return nil
	}
	if m.procCond(e) == common.Current && e.p.State == "running" {
		return common.Status(common.Warn, fmt.Sprintf("refused: relaunch: process %s is still running in the current incarnation; kill it first or exec a new one", e.p.ID))
	}
	if len(e.p.Command) == 0 {
		return common.Status(common.Error, "relaunch: the bridge did not report the command of "+e.p.ID)
	}
	req := client.ExecRequest{Argv: e.p.Command, Cwd: e.p.Cwd}
	known := e.req != nil
	if known {
		req = *e.req
	}
	return m.launch(req, e.p.ID, known)
}

func (m *Model) launch(req client.ExecRequest, relaunch string, known bool) tea.Cmd {
	br := m.ctx.Bridge
	base := m.ctx.BaseCtx()
	id := m.id
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		p, err := br.StartProcess(ctx, id, req)
		return execMsg{req: req, p: p, relaunch: relaunch, known: known, err: err}
	}
}

func (m *Model) applyExec(msg execMsg) tea.Cmd {
	what := "exec " + common.Argv(msg.req.Argv)
	if msg.relaunch != "" {
		what = "relaunch " + msg.relaunch
	}
	if msg.err != nil {
		return common.Status(common.Error, common.Describe(what, msg.err))
	}
	inc := msg.p.Incarnation
	if inc == 0 {
		inc = m.current.Number
	}
	req := msg.req
	e := &procEntry{p: msg.p, incarnation: inc, inferred: m.current.Inferred, lastSeen: m.ctx.Clock(), req: &req}
	if old := m.findProc(msg.p.ID); old != nil && old.incarnation == inc {
		old.p, old.req, old.lastSeen = msg.p, &req, e.lastSeen
	} else {
		m.procs = append(m.procs, e)
	}
	m.tab = ProcessesTab
	m.cursor[ProcessesTab] = len(m.procs) - 1
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
	case "kill":
		e, _ := res.Data.(*procEntry)
		sigs := common.KillSignals()
		if e == nil || res.Choice < 0 || res.Choice >= len(sigs) {
			return nil
		}
		sig := sigs[res.Choice]
		br, base, id, pid := m.ctx.Bridge, m.ctx.BaseCtx(), m.id, e.p.ID
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(base, common.CallTimeout)
			defer cancel()
			return killMsg{process: pid, signal: sig, err: br.KillProcess(ctx, id, pid, sig)}
		}
	case "terminal":
		req, err := parseTerminal(res.Values, m.width, max(m.height-1, 1))
		if err != nil {
			return common.Status(common.Error, "new terminal: "+err.Error())
		}
		br, base, id := m.ctx.Bridge, m.ctx.BaseCtx(), m.id
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(base, common.CallTimeout)
			defer cancel()
			t, err := br.CreateTerminal(ctx, id, req)
			return termMsg{t: t, err: err}
		}
	case "exec":
		req, err := parseExec(res.Values)
		if err != nil {
			return common.Status(common.Error, "exec: "+err.Error())
		}
		return m.launch(req, "", true)
	}
	return nil
}

// parseExec turns the exec form into a request.
func parseExec(v []string) (client.ExecRequest, error) {
	for len(v) < 4 {
		v = append(v, "")
	}
	argv, err := SplitArgs(v[0])
	if err != nil {
		return client.ExecRequest{}, err
	}
	if len(argv) == 0 {
		return client.ExecRequest{}, fmt.Errorf("a command is required")
	}
	req := client.ExecRequest{Argv: argv, Cwd: strings.TrimSpace(v[1])}
	envs, err := SplitArgs(v[2])
	if err != nil {
		return client.ExecRequest{}, fmt.Errorf("env: %w", err)
	}
	for _, kv := range envs {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return client.ExecRequest{}, fmt.Errorf("env: %q is not KEY=value", kv)
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = val
	}
	if t := strings.TrimSpace(v[3]); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return client.ExecRequest{}, fmt.Errorf("timeout %q: want a positive duration like 90s or 10m", t)
		}
		req.Timeout = d.Milliseconds()
		if req.Timeout < 1 {
			req.Timeout = 1
		}
	}
	return req, nil
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

func sanitizeAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = common.SanitizeText(s)
	}
	return out
}
