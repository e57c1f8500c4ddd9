package sandboxes

import (
	"fmt"
	"strings"

	"sandscope/themes"
	"sandscope/ui/common"
)

func (m *Model) listHeight() int { return max(m.height-4, 1) }

// View renders the screen.
func (m *Model) View() string {
	st := m.ctx.Styles
	w := m.width
	var b strings.Builder
	title := st.Title.Render(fmt.Sprintf("Sandboxes (%d)", len(m.rows)))
	switch {
	case m.busy != "":
		title += "  " + st.Info.Render(m.busy)
	case !m.loaded:
		title += "  " + st.Faint.Render("loading…")
	case common.Classify(m.connErr) == common.ErrWrongAPI:
		title += "  " + st.Error.Render(common.WrongAPIText)
	case m.connErr != nil:
		title += "  " + st.Error.Render("bridge not answering: states below are last known")
	}
	b.WriteString(common.Fit(title, w) + "\n")

	cols := []int{26, 20, 5, 6, 6, 10, 0}
	cols[6] = max(w-2-sum(cols[:6]), 6)
	head := []string{"SANDBOX", "STATE", "INC", "PROCS", "TERMS", "LAST SEEN", "SOURCE"}
	b.WriteString("  " + st.TableHead.Render(common.JoinCells(head, cols)) + "\n")

	lh := m.listHeight()
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.cursor >= m.offset+lh {
		m.offset = m.cursor - lh + 1
	}
	n := 0
	if len(m.rows) == 0 && m.loaded {
		b.WriteString(st.Faint.Render(common.Fit("  No sandboxes yet. Press "+m.ctx.Keys.Create.Help().Key+
			" to create one or "+m.ctx.Keys.Add.Help().Key+" to add one by ID.", w)) + "\n")
		n++
	}
	now := m.ctx.Clock()
	for i := m.offset; i < len(m.rows) && n < lh; i++ {
		r := m.rows[i]
		badge, label := m.state(r)
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
		src := r.Source
		if src == "listed" || r.listed {
			src = "local bridge"
			if r.Source != "listed" {
				src += ", " + r.Source
			}
		}
		if r.err != nil {
			src = "lookup failed: " + common.Describe("", r.err)
		}
		cells := []string{
			common.Fit(common.SanitizeText(r.ID), cols[0]),
			st.Badge(badge).Render(common.Fit(label, cols[1])),
			common.Fit(inc, cols[2]),
			common.Fit(procs, cols[3]),
			common.Fit(terms, cols[4]),
			common.Fit(common.Since(now, r.LastSeen), cols[5]),
			common.Fit(src, cols[6]),
		}
		line := strings.Join(cells, " ")
		if i == m.cursor {
			b.WriteString(st.Selected.Render("> "+common.Fit(stripJoin(cells, cols), w-2)) + "\n")
		} else {
			b.WriteString("  " + line + "\n")
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

// state is the sandbox's badge: RUNNING, STOPPED or UNKNOWN (with the age of the last answer).
func (m *Model) state(r *row) (themes.Badge, string) {
	switch {
	case r.Running == nil:
		return themes.BadgeUnknown, "UNKNOWN"
	case m.connErr != nil || r.err != nil:
		last := "STOPPED"
		if *r.Running {
			last = "RUNNING"
		}
		return themes.BadgeUnknown, "UNKNOWN (" + last + ")"
	case *r.Running:
		return themes.BadgeRunning, "RUNNING"
	}
	return themes.BadgeStopped, "STOPPED"
}

// stripJoin joins cells for the selected row, which is drawn in one style.
func stripJoin(cells []string, cols []int) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = common.Fit(common.StripANSI(c), cols[i])
	}
	return strings.Join(parts, " ")
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x + 1
	}
	return t
}
