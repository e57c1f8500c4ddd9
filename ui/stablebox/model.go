// Package stablebox is the sandbox screen on a stable (0.12) bridge. Every request to a sandbox
// starts its container there, so the screen shows what the record knows (the runs sandscope
// started, the sessions it created or used, the container marker it last saw) and sends nothing
// until the user acts: exec, open a run (reads its recorder files), a shell, a session change.
// The first action that will start the container says so and asks first.
package stablebox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/components"
	"sandscope/ui/sandbox"
)

// Tab is one of the screen's lists.
type Tab int

const (
	RunsTab Tab = iota
	SessionsTab
)

// reloadEvery is how often the screen re-reads the record (a local file: no request is sent), so
// runs started by `sandscope exec` beside the TUI appear.
const reloadEvery = 2 * time.Second

// Model is the sandbox screen on a stable bridge.
type Model struct {
	ctx    *common.Context
	id     string
	width  int
	height int

	sb      record.StableSandbox
	loadErr string
	tab     Tab
	cursor  [2]int
	session string // the session exec and shell use ("" none)

	dialog *common.Dialog
	busy   string
	closed bool
}

// New makes the screen for one sandbox. It reads the record only.
func New(ctx *common.Context, id string) *Model {
	m := &Model{ctx: ctx, id: id}
	m.reload()
	return m
}

// reload reads the sandbox's stable entries from the record (a local file).
func (m *Model) reload() {
	if m.ctx.Record == nil {
		m.loadErr = "nothing is recorded (no state directory): runs started here are not kept"
		return
	}
	sb, err := m.ctx.Record.Stable(m.id)
	if err != nil {
		m.loadErr = err.Error()
		return
	}
	m.sb, m.loadErr = sb, ""
	for t, n := range []int{len(m.sb.Runs), len(m.sb.LiveSessions())} {
		m.cursor[t] = max(min(m.cursor[t], n-1), 0)
	}
}

type reloadMsg struct{ owner *Model }

func (m *Model) tick() tea.Cmd {
	owner := m
	return tea.Tick(reloadEvery, func(time.Time) tea.Msg { return reloadMsg{owner} })
}

// Init starts the record re-reads; nothing is sent to the bridge.
func (m *Model) Init() tea.Cmd { return m.tick() }

// ID is the sandbox shown.
func (m *Model) ID() string { return m.id }

// Title is the screen's crumb: the sandbox ID.
func (m *Model) Title() string { return m.id }

// Close stops the record re-reads.
func (m *Model) Close() { m.closed = true }

// SetFocus is a no-op: the screen holds no stream.
func (m *Model) SetFocus(bool) {}

// Capturing reports an open dialog.
func (m *Model) Capturing() bool { return m.dialog != nil }

// Prompting reports an open dialog.
func (m *Model) Prompting() bool { return m.dialog != nil }

// Attached is 0: the screen holds no stream (run views hold theirs).
func (m *Model) Attached() int { return 0 }

// Back is the root's esc.
func (m *Model) Back() bool { return false }

// SetSize sets the screen's area.
func (m *Model) SetSize(w, h int) { m.width, m.height = w, h }

// relabel is a keymap binding (its keys, overrides included) with this screen's description.
func relabel(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
}

// ShortHelp lists the keys of this screen: the tab's own, then switching tabs.
func (m *Model) ShortHelp() []key.Binding {
	own := m.actions().Bindings()[6:]   // after moving
	own = append(own[:1:1], own[2:]...) // next tab says it; previous tab is the same here
	return own[:min(len(own), 6)]
}

// FullHelp lists every key of this screen, from the table that dispatches them.
func (m *Model) FullHelp() [][]key.Binding {
	return m.ctx.Keys.HelpColumns(m.actions().Bindings())
}

// runs are the recorded runs, newest first.
func (m *Model) runs() []record.StableRun {
	out := make([]record.StableRun, 0, len(m.sb.Runs))
	for i := len(m.sb.Runs) - 1; i >= 0; i-- {
		out = append(out, m.sb.Runs[i])
	}
	return out
}

func (m *Model) curRun() (record.StableRun, bool) {
	rs := m.runs()
	if m.cursor[RunsTab] < len(rs) {
		return rs[m.cursor[RunsTab]], true
	}
	return record.StableRun{}, false
}

