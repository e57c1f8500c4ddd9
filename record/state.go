package record

import (
	"fmt"
	"strings"
	"time"

	"sandscope/client"
)

// Entry is one process or terminal as sandscope knows it: the bridge's last answer, the
// incarnation it belongs to, whether it was lost, and how it was launched.
type Entry struct {
	Kind        EntityKind
	ID          string
	Process     client.Process  // Kind == Process: the last known state
	Terminal    client.Terminal // Kind == Terminal: the last known state
	Incarnation int             // the incarnation it belongs to (0 unknown)
	Inferred    bool            // that number was inferred by sandscope
	FirstSeen   time.Time
	LastSeen    time.Time // last time the bridge confirmed its state
	Lost        bool
	LostAt      time.Time
	Gone        bool     // absent from the bridge's list (lost, or a finished entry the bridge let go)
	Evidence    []string // why it is considered lost (or vanished)
	Launch      *Launch  // how it was launched, when sandscope launched it
	// Request is the full launch request (environment values included) when this run of
	// sandscope launched it; never stored on disk.
	Request *client.ExecRequest
	Run     int64 // the last run that observed it
	Earlier bool  // only observed by an earlier run of sandscope

	// Stream summary (from log followers and terminal connections).
	Cursor        string    // the last cursor recorded
	Stream        string    // the kind of the last stream event recorded ("interrupted", "suspect end", …)
	StreamAt      time.Time // when it was recorded
	Interruptions int
	Gaps          int
	SuspectEnds   int
}

// State is the word for the entry's last known state: "running", "exited", "error".
func (e *Entry) State() string {
	if e.Kind == Terminal {
		return e.Terminal.Status
	}
	return e.Process.State
}

// Command is the argv the bridge reported (or the launch's).
func (e *Entry) Command() []string {
	c := e.Process.Command
	if e.Kind == Terminal {
		c = e.Terminal.Command
	}
	if len(c) == 0 && e.Launch != nil {
		c = e.Launch.Argv
	}
	return c
}

// Inc is one incarnation on a sandbox's timeline.
type Inc struct {
	Number    int
	Inferred  bool
	FirstSeen time.Time
	LastSeen  time.Time
	Evidence  []string // why sandscope believes this incarnation began (and stop notes)
	Earlier   bool     // first seen by an earlier run
}

// State is what sandscope knows of one sandbox: the fold of its recorded events.
type State struct {
	Sandbox      string
	Running      *bool
	Current      client.Incarnation
	Incarnations []*Inc
	Processes    []*Entry
	Terminals    []*Entry
	WatchErr     string
	WatchCause   error // the watcher's error itself, when observed by this run
	ErrSince     time.Time
	LastOK       time.Time
	Events       int // watcher events folded (0 = nothing heard yet)
	Actions      []Event
	// Stable is what sandscope recorded of the sandbox on a stable bridge (runs it started,
	// sessions, the container marker).
	Stable StableSandbox
}

// NewState is the empty state of a sandbox.
func NewState(sandbox string) *State { return &State{Sandbox: sandbox} }

// Clone is a deep enough copy for a screen to keep (entries and incarnations are copied).
func (s *State) Clone() *State {
	c := *s
	if s.Running != nil {
		r := *s.Running
		c.Running = &r
	}
	c.Incarnations = make([]*Inc, len(s.Incarnations))
	for i, v := range s.Incarnations {
		x := *v
		x.Evidence = append([]string(nil), v.Evidence...)
		c.Incarnations[i] = &x
	}
	c.Processes = cloneEntries(s.Processes)
	c.Terminals = cloneEntries(s.Terminals)
	c.Actions = append([]Event(nil), s.Actions...)
	c.Stable = s.Stable.clone()
	return &c
}

func cloneEntries(in []*Entry) []*Entry {
	out := make([]*Entry, len(in))
	for i, v := range in {
		x := *v
		x.Evidence = append([]string(nil), v.Evidence...)
		out[i] = &x
	}
	return out
}

// Stale reports whether an entry of incarnation inc belongs to an earlier container.
func (s *State) Stale(inc int) bool {
	return inc > 0 && s.Current.Number > 0 && inc < s.Current.Number
}

// Find returns the newest entry of that kind and ID.
func (s *State) Find(kind EntityKind, id string) *Entry {
	list := s.Processes
	if kind == Terminal {
		list = s.Terminals
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].ID == id {
			return list[i]
		}
	}
	return nil
}

