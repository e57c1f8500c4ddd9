package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/ui/bridgepanel"
	"sandscope/ui/common"
	"sandscope/ui/notify"
	"sandscope/ui/sandboxes"
)

// switchTimeout bounds opening another context's bridge (a token command may run).
const switchTimeout = time.Minute

// contextTargetMsg is the answer to opening a context's bridge.
type contextTargetMsg struct {
	name   string
	target Target
	err    error
}

// openContexts shows the context picker.
func (m *Model) openContexts() tea.Cmd {
	if m.opts.Switch == nil || len(m.opts.Contexts) == 0 {
		m.status, m.statusLevel = "no contexts to switch to: add some to the config file (sandscope config path)", common.Info
		return nil
	}
	opts := make([]string, len(m.opts.Contexts))
	choice := 0
	embedded := m.ctx.ContextName == "" && strings.HasPrefix(m.ctx.BridgeURL, "local:")
	for i, n := range m.opts.Contexts {
		opts[i] = "  " + common.SanitizeText(n)
		if common.SanitizeText(n) == m.ctx.ContextName || (embedded && n == m.opts.EmbeddedContext) {
			opts[i] = "● " + common.SanitizeText(n) + " (current)"
			choice = i
		}
	}
	m.dialog = common.NewPick("context", "Switch context",
		"Open another bridge: every screen closes; processes keep running.", opts)
	m.dialog.Choice = choice
	return nil
}

func (m *Model) chooseContext(i int) tea.Cmd {
	if i < 0 || i >= len(m.opts.Contexts) {
		return nil
	}
	name := m.opts.Contexts[i]
	sw, base := m.opts.Switch, m.baseCtx
	m.status, m.statusLevel = "opening context "+common.SanitizeText(name)+"…", common.Info
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, switchTimeout)
		defer cancel()
		t, err := sw(ctx, name)
		return contextTargetMsg{name: name, target: t, err: err}
	}
}

// switchTo closes every screen and stream of the current bridge and starts over on t.
func (m *Model) switchTo(msg contextTargetMsg) tea.Cmd {
	name := common.SanitizeText(msg.name)
	c := *m.ctx // styles, keys, sizes, dirs and clock carry over
	if msg.err == nil {
		msg.err = applyTarget(&c, msg.target)
	}
	if msg.err != nil {
		m.status, m.statusLevel = common.Describe("context "+name, msg.err), common.Error
		return nil
	}
	m.closeScreens()
	m.cancel()
	// the record and the driver follow the bridge: the old ones are closed, the new bridge's opened
	m.unsubscribeAlerts()
	closeBridge(m.ctx)
	ctx, cancel := context.WithCancel(m.baseCtx)
	c.Ctx = ctx
	m.ctx, m.cancel = &c, cancel
	m.connErr, m.help = nil, false
	notices := openBridge(m.ctx, msg.target, m.opts.RecordBudget, m.opts.WatchBudget, m.opts.OTLP, m.driverNotes)
	m.notes, m.notesOpen = notify.New(m.ctx), false
	m.panel, m.panelOpen = bridgepanel.New(m.ctx), false
	m.subscribeAlerts()
	sb := sandboxes.New(m.ctx)
	w, h := m.bodySize()
	sb.SetSize(w, h)
	m.stack = []common.Screen{sb}
	m.status, m.statusLevel, m.statusAt = fmt.Sprintf("switched to context %s: %s", name, c.BridgeLabel), common.Info, m.ctx.Clock()
	if len(notices) > 0 {
		m.status, m.statusLevel = m.status+"; record: "+strings.Join(notices, "; "), common.Warn
	}
	return tea.Batch(sb.Init(), watchRecordWrites(m.ctx.BaseCtx(), m.ctx.Record, 0), waitAlerts(m.alertCh))
}