func (m *Model) curSession() (record.StableSession, bool) {
	ss := m.sb.LiveSessions()
	if m.cursor[SessionsTab] < len(ss) {
		return ss[m.cursor[SessionsTab]], true
	}
	return record.StableSession{}, false
}

// wakeText is what the first action says.
func wakeText(sandbox, what string) string {
	return fmt.Sprintf("On a stable bridge every request to a sandbox starts its container when none runs. %s sends requests to sandbox %s and so starts its container if it sleeps (sandscope sends none on its own). Continue?",
		what, sandbox)
}

// act runs do now when the user was already told that actions start the container; otherwise it
// asks first, and remembers the answer in the record.
func (m *Model) act(what string, do func() tea.Cmd) tea.Cmd {
	if m.sb.Told {
		return do()
	}
	m.dialog = common.NewConfirm("wake", "Start the container of "+m.id+"?", wakeText(m.id, what))
	m.dialog.Data = do
	return nil
}

// markTold records that the wake notice was given (a local write).
func markTold(ctx *common.Context, sandbox string) {
	if ctx.Record != nil {
		_ = ctx.Record.UpdateStable(sandbox, func(sb *record.StableSandbox) { sb.Told = true })
	}
}

type startedMsg struct {
	owner *Model
	run   *client.RecordedRun
	argv  []string
	err   error
}

type sessionMsg struct {
	owner  *Model
	verb   string
	id     string
	err    error
	create bool
}

// Update handles keys, dialogs, re-reads and action answers.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	if open, cmd := common.RouteToDialog(&m.dialog, msg, m.ctx.Keys, m.answer); open {
		return m, cmd
	}
	switch msg := msg.(type) {
	case reloadMsg:
		if msg.owner != m || m.closed {
			return m, nil
		}
		m.reload()
		return m, m.tick()
	case startedMsg:
		if msg.owner != m {
			return m, nil
		}
		m.busy = ""
		if msg.err != nil {
			return m, common.Status(common.Error, common.Describe("exec in "+m.id, msg.err))
		}
		m.reload()
		m.tab, m.cursor[RunsTab] = RunsTab, 0
		v := NewRunView(m.ctx, m.id, record.StableRun{ID: msg.run.ID, Argv: msg.argv, Session: msg.run.Session, Started: time.Now().UTC(),
			State: string(client.RunRunning)}, msg.run)
		return m, common.Send(common.PushScreenMsg{Screen: v})
	case sessionMsg:
		if msg.owner != m {
			return m, nil
		}
		m.busy = ""
		if msg.err != nil {
			return m, common.Status(common.Error, common.Describe("session "+msg.verb, msg.err))
		}
		m.reload()
		if msg.verb == "rm" && m.session == msg.id {
			m.session = ""
		}
		return m, common.Status(common.Info, fmt.Sprintf("session %s: %s", common.SanitizeText(msg.id), msg.verb))
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	cmd, _ := m.actions().Handle(msg)
	return cmd
}

