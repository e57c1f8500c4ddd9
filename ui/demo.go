package ui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/ui/common"
)

// demoDoneMsg says the demo scene is set up (or failed).
type demoDoneMsg struct{ err error }

// offerDemo shows the first-run dialog.
func (m *Model) offerDemo() {
	sb := m.demoSandbox()
	m.dialog = common.NewConfirm("demo", "Welcome to sandscope",
		fmt.Sprintf("Start the demo scene? It fills sandbox %q on this embedded\n"+
			"bridge with a build, a failing test run, a coding agent and a shell,\n"+
			"then replaces the container: you see a LOST process and a new\n"+
			"incarnation. Asked once; start it later with: sandscope --demo", sb))
}

func (m *Model) demoSandbox() string {
	if m.opts.Demo == nil || m.opts.Demo.Sandbox == "" {
		return "demo"
	}
	return m.opts.Demo.Sandbox
}

// answerDemo records the answer and starts the scene on yes.
func (m *Model) answerDemo(yes bool) tea.Cmd {
	d := m.opts.Demo
	if d == nil {
		return nil
	}
	if d.Decided != nil {
		if err := d.Decided(yes); err != nil {
			m.status, m.statusLevel = common.Describe("remember the demo answer", err), common.Warn
		}
	}
	if !yes {
		return nil
	}
	return m.startDemo()
}

// startDemo runs the scene in the background, bound to the program's life (not to the current
// context: switching contexts does not stop it).
func (m *Model) startDemo() tea.Cmd {
	d := m.opts.Demo
	if d == nil || d.Start == nil {
		return nil
	}
	m.status, m.statusLevel, m.statusAt = fmt.Sprintf("demo: setting up sandbox %q (open it from the list; its container is replaced in about 25 s)", m.demoSandbox()), common.Info, m.ctx.Clock()
	ctx, start := m.baseCtx, d.Start
	return func() tea.Msg { return demoDoneMsg{err: start(ctx)} }
}

func (m *Model) demoDone(msg demoDoneMsg) {
	if msg.err != nil {
		if m.baseCtx.Err() != nil {
			return
		}
		m.status, m.statusLevel = common.Describe("demo", msg.err), common.Error
		return
	}
	m.status, m.statusLevel = fmt.Sprintf("demo: scene ready in sandbox %q: its container was replaced, the old agent is LOST and a new one runs", m.demoSandbox()), common.Info
}
