package cmdutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sandscope/client"
	"sandscope/driver"
	"sandscope/sanitize"
	"sandscope/ui/common"
	"sandscope/vocab"
	"strings"

	"github.com/charmbracelet/x/term"
)

// What the commands that follow a run share: the lookup of a run by ID prefix, the printing of a
// follow, the ending line and the exit status an ending gives.

// LookupProcess expands a unique prefix of a run ID among the driver's runs (ExpandPrefix) and
// returns the run as the list showed it (nil
// when the list failed or did not hold it: the follower's own lookup then reports the trouble).
// once (a command that does not retry) ends the command when the bridge did not answer: the
// follower would only wait for it again.
func LookupProcess(ctx context.Context, d driver.Driver, sandbox, id string, once bool) (string, *client.Process, error) {
	ps, err := d.Runs(ctx, sandbox)
	if err != nil && once && errors.Is(err, client.ErrNoAnswer) {
		return "", nil, BridgeFailure("", err, ExitFailure)
	}
	if err != nil {
		return id, nil, nil
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	full, err := ExpandPrefix("process", id, ids)
	if err != nil {
		return "", nil, err
	}
	for i := range ps {
		if ps[i].ID == full {
			return full, &ps[i], nil
		}
	}
	return full, nil, nil
}

// Unsettled says an ending's outcome is not confirmed: a code the stream reported and nothing
// confirms, an ending without a code, a stream that broke off.
func Unsettled(p *client.Process) bool {
	return p != nil && (p.State == driver.StateReported || p.State == driver.StateEnded || p.State == driver.StateInterrupted)
}

// StreamOnOneCore gives the Go scheduler one core for the commands that copy one stream to stdout
// (logs, exec), unless the user set GOMAXPROCS. Their work is a sequence (read, decode, write), and
// with more cores the runtime's idle threads spin and wake for every event, taking CPU from a bridge
// on the same machine. Measured on 2 cores with a 256 MiB replay: about 20% less CPU, half the
// context switches, and 15-25% less time (BenchmarkLogsFollowVsCurl).
//
// It also lets the heap grow to five times what is live before a collection (GOGC 400) unless
// the user set GOGC: such a command keeps about 3 MB live (its read and decode buffers are
// recycled), so the default's 4 MB goal had the collector run once during start-up alone, about
// a quarter of a one-line `logs -f`'s CPU (13.7 against 18 ms, perf stat -r 40), for a heap that
// stays under 20 MB either way.
func StreamOnOneCore() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(streamGCPercent)
	}
}

// streamGCPercent is the collector's setting for the commands that copy one stream (GOGC).
const streamGCPercent = 400

// CheckSandboxArg refuses a sandbox ID the bridge would refuse, before any call (exit 2).
func CheckSandboxArg(sandbox string) error {
	if !client.ValidSandboxID(sandbox) {
		return &ExitError{Code: ExitUsage, Err: errors.New(common.BadSandboxID(sandbox))}
	}
	return nil
}

// FailedExitCode maps a follower failure to the logs exit status.
func FailedExitCode(err error) int {
	switch {
	case errors.Is(err, client.ErrNotFound), errors.Is(err, client.ErrUnauthorized),
		errors.Is(err, client.ErrInvalidRequest), errors.Is(err, client.ErrUnsupported):
		return ExitUsage
	}
	return ExitNoResume
}

// PrintFollow copies a follower's output to stdout/stderr byte for byte and its other events to
// stderr as "sandscope: " notices. It returns the final event (Ended, Lost, Failed), or ok false
// when the stream closed without one (snapshot done or cancelled).
// cursor is the last cursor delivered ("" when none), to resume from.
func PrintFollow(events <-chan client.LogEvent, stdout, stderr io.Writer, verbose bool, observe func(client.LogEvent)) (final client.LogEvent, ok bool, cursor string) {
	out := bufio.NewWriterSize(stdout, 256<<10)
	errw := bufio.NewWriterSize(stderr, 64<<10)
	defer out.Flush()
	defer errw.Flush()
	var last io.Writer // writer that may hold unflushed bytes
	suspect := false   // a suspect end was reported
	flushAll := func() { _ = out.Flush(); _ = errw.Flush() }
	notice := func(format string, a ...any) {
		_ = out.Flush()
		// bridge text (IDs, states, reasons) reaches the terminal only through the sanitiser
		fmt.Fprintf(errw, "sandscope: %s\n", sanitize.Message(fmt.Sprintf(format, a...)))
		_ = errw.Flush()
		last = nil
	}
	for {
		var ev client.LogEvent
		var more bool
		select {
		case ev, more = <-events:
		default:
			flushAll() // nothing queued: show what we have
			ev, more = <-events
		}
		if !more {
			return client.LogEvent{}, false, cursor
		}
		if ev.Cursor != "" {
			cursor = ev.Cursor
		}
		if ev.Kind != client.Data && observe != nil {
			observe(ev)
		}
		switch ev.Kind {
		case client.Data:
			w := out
			if ev.Stream == client.Stderr {
				w = errw
			}
			// Keep the order of stdout and stderr bytes when both go to the same place.
			if last != nil && last != io.Writer(w) {
				flushAll()
			}
			if len(ev.Data) >= directWrite {
				// A big chunk goes straight out after what is buffered: copying it through the
				// buffer costs as much as decoding it.
				_ = w.Flush()
				dst := stdout
				if w == errw {
					dst = stderr
				}
				_, _ = dst.Write(ev.Data)
			} else {
				_, _ = w.Write(ev.Data)
			}
			last = w
		case client.Gap:
			notice("gap: %s%s", ev.Reason, GapSize(ev.Gap))
		case client.Interrupted:
			if ev.Cursor == "" {
				notice("stream interrupted: %s; retrying from the start (nothing received yet)", ev.Reason)
			} else {
				notice("stream interrupted: %s; resuming after the last cursor received", ev.Reason)
			}
		case client.Reconnecting:
			if verbose {
				notice("%s", DescribeRetry(ev))
			}
		case client.Resumed:
			notice("resumed (attempt %d), no gap", ev.Attempt)
		case client.Quiet:
			// Quiet streams are normal; nothing to say on the command line.
		case client.SuspectEnd:
			suspect = true
			notice("suspect end: %s; still following", ev.Reason)
		case client.Ended:
			line := DescribeEnd(ev.Status)
			if suspect && ev.Reason != "" && ev.Status != nil && ev.Status.State == driver.StateExited {
				// an ending doubted above: say what confirmed it
				line += " (confirmed: " + ev.Reason + ")"
			}
			notice("%s", line)
			return ev, true, cursor
		case client.Lost:
			notice("lost: %s", ev.Reason)
			return ev, true, cursor
		case client.Failed:
			notice("failed: %s", ev.Reason)
			return ev, true, cursor
		}
	}
}

