package stablebox

import (
	"fmt"
	"strings"

	"sandscope/client"
	"sandscope/record"
	"sandscope/themes"
	"sandscope/ui/common"
)

// listHeight is the rows the current list gets.
func (m *Model) listHeight() int { return max(m.height-6, 1) }

// badge is the style of a run's state.
func badge(r record.StableRun) themes.Badge {
	switch client.RunState(r.State) {
	case client.RunConfirmed:
		if r.Code != nil && *r.Code != 0 {
			return themes.BadgeExitedFail
		}
		return themes.BadgeExited
	case client.RunLost:
		return themes.BadgeLost
	case client.RunErrored:
		return themes.BadgeError
	case client.RunInterrupted, client.RunUnconfirmed:
		return themes.BadgeSuspectEnd
	case client.RunRunning, client.RunStillGoing:
		return themes.BadgeRunning
	}
	return themes.BadgeUnknown
}

// View draws the screen: a header saying what the screen knows and how, the tabs, the list, and
// the selected run's evidence.
func (m *Model) View() string {
	st := m.ctx.Styles
	w := max(m.width, 20)
	var b strings.Builder
	head := st.Title.Render("Sandbox "+common.SanitizeText(m.id)) + st.Faint.Render(" · stable bridge · from the record: nothing is asked of the bridge until you act")
	b.WriteString(common.Fit(head, w) + "\n")
	info := "container: not seen by sandscope yet"
	if m.sb.Incarnation != "" {
		info = fmt.Sprintf("container marker %s, last seen %s (inferred from sandscope's marker file)",
			common.SanitizeText(m.sb.Incarnation), m.sb.MarkerSeen.Local().Format("2006-01-02 15:04:05"))
	}
	if m.session != "" {
		info += " · exec and shell use session " + common.SanitizeText(m.session)
	}
	if m.busy != "" {
		info = m.busy
	}
	if m.loadErr != "" {
		info = st.Error.Render("record: " + common.SanitizeText(m.loadErr))
	}
	b.WriteString(common.Fit(st.Faint.Render(info), w) + "\n")
	tabs := []string{fmt.Sprintf("Runs (%d)", len(m.sb.Runs)), fmt.Sprintf("Sessions (%d)", len(m.sb.LiveSessions()))}
	for i, t := range tabs {
		if Tab(i) == m.tab {
			tabs[i] = st.TabActive.Render(" " + t + " ")
		} else {
			tabs[i] = st.Tab.Render(" " + t + " ")
		}
	}
	b.WriteString(common.Fit(strings.Join(tabs, " "), w) + "\n")
	var rows []string
	var detail string
	if m.tab == RunsTab {
		rows, detail = m.runRows(w)
	} else {
		rows, detail = m.sessionRows(w)
	}
	lh := m.listHeight()
	for i := 0; i < lh; i++ {
		if i < len(rows) {
			b.WriteString(rows[i] + "\n")
		} else {
			b.WriteString("\n")
		}
	}
	b.WriteString(common.Fit(st.Faint.Render(detail), w))
	out := b.String()
	if m.dialog != nil {
		out = common.Overlay(out, m.dialog.View(st, m.ctx.Keys, w), w, m.height)
	}
	return out
}

// window returns the rows [lo, hi) that keep the cursor on screen.
func window(cursor, n, h int) (int, int) {
	lo := 0
	if cursor >= h {
		lo = cursor - h + 1
	}
	return lo, min(n, lo+h)
}

func (m *Model) runRows(w int) ([]string, string) {
	st := m.ctx.Styles
	rs := m.runs()
	sw := len("STATE")
	for _, r := range rs {
		sw = max(sw, len(record.StableStateWord(r)))
	}
	sw = min(sw, 28)
	cols := []int{25, sw, 10, max(w-2-25-sw-10-3, 8)}
	rows := []string{"  " + st.TableHead.Render(common.JoinCells([]string{"RUN", "STATE", "STARTED", "COMMAND"}, cols))}
	if len(rs) == 0 {
		rows = append(rows, st.Faint.Render(common.Fit("  no runs recorded: e runs a command here (the bridge has no process list; only runs sandscope started are known)", w)))
		return rows, ""
	}
	lo, hi := window(m.cursor[RunsTab], len(rs), m.listHeight()-1)
	now := m.ctx.Clock()
	for i := lo; i < hi; i++ {
		r := rs[i]
		word := record.StableStateWord(r)
		cells := []string{common.SanitizeText(r.ID), st.Badge(badge(r)).Render(word), common.Since(now, r.Started), common.Argv(r.Argv)}
		line := common.JoinCells(cells, cols)
		if i == m.cursor[RunsTab] {
			line = st.Selected.Render("▸ " + common.Fit(common.StripANSI(line), w-2))
		} else {
			line = "  " + line
		}
		rows = append(rows, common.Fit(line, w))
	}
	r, _ := m.curRun()
	detail := common.SanitizeText(r.Evidence)
	if r.ErrCode != "" || r.Message != "" {
		detail += " · " + common.SanitizeText(strings.TrimSpace(r.ErrCode+" "+r.Message))
	}
	if r.Session != "" {
		detail = "session " + common.SanitizeText(r.Session) + " · " + detail
	}
	return rows, detail
}

func (m *Model) sessionRows(w int) ([]string, string) {
	st := m.ctx.Styles
	ss := m.sb.LiveSessions()
	cols := []int{30, 14, 10, max(w-2-30-14-10-3, 4)}
	rows := []string{"  " + st.TableHead.Render(common.JoinCells([]string{"SESSION", "CREATED HERE", "LAST USED", ""}, cols))}
	if len(ss) == 0 {
		rows = append(rows, st.Faint.Render(common.Fit("  no sessions created or used here: c creates one (the bridge has no list)", w)))
		return rows, ""
	}
	lo, hi := window(m.cursor[SessionsTab], len(ss), m.listHeight()-1)
	now := m.ctx.Clock()
	for i := lo; i < hi; i++ {
		s := ss[i]
		mark := ""
		if s.ID == m.session {
			mark = "← exec and shell use it"
		}
		created := "no (used)"
		if s.Created {
			created = "yes"
		}
		line := common.JoinCells([]string{common.SanitizeText(s.ID), created, common.Since(now, s.Seen), mark}, cols)
		if i == m.cursor[SessionsTab] {
			line = st.Selected.Render("▸ " + common.Fit(common.StripANSI(line), w-2))
		} else {
			line = "  " + line
		}
		rows = append(rows, common.Fit(line, w))
	}
	return rows, "sessions die with their container; space chooses one for exec and shell"
}
