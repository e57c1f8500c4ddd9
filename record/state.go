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
	// Loss is the follower's evidence when it found the entry lost: how it found out (Lookup) and
	// what the sandbox ran then; nil when the watcher found it absent (Evidence says how).
	Loss   *client.LossEvidence
	Launch *Launch // how it was launched, when sandscope launched it
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

// Inc is one incarnation on a sandbox's timeline: one container life. Number is the record's own
// and never repeats within a sandbox; Bridge is the number the bridge reported for it (0 when
// sandscope inferred the life). The two agree until a bridge numbers from 1 again (a restarted
// local bridge of an older version, say): then the record gives the new life the next number of
// its own, with that as evidence, rather than merging two lives.
type Inc struct {
	Number    int
	Bridge    int   // the bridge's number for this life (0: inferred)
	Started   int64 // when the bridge says it started (Unix ns; 0 unknown)
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

	changes uint64 // bumped by every change the record makes (Apply): what Memo compares
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
	s.changes++
	switch ev.Source {
	case FromWatch, FromLookup:
		return s.applyWatch(ev)
	case FromStream, FromTerminal:
		s.applyStream(ev)
	case FromLaunch:
		notice := ""
		if n := reportedNumber(ev); n > 0 && len(s.Incarnations) > 0 {
			// a process launched now runs in the container the bridge runs now: a number the
			// record has not seen for the current life is a new life, decided as the watcher's are
			lev := ev
			lev.Incarnation = client.Incarnation{Number: n}
			notice = s.explicitLife(lev)
		}
		e := s.upsert(ev.Entity, ev.EntityID, ev)
		e.Launch = ev.Launch
		if ev.Process != nil {
			e.Process, e.LastSeen = *ev.Process, ev.Time
		}
		if ev.Terminal != nil {
			e.Terminal, e.LastSeen = *ev.Terminal, ev.Time
		}
		return notice
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
	notice := ""
	if kind != client.WatchError.String() && ev.Incarnation.Number > 0 {
		switch {
		case len(s.Incarnations) == 0:
			why := "first seen by sandscope (number reported by the bridge)"
			if ev.Incarnation.Inferred {
				why = "first seen by sandscope (numbered by sandscope; the bridge reports no identity)"
			}
			s.Incarnations = append(s.Incarnations, &Inc{Number: ev.Incarnation.Number, Bridge: bridgeNumber(ev.Incarnation),
				Started: ev.Incarnation.Started, Inferred: ev.Incarnation.Inferred,
				FirstSeen: ev.Time, LastSeen: ev.Time, Evidence: []string{why}, Earlier: ev.Earlier})
			s.Current = s.currentInc().identity()
		case !ev.Incarnation.Inferred:
			notice = s.explicitLife(ev)
		case kind != client.IncarnationChanged.String():
			s.Current = ev.Incarnation
		}
	}
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
			// A driver that decides a loss itself says so in the state it reports ("lost": the
			// stable driver, from the recorder's files), whatever state was seen before.
			if (e.State() == "running" || ev.Process != nil && ev.Process.State == "lost") && !e.Lost {
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
		t := true
		s.Running = &t
		if !ev.Incarnation.Inferred {
			break // explicitLife decided it above
		}
		evd := ev.Evidence
		if len(evd) == 0 {
			evd = []string{"no evidence given"}
		}
		if cur := s.currentInc(); cur != nil && cur.Number == ev.Incarnation.Number {
			cur.Evidence = append(cur.Evidence, evd...)
			break
		}
		// sandscope numbers inferred lives itself, from the record's last: never below it
		num := max(ev.Incarnation.Number, s.lastNumber()+1)
		if prev := s.currentInc(); prev != nil {
			prev.LastSeen = ev.Time
		}
		s.Incarnations = append(s.Incarnations, &Inc{Number: num, Inferred: true,
			FirstSeen: ev.Time, LastSeen: ev.Time, Evidence: append([]string(nil), evd...), Earlier: ev.Earlier})
		s.Current = client.Incarnation{Number: num, Inferred: true}
		notice = fmt.Sprintf("sandbox %s: new container, incarnation #%d (inferred: %s); older entries are STALE", s.Sandbox, num, strings.Join(evd, "; "))
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

// reportedNumber is the incarnation the bridge reported for the process or terminal an event
// carries (0: none).
func reportedNumber(ev Event) int {
	switch {
	case ev.Process != nil:
		return ev.Process.Incarnation
	case ev.Terminal != nil:
		return ev.Terminal.Incarnation
	}
	return 0
}

// How says how sandscope knows of this container life, for notices and timelines.
func (i *Inc) How() string {
	switch {
	case i.Inferred:
		return "inferred: " + strings.Join(i.Evidence, "; ")
	case i.Bridge > 0 && i.Bridge != i.Number:
		return fmt.Sprintf("the bridge calls it #%d", i.Bridge)
	}
	return "reported by the bridge"
}

// bridgeNumber is the bridge's own number in an incarnation it reported (0 when inferred).
func bridgeNumber(inc client.Incarnation) int {
	if inc.Inferred {
		return 0
	}
	return inc.Number
}

// identity is the incarnation as the rest of sandscope names it: the record's number.
func (i *Inc) identity() client.Incarnation {
	return client.Incarnation{Number: i.Number, Inferred: i.Inferred, Started: i.Started}
}

// lastNumber is the highest number the record has given a life of this sandbox.
func (s *State) lastNumber() int {
	n := 0
	for _, inc := range s.Incarnations {
		n = max(n, inc.Number)
	}
	return n
}

// explicitLife folds a container life the bridge reported by number: the current life again, the
// first report of a life sandscope had numbered itself, or a new life. A bridge may reuse a number
// (numbering from 1 again after a restart), so a number is not an identity: a new life is decided
// by evidence (a different number; the same number with another start time; the watcher's own
// evidence of a boundary under the same number) and gets a number of the record's own, never one an
// earlier life had. It returns the new-container notice, or "".
func (s *State) explicitLife(ev Event) string {
	n, kind := ev.Incarnation.Number, ev.Kind
	cur := s.currentInc()
	boundary := kind == client.IncarnationChanged.String()
	switch {
	case cur.Bridge == 0 && !boundary:
		// sandscope had numbered this life; the bridge now names it: keep the record's number
		// unless the bridge's is free (the usual case: they agree from then on)
		cur.Bridge, cur.Inferred, cur.Started = n, false, ev.Incarnation.Started
		s.renumber(cur, n)
		cur.Evidence = append(cur.Evidence, fmt.Sprintf("the bridge reports this container as incarnation #%d", n))
		s.Current = cur.identity()
		return ""
	case cur.Bridge == n && !boundary && (ev.Incarnation.Started == 0 || cur.Started == 0 || ev.Incarnation.Started == cur.Started):
		if cur.Started == 0 {
			cur.Started = ev.Incarnation.Started
		}
		s.Current = cur.identity()
		return ""
	case boundary && cur.Bridge == 0 && cur.Number == n:
		// the bridge names, with the same number, the life sandscope had numbered itself: the
		// same container, now reported (its evidence stays on the timeline)
		cur.Bridge, cur.Inferred, cur.Started = n, false, ev.Incarnation.Started
		s.renumber(cur, n)
		cur.Evidence = append(cur.Evidence, ev.Evidence...)
		s.Current = cur.identity()
		return ""
	case boundary && cur.Bridge == n && (ev.Previous.Number != n || ev.Previous.Inferred) && sameStart(cur.Started, ev.Incarnation.Started):
		// the watcher's first explicit report, with evidence, of the life the record already
		// knows by that number (a launch or a command's lookup named it first)
		cur.Evidence = append(cur.Evidence, ev.Evidence...)
		s.Current = cur.identity()
		return ""
	}
	var why []string
	if boundary {
		why = append(why, ev.Evidence...)
	} else {
		why = append(why, fmt.Sprintf("the bridge reports incarnation #%d where the record's current container was its #%d", n, cur.Bridge))
	}
	switch {
	case cur.Bridge > 0 && n < cur.Bridge:
		why = append(why, fmt.Sprintf("the bridge numbers this container #%d, below the #%d it reported before: its numbering started again (the bridge was restarted)", n, cur.Bridge))
	case cur.Bridge == n && cur.Started != 0 && ev.Incarnation.Started != 0 && cur.Started != ev.Incarnation.Started:
		why = append(why, fmt.Sprintf("the bridge reports #%d again, but this container started at %s (the earlier #%d started at %s)",
			n, time.Unix(0, ev.Incarnation.Started).Format("15:04:05"), n, time.Unix(0, cur.Started).Format("15:04:05")))
	}
	num := n
	if num <= s.lastNumber() {
		num = s.lastNumber() + 1
		why = append(why, fmt.Sprintf("recorded as #%d: the record already has a #%d of this sandbox, a different container", num, n))
	}
	if len(why) == 0 {
		why = []string{"no evidence given"}
	}
	cur.LastSeen = ev.Time
	inc := &Inc{Number: num, Bridge: n, Started: ev.Incarnation.Started, FirstSeen: ev.Time, LastSeen: ev.Time,
		Evidence: why, Earlier: ev.Earlier}
	s.Incarnations = append(s.Incarnations, inc)
	s.Current = inc.identity()
	return fmt.Sprintf("sandbox %s: new container, incarnation #%d (%s); older entries are STALE", s.Sandbox, num, inc.How())
}

// sameStart: two start times that do not tell two lives apart (equal, or one unknown).
func sameStart(a, b int64) bool { return a == 0 || b == 0 || a == b }

// renumber gives a life sandscope had numbered itself the number the bridge reports for it, when no
// earlier life has that number (else the record's number stays); its entries are no longer
// inferred.
func (s *State) renumber(inc *Inc, n int) {
	old := inc.Number
	if n <= s.lastNumber() && n != old {
		n = old
	}
	for _, list := range [][]*Entry{s.Processes, s.Terminals} {
		for _, e := range list {
			if e.Incarnation == old && e.Inferred {
				e.Incarnation, e.Inferred = n, false
			}
		}
	}
	inc.Number = n
}

// lifeOf is the record's number for a life the bridge reported as n: the newest life it gave that
// number (n itself when none).
func (s *State) lifeOf(n int) int {
	for i := len(s.Incarnations) - 1; i >= 0; i-- {
		if s.Incarnations[i].Bridge == n {
			return s.Incarnations[i].Number
		}
	}
	return n
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
	if inc > 0 && !inferred {
		inc = s.lifeOf(inc) // the bridge's number, as the record numbers that life
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
	if e == nil && ev.Status != nil && ev.Entity == Process {
		// a follower's status lookup is enough to know the process (a command that followed it
		// without listing it first)
		st := *ev.Status
		e = s.upsert(Process, ev.EntityID, Event{Source: FromLookup, Time: ev.Time, Run: ev.Run, Earlier: ev.Earlier, Process: &st})
		e.Process, e.LastSeen = st, ev.Time
	}
	if e == nil {
		return
	}
	s.markStream(e, ev)
}

// markStream is what a stream event does to its entry e.
func (s *State) markStream(e *Entry, ev Event) {
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
	case "terminal " + client.TermExited.String(), "terminal " + client.TermError.String():
		// the terminal's connection saw it end: the entry ends with it, as a process's does
		if e.Kind == Terminal {
			if ev.Exit != nil {
				x := *ev.Exit
				e.Terminal.Exit, e.Terminal.Status = &x, "exited"
			}
			if ev.Kind == "terminal "+client.TermError.String() {
				e.Terminal.Status = "error"
				if ev.Err != "" {
					e.Terminal.Error = &client.RunError{Code: "error", Message: ev.Err}
				}
			}
			e.LastSeen = ev.Time
		}
	case client.Lost.String(), "terminal " + client.TermLost.String():
		if !e.Lost {
			e.Lost, e.LostAt = true, ev.Time
			if ev.Loss != nil {
				e.Evidence, e.Loss = []string{client.DescribeLoss(ev.Loss)}, ev.Loss
			}
		}
	}
}
