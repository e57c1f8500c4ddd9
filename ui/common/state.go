package common

import (
	"fmt"
	"time"

	"sandscope/client"
	"sandscope/themes"
	"sandscope/vocab"
)

// SignalName renders a signal number as "TERM", or "SIG42" when unnamed (vocab.SignalName).
func SignalName(n int) string { return vocab.SignalName(n) }

// Signals lists the signals offered by the kill picker, TERM first (the default).
var killSignals = []int{15, 2, 1, 9, 3, 10, 12, 18, 19}

// KillSignals returns the signals the kill picker offers, the default first.
func KillSignals() []int { return append([]int(nil), killSignals...) }

// ExitLabel renders a confirmed ending in the shared vocabulary: "EXITED 0", "KILLED TERM",
// "TIMED OUT", "ERROR code". ok is false when p has not ended.
func ExitLabel(state string, exit *client.Exit, rerr *client.RunError) (themes.Badge, string, bool) {
	b, w, ended := vocab.State(state, exit, rerr)
	if !ended {
		return 0, "", false
	}
	return b, w, true
}

// Condition is what sandscope knows about an entry beyond the bridge's last answer.
type Condition int

const (
	Current Condition = iota // seen in the current incarnation, bridge reachable
	Stale                    // belongs to an earlier incarnation
	Lost                     // was running and vanished
	Unknown                  // the bridge is unreachable; last known state shown with its age
)

// ProcessBadge is the badge of a process row: the confirmed state, or LOST/STALE/UNKNOWN.
// lastSeen is when the state was last confirmed by the bridge.
func ProcessBadge(state string, exit *client.Exit, rerr *client.RunError, cond Condition, incarnation int, lastSeen, now time.Time) (themes.Badge, string) {
	b, label, ended := ExitLabel(state, exit, rerr)
	if !ended {
		if state == "running" {
			b, label = themes.BadgeRunning, vocab.Running
		} else {
			b, label = themes.BadgeUnknown, vocab.Unknown
		}
	}
	switch cond {
	case Stale:
		inc := "earlier"
		if incarnation > 0 {
			inc = fmt.Sprintf("#%d", incarnation)
		}
		if state == "running" {
			label = "was RUNNING"
		}
		return themes.BadgeStale, "STALE " + inc + " · " + label
	case Lost:
		return themes.BadgeLost, "LOST"
	case Unknown:
		return themes.BadgeUnknown, "UNKNOWN (" + label + " " + Since(now, lastSeen) + ")"
	}
	// RUNNING alone: the run time has its own column, and the status's freshness is the sandbox
	// watcher's (the title says how often it polls; failing polls turn this UNKNOWN)
	return b, label
}
