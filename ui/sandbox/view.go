package sandbox

import (
	"fmt"
	"strings"
	"time"

	"sandscope/themes"
	"sandscope/ui/common"
)

func (m *Model) listHeight() int { return max(m.height-5, 1) }

func (m *Model) tabLabel(t Tab) string {
	n := len(m.st.Incarnations)
	switch t {
	case ProcessesTab:
		n = len(m.st.Processes)
	case TerminalsTab:
		n = len(m.st.Terminals)
	}
	return fmt.Sprintf("%s (%d)", t, n)
}

// View renders the screen: a title with the sandbox state, tabs, the list, and a detail line.
func (m *Model) View() string {
	st := m.ctx.Styles
	w := m.width
	now := m.ctx.Clock()
	var b strings.Builder

	b.WriteString(common.Fit(st.Title.Render("Sandbox "+m.id)+"  "+m.sandboxState(now), w) + "\n")
	var tabs []string
	for t := Tab(0); t < tabCount; t++ {
		if t == m.tab {
			tabs = append(tabs, st.TabActive.Render("["+m.tabLabel(t)+"]"))
		} else {
			tabs = append(tabs, st.Tab.Render(" "+m.tabLabel(t)+" "))
		}
	}
	b.WriteString(common.Fit(strings.Join(tabs, ""), w) + "\n")

	var head string
	var rows []string
	var detail string
	switch m.tab {
	case ProcessesTab:
		head, rows, detail = m.procRows(now)
	case TerminalsTab:
		head, rows, detail = m.termRows(now)
	default:
		head, rows, detail = m.incRows(now)
	}
	b.WriteString("  " + st.TableHead.Render(common.Fit(head, w-2)) + "\n")
	lh := m.listHeight()
	c := m.cursor[m.tab]
	if c < m.offset[m.tab] {
		m.offset[m.tab] = c
	}
	if c >= m.offset[m.tab]+lh {
		m.offset[m.tab] = c - lh + 1
	}
	n := 0
	if len(rows) == 0 {
		msg := "  nothing yet"
		switch {
		case m.st.Events == 0 && m.st.WatchErr == "":
			msg = "  waiting for the first answer from the bridge…"
		case m.tab == ProcessesTab:
			msg = "  no processes; press " + m.ctx.Keys.Exec.Help().Key + " to run one"
		case m.tab == TerminalsTab:
			msg = "  no terminals"
		}
		b.WriteString(st.Faint.Render(common.Fit(msg, w)) + "\n")
		n++
	}
	for i := m.offset[m.tab]; i < len(rows) && n < lh; i++ {
		b.WriteString(rows[i] + "\n")
		n++
	}
	for ; n < lh; n++ {
		b.WriteString("\n")
	}
	b.WriteString(st.Faint.Render(common.Fit(common.SanitizeText(detail), w)))
	out := b.String()
	if m.dialog != nil {
		out = common.Overlay(out, m.dialog.View(st, m.ctx.Keys, w), w, m.height)
	}
	return out
}

// sandboxState is the title's state: RUNNING (incarnation k) / STOPPED / UNKNOWN.
func (m *Model) sandboxState(now time.Time) string {
	st := m.ctx.Styles
	inc := ""
	if m.st.Current.Number > 0 {
		inc = fmt.Sprintf(" · incarnation #%d", m.st.Current.Number)
		if m.st.Current.Inferred {
			inc += " (inferred)"
		}
	}
	switch {
	case common.Classify(m.st.WatchCause) == common.ErrWrongAPI:
		return st.Badge(themes.BadgeUnknown).Render("UNKNOWN") + st.Faint.Render(inc+" · "+common.WrongAPIText)
	case m.st.WatchErr != "":
		return st.Badge(themes.BadgeUnknown).Render("UNKNOWN") + st.Faint.Render(inc+" · "+common.ConnProblem(m.st.WatchCause)+" since "+
			common.Since(now, m.st.ErrSince)+"; last answer "+common.Since(now, m.st.LastOK))
	case m.st.Running == nil:
		if m.st.Events == 0 {
			return st.Faint.Render("connecting…")
		}
		return st.Badge(themes.BadgeUnknown).Render("UNKNOWN") + st.Faint.Render(inc)
	case *m.st.Running:
		every := m.ctx.WatchFast
		if every <= 0 {
			every = time.Second
		}
		return st.Badge(themes.BadgeRunning).Render("RUNNING") + st.Faint.Render(inc+" · states polled every "+every.String())
	}
	return st.Badge(themes.BadgeStopped).Render("STOPPED") + st.Faint.Render(inc+" · nothing runs until something is started")
}

