package termpane

import (
	"fmt"
	"strings"

	"sandscope/client"
	"sandscope/sanitize"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/vocab"
)

// View draws the header and the emulator's latest snapshot, exactly width × height cells.
func (m *Model) View() string {
	cols, rows := m.innerSize()
	var b strings.Builder
	if m.scrolled {
		lines := m.scrollback(rows) // (first: rendering kept rows may add some)
		b.WriteString(common.Fit(m.header(), m.width))
		for _, line := range lines {
			b.WriteByte('\n')
			b.WriteString(common.FitCells(line, cols))
		}
		return b.String()
	}
	b.WriteString(common.Fit(m.header(), m.width))
	for y := 0; y < rows; y++ {
		b.WriteByte('\n')
		line := ""
		if y < len(m.snap.Lines) {
			line = m.snap.Lines[y]
			if m.focused && !m.opts.Plain && m.snap.CursorVisible && y == m.snap.CursorY && m.snap.CursorX < cols {
				line = common.WithCursor(line, m.snap.CursorX, m.ctx.Styles.Cursor)
			}
		}
		b.WriteString(common.FitCells(line, cols))
	}
	return b.String()
}

// scrollback is the rows a scrolled view shows: the kept rows from scrollTop, then the screen's.
func (m *Model) scrollback(rows int) []string {
	out, _, _ := m.w.hist.Window(m.scrollTop, rows)
	for y := 0; len(out) < rows; y++ {
		line := ""
		if y < len(m.snap.Lines) {
			line = m.snap.Lines[y]
		}
		out = append(out, line)
	}
	return out
}

// scrollPosition is "scrollback: line N of M": N the top row shown, M every row kept and the
// screen's.
func (m *Model) scrollPosition() string {
	n, base := m.w.hist.Len()
	_, rows := m.innerSize()
	return fmt.Sprintf("scrollback: line %d of %d · %s returns to live", m.scrollTop-base+1, n+rows, m.ctx.Keys.Bottom.Help().Key)
}

// header is: terminal ID · STATE detail · catching up · gaps · cursor · command · title.
func (m *Model) header() string {
	st := m.ctx.Styles
	sep := st.Faint.Render(" · ")
	id := sanitize.Title(client.ShortID(m.opts.TerminalID))
	if id != sanitize.Title(m.opts.TerminalID) {
		id += "…"
	}
	// Most important first: a narrow pane cuts from the right.
	parts := []string{st.Title.Render("▌term " + id)}
	badge, label := m.badge()
	parts = append(parts, st.Badge(badge).Render(label))
	if m.scrolled {
		parts = append(parts, st.Warning.Render(m.scrollPosition()))
	}
	if f := m.snap.Failure; f != "" {
		parts = append(parts, st.Error.Render("DISPLAY FAILED: "+sanitize.Title(f)+" (output still arrives; attach full screen to see it)"))
	}
	if behind := m.snap.Behind(); behind > 0 {
		parts = append(parts, st.Warning.Render("catching up: "+common.Bytes(behind)+" behind"))
	}
	if m.gaps > 0 {
		txt := "GAP: output evicted by the bridge"
		if m.gaps > 1 {
			txt = fmt.Sprintf("%d GAPS: output evicted by the bridge", m.gaps)
		}
		parts = append(parts, st.MarkerBad.Render(txt))
	}
	if c := common.CursorSeq(m.snap.Cursor); c != "" {
		parts = append(parts, st.Faint.Render(c))
	}
	if len(m.opts.Command) > 0 {
		parts = append(parts, common.Argv(m.opts.Command))
	}
	if t := sanitize.Title(m.snap.Title); t != "" {
		parts = append(parts, st.Faint.Render("“")+t+st.Faint.Render("”"))
	}
	if m.focused {
		parts = append(parts, st.Faint.Render("focused ("+m.leave.Help().Key+" leaves)"))
	}
	return strings.Join(parts, sep)
}

// badge is the state label with its detail.
func (m *Model) badge() (themes.Badge, string) {
	reason := sanitize.Title(m.reason)
	switch m.state {
	case Connecting:
		return themes.BadgeConnecting, "CONNECTING"
	case Live:
		if m.replayed > 0 {
			return themes.BadgeLive, fmt.Sprintf("LIVE (REPLAYED: screen cleared and repainted from the bridge's buffer, %d bytes; stable has no cursors)", m.replayed)
		}
		if m.attempt > 0 {
			return themes.BadgeLive, fmt.Sprintf("LIVE (resumed, attempt %d)", m.attempt)
		}
		return themes.BadgeLive, "LIVE"
	case Reconnecting:
		s := "RECONNECTING from cursor"
		if m.opts.Replays {
			s = "RECONNECTING (no cursors: the bridge will replay its whole buffer)"
		}
		if m.attempt > 0 {
			s += fmt.Sprintf(" (attempt %d)", m.attempt)
		}
		if reason != "" {
			s += ": " + reason
		}
		return themes.BadgeReconnecting, s
	case Exited:
		if m.endedUnknown {
			return themes.BadgeEnded, "ENDED · exit code unknown (the stable bridge does not report it)"
		}
		return vocab.Ending(m.exit)
	case Errored:
		return themes.BadgeError, "ERROR: " + reason
	case Lost:
		s := vocab.Lost
		if reason != "" {
			s += ": " + reason
		}
		if m.loss != nil {
			ev := sanitize.Title(m.loss.Lookup)
			if m.loss.Inferred {
				ev += ", inferred"
			}
			s += " [" + ev + "]"
		}
		return themes.BadgeLost, s
	case Failed:
		return themes.BadgeFailed, "FAILED: " + reason
	}
	return themes.BadgeUnknown, vocab.Unknown
}