// actions are the keys of the current tab: one table for dispatch and help.
func (m *Model) actions() components.KeyActions {
	k := m.ctx.Keys
	n := len(m.sb.Runs)
	if m.tab == SessionsTab {
		n = len(m.sb.LiveSessions())
	}
	c := &m.cursor[m.tab]
	move := func(b key.Binding, to func() int) components.KeyAction {
		return components.Act(b, func() tea.Cmd { *c = max(min(to(), n-1), 0); return nil })
	}
	tabDesc := "sessions"
	if m.tab == SessionsTab {
		tabDesc = "runs"
	}
	acts := components.KeyActions{
		move(k.Up, func() int { return *c - 1 }),
		move(k.Down, func() int { return *c + 1 }),
		move(k.PageUp, func() int { return *c - m.listHeight() }),
		move(k.PageDown, func() int { return *c + m.listHeight() }),
		move(k.Top, func() int { return 0 }),
		move(k.Bottom, func() int { return n - 1 }),
		components.Act(relabel(k.NextTab, tabDesc), func() tea.Cmd { m.tab = 1 - m.tab; return nil }),
		components.Act(relabel(k.PrevTab, tabDesc), func() tea.Cmd { m.tab = 1 - m.tab; return nil }),
		components.Act(relabel(k.Refresh, "re-read the record"), func() tea.Cmd { m.reload(); return nil }),
		components.Act(relabel(k.Exec, "exec (recorded run)"), func() tea.Cmd {
			m.dialog = common.NewForm("exec", "Run a command in "+m.id+" (stable bridge: under sandscope's recorder)",
				[]string{"Command", "Working dir", "Env", "Session"},
				[]string{"", "", "", m.session},
				[]string{"e.g. npm test", "/workspace", "KEY=value KEY2=value", "a session ID (empty: none)"})
			m.dialog.Validate = func(v []string) error { _, err := parseStableExec(v); return err }
			return nil
		}),
		components.Act(relabel(k.Shell, "shell (pty)"), func() tea.Cmd {
			return m.act("A shell", func() tea.Cmd { return m.openShell() })
		}),
		components.Act(k.Report, func() tea.Cmd {
			entity := ""
			if r, ok := m.curRun(); ok && m.tab == RunsTab {
				entity = r.ID
			}
			return common.WriteReport(m.ctx, m.id, entity)
		}),
	}
	if m.tab == RunsTab {
		return append(acts, components.Act(relabel(k.Open, "follow run"), func() tea.Cmd {
			r, ok := m.curRun()
			if !ok {
				return nil
			}
			if client.RunState(r.State) == client.RunLost {
				// the files went with the container: nothing to ask
				return common.Send(common.PushScreenMsg{Screen: NewRunView(m.ctx, m.id, r, nil)})
			}
			return m.act("Reading a run's output", func() tea.Cmd {
				return common.Send(common.PushScreenMsg{Screen: NewRunView(m.ctx, m.id, r, nil)})
			})
		}))
	}
	return append(acts,
		components.Act(relabel(k.Create, "create session"), func() tea.Cmd {
			m.dialog = common.NewForm("session", "New session in "+m.id,
				[]string{"ID", "Working dir", "Env"}, nil,
				[]string{"empty: the bridge names it session-<ms>", "/workspace", "KEY=value KEY2=value"})
			m.dialog.Validate = func(v []string) error { _, err := parseSession(v); return err }
			return nil
		}),
		components.Act(relabel(k.Delete, "delete session"), func() tea.Cmd {
			s, ok := m.curSession()
			if !ok {
				return nil
			}
			m.dialog = common.NewConfirm("rm-session", "Delete session "+common.SanitizeText(s.ID)+"?",
				"The session's shell and its working directory and environment go. This sends a request to the sandbox (it starts the container if it sleeps).")
			m.dialog.Data = s.ID
			return nil
		}),
		components.Act(relabel(k.Select, "use session for exec and shell"), func() tea.Cmd {
			s, ok := m.curSession()
			if !ok {
				return nil
			}
			if m.session == s.ID {
				m.session = ""
				return common.Status(common.Info, "exec and shell use no session")
			}
			m.session = s.ID
			return common.Status(common.Info, "exec and shell use session "+common.SanitizeText(s.ID))
		}))
}

func (m *Model) answer(res *common.DialogResult) tea.Cmd {
	if !res.OK {
		return nil
	}
	switch res.ID {
	case "wake":
		do, _ := res.Data.(func() tea.Cmd)
		if do == nil {
			return nil
		}
		markTold(m.ctx, m.id)
		m.sb.Told = true
		return do()
	case "exec":
		opts, err := parseStableExec(res.Values)
		if err != nil {
			return common.Status(common.Error, "exec: "+err.Error())
		}
		return m.act("Running a command", func() tea.Cmd { return m.start(opts) })
	case "session":
		opts, err := parseSession(res.Values)
		if err != nil {
			return common.Status(common.Error, "session: "+err.Error())
		}
		return m.act("Creating a session", func() tea.Cmd { return m.createSession(opts) })
	case "rm-session":
		id, _ := res.Data.(string)
		markTold(m.ctx, m.id) // the dialog said it
		m.sb.Told = true
		return m.deleteSession(id)
	}
	return nil
}

// start runs a command under the recorder (this starts the container when none runs) and records
// the run.
func (m *Model) start(opts client.ExecOptions) tea.Cmd {
	s, base, id, ctx, owner := m.ctx.Stable, m.ctx.BaseCtx(), m.id, m.ctx, m
	m.busy = "starting " + common.Argv(opts.Argv) + " …"
	display := opts.Argv
	return func() tea.Msg {
		run, err := s.Run(base, id, opts)
		if err != nil {
			return startedMsg{owner: owner, err: err}
		}
		if ctx.Record != nil {
			now := time.Now()
			_ = ctx.Record.UpdateStable(id, func(sb *record.StableSandbox) {
				sb.SetRun(record.StableRun{ID: run.ID, Argv: display, Session: opts.Session, Started: now.UTC()},
					client.RunResult{State: client.RunRunning, Evidence: "started here"}, now)
				if opts.Session != "" {
					sb.UseSession(opts.Session, false, now)
				}
			})
		}
		return startedMsg{owner: owner, run: run, argv: display}
	}
}

