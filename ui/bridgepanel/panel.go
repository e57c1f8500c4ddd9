// Package bridgepanel is the bridge panel: what the bridge says about its capacity — the container
// pool's warm, assigned and total containers and its instance limit — read on demand with a
// bounded call. On a bridge without pool routes (sandscope's local bridge) it says so. It never
// sends a request that starts a container.
package bridgepanel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/ui/common"
	"sandscope/vocab"
)

// Model is the panel: the last answer (or error) and when it came.
type Model struct {
	ctx     *common.Context
	stats   *client.PoolStats
	err     error
	at      time.Time
	loading bool
	gen     int // the load whose answer counts (a refresh supersedes an older one)
	w, h    int
}

// statsMsg is the answer to a load.
type statsMsg struct {
	gen   int
	stats client.PoolStats
	err   error
}

// New returns an empty panel; Load reads the pool.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// SetSize sets the box's size.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Load asks the bridge for its pool statistics (bounded by common.CallTimeout).
func (m *Model) Load() tea.Cmd {
	br, ok := m.ctx.Driver.(driver.Pool)
	if !ok {
		m.err = fmt.Errorf("pool statistics: %w", client.ErrUnsupported)
		return nil
	}
	m.gen++
	m.loading = true
	gen, base := m.gen, m.ctx.BaseCtx()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		st, err := br.PoolStats(ctx)
		return statsMsg{gen: gen, stats: st, err: err}
	}
}

// Update takes the answer, and the refresh key.
func (m *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	switch msg := msg.(type) {
	case statsMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.loading, m.at = false, m.ctx.Clock()
		if msg.err != nil {
			m.stats, m.err = nil, msg.err
		} else {
			st := msg.stats
			m.stats, m.err = &st, nil
		}
	case tea.KeyMsg:
		if key.Matches(msg, m.ctx.Keys.Refresh) {
			return m, m.Load()
		}
	}
	return m, nil
}

// Owns reports whether msg is the panel's own (the root routes it here).
func Owns(msg tea.Msg) bool {
	_, ok := msg.(statsMsg)
	return ok
}

// Lines is the panel's text, one entry a line (for the box and for tests).
func (m *Model) Lines() []string {
	var out []string
	switch {
	case m.stats == nil && m.err == nil:
		out = append(out, "reading the pool statistics…")
	case m.err != nil && errors.Is(m.err, client.ErrUnsupported):
		out = append(out, "Pool routes are not supported on this bridge (GET /v1/pool/stats: "+common.SanitizeText(shortErr(m.err))+").")
		if m.ctx.Local {
			out = append(out, "The local bridge runs each sandbox as local processes: there is no container pool and no instance limit.")
		}
	case m.err != nil:
		out = append(out, common.Describe("pool stats", m.err))
		if r := common.Remedy(m.err, m.ctx.Keys.Refresh.Help().Key+" tries again"); r != "" {
			out = append(out, "", "What to do: "+r+".")
		}
	default:
		s := m.stats
		limit := "not known yet (the pool learns it from the first refusal)"
		if s.MaxInstances != nil {
			limit = fmt.Sprint(*s.MaxInstances)
		} else if s.Config.MaxInstances > 0 {
			limit = fmt.Sprintf("%d (configured)", s.Config.MaxInstances)
		}
		out = append(out,
			fmt.Sprintf("warm      %d  ready, not assigned to a sandbox", s.Warm),
			fmt.Sprintf("assigned  %d  running for a sandbox ID", s.Assigned),
			fmt.Sprintf("total     %d  tracked by the pool", s.Total),
			"limit     "+limit,
			fmt.Sprintf("warm target %d · refresh every %s", s.Config.WarmTarget, time.Duration(s.Config.RefreshInterval)*time.Millisecond))
		if free, ok := headroom(s); ok {
			if free <= 0 {
				out = append(out, "", "The pool is full: new sandboxes and woken ones are refused with 503 capacity_exceeded until a container stops.",
					"Stop or delete sandboxes you no longer need, raise max_instances in the Worker's configuration, or wait for idle ones to sleep.")
			} else {
				out = append(out, "", fmt.Sprintf("%d more containers can start before the limit.", free))
			}
		}
	}
	if !m.at.IsZero() {
		out = append(out, "", fmt.Sprintf("read at %s", common.Clock(m.at)))
	}
	if m.loading && (m.stats != nil || m.err != nil) {
		out = append(out, "refreshing…")
	}
	return append(out, m.exportLines()...)
}

// exportLines say where the OpenTelemetry export stands: its position in the record, what waits
// behind it, and an outage (the position then waits: nothing is skipped).
func (m *Model) exportLines() []string {
	x := m.ctx.Export
	if x == nil || x.Status == nil {
		return nil
	}
	st := x.Status()
	out := []string{"", "OpenTelemetry export to " + common.SanitizeText(x.To)}
	backlog := fmt.Sprintf("position: event %d · backlog %s", st.Position, vocab.Count(int(st.Backlog), "event"))
	if st.OutputBacklog > 0 || st.OutputPosition > 0 {
		backlog += fmt.Sprintf(" · output backlog %d bytes", st.OutputBacklog)
	}
	out = append(out, backlog)
	sent := fmt.Sprintf("sent %d spans and %d log records", st.Spans, st.Logs)
	if !st.LastSent.IsZero() {
		sent += " · last at " + common.Clock(st.LastSent)
	}
	out = append(out, sent)
	if st.Failing {
		out = append(out, fmt.Sprintf("FAILING since %s: %s", common.Clock(st.FailingSince), common.SanitizeText(st.LastError)),
			"Retrying with backoff from the same position: what waits is sent oldest first once the collector answers.")
	}
	return out
}

// headroom is how many more containers may start (limit minus total) when the limit is known.
func headroom(s *client.PoolStats) (int, bool) {
	switch {
	case s.MaxInstances != nil:
		return *s.MaxInstances - s.Total, true
	case s.Config.MaxInstances > 0:
		return s.Config.MaxInstances - s.Total, true
	}
	return 0, false
}

func shortErr(err error) string {
	var ae *client.APIError
	if errors.As(err, &ae) {
		if ae.Code != "" {
			return fmt.Sprintf("%d %s", ae.Status, ae.Code)
		}
		return fmt.Sprint(ae.Status)
	}
	return err.Error()
}

// View draws the panel as a box.
func (m *Model) View() string {
	st := m.ctx.Styles
	inner := max(min(m.w-4, 100), 20)
	k := m.ctx.Keys
	title := st.Title.Render("Bridge · capacity") + st.Faint.Render(fmt.Sprintf(" · %s refreshes · %s or %s closes",
		k.Refresh.Help().Key, k.BridgePanel.Help().Key, k.Back.Help().Key))
	lines := []string{common.Fit(title, inner), common.Fit(st.Faint.Render(common.SanitizeText(m.ctx.BridgeLabel)), inner), ""}
	for _, l := range m.Lines() {
		for _, w := range common.Wrap(l, inner) {
			lines = append(lines, common.Fit(w, inner))
		}
	}
	if m.h > 2 && len(lines) > m.h-2 {
		lines = lines[:m.h-2]
	}
	return st.Border.Width(inner + 2).Render(strings.Join(lines, "\n"))
}

// ShortHelp is the panel's key help.
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	return []key.Binding{k.Refresh, k.BridgePanel, k.Back}
}

// FullHelp is every key of the panel.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.ctx.Keys
	return [][]key.Binding{{k.Refresh, k.BridgePanel, k.Back}}
}
