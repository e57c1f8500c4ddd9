package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// Sessions (driver.Sessions): named sessions that keep cwd and environment between runs. The
// driver lists what sandscope created or used (no request); creating and deleting one are
// requests to the sandbox, asked for by the user and told first where they start its container.

// sessionsMsg is the driver's list of sessions.
type sessionsMsg struct {
	owner *Model
	list  []driver.Session
	err   error
}

// sessionMsg is the answer to creating or deleting a session.
type sessionMsg struct {
	owner *Model
	verb  string // "created", "deleted"
	id    string
	err   error
}

// loadSessions reads the driver's sessions in a command (the list may come from the record's
// file: never on the UI goroutine).
func (m *Model) loadSessions() tea.Cmd {
	s, ok := m.ctx.Driver.(driver.Sessions)
	if !ok {
		return nil
	}
	base, id, owner := m.ctx.BaseCtx(), m.id, m
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		list, err := s.Sessions(ctx, id)
		return sessionsMsg{owner: owner, list: list, err: err}
	}
}

func (m *Model) applySessions(msg sessionsMsg) {
	if msg.owner != m {
		return
	}
	m.sessions, m.sessionsErr = msg.list, msg.err
	m.syncLists()
}

func (m *Model) applySession(msg sessionMsg) tea.Cmd {
	if msg.owner != m {
		return nil
	}
	if msg.err != nil {
		return common.Status(common.Error, common.Describe("session "+msg.verb, msg.err))
	}
	if msg.verb == "deleted" && m.session == msg.id {
		m.session = ""
	}
	return tea.Batch(common.Status(common.Info, fmt.Sprintf("session %s %s", common.SanitizeText(msg.id), msg.verb)), m.loadSessions())
}

// curSession is the session under the cursor of the Sessions tab.
func (m *Model) curSession() *driver.Session {
	if m.tab != SessionsTab {
		return nil
	}
	m.syncLists()
	if i := m.lists[SessionsTab].Cursor(); i >= 0 && i < len(m.sessions) {
		return &m.sessions[i]
	}
	return nil
}

// sessionActions are the Sessions tab's own keys.
func (m *Model) sessionActions() components.KeyActions {
	k := m.ctx.Keys
	return components.KeyActions{
		components.Act(components.Relabel(k.Select, "use for exec and shell"), func() tea.Cmd {
			s := m.curSession()
			if s == nil {
				return nil
			}
			if m.session == s.ID {
				m.session = ""
				return common.Status(common.Info, "exec and shell use no session")
			}
			m.session = s.ID
			return common.Status(common.Info, "exec and shell use session "+common.SanitizeText(s.ID))
		}),
		components.Act(components.Relabel(k.Create, "create session"), func() tea.Cmd {
			m.dialog = common.NewForm("session", "New session in "+m.id,
				[]string{"ID", "Working dir", "Env"}, nil,
				[]string{"empty: the bridge names it", "/workspace", "KEY=value KEY2=value"})
			m.dialog.Validate = func(v []string) error { _, err := parseSession(v); return err }
			return nil
		}),
		components.Act(components.Relabel(k.Delete, "delete session"), func() tea.Cmd {
			s := m.curSession()
			if s == nil {
				return nil
			}
			m.dialog = common.NewConfirm("rm-session", "Delete session "+common.SanitizeText(s.ID)+"?",
				"The session's shell, working directory and environment go. This is a request to the sandbox.")
			m.dialog.Data = s.ID
			return nil
		}),
	}
}

func (m *Model) createSession(opts client.SessionOptions) tea.Cmd {
	s, ok := m.ctx.Driver.(driver.Sessions)
	if !ok {
		return common.Unsupported("sessions")
	}
	base, id, owner := m.ctx.BaseCtx(), m.id, m
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		got, err := s.CreateSession(ctx, id, opts)
		if got == "" {
			got = opts.ID
		}
		return sessionMsg{owner: owner, verb: "created", id: got, err: err}
	}
}

