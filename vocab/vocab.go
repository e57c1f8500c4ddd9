// Package vocab is sandscope's one vocabulary: the words for every process, terminal, stream and
// sandbox state, badge and ending, shared by the TUI (lists, pane header, log view), the command
// line (`ls`, `logs` and `exec` notices, `shell`) and full-screen attach, so a state reads the same
// everywhere. Every bridge-provided string it puts into a word (an error code, an unknown state)
// goes through the sanitiser; every string it returns is safe for a terminal.
package vocab

import (
	"fmt"
	"strings"

	"sandscope/client"
	"sandscope/sanitize"
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

// Words of the states. A state has one word everywhere.
const (
	Running  = "RUNNING"
	Stopped  = "STOPPED"
	TimedOut = "TIMED OUT"
	Lost     = "LOST"
	Unknown  = "UNKNOWN"
	// Endings a driver cannot confirm (the stable driver's; see driver.StateReported…).
	Ended       = "ENDED exit code unknown"
	Interrupted = "INTERRUPTED"
)

// Reported is the word of an exit code the stream reported and nothing confirms: "REPORTED 3
// (unconfirmed)". It is never shown as EXITED (a success it may not be).
func Reported(e *client.Exit) string {
	if e == nil {
		return "REPORTED ? (unconfirmed)"
	}
	return fmt.Sprintf("REPORTED %d (unconfirmed)", e.Code)
}

// Ending is a confirmed ending: "EXITED 0", "EXITED 3", "KILLED TERM", "TIMED OUT", or "EXITED ?"
// when the bridge gave no exit details.
func Ending(e *client.Exit) (themes.Badge, string) {
	switch {
	case e == nil:
		return themes.BadgeExited, "EXITED ?"
	case e.TimedOut:
		return themes.BadgeTimedOut, TimedOut
	case e.Signal > 0:
		return themes.BadgeKilled, "KILLED " + SignalName(e.Signal)
	case e.Code != 0:
		return themes.BadgeExitedFail, fmt.Sprintf("EXITED %d", e.Code)
	}
	return themes.BadgeExited, "EXITED 0"
}

// EndingDetail is Ending with the exit status a script would see when it adds to the word:
// "KILLED TERM (exit 143)", "TIMED OUT (exit 124)"; plain "EXITED 3" otherwise.
func EndingDetail(e *client.Exit) string {
	_, w := Ending(e)
	if e != nil && (e.TimedOut || e.Signal > 0) && e.Code != 0 {
		w += fmt.Sprintf(" (exit %d)", e.Code)
	}
	return w
}

// ErrorWord is the word of an error ending: "ERROR CODE" with the bridge's code sanitised.
func ErrorWord(rerr *client.RunError) string {
	if rerr == nil || rerr.Code == "" {
		return "ERROR ?"
	}
	return "ERROR " + sanitize.Label(rerr.Code).String()
}

// State renders a process's or terminal's state as the driver reported it: RUNNING, an ending, an
// error, an ending nothing confirms (REPORTED n (unconfirmed), ENDED exit code unknown),
// INTERRUPTED (the outcome is not known yet), LOST, or an unknown state word (sanitised,
// upper-cased). ended says the state is final (INTERRUPTED is not: the run may still end either
// way).
func State(state string, exit *client.Exit, rerr *client.RunError) (b themes.Badge, word string, ended bool) {
	switch state {
	case "running":
		return themes.BadgeRunning, Running, false
	case "exited":
		b, w := Ending(exit)
		return b, w, true
	case "error":
		return themes.BadgeError, ErrorWord(rerr), true
	case "reported":
		return themes.BadgeUnconfirmed, Reported(exit), true
	case "ended":
		return themes.BadgeUnconfirmed, Ended, true
	case "interrupted":
		return themes.BadgeUnconfirmed, Interrupted, false
	case "lost":
		return themes.BadgeLost, Lost, true
	case "":
		return themes.BadgeUnknown, Unknown, false
	}
	return themes.BadgeUnknown, strings.ToUpper(sanitize.Label(state).String()), false
}

// Sandbox is a sandbox's state: "RUNNING (incarnation 2)", "RUNNING", "STOPPED".
func Sandbox(running bool, incarnation int) string {
	if !running {
		return Stopped
	}
	if incarnation > 0 {
		return fmt.Sprintf("%s (incarnation %d)", Running, incarnation)
	}
	return Running
}

// Count says "1 marker", "2 markers", "0 markers": n with noun, plural unless n is 1. Nouns whose
// plural is not noun+"s" are given with their plural after a "|": "1 process|processes".
func Count(n int, noun string) string {
	one, many, ok := strings.Cut(noun, "|")
	if !ok {
		many = one + "s"
	}
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Text is an untrusted bridge string made safe for a label (IDs, cursors, cwd, argv, reasons).
func Text(s string) string { return sanitize.Label(s).String() }