func incLabel(n int, inferred bool) string {
	if n == 0 {
		return "-"
	}
	if inferred {
		return fmt.Sprintf("#%d?", n)
	}
	return fmt.Sprintf("#%d", n)
}

func duration(start time.Time, end *time.Time, running bool, now time.Time) string {
	if start.IsZero() {
		return "-"
	}
	if end != nil && !end.IsZero() {
		return common.Age(end.Sub(start))
	}
	if running {
		return common.Age(now.Sub(start))
	}
	return "-"
}

var procCols = []int{12, 24, 4, 0, 12, 8, 6}

func (m *Model) row(i int, mark bool, cells []string, cols []int, style func(string) string) string {
	st := m.ctx.Styles
	w := m.width
	line := common.JoinCells(cells, cols)
	gutter := "  "
	if mark {
		gutter = " *"
	}
	if i == m.cursor[m.tab] {
		return st.Selected.Render(common.Fit(">"+gutter[1:]+common.StripANSI(line), w))
	}
	if style != nil {
		return gutter + style(common.Fit(common.StripANSI(line), w-2))
	}
	return gutter + common.Fit(line, w-2)
}

func flex(cols []int, w int) []int {
	out := append([]int(nil), cols...)
	fixed := 2
	for _, c := range cols {
		fixed += c + 1
	}
	for i, c := range out {
		if c == 0 {
			out[i] = max(w-fixed, 8)
		}
	}
	return out
}

func (m *Model) procRows(now time.Time) (string, []string, string) {
	st := m.ctx.Styles
	cols := flex(procCols, m.width)
	head := common.JoinCells([]string{"ID", "STATE", "INC", "COMMAND", "CWD", "STARTED", "TOOK"}, cols)
	var rows []string
	for i, e := range m.st.Processes {
		cond := m.procCond(e)
		badge, label := common.ProcessBadge(e.Process.State, e.Process.Exit, e.Process.Error, cond, e.Incarnation, e.LastSeen, now)
		cells := []string{
			common.SanitizeText(e.Process.ID),
			st.Badge(badge).Render(label),
			incLabel(e.Incarnation, e.Inferred),
			common.Argv(e.Process.Command),
			common.SanitizeText(e.Process.Cwd),
			common.Clock(e.Process.StartedAt),
			duration(e.Process.StartedAt, e.Process.EndedAt, e.Process.State == "running" && cond == common.Current, now),
		}
		var style func(string) string
		if cond == common.Stale || cond == common.Lost {
			style = func(s string) string { return st.Stale.Render(s) }
			if cond == common.Lost {
				// keep the LOST badge loud on a greyed row
				cells[1] = st.Badge(badge).Render(common.Fit(label, cols[1]))
				style = nil
			}
		}
		rows = append(rows, m.row(i, m.marked[entryKey(e)], cells, cols, style))
	}
	detail := fmt.Sprintf("%d marked · ", len(m.marked))
	if len(m.marked) == 0 {
		detail = ""
	}
	if e := m.curProc(); e != nil {
		detail += m.procDetail(e)
	}
	return head, rows, detail
}

func (m *Model) procDetail(e *procEntry) string {
	if e.Earlier {
		return "seen by an earlier run of sandscope · " + m.procDetailNow(e)
	}
	return m.procDetailNow(e)
}

