package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"sandscope/client"
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
	return st.Header.Render(common.Fit(strings.Join(parts, " │ "), m.width))
}

func (m *Model) statusView() string {
	st := m.ctx.Styles
	now := m.ctx.Clock()
	if m.connErr != nil {
		text := ""
		switch common.Classify(m.connErr) {
		case common.ErrWrongAPI:
			text = "WRONG BRIDGE API: " + common.SanitizeText((&client.StableBridgeError{}).Error())
		case common.ErrUnauthorized:
			text = "UNAUTHORIZED: " + common.UnauthorizedHint
		case common.ErrUnreachable:
			text = "UNREACHABLE: " + common.SanitizeText(m.connErr.Error())
		case common.ErrCapacity:
			text = "NO CAPACITY: the bridge could not start a container; try again later"
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
	text := common.Fit(m.status, m.width)
	switch m.statusLevel {
	case common.Error:
		return st.Error.Render(text)
	case common.Warn:
		return st.Warning.Render(text)
	}
	return st.Info.Render(text)
}

func (m *Model) hints() string {
	st := m.ctx.Styles
	var parts []string
	for _, b := range m.top().ShortHelp() {
		if !b.Enabled() {
			continue
		}
		parts = append(parts, st.HelpKey.Render(b.Help().Key)+" "+st.HelpDesc.Render(b.Help().Desc))
	}
	return common.Fit(strings.Join(parts, st.HelpDesc.Render(" · ")), m.width)
}

// helpView lists every key of the current screen in columns.
func (m *Model) helpView() string {
	st := m.ctx.Styles
	cols := m.top().FullHelp()
	var rendered []string
	for _, col := range cols {
		kw := 0
		for _, b := range col {
			kw = max(kw, lipgloss.Width(b.Help().Key))
		}
		var lines []string
		for _, b := range col {
			lines = append(lines, st.HelpKey.Render(common.Fit(b.Help().Key, kw))+" "+st.HelpDesc.Render(b.Help().Desc))
		}
		rendered = append(rendered, strings.Join(lines, "\n"))
	}
	// lay columns out in rows that fit the width
	var rows []string
	var cur []string
	curW := 0
	maxW := max(m.width-8, 20)
	for _, c := range rendered {
		w := lipgloss.Width(c) + 3
		if curW+w > maxW && len(cur) > 0 {
			rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, cur...))
			cur, curW = nil, 0
		}
		cur = append(cur, st.Renderer.NewStyle().PaddingRight(3).Render(c))
		curW += w
	}
	if len(cur) > 0 {
		rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, cur...))
	}
	title := st.Title.Render("Keys") + st.Faint.Render(" · "+m.ctx.Keys.Help.Help().Key+" or "+m.ctx.Keys.Back.Help().Key+" closes")
	return st.Border.Render(title + "\n\n" + strings.Join(rows, "\n\n"))
}
