package termpane

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"sandscope/client"
	"sandscope/sanitize"
	"sandscope/themes"
	"sandscope/vocab"
)

// View draws the header and the emulator's latest snapshot, exactly width × height cells.
func (m *Model) View() string {
	cols, rows := m.innerSize()
	var b strings.Builder
	b.WriteString(fit(m.header(), m.width))
	for y := 0; y < rows; y++ {
		b.WriteByte('\n')
		line := ""
		if y < len(m.snap.Lines) {
			line = m.snap.Lines[y]
			if m.focused && !m.opts.Plain && m.snap.CursorVisible && y == m.snap.CursorY && m.snap.CursorX < cols {
				line = withCursor(line, m.snap.CursorX)
			}
		}
		b.WriteString(fit(line, cols))
	}
	return b.String()
}

// header is: terminal ID · STATE detail · catching up · gaps · cursor · command · title.
func (m *Model) header() string {
	st := m.opts.Styles
	style := func(s lipgloss.Style, text string) string {
		if st == nil {
			return text
		}
		return s.Render(text)
	}
	faint := func(text string) string {
		if st == nil {
			return text
		}
		return st.Faint.Render(text)
	}
	sep := faint(" · ")
	id := sanitize.Title(m.opts.TerminalID)
	if len(id) > 8 {
		id = id[:8] + "…"
	}
	title := "▌term " + id
	if st != nil {
		title = style(st.Title, title)
	}
	// Most important first: a narrow pane truncates from the right.
	parts := []string{title}
	badge, label := m.badge()
	if st != nil {
		label = st.Badge(badge).Render(label)
	}
	parts = append(parts, label)
	if f := m.snap.Failure; f != "" {
		txt := "DISPLAY FAILED: " + sanitize.Title(f) + " (output still arrives; attach full screen to see it)"
		if st != nil {
			txt = st.Error.Render(txt)
		}
		parts = append(parts, txt)
	}
	if behind := m.snap.Behind(); behind > 0 {
		txt := "catching up: " + humanBytes(behind) + " behind"
		if st != nil {
			txt = st.Warning.Render(txt)
		}
		parts = append(parts, txt)
	}
	if m.gaps > 0 {
		txt := "GAP: output evicted by the bridge"
		if m.gaps > 1 {
			txt = fmt.Sprintf("%d GAPS: output evicted by the bridge", m.gaps)
		}
		if st != nil {
			txt = st.MarkerBad.Render(txt)
		}
		parts = append(parts, txt)
	}
	if c := cursorLabel(m.snap.Cursor); c != "" {
		parts = append(parts, faint(c))
	}
	if len(m.opts.Command) > 0 {
		parts = append(parts, sanitize.Title(strings.Join(m.opts.Command, " ")))
	}
	if t := sanitize.Title(m.snap.Title); t != "" {
		parts = append(parts, faint("“")+t+faint("”"))
	}
	if m.focused {
		parts = append(parts, faint("focused ("+m.leave.Help().Key+" leaves)"))
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
		return exitBadge(m.exit)
	case Errored:
		return themes.BadgeError, "ERROR: " + reason
	case Lost:
		s := "LOST"
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
	return themes.BadgeUnknown, "?"
}

func exitBadge(e *client.Exit) (themes.Badge, string) { return vocab.Ending(e) }

// cursorLabel shows a bridge cursor by its sequence number when it has the known format.
func cursorLabel(raw string) string {
	if raw == "" {
		return ""
	}
	if c := client.ParseCursor(raw); c.Known {
		return fmt.Sprintf("@%d", c.Seq)
	}
	return "@" + sanitize.Elide(sanitize.Label(raw), 9).String()
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// fit truncates or pads a (possibly styled) line to exactly w cells.
func fit(s string, w int) string {
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "")
	}
	if n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// withCursor draws the cursor cell of a styled line in reverse video.
func withCursor(line string, x int) string {
	cell := ansi.Strip(ansi.Cut(line, x, x+1))
	if cell == "" {
		cell = " "
	}
	return ansi.Truncate(line, x, "") + "\x1b[m\x1b[7m" + cell + "\x1b[m" + ansi.TruncateLeft(line, x+1, "")
}
