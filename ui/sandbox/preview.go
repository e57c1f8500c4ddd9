package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/sanitize"
	"sandscope/ui/common"
)

// previewTail is how many lines of output the preview keeps.
const previewTail = 200

// previewText shows output as plain text: colours dropped, controls made visible, long lines cut.
var previewText = sanitize.Options{StripSGR: true, MaxRunes: 1000}

// preview is the pane beside (or below) the processes list: the selected process's details and
// the tail of its output, followed live while the preview is open and the process selected.
type preview struct {
	key     string // entryKey of the process followed ("" none)
	cancel  context.CancelFunc
	ch      <-chan client.LogEvent
	gen     int
	lines   []string // complete lines, sanitised
	partial string   // the last line, until its newline
	note    string   // how the follow stands: "live", an interruption, its end
}

// previewMsg carries a batch of the followed process's log events.
type previewMsg struct {
	owner  *Model
	gen    int
	events []client.LogEvent
	closed bool
}

// togglePreview opens or closes the preview.
func (m *Model) togglePreview() tea.Cmd {
	if m.preview != nil {
		m.stopPreview()
		m.preview = nil
		return nil
	}
	m.preview = &preview{}
	return m.previewFollow()
}

func (m *Model) stopPreview() {
	if m.preview != nil && m.preview.cancel != nil {
		m.preview.cancel()
		m.preview.cancel = nil
	}
}

// previewFollow follows the selected process when the preview is open and the selection moved.
func (m *Model) previewFollow() tea.Cmd {
	p := m.preview
	if p == nil || m.closed || m.ctx.Driver == nil {
		return nil
	}
	e := m.curProc()
	if e == nil {
		return nil
	}
	if k := entryKey(e); k == p.key {
		return nil
	} else {
		m.stopPreview()
		p.key, p.lines, p.partial, p.note = k, nil, "", "connecting…"
	}
	p.gen++
	if e.Lost || m.stale(e.Incarnation) {
		p.note = "its container is gone: no output to follow (the log view shows what was captured)"
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx.BaseCtx())
	p.cancel = cancel
	// moving the cursor is not asking to read a run: where reads start containers, the preview
	// shows only what the driver already receives
	_, waker := m.ctx.Driver.(driver.Waker)
	p.ch = m.ctx.Driver.Follow(ctx, m.id, e.Process.ID, driver.FollowOptions{FollowOptions: client.FollowOptions{Buffer: 64}, Background: waker})
	return waitForPreview(m, p.ch, p.gen)
}

func waitForPreview(owner *Model, ch <-chan client.LogEvent, gen int) tea.Cmd {
	return func() tea.Msg {
		batch, closed := common.Drain(ch, 1024)
		return previewMsg{owner: owner, gen: gen, events: batch, closed: closed}
	}
}

// applyPreview folds a batch into the tail and re-arms the follow (a batch of a follow that was
// replaced or closed is dropped).
func (m *Model) applyPreview(msg previewMsg) tea.Cmd {
	p := m.preview
	if msg.owner != m || p == nil || msg.gen != p.gen {
		return nil
	}
	for _, ev := range msg.events {
		switch ev.Kind {
		case client.Data:
			p.add(string(ev.Data))
			p.note = "live"
		case client.Interrupted:
			p.note = "interrupted: " + ev.Reason + "; resuming"
		case client.Resumed:
			p.note = "live"
		case client.Gap:
			p.add("\n── gap: " + ev.Reason + " ──\n")
		case client.Ended:
			p.note = "ended"
			if ev.Status != nil {
				_, label := common.ProcessBadge(ev.Status.State, ev.Status.Exit, ev.Status.Error, common.Current, 0, time.Time{}, time.Time{})
				p.note = "ended: " + label
			}
		case client.Lost:
			p.note = "LOST: " + ev.Reason
		case client.Failed:
			p.note = "follow failed: " + ev.Reason
			if errors.Is(ev.Err, driver.ErrNotLive) {
				p.note = "not followed here: reading it would start its container; " + m.ctx.Keys.Open.Help().Key + " opens its log"
			}
		}
	}
	if msg.closed {
		if p.note == "connecting…" {
			// closed without a word: a background follow of a run the driver does not stream
			p.note = "not followed here: " + driver.ErrNotLive.Error() + "; " + m.ctx.Keys.Open.Help().Key + " opens its log"
		}
		p.cancel, p.ch = nil, nil
		return nil
	}
	return waitForPreview(m, p.ch, p.gen)
}

// add appends output, keeping the last previewTail lines.
func (p *preview) add(s string) {
	parts := strings.Split(p.partial+s, "\n")
	p.partial = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		p.lines = append(p.lines, sanitize.String(strings.TrimSuffix(l, "\r"), previewText))
	}
	if over := len(p.lines) - previewTail; over > 0 {
		p.lines = append(p.lines[:0], p.lines[over:]...)
	}
}

// previewView draws the preview in w×h cells: details first, then the tail of the output.
func (m *Model) previewView(w, h int) []string {
	st := m.ctx.Styles
	out := make([]string, 0, h)
	e := m.curProc()
	if e == nil {
		out = append(out, st.Faint.Render(common.Fit("no process selected", w)))
	} else {
		p := e.Process
		head := []string{
			st.Title.Render(common.Fit("Preview · "+common.SanitizeText(p.ID), w)),
			common.Fit("command  "+common.Argv(p.Command), w),
			common.Fit(fmt.Sprintf("cwd      %s   pid %d   started %s", common.SanitizeText(p.Cwd), p.PID, common.Clock(p.StartedAt)), w),
			st.Faint.Render(common.Fit("output   "+m.preview.note, w)),
		}
		out = append(out, head...)
		tail := m.preview.lines
		if m.preview.partial != "" {
			tail = append(append([]string(nil), tail...), sanitize.String(m.preview.partial, previewText))
		}
		room := h - len(out)
		if room > 0 && len(tail) > room {
			tail = tail[len(tail)-room:]
		}
		for _, l := range tail {
			if len(out) >= h {
				break
			}
			out = append(out, common.Fit(l, w))
		}
	}
	for len(out) < h {
		out = append(out, strings.Repeat(" ", max(w, 0)))
	}
	return out[:h]
}
