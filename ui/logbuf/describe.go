package logbuf

import (
	"errors"
	"fmt"
	"strings"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/vocab"
)

// Describe is the marker text Append uses for an event: what happened, in the product's words.
func Describe(ev client.LogEvent) string {
	why := func(prefix string) string {
		r := ev.Reason
		if r == "" && ev.Err != nil {
			r = ev.Err.Error()
		}
		if r == "" {
			return prefix
		}
		return prefix + ": " + r
	}
	switch ev.Kind {
	case client.Data:
		return fmt.Sprintf("%d bytes of %s", len(ev.Data), ev.Stream)
	case client.Gap:
		s := "GAP"
		if g := ev.Gap; g != nil {
			switch g.Reason {
			case client.GapTruncated:
				s += ": output evicted by the bridge"
			case client.GapInvalidCursor:
				s += ": resume cursor rejected, restarted from the oldest retained output"
			case client.GapRestarted:
				s += ": stream restarted from the beginning"
			case client.GapSkipped:
				s += ": events skipped by the bridge (no reason given)"
			case client.GapNotKept:
				s += ": output the record no longer holds"
			}
			switch {
			case g.Bytes > 0:
				s += fmt.Sprintf(" (%d bytes missing)", g.Bytes)
			case g.Bytes < 0:
				s += " (amount missing unknown)"
			}
		}
		if ev.Reason != "" {
			s += " — " + ev.Reason
		}
		return s
	case client.Interrupted:
		return why("INTERRUPTED")
	case client.Reconnecting:
		return fmt.Sprintf("RECONNECTING (attempt %d)", ev.Attempt)
	case client.Resumed:
		if ev.Attempt > 0 {
			return "RESUMED after " + vocab.Count(ev.Attempt, "attempt") + ", no gap"
		}
		return "RESUMED, no gap"
	case client.Quiet:
		return "QUIET: no output; status says running"
	case client.SuspectEnd:
		return why("SUSPECT END: the stream ended but status still says running; still following")
	case client.Ended:
		return "ENDED: " + endState(ev.Status)
	case client.Lost:
		s := "LOST: the process is gone"
		if l := ev.Loss; l != nil {
			var parts []string
			if l.Lookup != "" {
				parts = append(parts, l.Lookup)
			}
			if l.SandboxRunning != nil && !*l.SandboxRunning {
				parts = append(parts, "sandbox stopped")
			} else if l.Incarnation > 0 {
				inc := fmt.Sprintf("sandbox now in incarnation %d", l.Incarnation)
				if l.Previous > 0 {
					inc += fmt.Sprintf(" (was %d)", l.Previous)
				}
				if l.Inferred {
					inc += ", inferred"
				}
				parts = append(parts, inc)
			}
			if len(parts) > 0 {
				s += " (" + strings.Join(parts, "; ") + ")"
			}
		}
		return s
	case client.Failed:
		if errors.Is(ev.Err, driver.ErrNotLive) {
			// not a failure: the driver would have to start a container to read this run
			return "NOT FOLLOWED HERE: reading this run would start its container; open its own log to read it (sandscope asks first)"
		}
		return why("FOLLOW FAILED")
	}
	return ev.Kind.String()
}

// endState is a confirmed ending in the words every screen uses (vocab): "EXITED 0",
// "KILLED TERM (exit 143)", "TIMED OUT (exit 124)", "ERROR spawn_failed: …".
func endState(p *client.Process) string {
	switch {
	case p == nil:
		return "confirmed"
	case p.Error != nil:
		return vocab.ErrorWord(p.Error) + ": " + vocab.Text(p.Error.Message)
	case p.State == "exited" || p.Exit != nil:
		return vocab.EndingDetail(p.Exit)
	}
	_, w, _ := vocab.State(p.State, p.Exit, p.Error)
	return w
}
