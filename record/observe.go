package record

import (
	"fmt"
	"time"

	"sandscope/client"
)

// What a command saw with its own lookups (a process list, a launch's answer, GET running, the
// status a follower checked), as events of source FromLookup. They are the watcher's kinds and
// fold exactly as the watcher's events do, so a process that `logs`, `exec`, `wait`, `shell` or
// `attach` looked up is an entry with its state and incarnation, and the sandbox's state and
// incarnations are on its timeline, as if the TUI had watched. A number is an incarnation only
// when the bridge reported it: a lookup never carries one sandscope inferred.

// LookupProcess is a process as a lookup found it, with the incarnation the bridge reported for
// it (none when it reported none).
func LookupProcess(sandbox string, p client.Process) Event {
	pp := p
	return Event{Time: time.Now(), Sandbox: sandbox, Source: FromLookup, Kind: client.ProcessAppeared.String(),
		Entity: Process, EntityID: p.ID, Process: &pp, Incarnation: client.Incarnation{Number: p.Incarnation}}
}

// LookupTerminal is a terminal as a lookup found it (a list, or the answer that created it).
func LookupTerminal(sandbox string, t client.Terminal) Event {
	tt := t
	return Event{Time: time.Now(), Sandbox: sandbox, Source: FromLookup, Kind: client.TerminalAppeared.String(),
		Entity: Terminal, EntityID: t.ID, Terminal: &tt, Incarnation: client.Incarnation{Number: t.Incarnation}}
}

// LookupRunning is GET running's answer: the sandbox started (running) or stopped, with the
// incarnation the bridge reported. evidence says which lookup answered ("" words it as GET running).
func LookupRunning(sandbox string, rs client.RunningStatus, evidence string) Event {
	kind := client.SandboxStarted
	if !rs.Running {
		kind = client.SandboxStopped
	}
	if evidence == "" {
		evidence = fmt.Sprintf("GET running: %v", rs.Running)
	}
	inc := client.Incarnation{Number: rs.Incarnation}
	if rs.Incarnation > 0 && !rs.IncarnationStarted.IsZero() {
		inc.Started = rs.IncarnationStarted.UnixNano()
	}
	return Event{Time: time.Now(), Sandbox: sandbox, Source: FromLookup, Kind: kind.String(),
		Incarnation: inc, Evidence: []string{evidence}}
}

// LookupRunningProcess is what a running process in a lookup's answer says of its sandbox: it
// runs, in the process's incarnation (a stopped sandbox runs nothing). ok is false for a process
// that is not running. lookup names the lookup ("the process list", "the launch").
func LookupRunningProcess(sandbox string, p client.Process, lookup string) (ev Event, ok bool) {
	if p.State != "running" {
		return Event{}, false
	}
	return LookupRunning(sandbox, client.RunningStatus{Running: true, Incarnation: p.Incarnation},
		fmt.Sprintf("%s shows process %s running", lookup, p.ID)), true
}

// LookupRunningTerminal is LookupRunningProcess for a terminal.
func LookupRunningTerminal(sandbox string, t client.Terminal, lookup string) (ev Event, ok bool) {
	if t.Status != "running" {
		return Event{}, false
	}
	return LookupRunning(sandbox, client.RunningStatus{Running: true, Incarnation: t.Incarnation},
		fmt.Sprintf("%s shows terminal %s running", lookup, t.ID)), true
}

// LookupLoss is what a follower's loss evidence says of the sandbox, found by the GET running the
// follower made once entity (e.g. "process ID") was gone: the sandbox stopped; or a new
// incarnation, when the bridge reported both the one the entity belonged to and a different one
// now (IncarnationChanged, with that evidence); or it runs (in the reported incarnation, if any).
// None when the evidence does not say whether the sandbox runs. at is when the loss was seen.
func LookupLoss(sandbox, entity string, loss *client.LossEvidence, at time.Time) []Event {
	if loss == nil || loss.SandboxRunning == nil {
		return nil
	}
	if at.IsZero() {
		at = time.Now()
	}
	why := fmt.Sprintf("%s: %s", entity, client.DescribeLoss(loss))
	ev := Event{Time: at, Sandbox: sandbox, Source: FromLookup, Evidence: []string{why}}
	switch {
	case !*loss.SandboxRunning:
		ev.Kind = client.SandboxStopped.String()
		ev.Incarnation = client.Incarnation{Number: loss.Incarnation}
	case loss.Incarnation > 0 && loss.Previous > 0 && loss.Incarnation != loss.Previous:
		ev.Kind = client.IncarnationChanged.String()
		ev.Previous = client.Incarnation{Number: loss.Previous}
		ev.Incarnation = client.Incarnation{Number: loss.Incarnation}
		ev.Evidence = []string{fmt.Sprintf("the bridge reports incarnation %d (was %d): %s", loss.Incarnation, loss.Previous, why)}
	default:
		ev.Kind = client.SandboxStarted.String()
		ev.Incarnation = client.Incarnation{Number: loss.Incarnation}
	}
	return []Event{ev}
}

// FromCommandWatch turns the event of a watcher a command runs (logs --all -f) into an Event, or
// ok false for what is not the sandbox's history: the watcher's own errors and recoveries, and an
// incarnation boundary the watcher inferred. A command's watcher numbers inferred incarnations
// from its own start, not from the record's timeline, so its inferred numbers are dropped and
// only the bridge's reported ones are kept.
func FromCommandWatch(ev client.SandboxEvent) (Event, bool) {
	switch ev.Kind {
	case client.WatchError, client.WatchRecovered:
		return Event{}, false
	case client.IncarnationChanged:
		if ev.Incarnation.Inferred || ev.Incarnation.Number == 0 {
			return Event{}, false
		}
	}
	e := FromSandboxEvent(ev)
	if e.Incarnation.Inferred {
		e.Incarnation = client.Incarnation{}
	}
	if e.Previous.Inferred {
		e.Previous = client.Incarnation{}
	}
	return e, true
}