func (s *State) currentInc() *Inc {
	if len(s.Incarnations) == 0 {
		return nil
	}
	return s.Incarnations[len(s.Incarnations)-1]
}

// Apply folds one event into the state. currentRun tells events of this run from earlier ones.
// It returns a notice worth telling the user now (a new container), or "".
func (s *State) Apply(ev Event) string {
	switch ev.Source {
	case FromWatch, FromLookup:
		return s.applyWatch(ev)
	case FromStream, FromTerminal:
		s.applyStream(ev)
	case FromLaunch:
		e := s.upsert(ev.Entity, ev.EntityID, ev)
		e.Launch = ev.Launch
		if ev.Process != nil {
			e.Process, e.LastSeen = *ev.Process, ev.Time
		}
		if ev.Terminal != nil {
			e.Terminal, e.LastSeen = *ev.Terminal, ev.Time
		}
	case FromAction:
		s.Actions = append(s.Actions, ev)
	case FromStable:
		s.Stable.applyStable(ev)
	}
	return ""
}

func (s *State) applyWatch(ev Event) string {
	kind := ev.Kind
	if kind != client.WatchError.String() {
		s.Events++
	}
	if kind != client.WatchError.String() && ev.Incarnation.Number > 0 {
		if len(s.Incarnations) == 0 {
			why := "first seen by sandscope (number reported by the bridge)"
			if ev.Incarnation.Inferred {
				why = "first seen by sandscope (numbered by sandscope; the bridge reports no identity)"
			}
			s.Incarnations = append(s.Incarnations, &Inc{Number: ev.Incarnation.Number, Inferred: ev.Incarnation.Inferred,
				FirstSeen: ev.Time, LastSeen: ev.Time, Evidence: []string{why}, Earlier: ev.Earlier})
		}
		if kind != client.IncarnationChanged.String() {
			s.adopt(ev.Incarnation)
		}
	}
	notice := ""
	switch kind {
	case client.ProcessAppeared.String(), client.ProcessChanged.String():
		if ev.Process != nil {
			e := s.upsert(Process, ev.Process.ID, ev)
			e.Process, e.LastSeen, e.Lost, e.Gone = *ev.Process, ev.Time, false, false
		}
	case client.TerminalAppeared.String(), client.TerminalChanged.String():
		if ev.Terminal != nil {
			e := s.upsert(Terminal, ev.Terminal.ID, ev)
			e.Terminal, e.LastSeen, e.Lost, e.Gone = *ev.Terminal, ev.Time, false, false
		}
	case client.ProcessVanished.String(), client.TerminalVanished.String():
		k, id := Process, ""
		if ev.Process != nil {
			id = ev.Process.ID
		}
		if ev.Terminal != nil {
			k, id = Terminal, ev.Terminal.ID
		}
		if e := s.Find(k, id); e != nil {
			if len(e.Evidence) == 0 || !e.Lost {
				e.Evidence = ev.Evidence
			}
			e.Gone = true
			if e.State() == "running" && !e.Lost {
				e.Lost, e.LostAt = true, ev.Time
			}
			e.Run, e.Earlier = ev.Run, ev.Earlier
		}
	case client.SandboxStarted.String():
		t := true
		s.Running = &t
	case client.SandboxStopped.String():
		f := false
		s.Running = &f
		if inc := s.currentInc(); inc != nil {
			inc.Evidence = append(inc.Evidence, "stopped at "+ev.Time.Format("15:04:05")+": "+strings.Join(ev.Evidence, "; "))
		}
	case client.IncarnationChanged.String():
		evd := ev.Evidence
		if len(evd) == 0 {
			evd = []string{"no evidence given"}
		}
		t := true
		if cur := s.currentInc(); cur != nil && cur.Number == ev.Incarnation.Number {
			// the same number, now reported by the bridge: keep the evidence on the timeline
			cur.Inferred = ev.Incarnation.Inferred
			cur.Evidence = append(cur.Evidence, evd...)
			s.Current, s.Running = ev.Incarnation, &t
			break
		}
		if prev := s.currentInc(); prev != nil {
			prev.LastSeen = ev.Time
		}
		s.Incarnations = append(s.Incarnations, &Inc{Number: ev.Incarnation.Number, Inferred: ev.Incarnation.Inferred,
			FirstSeen: ev.Time, LastSeen: ev.Time, Evidence: append([]string(nil), evd...), Earlier: ev.Earlier})
		s.Current, s.Running = ev.Incarnation, &t
		how := "reported by the bridge"
		if ev.Incarnation.Inferred {
			how = "inferred: " + strings.Join(evd, "; ")
		}
		notice = fmt.Sprintf("sandbox %s: new container, incarnation #%d (%s); older entries are STALE", s.Sandbox, ev.Incarnation.Number, how)
	case client.WatchError.String():
		if s.WatchErr == "" {
			s.ErrSince = ev.Time
		}
		s.WatchErr, s.WatchCause = ev.Err, ev.cause
		if s.WatchErr == "" {
			s.WatchErr = "poll failed"
		}
		return ""
	case client.WatchRecovered.String():
		s.WatchErr, s.WatchCause = "", nil
	}
	s.LastOK = ev.Time
	if inc := s.currentInc(); inc != nil && ev.Time.After(inc.LastSeen) {
		inc.LastSeen = ev.Time
	}
	return notice
}

