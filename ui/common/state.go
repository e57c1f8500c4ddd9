package common

import (
	"fmt"
	"time"

	"sandscope/client"
	"sandscope/themes"
)

var signalNames = map[int]string{
	1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE", 9: "KILL",
	10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM", 17: "CHLD", 18: "CONT",
	19: "STOP", 20: "TSTP", 21: "TTIN", 22: "TTOU", 24: "XCPU", 25: "XFSZ", 26: "VTALRM", 27: "PROF",
	28: "WINCH", 29: "IO", 30: "PWR", 31: "SYS",
}

// SignalName renders a signal number as "TERM", or "SIG42" when unnamed.
func SignalName(n int) string {
	if s, ok := signalNames[n]; ok {
		return s
	}
	return fmt.Sprintf("SIG%d", n)
}

// Signals lists the signals offered by the kill picker, TERM first (the default).
var killSignals = []int{15, 2, 1, 9, 3, 10, 12, 18, 19}

// KillSignals returns the signals the kill picker offers, the default first.
func KillSignals() []int { return append([]int(nil), killSignals...) }

// ExitLabel renders a confirmed ending: "EXITED 0", "KILLED TERM", "TIMED OUT", "ERROR code".
// ok is false when p has not ended.
func ExitLabel(state string, exit *client.Exit, rerr *client.RunError) (themes.Badge, string, bool) {
	switch state {
	case "exited":
		if exit == nil {
			return themes.BadgeExited, "EXITED ?", true
		}
		switch {
		case exit.TimedOut:
			return themes.BadgeTimedOut, "TIMED OUT", true
		case exit.Signal > 0:
			return themes.BadgeKilled, "KILLED " + SignalName(exit.Signal), true
		case exit.Code != 0:
			return themes.BadgeExitedFail, fmt.Sprintf("EXITED %d", exit.Code), true
		}
		return themes.BadgeExited, "EXITED 0", true
	case "error":
		code := "?"
		if rerr != nil && rerr.Code != "" {
			code = SanitizeText(rerr.Code)
		}
		return themes.BadgeError, "ERROR " + code, true
	}
	return 0, "", false
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
			b, label = themes.BadgeRunning, "RUNNING"
		} else {
			b, label = themes.BadgeUnknown, "UNKNOWN"
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
	if !ended && state == "running" && !lastSeen.IsZero() {
		label += " " + Age(now.Sub(lastSeen))
	}
	return b, label
}
