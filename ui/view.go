package ui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"

	"sandscope/ui/common"
)

// View draws the header, the top screen, the status area and the key hints.
func (m *Model) View() string {
	if m.quitting {
		return ""
	}
	if m.width == 0 || m.height == 0 {
		return "starting…"
	}
	st := m.ctx.Styles
	_, bh := m.bodySize()
	body := m.top().View()
	if m.notesOpen {
		body = common.Overlay(body, m.notes.View(), m.width, bh)
	}
	if m.panelOpen {
		body = common.Overlay(body, m.panel.View(), m.width, bh)
	}
	if m.help {
		body = common.Overlay(body, m.helpView(), m.width, bh)
	}
	if m.dialog != nil {
		body = common.Overlay(body, m.dialog.View(st, m.ctx.Keys, m.width), m.width, bh)
	}
	if m.confirm != nil {
		body = common.Overlay(body, m.confirm.View(st, m.ctx.Keys, m.width), m.width, bh)
	}
	lines := strings.Split(body, "\n")
	for len(lines) < bh {
		lines = append(lines, "")
	}
	lines = lines[:bh]
	for i := range lines {
		lines[i] = common.Fit(lines[i], m.width)
	}
	return strings.Join([]string{m.header(), strings.Join(lines, "\n"), m.statusView(), m.hints()}, "\n")
}

func (m *Model) header() string {
	st := m.ctx.Styles
	mode := "remote"
	if m.ctx.Local {
		mode = "local"
	}
	parts := []string{" sandscope", mode + " bridge " + m.ctx.BridgeLabel}
	if m.ctx.ContextName != "" {
		parts = append(parts, "context "+m.ctx.ContextName)
	}
	var crumbs []string
	for _, c := range m.stack {
		crumbs = append(crumbs, common.SanitizeText(c.Title()))
	}
	parts = append(parts, strings.Join(crumbs, " › "))
	line := strings.Join(parts, " │ ")
	if n := m.notes.Unread(); n > 0 && !m.notesOpen {
		// the unread count keeps its place at any width: the rest is cut before it
		note := fmt.Sprintf(" │ %s %d new ", m.ctx.Keys.Notifications.Help().Key, n)
		if rest := m.width - lipgloss.Width(note); lipgloss.Width(line) > rest {
			line = common.Fit(line, max(rest, 0)) // (cut with "…")
		}
		line += note
	}
	return st.Header.Render(common.Fit(line, m.width))
}

func (m *Model) statusView() string {
	st := m.ctx.Styles
	now := m.ctx.Clock()
	if m.connErr != nil {
		text := ""
		switch common.Classify(m.connErr) {
		case common.ErrUnauthorized:
			text = "UNAUTHORIZED: " + common.UnauthorizedHint
		case common.ErrUnreachable:
			text = "UNREACHABLE: " + common.SanitizeText(m.connErr.Error())
		case common.ErrCapacity:
			_, rest, _ := strings.Cut(common.CapacityText(m.connErr), ": ")
			text = "NO CAPACITY: " + rest
		default:
			text = "BRIDGE ERROR: " + common.SanitizeText(m.connErr.Error())
		}
		if !m.retryAt.IsZero() {
			secs := int(m.retryAt.Sub(now).Seconds() + 0.999)
			if secs < 0 {
				secs = 0
			}
			// the countdown first: the error text may be cut at the edge
			head, rest, _ := strings.Cut(text, ": ")
			text = fmt.Sprintf("%s · retrying in %ds (attempt %d, %s now) · %s", head, secs, m.attempts+1, m.ctx.Keys.Refresh.Help().Key, rest)
		}
		return st.Error.Render(common.Fit(text, m.width))
	}
	if m.status == "" {
		return st.Faint.Render(common.Fit("", m.width))
	}
	style := st.Info
	switch m.statusLevel {
	case common.Error:
		style = st.Error
	case common.Warn:
		style = st.Warning
	}
	// a long message wraps onto a second line (the screen above gave it up), then is cut
	ls := common.Wrap(m.status, m.width)
	if n := m.statusLines(); len(ls) > n {
		ls = ls[:n]
		ls[n-1] = common.More(ls[n-1], m.width)
	}
	for i, l := range ls {
		ls[i] = style.Render(common.Fit(l, m.width))
	}
	// a notification leads with its outcome in the theme's style for it
	if h := m.noteHead; h != "" && m.status == m.noteStatus && strings.HasPrefix(common.StripANSI(ls[0]), h) {
		hw := lipgloss.Width(h)
		ls[0] = st.Badge(m.noteBadge).Render(h) + style.Render(common.FitCells(strings.TrimPrefix(common.StripANSI(ls[0]), h), m.width-hw))
	}
	return strings.Join(ls, "\n")
}