// adopt makes inc the current incarnation. When sandscope had numbered the current container
// itself and the bridge now reports a different number for it (no boundary seen), the entries and
// the timeline row take the bridge's number.
func (s *State) adopt(inc client.Incarnation) {
	if s.Current.Inferred && !inc.Inferred && s.Current.Number > 0 && inc.Number != s.Current.Number {
		old := s.Current.Number
		for _, list := range [][]*Entry{s.Processes, s.Terminals} {
			for _, e := range list {
				if e.Incarnation == old && e.Inferred {
					e.Incarnation, e.Inferred = inc.Number, false
				}
			}
		}
		if cur := s.currentInc(); cur != nil && cur.Number == old {
			cur.Number, cur.Inferred = inc.Number, false
			cur.Evidence = append(cur.Evidence, fmt.Sprintf("the bridge reports this container as incarnation #%d", inc.Number))
		}
	}
	s.Current = inc
}

// upsert finds the entry an event is about (same ID, same incarnation) or adds one.
func (s *State) upsert(kind EntityKind, id string, ev Event) *Entry {
	reported := 0
	if ev.Process != nil {
		reported = ev.Process.Incarnation
	}
	if ev.Terminal != nil {
		reported = ev.Terminal.Incarnation
	}
	inc, inferred := reported, false
	if inc == 0 {
		inc, inferred = ev.Incarnation.Number, ev.Incarnation.Inferred
	}
	if ev.Source != FromWatch && ev.Source != FromLookup && inc == 0 {
		inc, inferred = s.Current.Number, s.Current.Inferred
	}
	list := &s.Processes
	if kind == Terminal {
		list = &s.Terminals
	}
	for i := len(*list) - 1; i >= 0; i-- {
		e := (*list)[i]
		if e.ID == id && (e.Incarnation == inc || e.Incarnation == 0 || inc == 0) {
			if inc > 0 {
				e.Incarnation, e.Inferred = inc, inferred
			}
			e.Run, e.Earlier = ev.Run, ev.Earlier
			return e
		}
	}
	e := &Entry{Kind: kind, ID: id, Incarnation: inc, Inferred: inferred, FirstSeen: ev.Time, LastSeen: ev.Time, Run: ev.Run, Earlier: ev.Earlier}
	if kind == Process {
		e.Process.ID = id
	} else {
		e.Terminal.ID = id
	}
	*list = append(*list, e)
	return e
}

func (s *State) applyStream(ev Event) {
	e := s.Find(ev.Entity, ev.EntityID)
	if e == nil {
		return
	}
	if ev.Cursor != "" {
		e.Cursor = ev.Cursor
	}
	e.Stream, e.StreamAt = ev.Kind, ev.Time
	switch ev.Kind {
	case client.Interrupted.String(), "terminal " + client.TermInterrupted.String():
		e.Interruptions++
	case client.Gap.String(), "terminal " + client.TermGap.String():
		e.Gaps++
	case client.SuspectEnd.String():
		e.SuspectEnds++
	case client.Ended.String():
		if ev.Status != nil && e.Kind == Process {
			e.Process = *ev.Status
			e.LastSeen = ev.Time
		}
	case client.Lost.String(), "terminal " + client.TermLost.String():
		if !e.Lost {
			e.Lost, e.LostAt = true, ev.Time
			if ev.Loss != nil {
				e.Evidence = []string{client.DescribeLoss(ev.Loss)}
			}
		}
	}
}
