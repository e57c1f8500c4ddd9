package client

import "time"

// LogEventKind is what a LogEvent says happened. The set is closed: the UI switches over it.
type LogEventKind int

const (
	// Data carries output bytes exactly as the process wrote them.
	Data LogEventKind = iota
	// Gap says bytes are missing here: the bridge evicted them (truncated), the cursor was invalid or
	// expired, or the stream restarted from the beginning. Gap.Bytes tells what is known of the size.
	Gap
	// Interrupted says the stream broke (Reason says how); the follower will try to resume.
	Interrupted
	// Reconnecting says a resume attempt is scheduled: Attempt (from 1) of Budget, made after Delay;
	// Reason says why the last one failed.
	Reconnecting
	// Resumed says the stream is flowing again from the last delivered cursor, with no gap.
	Resumed
	// Quiet says no data arrived for a while and a status lookup confirmed the process is running.
	Quiet
	// SuspectEnd says the stream ended (cleanly or with a terminal event) while status still says
	// running; the follower keeps following from the cursor.
	SuspectEnd
	// Ended is the confirmed end: the bridge's status agrees. Status holds it.
	Ended
	// Lost says the process is gone (404 or absent) while it was running. Loss holds the evidence.
	Lost
	// Failed says the follower gave up: the bridge stayed unreachable past the retry budget, or
	// answered something that cannot be resumed from (Err says what).
	Failed
)

