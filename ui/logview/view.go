package logview

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/jsonl"
	"sandscope/ui/logbuf"
	"sandscope/vocab"
)

// View renders the title, the visible lines, the status line and the input or note line.
func (m *Model) View() string {
	st := m.ctx.Styles
	w := m.width
	var b strings.Builder
	b.WriteString(common.Fit(m.title(), w) + "\n")
	rows := m.body()
	h := m.bodyHeight()
	for i := 0; i < h; i++ {
		if i < len(rows) {
			b.WriteString(common.Fit(rows[i], w))
		}
		b.WriteString("\n")
	}
	b.WriteString(common.Fit(m.statusLine(), w) + "\n")
	switch {
	case m.inputMode != "":
		label := "/"
		if m.inputMode == "filter" {
			label = "filter (empty clears): "
		}
		b.WriteString(common.Fit(st.HelpKey.Render(label)+m.input.View(), w))
	case m.searching:
		b.WriteString(st.Faint.Render(common.Fit("searching for "+fmt.Sprintf("%q", m.query)+"…", w)))
	case m.bufErr != nil:
		b.WriteString(st.Error.Render(common.Fit("log buffer: "+m.bufErr.Error(), w)))
	case m.buf != nil && m.buf.Err() != nil:
		b.WriteString(st.Warning.Render(common.Fit("log buffer disk trouble (history kept in memory): "+m.buf.Err().Error(), w)))
	default:
		b.WriteString(st.Faint.Render(common.Fit(m.modeLine(), w)))
	}
	out := b.String()
	if m.dialog != nil {
		out = common.Overlay(out, m.dialog.View(st, m.ctx.Keys, w), w, m.height)
	}
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (m *Model) modeLine() string {
	parts := []string{"follow " + onOff(m.follow), "time " + onOff(m.stamps), "wrap " + onOff(m.wrap), "jsonl " + onOff(m.jsonl)}
	if m.filterText != "" {
		parts = append(parts, fmt.Sprintf("filter %q (%d lines)", m.filterText, m.total()))
	}
	if m.query != "" {
		parts = append(parts, fmt.Sprintf("search %q", m.query))
	}
	if m.buf != nil {
		parts = append(parts, vocab.Count(m.buf.Len(), "line")+", "+vocab.Count(m.buf.Markers(), "marker"))
	}
	return strings.Join(parts, " · ")
}

func (m *Model) title() string {
	if m.all != "" {
		return m.allTitle()
	}
	st := m.ctx.Styles
	var parts []string
	for _, s := range m.sources {
		label := vocab.Text(s.name) + ": " + common.Argv(s.target.Process.Command)
		switch {
		case s.target.Lost:
			label = "(LOST) " + label
		case s.target.Stale:
			label = fmt.Sprintf("(STALE #%d) %s", s.target.Incarnation, label)
		}
		if len(m.sources) > 1 {
			parts = append(parts, st.Prefix(s.color).Render(vocab.Text(s.name))+" "+common.Argv(s.target.Process.Command))
		} else {
			parts = append(parts, label)
		}
	}
	sb := ""
	if len(m.sources) > 0 {
		sb = vocab.Text(m.sources[0].target.Sandbox)
	}
	return st.Title.Render("Logs") + st.Faint.Render(" · "+sb+" · ") + strings.Join(parts, st.Faint.Render(" │ "))
}

// statusLine shows each source's stream state with its facts.
func (m *Model) statusLine() string {
	st := m.ctx.Styles
	now := m.ctx.Clock()
	var parts []string
	for _, s := range m.sources {
		badge, label := badgeOf(s)
		head := st.Badge(badge).Render(label)
		if len(m.sources) > 1 {
			head = st.Prefix(s.color).Render(vocab.Text(s.name)) + " " + head
		}
		var facts []string
		switch s.state {
		case Quiet:
			facts = append(facts, "silent "+common.Age(now.Sub(s.quietSince()))+", status "+common.Since(now, s.checkedAt)+": running")
		case Reconnecting:
			if s.reason != "" {
				facts = append(facts, "interrupted: "+common.SanitizeText(s.reason))
			}
		case SuspectEnd:
			facts = append(facts, "stream ended but status "+common.Since(now, s.checkedAt)+" says running; still following")
		case Ended:
			facts = append(facts, "confirmed by status")
		case Lost:
			facts = append(facts, s.endLabel)
		case Failed:
			if s.reason != "" {
				facts = append(facts, common.SanitizeText(s.reason))
			} else if s.endLabel != "" {
				facts = append(facts, s.endLabel)
			}
		}
		if len(m.sources) == 1 {
			facts = append(facts, "cursor "+common.ShortCursor(s.cursor), common.Bytes(s.bytes))
			if s.state == Live || s.rate > 0 {
				facts = append(facts, common.Bytes(int64(s.rate))+"/s")
			}
		} else {
			facts = append(facts, common.Bytes(s.bytes))
		}
		if s.gaps > 0 {
			facts = append(facts, vocab.Count(s.gaps, "gap"))
		}
		if s.breaks > 0 && len(m.sources) == 1 {
			facts = append(facts, vocab.Count(s.breaks, "interruption"))
		}
		parts = append(parts, head+" "+st.Faint.Render(strings.Join(facts, " · ")))
	}
	line := strings.Join(parts, st.Faint.Render(" │ "))
	if len(m.sources) > 1 && ansi.StringWidth(line) > m.width {
		return m.statusSummary()
	}
	return line
}

// statusSummary is the status line of more sources than fit one by one (follow-all of a busy
// sandbox): how many are in each state, and the bytes of all, so nothing is cut.
func (m *Model) statusSummary() string {
	st := m.ctx.Styles
	var counts [Failed + 1]int
	var bytes int64
	for _, s := range m.sources {
		counts[s.state]++
		bytes += s.bytes
	}
	words := [...]string{Connecting: "CONNECTING", Live: "LIVE", Quiet: "QUIET", Reconnecting: "INTERRUPTED",
		SuspectEnd: "SUSPECT END", Ended: "ENDED", Lost: "LOST", Failed: "FAILED"}
	badges := [...]themes.Badge{Connecting: themes.BadgeConnecting, Live: themes.BadgeLive, Quiet: themes.BadgeQuiet,
		Reconnecting: themes.BadgeReconnecting, SuspectEnd: themes.BadgeSuspectEnd, Ended: themes.BadgeEnded,
		Lost: themes.BadgeLost, Failed: themes.BadgeFailed}
	// what needs attention first
	var parts []string
	for _, state := range []State{Lost, Failed, SuspectEnd, Reconnecting, Live, Quiet, Connecting, Ended} {
		if n := counts[state]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d ", n)+st.Badge(badges[state]).Render(words[state]))
		}
	}
	return st.Faint.Render(vocab.Count(len(m.sources), "source")+": ") + strings.Join(parts, st.Faint.Render(" · ")) +
		st.Faint.Render(" · "+common.Bytes(bytes)+" in all")
}

