package logview

// Time order across processes. With timestamps on, a view of several processes (follow-all,
// multi-follow) places their lines by the bridge's timestamp rather than by arrival: each
// process's stream arrives on its own connection and is drained once per frame, so a line written
// first by one process can reach the view after a line written later by another.
//
// The reorder window is reorderWindow (300 ms) of arrival time: everything that arrives is held
// that long, then released in timestamp order. That covers a few frames of draining plus the
// delivery jitter between two streams of one bridge under load, and keeps the live view within a
// third of a second of real time (the window must be short: a held line is not on screen yet).
// A line that arrives later than that behind one already shown is placed on arrival: the window
// bounds the wait and the memory, not the bridge's delays. The order within one process never
// changes: its entries' keys only grow (a marker takes its process's last key), and the sort is
// stable. Markers of one process and the view's own notes go through the same queue, so a note
// never overtakes output it follows.

import (
	"sort"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/ui/logbuf"
)

const reorderWindow = 300 * time.Millisecond

// held is one entry waiting in the reorder window: a stream event, or a marker of the view's own.
type held struct {
	name    string
	key     time.Time // the timestamp it is placed by
	arrived time.Time
	ev      client.LogEvent
	pool    *client.DataPool // where ev's bytes go back once placed
	marker  bool
	kind    logbuf.Kind
	text    string
}

// reorderMsg releases what has waited its window.
type reorderMsg struct {
	owner *Model
	gen   int
}

// ordering reports whether lines are placed by timestamp: timestamps are shown and several
// processes share the view.
func (m *Model) ordering() bool {
	return m.stamps && (len(m.sources) > 1 || m.all != "")
}

// keyFor is the timestamp an entry of name is placed by: its own for output (or for the first
// entry of name), else the last one of name; never earlier than name's last.
func (m *Model) keyFor(name string, t time.Time, data bool) time.Time {
	if m.lastKey == nil {
		m.lastKey = map[string]time.Time{}
	}
	last := m.lastKey[name]
	k := last
	if (data || last.IsZero()) && !t.IsZero() {
		k = t
	}
	if k.Before(last) {
		k = last
	}
	if k.IsZero() {
		k = m.ctx.Clock()
	}
	m.lastKey[name] = k
	return k
}

// place adds a stream's events to the buffer, through the reorder window when ordering. Their
// bytes go back to pool once the buffer has taken them (it keeps copies, never the slices).
func (m *Model) place(name string, pool *client.DataPool, evs []client.LogEvent) {
	if !m.ordering() {
		m.release(true)
		m.buf.Append(name, evs...)
		for _, ev := range evs {
			pool.Put(ev.Data)
		}
		return
	}
	now := m.ctx.Clock()
	for _, ev := range evs {
		if ev.Kind == client.Quiet || ev.Kind == client.Reconnecting {
			continue // not entries (logbuf.Append skips them too)
		}
		m.held = append(m.held, held{name: name, key: m.keyFor(name, ev.Time, ev.Kind == client.Data), arrived: now, ev: ev, pool: pool})
	}
	m.release(false)
}

// addMarker adds a marker of the view's own (a note, a follow that stopped), in order.
func (m *Model) addMarker(name string, kind logbuf.Kind, text, cursor string, t time.Time) {
	if !m.ordering() {
		m.release(true)
		m.buf.AddMarker(name, kind, text, cursor, t)
		return
	}
	m.held = append(m.held, held{name: name, key: m.keyFor(name, t, false), arrived: m.ctx.Clock(), marker: true,
		kind: kind, text: text, ev: client.LogEvent{Cursor: cursor, Time: t}})
	m.release(false)
}

// release moves held entries to the buffer in timestamp order: those that waited their window
// (and any with an earlier timestamp), or all of them.
func (m *Model) release(all bool) {
	if len(m.held) == 0 || m.buf == nil {
		return
	}
	sort.SliceStable(m.held, func(i, j int) bool { return m.held[i].key.Before(m.held[j].key) })
	due := m.ctx.Clock().Add(-reorderWindow)
	n := len(m.held)
	if !all {
		// in timestamp order, the entries that waited their window go, up to the first that has
		// not: nothing may overtake it
		n = 0
		for n < len(m.held) && !m.held[n].arrived.After(due) {
			n++
		}
	}
	for _, h := range m.held[:n] {
		if h.marker {
			m.buf.AddMarker(h.name, h.kind, h.text, h.ev.Cursor, h.ev.Time)
		} else {
			m.buf.Append(h.name, h.ev)
			h.pool.Put(h.ev.Data)
		}
	}
	k := copy(m.held, m.held[n:])
	clear(m.held[k:]) // what was released is not read again
	m.held = m.held[:k]
}

// armReorder schedules the next release while entries wait.
func (m *Model) armReorder() tea.Cmd {
	if len(m.held) == 0 || m.reorderArmed || m.closed {
		return nil
	}
	m.reorderArmed = true
	owner, gen := m, m.gen
	return tea.Tick(reorderWindow/3, func(time.Time) tea.Msg { return reorderMsg{owner: owner, gen: gen} })
}
