package common

import (
	"fmt"
	"time"

	"sandscope/client"
	"sandscope/internal/cellwidth"
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
// lastSeen is when the state was last confirmed by the bridge. The label is the full wording
// (ProcessWord gives the shorter forms a narrow column uses).
func ProcessBadge(state string, exit *client.Exit, rerr *client.RunError, cond Condition, incarnation int, lastSeen, now time.Time) (themes.Badge, string) {
	w := ProcessWord(state, exit, rerr, cond, incarnation, lastSeen, now)
	return w.Badge, w.Full()
}

// ProcessWord is ProcessBadge with every form of the word, longest first: a narrow STATE column
// drops the detail the row's other columns or the detail line repeat (the incarnation, the age,
// the bridge's error code) and keeps the state word itself (STALE, UNKNOWN, ERROR…).
func ProcessWord(state string, exit *client.Exit, rerr *client.RunError, cond Condition, incarnation int, lastSeen, now time.Time) StateWord {
	b, label, ended := vocab.State(state, exit, rerr)
	if !ended && b != themes.BadgeRunning && b != themes.BadgeUnconfirmed {
		// a state word the vocabulary does not know: UNKNOWN (INTERRUPTED and RUNNING are
		// known words of states that have not ended)
		b, label = themes.BadgeUnknown, vocab.Unknown
	}
	// RUNNING alone: the run time has its own column, and the status's freshness is the sandbox
	// watcher's (the title says how often it polls; failing polls turn this UNKNOWN)
	word := StateWord{Badge: b, Forms: []string{label}}
	if b == themes.BadgeError && label != "ERROR" {
		// the bridge's code may be long: cut it before dropping it (the detail line has it whole)
		word = StateWord{Badge: b, Forms: []string{label, "ERROR"}, Cut: true}
	}
	switch cond {
	case Stale:
		inc := "earlier"
		if incarnation > 0 {
			inc = fmt.Sprintf("#%d", incarnation)
		}
		if state == "running" {
			word.Forms = []string{"was RUNNING"}
		}
		forms := []string{"STALE " + inc + " · " + word.Forms[0]}
		for _, f := range word.Forms {
			forms = append(forms, "STALE "+f)
		}
		return StateWord{Badge: themes.BadgeStale, Forms: append(forms, "STALE "+inc, "STALE")}
	case Lost:
		return StateWord{Badge: themes.BadgeLost, Forms: []string{vocab.Lost}}
	case Unknown:
		return StateWord{Badge: themes.BadgeUnknown, Forms: []string{vocab.Unknown + " (" + label + " " + Since(now, lastSeen) + ")", vocab.Unknown + " (" + label + ")", vocab.Unknown}}
	}
	return word
}

// StateWord is a state's word in every form a table may show, longest first. The last form is
// the bare state word; every form starts with it, so a row never shows a cut state.
type StateWord struct {
	Badge themes.Badge
	Forms []string
	// Cut lets the full form be shown cut (ending in "…") rather than fall back to a shorter
	// form when its detail keeps at least a few cells (a bridge's long error code).
	Cut bool
}

// minCutDetail is how many cells of a cut form's detail must show for the cut to be worth it.
const minCutDetail = 6

// Full is the complete wording.
func (s StateWord) Full() string {
	if len(s.Forms) == 0 {
		return vocab.Unknown
	}
	return s.Forms[0]
}

// Fit is the longest form that fits w cells; the shortest form, cut, when none does.
func (s StateWord) Fit(w int) string {
	for i, f := range s.Forms {
		if cellwidth.String(f) <= w {
			return f
		}
		if i == 0 && s.Cut && len(s.Forms) > 1 && w >= cellwidth.String(s.Forms[len(s.Forms)-1])+1+minCutDetail {
			return Fit(f, w)
		}
	}
	if len(s.Forms) == 0 {
		return Fit(vocab.Unknown, w)
	}
	return Fit(s.Forms[len(s.Forms)-1], w)
}

// StateWidths is what a STATE column titled title needs for words: least, the widest shortest
// form (so every row keeps its state word whole), and want, the widest full wording.
func StateWidths(title string, words []StateWord) (least, want int) {
	least = cellwidth.String(title)
	want = least
	for _, s := range words {
		if len(s.Forms) == 0 {
			continue
		}
		least = max(least, cellwidth.String(s.Forms[len(s.Forms)-1]))
		want = max(want, cellwidth.String(s.Forms[0]))
	}
	return least, want
}
