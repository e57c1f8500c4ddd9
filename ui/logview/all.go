package logview

// Following every process of a sandbox: the processes known when the view opens, then each one
// that starts later, found through the record's change notices (the record's background watcher
// polls; the view adds no request of its own) or, when nothing is recorded, a watcher of its own.

import (
	"context"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/followall"
	"sandscope/ui/common"
	"sandscope/ui/logbuf"
	"sandscope/vocab"
)

// addSource adds a followed process under its follow-all name and colour.
func (m *Model) addSource(t common.LogTarget) *source {
	name := followall.Name(t.Process)
	for _, s := range m.sources {
		if s.name == name { // two IDs alike in their first 8 characters: the full ID tells them apart
			name = vocab.Text(t.Process.ID)
			break
		}
	}
	s := &source{name: name, color: followall.Color(t.Process.ID, len(m.ctx.Styles.Prefixes)), target: t, since: m.ctx.Clock()}
	m.sources = append(m.sources, s)
	return s
}

// allChangeMsg says the record of the followed sandbox changed.
type allChangeMsg struct {
	owner  *Model
	gen    int
	closed bool
}

// allWatchMsg carries the view's own watcher's events (no record).
type allWatchMsg struct {
	owner  *Model
	gen    int
	events []client.SandboxEvent
	closed bool
}

// watchAll starts looking for processes that start later.
func (m *Model) watchAll() tea.Cmd {
	if m.allCancel != nil {
		m.allCancel()
	}
	ctx, cancel := context.WithCancel(m.ctx.BaseCtx())
	m.allCancel = cancel
	if rec := m.ctx.Record; rec != nil && m.ctx.Watch != nil {
		m.ctx.Watch.Track(m.all)
		ch, unsubscribe := rec.Subscribe()
		go func() {
			<-ctx.Done()
			unsubscribe()
		}()
		m.allCh = ch
		// what changed between the screen below reading the record and this view subscribing
		return tea.Batch(m.joinFromRecord(), waitForAllChange(m, ch, m.all, m.gen))
	}
	if m.ctx.Driver == nil {
		return nil
	}
	w := m.ctx.Driver.Watch(ctx, m.all, client.WatchOptions{FastInterval: m.ctx.WatchFast, SlowInterval: m.ctx.WatchSlow})
	if w.SetFocused != nil {
		w.SetFocused(true)
	}
	m.allWatch = w.Events
	return waitForAllWatch(m, w.Events, m.gen)
}

func waitForAllChange(owner *Model, ch <-chan string, sb string, gen int) tea.Cmd {
	return func() tea.Msg {
		for s := range ch {
			if s != sb {
				continue
			}
			for {
				select {
				case _, ok := <-ch:
					if !ok {
						return allChangeMsg{owner: owner, gen: gen, closed: true}
					}
					continue
				default:
				}
				return allChangeMsg{owner: owner, gen: gen}
			}
		}
		return allChangeMsg{owner: owner, gen: gen, closed: true}
	}
}

func waitForAllWatch(owner *Model, ch <-chan client.SandboxEvent, gen int) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		batch, closed := common.Drain(ch, 256)
		return allWatchMsg{owner: owner, gen: gen, events: batch, closed: closed}
	}
}

// updateAll handles the messages of the watch for new processes; ok is false for other messages.
func (m *Model) updateAll(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case allChangeMsg:
		if msg.owner != m || msg.gen != m.gen || m.closed || msg.closed {
			return nil, true
		}
		return tea.Batch(m.joinFromRecord(), waitForAllChange(m, m.allCh, m.all, m.gen)), true
	case allWatchMsg:
		if msg.owner != m || msg.gen != m.gen || m.closed {
			return nil, true
		}
		var cmds []tea.Cmd
		inc := 0
		for _, ev := range msg.events {
			switch ev.Kind {
			case client.ProcessAppeared, client.ProcessChanged:
				if ev.Process != nil {
					cmds = append(cmds, m.join(common.LogTarget{Sandbox: m.all, Process: *ev.Process, Incarnation: ev.Incarnation.Number}))
				}
			case client.IncarnationChanged:
				inc = ev.Incarnation.Number
			}
		}
		if inc > 0 {
			m.addMarker(m.allName(), logbuf.Note, fmt.Sprintf("sandbox %s: new container, incarnation #%d", vocab.Text(m.all), inc), "", m.ctx.Clock())
		}
		if !msg.closed {
			cmds = append(cmds, waitForAllWatch(m, m.allWatch, m.gen))
		}
		return tea.Batch(cmds...), true
	}
	return nil, false
}

// allName is the prefix of the view's own notes about the sandbox.
func (m *Model) allName() string { return "sandbox" }

// joinFromRecord follows every process of the sandbox's current incarnation the record knows
// and the view does not follow yet.
func (m *Model) joinFromRecord() tea.Cmd {
	st := m.ctx.Record.State(m.all)
	var cmds []tea.Cmd
	for _, e := range st.Processes {
		if e.Lost || st.Stale(e.Incarnation) {
			continue
		}
		cmds = append(cmds, m.join(common.LogTarget{Sandbox: m.all, Process: e.Process, Incarnation: e.Incarnation}))
	}
	return tea.Batch(cmds...)
}

// join follows a process that started after the view opened (once, when the filter keeps it),
// with a note under its prefix saying it joined.
func (m *Model) join(t common.LogTarget) tea.Cmd {
	if m.buf == nil || !m.joiner.Join(t.Process, true) {
		return nil
	}
	// nobody asked to read this run: where reads start containers, follow only what the driver
	// already receives
	_, t.Background = m.ctx.Driver.(driver.Waker)
	s := m.addSource(t)
	_, word, _ := vocab.State(t.Process.State, t.Process.Exit, t.Process.Error)
	if t.Incarnation > 0 {
		word += fmt.Sprintf(", incarnation %d", t.Incarnation)
	}
	m.addMarker(s.name, logbuf.Note, "joined: following "+followall.Summary(t.Process.Command)+" ("+word+")", "", m.ctx.Clock())
	return m.startSource(len(m.sources) - 1)
}

// allTitle is the follow-all view's title: the sandbox and how many processes are followed.
func (m *Model) allTitle() string {
	st := m.ctx.Styles
	live, ended, lost, failed := 0, 0, 0, 0
	for _, s := range m.sources {
		switch s.state {
		case Ended:
			ended++
		case Lost:
			lost++
		case Failed:
			failed++
		default:
			live++
		}
	}
	facts := []string{vocab.Count(len(m.sources), "process|processes") + " followed", fmt.Sprintf("%d live", live)}
	if ended > 0 {
		facts = append(facts, fmt.Sprintf("%d ended", ended))
	}
	if lost > 0 {
		facts = append(facts, fmt.Sprintf("%d LOST", lost))
	}
	if failed > 0 {
		facts = append(facts, fmt.Sprintf("%d failed", failed))
	}
	facts = append(facts, "new ones join")
	return st.Title.Render("Logs") + st.Faint.Render(" · "+vocab.Text(m.all)+" · every process · "+strings.Join(facts, " · "))
}
