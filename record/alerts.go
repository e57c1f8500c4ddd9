package record

import (
	"fmt"
	"strings"
	"time"
)

// AlertKind names a change worth telling the user about while they look elsewhere.
type AlertKind string

const (
	AlertEnded   AlertKind = "ended"   // a running process or terminal ended (confirmed)
	AlertLost    AlertKind = "lost"    // a running process or terminal vanished with its container
	AlertSuspect AlertKind = "suspect" // a stream ended but the status lookup still says running
	AlertGap     AlertKind = "gap"     // a stream resumed with bytes missing
)

// AlertKinds lists every kind, in the order settings and help name them.
var AlertKinds = []AlertKind{AlertEnded, AlertLost, AlertSuspect, AlertGap}

// Alert is one change of an entry's folded state that the user should hear about: derived from the
// record's own transitions (State.Apply), so an ending observed twice (by the watcher and by a
// stream) is one alert. Text holds bridge-provided words: sanitise before display.
type Alert struct {
	Seq     int64
	Time    time.Time
	Kind    AlertKind
	Sandbox string
	Entity  EntityKind
	ID      string
	Command []string
	Text    string // what happened, e.g. "EXITED 5", "LOST: gone with its container"
	Cursor  string
}

// alertsKept bounds the alerts a Record keeps for its readers.
const alertsKept = 1024

// entrySnap is what an alert is decided on: an entry before and after an event is folded in.
type entrySnap struct {
	e                 *Entry
	state             string
	lost              bool
	gaps, suspectEnds int
}

func snapOf(e *Entry) entrySnap {
	if e == nil {
		return entrySnap{}
	}
	return entrySnap{e: e, state: e.State(), lost: e.Lost, gaps: e.Gaps, suspectEnds: e.SuspectEnds}
}

// final reports a state that is an ending for notifications: not running, and not interrupted
// (a stable run whose stream broke off: its outcome is not known yet, the ending comes later).
func final(state string) bool {
	return state != "" && state != "running" && state != "interrupted"
}

// alertsFor compares an entry before and after ev was folded into st and returns the alerts the
// change amounts to. A first sighting is no change, except a process that started after since
// (this run opened the record) and had already ended when the watcher first saw it: it ran and
// ended between two polls. seen drops a gap or suspect end already alerted at the same cursor (two
// followers of one process report the same observation).
func alertsFor(st *State, ev Event, before entrySnap, since time.Time, seen map[string]bool) []Alert {
	if ev.Entity == "" || ev.EntityID == "" {
		return nil
	}
	if before.e == nil {
		e := st.Find(ev.Entity, ev.EntityID)
		if e == nil || (ev.Source != FromWatch && ev.Source != FromLookup) || e.Kind != Process || e.Lost || e.Earlier ||
			!final(e.Process.State) || !e.Process.StartedAt.After(since) {
			return nil
		}
		return []Alert{{Time: ev.Time, Kind: AlertEnded, Sandbox: st.Sandbox, Entity: e.Kind, ID: e.ID,
			Command: append([]string(nil), e.Command()...), Text: StateWord(st, e)}}
	}
	e := st.Find(ev.Entity, ev.EntityID)
	if e != before.e {
		return nil // a new entry (same ID in a new container)
	}
	after := snapOf(e)
	mk := func(k AlertKind, text string) Alert {
		return Alert{Time: ev.Time, Kind: k, Sandbox: st.Sandbox, Entity: e.Kind, ID: e.ID,
			Command: append([]string(nil), e.Command()...), Text: text, Cursor: ev.Cursor}
	}
	var out []Alert
	switch {
	case after.lost && !before.lost:
		text := "LOST"
		if len(e.Evidence) > 0 {
			text += ": " + strings.Join(e.Evidence, "; ")
		}
		out = append(out, mk(AlertLost, text))
	case !final(before.state) && before.state != "" && final(after.state) && !after.lost:
		out = append(out, mk(AlertEnded, StateWord(st, e)))
	}
	once := func(k AlertKind) bool {
		if ev.Cursor == "" {
			return true
		}
		key := fmt.Sprintf("%s\x00%s\x00%s\x00%s", k, st.Sandbox, ev.EntityID, ev.Cursor)
		if seen[key] {
			return false
		}
		if len(seen) >= alertsKept*4 {
			clear(seen)
		}
		seen[key] = true
		return true
	}
	if after.suspectEnds > before.suspectEnds && once(AlertSuspect) {
		text := "SUSPECT END: the stream ended but the status lookup says running"
		if ev.Reason != "" {
			text += " (" + ev.Reason + ")"
		}
		out = append(out, mk(AlertSuspect, text))
	}
	if after.gaps > before.gaps && once(AlertGap) {
		text := "GAP: "
		switch {
		case ev.GapBytes > 0:
			text += fmt.Sprintf("%d bytes missing", ev.GapBytes)
		default:
			text += "bytes missing"
		}
		if ev.Reason != "" {
			text += " — " + ev.Reason
		}
		out = append(out, mk(AlertGap, text))
	}
	return out
}

// Alerts returns the alerts with a sequence number above after, oldest first, and the newest
// sequence number (pass it back next time). missed counts alerts that were dropped before this
// reader asked (more than the record keeps arrived in between). Readers are woken by Subscribe.
func (r *Record) Alerts(after int64) (alerts []Alert, last int64, missed int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last = r.alertSeq
	if len(r.alerts) == 0 {
		return nil, last, 0
	}
	if first := r.alerts[0].Seq; after < first-1 {
		missed = first - 1 - after
	}
	for _, a := range r.alerts {
		if a.Seq > after {
			a.Command = append([]string(nil), a.Command...)
			alerts = append(alerts, a)
		}
	}
	return alerts, last, missed
}

// LastAlert is the sequence number of the newest alert (0: none yet): a reader that starts now
// passes it to Alerts to hear only what comes next.
func (r *Record) LastAlert() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alertSeq
}

// addAlertsLocked numbers and keeps alerts (bounded).
func (r *Record) addAlertsLocked(as []Alert) {
	for _, a := range as {
		r.alertSeq++
		a.Seq = r.alertSeq
		r.alerts = append(r.alerts, a)
	}
	if n := len(r.alerts) - alertsKept; n > 0 {
		r.alerts = append(r.alerts[:0:0], r.alerts[n:]...)
	}
}

// String is the kind's word (as settings and the screen name it).
func (k AlertKind) String() string { return string(k) }