func (m *Model) deleteSession(sid string) tea.Cmd {
	s, ok := m.ctx.Driver.(driver.Sessions)
	if !ok {
		return common.Unsupported("sessions")
	}
	base, id, owner := m.ctx.BaseCtx(), m.id, m
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		err := s.DeleteSession(ctx, id, sid)
		if errors.Is(err, client.ErrNotFound) {
			err = nil // gone already: what the user wanted
		}
		return sessionMsg{owner: owner, verb: "deleted", id: sid, err: err}
	}
}

// parseSession turns the session form (ID, cwd, env) into options.
func parseSession(v []string) (client.SessionOptions, error) {
	for len(v) < 3 {
		v = append(v, "")
	}
	o := client.SessionOptions{ID: strings.TrimSpace(v[0]), Cwd: strings.TrimSpace(v[1])}
	if o.ID != "" && !client.ValidSessionID(o.ID) {
		return o, fmt.Errorf("session %q: want 1-128 of a-z A-Z 0-9 . _ - (no \"..\")", o.ID)
	}
	env, err := parseEnv(v[2])
	if err != nil {
		return o, err
	}
	o.Env = env
	return o, nil
}

// parseEnv reads KEY=value words.
func parseEnv(s string) (map[string]string, error) {
	words, err := SplitArgs(s)
	if err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	var env map[string]string
	for _, kv := range words {
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

// sessionCells are what a session row shows, plain, column by column.
func (m *Model) sessionCells(i int, now time.Time) []string {
	s := m.sessions[i]
	created := "no (used)"
	if s.Created {
		created = "yes"
	}
	mark := ""
	if s.ID == m.session {
		mark = "← exec and shell use it"
	}
	return []string{common.SanitizeText(s.ID), created, m.ages.Since(now, s.Seen), mark}
}

var sessionCols = []components.Column{
	{Title: "SESSION", Min: 10, Want: 30, Priority: 0},
	{Title: "CREATED HERE", Min: 9, Want: 12, Priority: 1},
	{Title: "LAST USED", Min: 9, Want: 10, Priority: 2},
	{Title: "", Min: 4, Priority: 3, Flex: true},
}

func (m *Model) sessionRows(now time.Time) (string, []string, string) {
	plain := make([][]string, len(m.sessions))
	for i := range m.sessions {
		plain[i] = m.sessionCells(i, now)
	}
	sc := components.Natural(sessionCols, plain)
	cols := m.layout(sc)
	head := joinShown(titles(sc), cols, nil)
	rows := make([]string, 0, len(m.sessions))
	for i := range m.sessions {
		rows = append(rows, m.row(i, false, plain[i], cols, nil, nil))
	}
	k := m.ctx.Keys
	detail := fmt.Sprintf("sessions die with their container · %s chooses one for exec and shell · %s creates · %s deletes",
		k.Select.Help().Key, k.Create.Help().Key, k.Delete.Help().Key)
	if m.sessionsErr != nil {
		detail = "sessions: " + common.Describe("", m.sessionsErr)
	}
	return head, rows, detail
}

// wakeMsg carries the driver's wake notice for an action the user asked for.
type wakeMsg struct {
	owner *Model
	text  string
	do    func() tea.Cmd
}

// wake runs do, an action that sends requests to the sandbox, once the user knows it starts the
// sandbox's container (driver.Waker): the driver's notice is asked for in a command (it may read
// the record) and shown in a confirm dialog; nothing is sent before the user says yes. Drivers
// whose requests start nothing run do at once.
func (m *Model) wake(what string, do func() tea.Cmd) tea.Cmd {
	w, ok := m.ctx.Driver.(driver.Waker)
	if !ok {
		return do()
	}
	if m.declined != "" {
		m.askWake(m.declined, do)
		return nil
	}
	owner, id := m, m.id
	return func() tea.Msg { return wakeMsg{owner: owner, text: w.WakeNotice(id, what), do: do} }
}

func (m *Model) applyWake(msg wakeMsg) tea.Cmd {
	if msg.owner != m || m.closed {
		return nil
	}
	if msg.text == "" {
		return msg.do()
	}
	m.askWake(msg.text, msg.do)
	return nil
}

func (m *Model) askWake(text string, do func() tea.Cmd) {
	m.dialog = common.NewConfirm("wake", "Start the container of "+m.id+"?", common.WakeQuestion(text))
	m.dialog.Data = do
	m.declined = text
}