// helpModel is bubbles/help styled from the theme, for the key hints and the help overlay.
func (m *Model) helpModel(width int) help.Model {
	st := m.ctx.Styles
	h := help.New()
	h.Width = width
	h.ShortSeparator = " · "
	h.FullSeparator = "   "
	h.Styles = help.Styles{
		ShortKey: st.HelpKey, ShortDesc: st.HelpDesc, ShortSeparator: st.HelpDesc,
		FullKey: st.HelpKey, FullDesc: st.HelpDesc, FullSeparator: st.HelpDesc,
		Ellipsis: st.HelpDesc,
	}
	return h
}

// hints is the one-line key help of the top screen (or of the open dialog).
func (m *Model) hints() string {
	var bs []key.Binding
	src := m.top().ShortHelp()
	if m.notesOpen {
		src = m.notes.ShortHelp()
	}
	if m.panelOpen {
		src = m.panel.ShortHelp()
	}
	for _, b := range src {
		if b.Enabled() {
			bs = append(bs, b)
		}
	}
	// the same keys at the same width draw the same line: styling it is most of a redraw's cost
	// when only the clock moved, so the last one is kept
	var k strings.Builder
	fmt.Fprintf(&k, "%d %p", m.width, m.ctx.Styles)
	for _, b := range bs {
		k.WriteString("\x00" + b.Help().Key + "\x00" + b.Help().Desc)
	}
	if key := k.String(); key != m.hintsKey {
		m.hintsKey, m.hintsLine = key, common.Fit(m.helpModel(m.width).ShortHelpView(bs), m.width)
	}
	return m.hintsLine
}

// helpColumns are the keys of the help overlay: those of the top screen (or of the open list or
// panel), then the root's own, less any key the screen already uses (the screen has it first).
func (m *Model) helpColumns() [][]key.Binding {
	if m.notesOpen {
		return m.notes.FullHelp()
	}
	if m.panelOpen {
		return m.panel.FullHelp()
	}
	cols := m.top().FullHelp()
	taken := map[string]bool{}
	for _, col := range cols {
		for _, b := range col {
			for _, kk := range b.Keys() {
				taken[kk] = true
			}
		}
	}
	var root []key.Binding
	for _, b := range m.actions().Bindings() {
		if !slices.ContainsFunc(b.Keys(), func(kk string) bool { return taken[kk] }) {
			root = append(root, b)
		}
	}
	return append(cols, m.ctx.Keys.HelpColumns(root)...)
}

// helpLines are the help overlay's keys, in columns laid out in rows that fit the width.
func (m *Model) helpLines() []string {
	maxW := max(m.width-6, 1) // the box's border and padding, and a cell of margin each side
	h := m.helpModel(0)       // rows are laid out here; nothing is cut
	var rows []string
	var cur [][]key.Binding
	for _, col := range m.helpColumns() {
		try := append(append([][]key.Binding(nil), cur...), col)
		if len(cur) > 0 && lipgloss.Width(h.FullHelpView(try)) > maxW {
			rows = append(rows, h.FullHelpView(cur))
			cur = nil
		}
		cur = append(cur, col)
	}
	if len(cur) > 0 {
		rows = append(rows, h.FullHelpView(cur))
	}
	lines := strings.Split(strings.Join(rows, "\n\n"), "\n")
	for i, l := range lines {
		if lipgloss.Width(l) > maxW {
			lines[i] = common.Fit(l, maxW) // never wider than the box: its border stays whole
		}
	}
	return lines
}

// helpRows is how many lines of keys the help overlay shows at once: the body less the box's
// border, title and blank line.
func (m *Model) helpRows() int {
	_, bh := m.bodySize()
	return max(bh-4, 1)
}

// helpView lists every key that works on the current screen in a box that always fits the body,
// border included: when the keys do not fit, it shows a window of them, scrolled with the moving
// keys, and says where it is.
func (m *Model) helpView() string {
	st := m.ctx.Styles
	k := m.ctx.Keys
	lines := m.helpLines()
	rows := m.helpRows()
	title := st.Title.Render("Keys") + st.Faint.Render(" · "+k.Help.Help().Key+" or "+k.Back.Help().Key+" closes")
	if len(lines) > rows {
		off := max(min(m.helpOffset, len(lines)-rows), 0)
		title += st.Faint.Render(fmt.Sprintf(" · %s %s scroll · %d–%d of %d", k.Up.Help().Key, k.Down.Help().Key, off+1, off+rows, len(lines)))
		lines = lines[off : off+rows]
	}
	if lipgloss.Width(title) > m.width-6 {
		title = common.Fit(title, max(m.width-6, 1))
	}
	return st.Border.Render(title + "\n\n" + strings.Join(lines, "\n"))
}
