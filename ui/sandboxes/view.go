package sandboxes

import (
	"fmt"
	"strings"

	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/components"
	"sandscope/vocab"
)

func (m *Model) listHeight() int { return max(m.height-4, 1) }

// columns of the table, by priority: on a narrow terminal the counts and the source give way
// before the sandbox ID, its state and when it was last seen.
var columns = []components.Column{
	{Title: "SANDBOX", Min: 12, Want: 26, Priority: 0},
	{Title: "STATE", Priority: 0}, // sized in View for the rows' words (common.StateWidths)
	{Title: "INC", Min: 4, Want: 5, Priority: 2},
	{Title: "PROCS", Min: 5, Priority: 3},
	{Title: "TERMS", Min: 5, Priority: 3},
	{Title: "LAST SEEN", Min: 9, Want: 10, Priority: 1},
	{Title: "SOURCE", Min: 8, Want: 30, Priority: 4, Flex: true},
}

// View renders the screen.
func (m *Model) View() string {
	st := m.ctx.Styles
	w := m.width
	m.syncList()
	var b strings.Builder
	count := fmt.Sprintf("Sandboxes (%d)", len(m.rows))
	if m.list.Filter() != "" {
		count = fmt.Sprintf("Sandboxes (%d of %d)", m.list.Len(), len(m.rows))
	}
	title := st.Title.Render(count)
	switch {
	case m.busy != "":
		title += "  " + st.Info.Render(m.busy)
	case !m.loaded:
		title += "  " + st.Faint.Render("loading…")
	case m.connErr != nil:
		title += "  " + st.Error.Render(common.ConnProblem(m.connErr)+": states below are last known")
	case m.ctx.Driver != nil && !m.ctx.Driver.Features().NonWakingLookups:
		title += "  " + st.Faint.Render("states are what sandscope saw: asking the bridge would start containers")
	}
	if ls := m.list.Status(); ls != "" {
		title += "  " + st.Info.Render(ls)
	}
	b.WriteString(common.Fit(title, w) + "\n")

	words := make([]common.StateWord, len(m.rows))
	for i, r := range m.rows {
		words[i] = m.state(r)
	}
	tcols := append([]components.Column(nil), columns...)
	tcols[1].Min, tcols[1].Want = common.StateWidths(tcols[1].Title, words)
	cols := components.Layout(tcols, max(w-2, 1))
	head := make([]string, len(columns))
	for i, c := range columns {
		head[i] = c.Title
	}
	b.WriteString("  " + st.TableHead.Render(joinShown(head, cols)) + "\n")

	lh := m.listHeight()
	n := 0
	if len(m.rows) == 0 && m.loaded {
		b.WriteString(st.Faint.Render(common.Fit("  No sandboxes yet. Press "+m.ctx.Keys.Create.Help().Key+
			" to create one or "+m.ctx.Keys.Add.Help().Key+" to add one by ID.", w)) + "\n")
		n++
	} else if m.list.Len() == 0 && len(m.rows) > 0 {
		b.WriteString(st.Faint.Render(common.Fit(fmt.Sprintf("  No sandbox matches %q; %s clears the filter.", m.list.Filter(), m.ctx.Keys.Back.Help().Key), w)) + "\n")
		n++
	}
	now := m.shownAt
	if now.IsZero() || m.connErr != nil {
		now = m.ctx.Clock() // unreachable: the ages move with the root's retry countdown
	}
	for _, i := range m.list.Window() {
		if n >= lh {
			break
		}
		r := m.rows[i]
		badge, label := words[i].Badge, words[i].Fit(cols[1])
		inc := "-"
		if r.Incarnation > 0 {
			inc = fmt.Sprintf("#%d", r.Incarnation)
			if r.Inferred {
				inc += "?"
			}
		}
		procs, terms := "-", "-"
		if r.countsKnown {
			procs, terms = fmt.Sprint(r.procs), fmt.Sprint(r.terms)
		}
		cells := []string{
			common.SanitizeText(r.ID),
			st.BadgeText(badge, common.Fit(label, cols[1])),
			inc, procs, terms,
			common.Since(now, r.LastSeen),
			m.source(r),
		}
		if m.list.IsCursor(i) {
			plain := make([]string, len(cells))
			for j, c := range cells {
				plain[j] = common.StripANSI(c)
			}
			b.WriteString(st.Selected.Render("> "+common.Fit(joinShown(plain, cols), w-2)) + "\n")
		} else {
			b.WriteString("  " + joinShown(cells, cols) + "\n")
		}
		n++
	}
	for ; n < lh; n++ {
		b.WriteString("\n")
	}
	legend := "INC = container incarnation (? = inferred from evidence, not reported by the bridge)"
	if m.saveErr != nil {
		legend = "cannot persist known sandboxes: " + m.saveErr.Error()
		b.WriteString(st.Warning.Render(common.Fit(legend, w)))
	} else {
		b.WriteString(st.Faint.Render(common.Fit(legend, w)))
	}
	out := b.String()
	if m.dialog != nil {
		out = common.Overlay(out, m.dialog.View(st, m.ctx.Keys, w), w, m.height)
	}
	return out
}

// source says where sandscope knows the sandbox from (or why its lookup failed).
func (m *Model) source(r *row) string {
	if r.err != nil {
		return "lookup failed: " + common.Describe("", r.err)
	}
	src := r.Source
	if src == "listed" || r.listed {
		src = "local bridge"
		if r.Source != "listed" {
			src += ", " + r.Source
		}
	}
	return src
}

// joinShown joins the cells of the columns Layout kept, each fitted to its width.
func joinShown(cells []string, widths []int) string {
	parts := make([]string, 0, len(cells))
	for i, c := range cells {
		if widths[i] > 0 {
			parts = append(parts, common.Fit(c, widths[i]))
		}
	}
	return strings.Join(parts, " ")
}

// state is the sandbox's badge: RUNNING, STOPPED or UNKNOWN (with the age of the last answer).
func (m *Model) state(r *row) common.StateWord {
	switch {
	case r.Running == nil:
		return common.StateWord{Badge: themes.BadgeUnknown, Forms: []string{vocab.Unknown}}
	case m.connErr != nil || r.err != nil:
		last := vocab.Stopped
		if *r.Running {
			last = vocab.Running
		}
		return common.StateWord{Badge: themes.BadgeUnknown, Forms: []string{vocab.Unknown + " (" + last + ")", vocab.Unknown}}
	case *r.Running:
		return common.StateWord{Badge: themes.BadgeRunning, Forms: []string{vocab.Running}}
	}
	return common.StateWord{Badge: themes.BadgeStopped, Forms: []string{vocab.Stopped}}
}