// quietSince is when output last arrived (or when following began).
func (s *source) quietSince() time.Time {
	if !s.lastData.IsZero() {
		return s.lastData
	}
	return s.since
}

// body renders the visible entries as screen rows.
func (m *Model) body() []string {
	if m.buf == nil {
		return []string{m.ctx.Styles.Error.Render("cannot keep a log buffer: " + fmt.Sprint(m.bufErr))}
	}
	h := m.bodyHeight()
	off := m.offset
	if m.follow {
		off = m.bottomOffset()
	}
	var lines []logbuf.Line
	if m.filter != nil {
		lines = m.filter.Lines(off, h)
	} else {
		lines = m.buf.Lines(off, h)
	}
	if len(lines) == 0 {
		msg := "waiting for output…"
		if m.filter != nil {
			msg = "no lines match the filter"
		}
		return []string{m.ctx.Styles.Faint.Render(msg)}
	}
	var rows []string
	for j, l := range lines {
		idx := off + j
		if m.filter != nil {
			idx = m.filter.Index(off + j)
		}
		rows = append(rows, m.render(l, idx)...)
	}
	if len(rows) > h {
		if m.follow {
			rows = rows[len(rows)-h:]
		} else {
			rows = rows[:h]
		}
	}
	return rows
}

func (m *Model) sourceIndex(name string) int {
	for i, s := range m.sources {
		if s.name == name {
			return i
		}
	}
	return 0
}