// directWrite is the chunk size from which PrintFollow bypasses its buffers.
const directWrite = 32 << 10

func GapSize(g *client.GapInfo) string {
	if g == nil || g.Events < 0 {
		return ""
	}
	return " (" + vocab.Count(int(g.Events), "event") + " missing)"
}

// PlainToken says s is printable ASCII without spaces, safe to paste into a shell.
func PlainToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f || strings.IndexByte("'\"`$\\;&|<>()*?!#~", s[i]) >= 0 {
			return false
		}
	}
	return s != ""
}

// DescribeEnd is the ending line, the same for every bridge, in the shared vocabulary: "process
// ID ended: KILLED TERM (exit 143)", "… ended: REPORTED 3 (unconfirmed)", "… ended: ENDED exit
// code unknown".
func DescribeEnd(p *client.Process) string {
	if p == nil {
		return "process ended"
	}
	return fmt.Sprintf("process %s ended: %s", vocab.Text(p.ID), endingWord(p))
}

// endingWord is a run's ending as every screen words it (vocab.State), whichever dialect reported
// it; an error ending adds its message, a signal or timeout the exit status.
func endingWord(p *client.Process) string {
	if p.State == driver.StateError && p.Error != nil {
		return vocab.ErrorWord(p.Error) + ": " + vocab.Text(p.Error.Message)
	}
	if p.State == driver.StateExited && p.Exit != nil {
		return vocab.EndingDetail(p.Exit)
	}
	_, w, _ := vocab.State(p.State, p.Exit, p.Error)
	return w
}

// KeptAfterLoss says the driver still knows a run it reports lost (its status says LOST): it
// answers for it later from what it kept (a bridge that forgets a lost run reports no status).
func KeptAfterLoss(ev client.LogEvent) bool {
	return ev.Status != nil && ev.Status.State == driver.StateLost
}

// EndingExit is the exit status of exec and wait for an ending: the process's own code only when
// the ending is confirmed (exited), else 255 with a notice saying why the code is not its own
// (the ending line above already named the ending).
func EndingExit(p *client.Process, stderr io.Writer) error {
	why := ""
	switch {
	case p == nil:
		why = "the bridge gave no status with the ending"
	case p.State == driver.StateExited && p.Exit != nil:
		code := p.Exit.Code
		if code == 0 && p.Exit.Signal > 0 {
			code = 128 + p.Exit.Signal
		}
		switch {
		case code == 0:
			return nil
		case code < 0 || code > 255:
			why = fmt.Sprintf("exit code %d is not one a process can return", code)
		default:
			return &ExitError{Code: code}
		}
	case p.State == driver.StateReported && p.Exit != nil:
		why = fmt.Sprintf("the stream reported exit code %d and nothing confirms it", p.Exit.Code)
	case p.State == driver.StateLost:
		why = "the run was lost with its container"
	case p.State == driver.StateReported, p.State == driver.StateEnded:
		why = "the run ended and its exit code is unknown"
	case p.State == driver.StateInterrupted:
		why = "the stream broke off and how the run ended is not known"
	case p.State == driver.StateError:
		// the ending line said which error; it has no exit code
		return &ExitError{Code: ExitExecUnsure}
	default:
		why = "the ending was not confirmed"
	}
	fmt.Fprintf(stderr, "sandscope: exit status %d: %s\n", ExitExecUnsure, sanitize.Message(why))
	return &ExitError{Code: ExitExecUnsure}
}

// TellWake says, before the first request of a command to sandbox, that it starts the sandbox's
// container, on a bridge where requests do (driver.Waker); once per sandbox, as the driver keeps it.
func TellWake(d driver.Driver, sandbox, what string, stderr io.Writer) {
	if w, ok := d.(driver.Waker); ok {
		if s := w.WakeNotice(sandbox, what); s != "" {
			if !strings.HasPrefix(s, "sandscope: ") {
				s = "sandscope: " + s
			}
			fmt.Fprintf(stderr, "%s\n", sanitize.Message(s))
		}
	}
}

// IsTerminal says whether w is a terminal (a file whose descriptor is a TTY).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