func (k LogEventKind) String() string {
	switch k {
	case Data:
		return "data"
	case Gap:
		return "gap"
	case Interrupted:
		return "interrupted"
	case Reconnecting:
		return "reconnecting"
	case Resumed:
		return "resumed"
	case Quiet:
		return "quiet"
	case SuspectEnd:
		return "suspect end"
	case Ended:
		return "ended"
	case Lost:
		return "lost"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Stream tells stdout from stderr.
type Stream int

const (
	Stdout Stream = iota
	Stderr
)

func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// LogEvent is one thing that happened on a followed log. Every event carries the bridge cursor it
// corresponds to: for Data the chunk's own cursor, for the others the last cursor delivered before it
// (empty when nothing was delivered yet). Time is the bridge timestamp for Data and the local
// observation time otherwise.
type LogEvent struct {
	Kind   LogEventKind
	Cursor string
	Time   time.Time

	Stream Stream // Data
	Data   []byte // Data: exact bytes, never modified

	Gap     *GapInfo      // Gap
	Reason  string        // Interrupted, Reconnecting, SuspectEnd, Gap, Failed: human-readable why
	Attempt int           // Reconnecting, Resumed: which attempt
	Budget  int           // Reconnecting: how many attempts are made before the follower gives up
	Delay   time.Duration // Reconnecting: the pause before this attempt starts
	Since   time.Time     // Interrupted, Reconnecting: when the interruption began (zero: unknown)
	Status  *Process      // Quiet, SuspectEnd, Ended: the status lookup that decided it
	Loss    *LossEvidence // Lost
	Err     error         // Interrupted, Failed: the underlying error
}

// GapReason says why bytes are missing.
type GapReason int

const (
	GapTruncated     GapReason = iota // the bridge sent `truncated`: evicted by retention or a slow read
	GapInvalidCursor                  // the bridge rejected the resume cursor; restarted from the oldest retained
	GapRestarted                      // the stream restarted from the beginning (cursor chain broken)
	GapSkipped                        // sequence numbers were skipped with no reason given (no `truncated`)
	// GapNotKept: the bytes were captured, but sandscope's record no longer holds them (its budget
	// dropped the oldest, or the file that kept them is missing or short). Not the bridge's doing.
	GapNotKept
)

// GapInfo describes a gap. Bytes and Events are -1 when unknown. FromCursor is the last cursor before
// the gap; ToCursor the first one after it (empty until known).
type GapInfo struct {
	Reason     GapReason
	Bytes      int64
	Events     int64
	FromCursor string
	ToCursor   string
}

// LossEvidence is what the client knows when a process or terminal vanished: the lookup that failed and
// what the sandbox looked like afterwards.
type LossEvidence struct {
	Lookup         string // e.g. "GET process: 404 not_found" or "absent from process list"
	SandboxRunning *bool  // nil when unknown
	Incarnation    int    // current incarnation after the loss (0 if unknown or not reported)
	Previous       int    // incarnation the process belonged to (0 if unknown)
	Inferred       bool   // true when the incarnation change is inferred rather than reported
}

// SandboxEventKind is what a SandboxEvent says happened.
type SandboxEventKind int

const (
	ProcessAppeared SandboxEventKind = iota
	ProcessChanged
	ProcessVanished
	TerminalAppeared
	TerminalChanged
	TerminalVanished
	SandboxStarted
	SandboxStopped
	IncarnationChanged
	// WatchError says a poll failed; Err holds why. The watcher keeps going with backoff.
	WatchError
	// WatchRecovered says polls succeed again after errors.
	WatchRecovered
)

func (k SandboxEventKind) String() string {
	switch k {
	case ProcessAppeared:
		return "process appeared"
	case ProcessChanged:
		return "process changed"
	case ProcessVanished:
		return "process vanished"
	case TerminalAppeared:
		return "terminal appeared"
	case TerminalChanged:
		return "terminal changed"
	case TerminalVanished:
		return "terminal vanished"
	case SandboxStarted:
		return "sandbox started"
	case SandboxStopped:
		return "sandbox stopped"
	case IncarnationChanged:
		return "incarnation changed"
	case WatchError:
		return "watch error"
	case WatchRecovered:
		return "watch recovered"
	}
	return "unknown"
}

// Incarnation identifies one container life under a sandbox ID. Number counts from 1 as seen by this
// client (or as reported by the local bridge). Inferred is true when the boundary was deduced from
// evidence rather than reported by the bridge.
type Incarnation struct {
	Number   int
	Inferred bool
	// Started is when the bridge says this container life began, in Unix nanoseconds (0: not
	// reported; sandscope's local bridge reports it). Two lives under the same number with
	// different start times are two lives: a restarted bridge may number from 1 again.
	Started int64 `json:",omitempty"`
}

// SandboxEvent is one change the watcher saw in a sandbox.
type SandboxEvent struct {
	Kind    SandboxEventKind
	Sandbox string
	Time    time.Time

	Process  *Process  // Process*: the new state (the last known one for Vanished)
	Terminal *Terminal // Terminal*: likewise

	Incarnation Incarnation // the current incarnation after this event
	Previous    Incarnation // IncarnationChanged: the one before
	Evidence    []string    // IncarnationChanged, *Vanished, SandboxStopped: why the watcher believes it
	Err         error       // WatchError
}

// TermEventKind is what a TermEvent on a terminal connection says happened.
type TermEventKind int

const (
	TermReady        TermEventKind = iota // connected; Cursor echoes the requested cursor
	TermOutput                            // Data holds output; Cursor advanced after the binary frame
	TermGap                               // the bridge sent `truncated`: output before here was evicted
	TermInterrupted                       // the connection dropped (CloseCode, Reason, Err)
	TermReconnecting                      // resuming from Cursor (Attempt)
	TermResumed                           // connected again from Cursor
	TermExited                            // the terminal exited (Exit); final
	TermError                             // the bridge sent an error message or a protocol violation (final if CloseCode != 0)
	TermLost                              // the terminal is gone with its container (Loss); final
	TermFailed                            // gave up reconnecting (Err); final
	TermReplayed                          // (stable) connected; Data is the whole ring buffer the bridge replays: clear the screen, then paint it
	TermEnded                             // (stable) the program ended; its exit code is unknown (the bridge never reports it); final
)

func (k TermEventKind) String() string {
	switch k {
	case TermReady:
		return "ready"
	case TermOutput:
		return "output"
	case TermGap:
		return "gap"
	case TermInterrupted:
		return "interrupted"
	case TermReconnecting:
		return "reconnecting"
	case TermResumed:
		return "resumed"
	case TermExited:
		return "exited"
	case TermError:
		return "error"
	case TermLost:
		return "lost"
	case TermFailed:
		return "failed"
	case TermReplayed:
		return "replayed"
	case TermEnded:
		return "ended"
	}
	return "unknown"
}

// TermEvent is one thing that happened on a terminal connection.
type TermEvent struct {
	Kind      TermEventKind
	Cursor    string
	Time      time.Time
	Data      []byte
	Exit      *Exit
	CloseCode int
	Reason    string
	Attempt   int
	Loss      *LossEvidence
	Err       error
}