func (m *Model) procDetailNow(e *procEntry) string {
	switch m.procCond(e) {
	case common.Lost:
		where := "the sandbox is now stopped"
		if m.st.Running == nil || *m.st.Running {
			where = fmt.Sprintf("the sandbox now runs incarnation %s", incLabel(m.st.Current.Number, m.st.Current.Inferred))
		}
		return fmt.Sprintf("%s was running and vanished with its container (%s); %s", e.Process.ID, strings.Join(sanitizeAll(e.Evidence), "; "), where)
	case common.Stale:
		return fmt.Sprintf("%s belongs to incarnation #%d (now #%d): last known state kept; actions refused; %s relaunches it here",
			e.Process.ID, e.Incarnation, m.st.Current.Number, m.ctx.Keys.Relaunch.Help().Key)
	case common.Unknown:
		return fmt.Sprintf("%s: bridge not answering; last confirmed RUNNING %s", e.Process.ID, common.Since(m.ctx.Clock(), e.LastSeen))
	}
	if e.Process.Error != nil {
		return fmt.Sprintf("%s: %s", common.SanitizeText(e.Process.Error.Code), common.SanitizeText(e.Process.Error.Message))
	}
	return fmt.Sprintf("%s pid %d · %s opens its log · %s picks for multi-follow", e.Process.ID, e.Process.PID,
		m.ctx.Keys.Open.Help().Key, m.ctx.Keys.Select.Help().Key)
}

var termCols = []int{12, 24, 4, 0, 12}

func (m *Model) termRows(now time.Time) (string, []string, string) {
	st := m.ctx.Styles
	cols := flex(termCols, m.width)
	head := common.JoinCells([]string{"ID", "STATE", "INC", "COMMAND", "CWD"}, cols)
	var rows []string
	for i, e := range m.st.Terminals {
		cond := m.termCond(e)
		badge, label := common.ProcessBadge(e.Terminal.Status, e.Terminal.Exit, e.Terminal.Error, cond, e.Incarnation, e.LastSeen, now)
		cmd := common.Argv(e.Terminal.Command)
		if cmd == "" {
			cmd = "(default shell)"
		}
		cells := []string{common.SanitizeText(e.Terminal.ID), st.Badge(badge).Render(label), incLabel(e.Incarnation, e.Inferred), cmd, common.SanitizeText(e.Terminal.Cwd)}
		var style func(string) string
		if cond == common.Stale {
			style = func(s string) string { return st.Stale.Render(s) }
		}
		rows = append(rows, m.row(i, false, cells, cols, style))
	}
	detail := ""
	if e := m.curTerm(); e != nil {
		switch m.termCond(e) {
		case common.Stale, common.Lost:
			detail = fmt.Sprintf("%s belonged to incarnation #%d: its container is gone; attaching is refused", e.Terminal.ID, e.Incarnation)
		default:
			detail = fmt.Sprintf("%s pid %d · %s attaches in a pane", e.Terminal.ID, e.Terminal.PID, m.ctx.Keys.Open.Help().Key)
		}
	}
	return head, rows, detail
}

var incCols = []int{6, 9, 9, 10, 0}

func (m *Model) incRows(now time.Time) (string, []string, string) {
	cols := flex(incCols, m.width)
	head := common.JoinCells([]string{"INC", "FIRST", "LAST", "BOUNDARY", "EVIDENCE"}, cols)
	var rows []string
	for i, e := range m.st.Incarnations {
		kind := "reported"
		if e.Inferred {
			kind = "inferred"
		}
		if i == 0 {
			kind = "first seen"
		}
		cur := ""
		if i == len(m.st.Incarnations)-1 {
			cur = " ◀ now"
		}
		cells := []string{fmt.Sprintf("#%d", e.Number), common.Clock(e.FirstSeen), common.Clock(e.LastSeen), kind, strings.Join(sanitizeAll(e.Evidence), "; ") + cur}
		var style func(string) string
		if i < len(m.st.Incarnations)-1 {
			st := m.ctx.Styles
			style = func(s string) string { return st.Stale.Render(s) }
		}
		rows = append(rows, m.row(i, false, cells, cols, style))
	}
	detail := "A boundary is reported when the bridge says which container answered, inferred from evidence otherwise."
	if c := m.cursor[TimelineTab]; c < len(m.st.Incarnations) {
		e := m.st.Incarnations[c]
		detail = fmt.Sprintf("#%d: first seen %s, last seen %s · %s", e.Number, common.Since(now, e.FirstSeen), common.Since(now, e.LastSeen), strings.Join(sanitizeAll(e.Evidence), "; "))
		if e.Earlier {
			detail = "seen by an earlier run of sandscope · " + detail
		}
	}
	return head, rows, detail
}