// render turns one entry into one row (or several when wrapping).
func (m *Model) render(l logbuf.Line, idx int) []string {
	st := m.ctx.Styles
	prefix := ""
	if m.stamps {
		prefix += st.Timestamp.Render(l.Time.Format("15:04:05.000")) + " "
	}
	if len(m.sources) > 1 || m.all != "" {
		color := 0
		if si := m.sourceIndex(l.Source); si < len(m.sources) {
			color = m.sources[si].color
		}
		prefix += st.Prefix(color).Render(common.Fit(l.Source, m.prefixWidth())) + " "
	}
	if l.IsMarker() {
		style := st.Marker
		switch l.Kind {
		case logbuf.Gap, logbuf.SuspectEnd, logbuf.Lost, logbuf.Failed:
			style = st.MarkerBad
		case logbuf.Note:
			style = st.Info
		}
		if idx == m.match && m.match >= 0 {
			prefix += st.Match.Render(">") + " "
		}
		text := "── " + l.Text + " ──"
		if l.Kind == logbuf.Note {
			text = "── note: " + l.Text + " ──"
		}
		if l.Cursor != "" && l.Kind != logbuf.Note {
			text += " @" + common.ShortCursor(l.Cursor)
		}
		return m.wrapRows(prefix, style.Render(text))
	}
	gutter := "  "
	if l.Stream == 1 {
		gutter = st.Stderr.Render("E ")
	}
	if idx == m.match && m.match >= 0 {
		gutter = st.Match.Render(">") + gutter[1:]
	}
	text := l.Text
	if m.plain {
		text = logbuf.Plain(text)
	}
	switch {
	case m.jsonl:
		tw := max(m.width-ansi.StringWidth(prefix)-2, 10)
		if m.wrap {
			// the summary may take several rows: wrapRows folds it (up to 20 rows per line)
			tw *= 20
		}
		r := jsonl.Render(logbuf.Plain(text), tw)
		if r.JSON {
			text = r.Style(m.jsonStyle)
		}
	case m.query != "":
		text = highlight(text, m.query, st.Match.Render)
	}
	if l.Stream == 1 && !strings.Contains(text, "\x1b") {
		text = st.Stderr.Render(text)
	}
	if l.Capped {
		text += st.Faint.Render(" [line cut for display; save keeps it whole]")
	}
	return m.wrapRows(prefix+gutter, text)
}

func (m *Model) prefixWidth() int {
	w := 2
	for _, s := range m.sources {
		w = max(w, ansi.StringWidth(s.name))
	}
	if m.all != "" {
		return min(w, 25) // a follow-all name: up to 16 of the command's, a dash and 8 of the ID
	}
	return min(w, 16)
}

func (m *Model) wrapRows(prefix, text string) []string {
	pw := ansi.StringWidth(prefix)
	tw := max(m.width-pw, 8)
	if !m.wrap {
		return []string{prefix + ansi.Truncate(text, tw, "…")}
	}
	wrapped := strings.Split(ansi.Hardwrap(text, tw, true), "\n")
	rows := make([]string, len(wrapped))
	pad := strings.Repeat(" ", pw)
	for i, r := range wrapped {
		if i == 0 {
			rows[i] = prefix + r
		} else {
			rows[i] = pad + r
		}
	}
	return rows
}

func (m *Model) jsonStyle(c jsonl.Class, s string) string {
	st := m.ctx.Styles
	switch c {
	case jsonl.Faint:
		return st.Faint.Render(s)
	case jsonl.Type, jsonl.Role:
		return st.Title.Render(s)
	case jsonl.Tool, jsonl.Name:
		return st.JSONKey.Render(s)
	case jsonl.Text:
		return st.Text.Render(s)
	case jsonl.Key:
		return st.Faint.Render(s)
	case jsonl.Error:
		return st.Error.Render(s)
	case jsonl.Success:
		return st.Success.Render(s)
	}
	return s
}

// highlight marks every case-insensitive occurrence of q in the line's plain text.
func highlight(text, q string, mark func(...string) string) string {
	plain := logbuf.Plain(text)
	lp, lq := strings.ToLower(plain), strings.ToLower(q)
	if q == "" || !strings.Contains(lp, lq) || len(lp) != len(plain) {
		return text
	}
	var sb strings.Builder
	for {
		i := strings.Index(lp, lq)
		if i < 0 {
			sb.WriteString(plain)
			break
		}
		sb.WriteString(plain[:i])
		sb.WriteString(mark(plain[i : i+len(q)]))
		plain, lp = plain[i+len(q):], lp[i+len(q):]
	}
	return sb.String()
}