func (m *Model) createSession(opts client.SessionOptions) tea.Cmd {
	s, base, id, ctx, owner := m.ctx.Stable, m.ctx.BaseCtx(), m.id, m.ctx, m
	m.busy = "creating a session …"
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		got, err := s.CreateSession(cctx, id, opts)
		if err == nil && ctx.Record != nil {
			_ = ctx.Record.UpdateStable(id, func(sb *record.StableSandbox) { sb.UseSession(got, true, time.Now()) })
		}
		return sessionMsg{owner: owner, verb: "created", id: got, err: err, create: true}
	}
}

func (m *Model) deleteSession(sid string) tea.Cmd {
	s, base, id, ctx, owner := m.ctx.Stable, m.ctx.BaseCtx(), m.id, m.ctx, m
	m.busy = "deleting session " + common.SanitizeText(sid) + " …"
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		err := s.DeleteSession(cctx, id, sid)
		if (err == nil || errors.Is(err, client.ErrNotFound)) && ctx.Record != nil {
			_ = ctx.Record.UpdateStable(id, func(sb *record.StableSandbox) { sb.DeleteSession(sid, time.Now()) })
		}
		return sessionMsg{owner: owner, verb: "rm", id: sid, err: err}
	}
}

// openShell opens the embedded terminal pane on the sandbox's PTY (of the chosen session).
func (m *Model) openShell() tea.Cmd {
	if m.session != "" && m.ctx.Record != nil {
		_ = m.ctx.Record.UpdateStable(m.id, func(sb *record.StableSandbox) { sb.UseSession(m.session, false, time.Now()) })
	}
	return common.Send(common.OpenTerminalMsg{Sandbox: m.id, Terminal: StablePTY(m.session)})
}

// StablePTY names a stable PTY as the terminal the pane opens: the session's, or the
// session-less one.
func StablePTY(session string) client.Terminal {
	id := session
	if id == "" {
		id = "default"
	}
	return client.Terminal{ID: id, Status: "running", Command: []string{"pty", "session", id}}
}

// parseStableExec turns the exec form into exec options; env goes through env(1), as /exec has
// no field for it.
func parseStableExec(v []string) (client.ExecOptions, error) {
	for len(v) < 4 {
		v = append(v, "")
	}
	argv, err := sandbox.SplitArgs(v[0])
	if err != nil {
		return client.ExecOptions{}, err
	}
	if len(argv) == 0 {
		return client.ExecOptions{}, fmt.Errorf("a command is required")
	}
	env, err := parseEnv(v[2])
	if err != nil {
		return client.ExecOptions{}, err
	}
	sess := strings.TrimSpace(v[3])
	if sess != "" && !client.ValidSessionID(sess) {
		return client.ExecOptions{}, fmt.Errorf("session %q: want 1-128 of a-z A-Z 0-9 . _ - (no \"..\")", sess)
	}
	return client.ExecOptions{Argv: client.StableArgv(argv, env, 0), Cwd: strings.TrimSpace(v[1]), Session: sess}, nil
}

func parseSession(v []string) (client.SessionOptions, error) {
	for len(v) < 3 {
		v = append(v, "")
	}
	id := strings.TrimSpace(v[0])
	if id != "" && !client.ValidSessionID(id) {
		return client.SessionOptions{}, fmt.Errorf("session %q: want 1-128 of a-z A-Z 0-9 . _ - (no \"..\")", id)
	}
	env, err := parseEnv(v[2])
	if err != nil {
		return client.SessionOptions{}, err
	}
	return client.SessionOptions{ID: id, Cwd: strings.TrimSpace(v[1]), Env: env}, nil
}

func parseEnv(s string) (map[string]string, error) {
	envs, err := sandbox.SplitArgs(s)
	if err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	var env map[string]string
	for _, kv := range envs {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("env: %q is not KEY=value", kv)
		}
		if env == nil {
			env = map[string]string{}
		}
		env[k] = val
	}
	return env, nil
}
