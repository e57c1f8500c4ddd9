package record

import (
	"fmt"
	"sort"
	"time"

	"sandscope/client"
)

// Source says which part of sandscope observed an event.
type Source string

const (
	FromWatch    Source = "watch"    // the sandbox watcher (non-waking lookups)
	FromStream   Source = "stream"   // a log follower
	FromTerminal Source = "terminal" // a terminal connection
	FromAction   Source = "action"   // something the user asked sandscope to do
	FromLaunch   Source = "launch"   // how sandscope launched a process or terminal
	FromCapture  Source = "capture"  // the background output capture (began, stopped, dropped)
	// FromLookup is a command's own lookup (ls, exec, logs, wait, shell, attach): the same kinds as
	// the watcher's events (process appeared or changed, sandbox started or stopped), folded the
	// same way, so what a command saw is history every screen and report shows.
	FromLookup Source = "lookup"
)

// EntityKind tells processes from terminals.
type EntityKind string

const (
	Process  EntityKind = "process"
	Terminal EntityKind = "terminal"
)

// Launch is how a process or terminal was started: argv, working directory and the names of the
// environment variables (never their values).
type Launch struct {
	Argv     []string `json:"argv"`
	Cwd      string   `json:"cwd,omitempty"`
	EnvNames []string `json:"envNames,omitempty"`
	Timeout  int64    `json:"timeoutMs,omitempty"`
}

// Action is something the user asked for (exec, kill, relaunch, replace, stop, terminal) and what
// came of it.
type Action struct {
	Kind    string `json:"kind"`             // exec, kill, relaunch, replace, stop, terminal, interrupt, terminate
	Detail  string `json:"detail,omitempty"` // e.g. the signal, the relaunched process
	Outcome string `json:"outcome"`          // "ok" or the error text
	Result  string `json:"result,omitempty"` // e.g. the new process ID
}

// Event is one observation. It is stored as it was made; the state screens show is a fold over
// the events of a sandbox (see State).
type Event struct {
	ID      int64     `json:"-"` // row ID (increasing)
	Run     int64     `json:"-"` // the sandscope run that observed it
	Earlier bool      `json:"-"` // observed by an earlier run than the one reading
	Time    time.Time `json:"time"`
	Sandbox string    `json:"sandbox"`
	Source  Source    `json:"source"`
	Kind    string    `json:"kind"` // the client event kind's name, or the action kind

	Entity   EntityKind `json:"entity,omitempty"`
	EntityID string     `json:"entityId,omitempty"`

	Process  *client.Process  `json:"process,omitempty"`
	Terminal *client.Terminal `json:"terminal,omitempty"`

	Incarnation client.Incarnation `json:"incarnation"`
	Previous    client.Incarnation `json:"previous,omitempty"`
	Evidence    []string           `json:"evidence,omitempty"`

	Cursor   string               `json:"cursor,omitempty"`
	Reason   string               `json:"reason,omitempty"`
	GapBytes int64                `json:"gapBytes,omitempty"` // -1 unknown
	Attempt  int                  `json:"attempt,omitempty"`
	Status   *client.Process      `json:"status,omitempty"` // the status lookup that decided a stream event
	Exit     *client.Exit         `json:"exit,omitempty"`   // terminal exits
	Loss     *client.LossEvidence `json:"loss,omitempty"`
	Err      string               `json:"error,omitempty"`

	Launch *Launch      `json:"launch,omitempty"`
	Action *Action      `json:"action,omitempty"`
	Stable *StableEntry `json:"stable,omitempty"` // FromStable events

	cause error // the error itself (WatchError), for callers that classify it; not stored
}

// Lost reports whether the event says a running process or terminal vanished.
func (e *Event) Lost() bool {
	switch {
	case e.Kind == client.Lost.String() || e.Kind == "terminal "+client.TermLost.String():
		return true
	case e.Kind == client.ProcessVanished.String():
		return e.Process != nil && e.Process.State == "running"
	case e.Kind == client.TerminalVanished.String():
		return e.Terminal != nil && e.Terminal.Status == "running"
	}
	return false
}

// FromSandboxEvent turns a watcher event into an Event.
func FromSandboxEvent(ev client.SandboxEvent) Event {
	e := Event{Time: ev.Time, Sandbox: ev.Sandbox, Source: FromWatch, Kind: ev.Kind.String(),
		Incarnation: ev.Incarnation, Previous: ev.Previous, Evidence: append([]string(nil), ev.Evidence...)}
	if ev.Process != nil {
		p := *ev.Process
		e.Process, e.Entity, e.EntityID = &p, Process, p.ID
	}
	if ev.Terminal != nil {
		t := *ev.Terminal
		e.Terminal, e.Entity, e.EntityID = &t, Terminal, t.ID
	}
	if ev.Err != nil {
		e.Err, e.cause = ev.Err.Error(), ev.Err
	}
	return e
}

// FromLogEvent turns a log follower's event (not Data: output goes to the capture) into an Event.
func FromLogEvent(sandbox, process string, ev client.LogEvent) Event {
	t := ev.Time
	if t.IsZero() {
		t = time.Now()
	}
	e := Event{Time: t, Sandbox: sandbox, Source: FromStream, Kind: ev.Kind.String(), Entity: Process,
		EntityID: process, Cursor: ev.Cursor, Reason: ev.Reason, Attempt: ev.Attempt, Loss: ev.Loss}
	if ev.Status != nil {
		s := *ev.Status
		e.Status = &s
	}
	if ev.Gap != nil {
		e.GapBytes = ev.Gap.Bytes
		if e.Reason == "" {
			e.Reason = GapReasonText(ev.Gap.Reason)
		}
	}
	if ev.Err != nil {
		e.Err = ev.Err.Error()
	}
	return e
}

// GapReasonText names a gap's reason.
func GapReasonText(r client.GapReason) string {
	switch r {
	case client.GapTruncated:
		return "the bridge evicted these bytes (truncated)"
	case client.GapInvalidCursor:
		return "the resume cursor was rejected; restarted from the oldest retained byte"
	case client.GapRestarted:
		return "the stream restarted from the beginning"
	case client.GapSkipped:
		return "the bridge skipped these events without saying why"
	case client.GapNotKept:
		return "the record no longer holds these bytes"
	}
	return "unknown"
}

// FromTermEvent turns a terminal connection's event (not output) into an Event.
func FromTermEvent(sandbox, terminal string, ev client.TermEvent) Event {
	t := ev.Time
	if t.IsZero() {
		t = time.Now()
	}
	e := Event{Time: t, Sandbox: sandbox, Source: FromTerminal, Kind: "terminal " + ev.Kind.String(), Entity: Terminal,
		EntityID: terminal, Cursor: ev.Cursor, Reason: ev.Reason, Attempt: ev.Attempt, Loss: ev.Loss}
	if ev.CloseCode != 0 {
		e.Reason = fmt.Sprintf("%s (close code %d)", ev.Reason, ev.CloseCode)
	}
	if ev.Exit != nil {
		x := *ev.Exit
		e.Exit = &x
	}
	if ev.Err != nil {
		e.Err = ev.Err.Error()
	}
	return e
}

// LaunchOf describes an exec request without its environment values.
func LaunchOf(argv []string, cwd string, env map[string]string, timeoutMs int64) *Launch {
	l := &Launch{Argv: append([]string(nil), argv...), Cwd: cwd, Timeout: timeoutMs}
	for k := range env {
		l.EnvNames = append(l.EnvNames, k)
	}
	sort.Strings(l.EnvNames)
	return l
}
