package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RecorderDir is where the in-sandbox recorder keeps each run's files: <dir>/<run>/{pid,out,err,
// status}. IncarnationMarker is the file that names the container: written on first contact by
// the recorder, it is missing after the container slept or was replaced.
const (
	RecorderDir       = "/workspace/.sandscope/runs"
	IncarnationMarker = "/workspace/.sandscope/incarnation"
)

// recorderScript runs "$@" with its stdout and stderr teed into files, then records the real exit
// status; while it runs, a heartbeat writes the time into "alive" every second (pids cannot be
// checked from another exec where each has its own PID namespace, as on sandscope's local bridge); a header line (nonce, pid, container marker) before the output and a trailer line
// (nonce, exit status) after all of it frame the output on stdout. Arguments: run dir, nonce,
// marker path, then the command. $SANDSCOPE_WORKSPACE names the directory that plays /workspace
// where it is not /workspace itself (sandscope's local bridge sets it).
const recorderScript = `w=${SANDSCOPE_WORKSPACE:-/workspace}; d=$w/${1#/workspace/}; n=$2; m=$w/${3#/workspace/}; shift 3
mkdir -p "$d" 2>/dev/null
if [ -s "$m" ]; then inc=$(cat "$m"); else inc=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n'); printf '%s\n' "$inc" > "$m"; fi
date +%s > "$d/alive"
printf '%s\n' "$$" > "$d/pid"
(while kill -0 $$ 2>/dev/null; do date +%s > "$d/alive.tmp" && mv -f "$d/alive.tmp" "$d/alive"; sleep 1; done) </dev/null >/dev/null 2>&1 & hb=$!
printf '%s:start:%s:%s\n' "$n" "$$" "$inc"
exec 4> >(tee -a "$d/out"); p1=$!
exec 5> >(tee -a "$d/err" >&2); p2=$!
"$@" >&4 2>&5 4>&- 5>&-
rc=$?
exec 4>&- 5>&-
wait $p1 $p2
printf '%s\n' "$rc" > "$d/status.tmp" && mv -f "$d/status.tmp" "$d/status"
kill $hb 2>/dev/null
printf '\n%s:end:%d\n' "$n" "$rc"
exit $rc`

// RunState is how a recorded run stands, and how sure sandscope is of it.
type RunState string

const (
	RunRunning     RunState = "RUNNING"       // output is arriving
	RunConfirmed   RunState = "EXITED"        // the real exit status is known (Code, Evidence)
	RunUnconfirmed RunState = "UNCONFIRMED"   // the stream reported an exit code but nothing confirms it
	RunInterrupted RunState = "INTERRUPTED"   // the stream broke off; outcome unknown until recovered
	RunErrored     RunState = "ERROR"         // the bridge sent an error event; outcome unknown until recovered
	RunLost        RunState = "LOST"          // the container that ran it is gone with its files (inferred)
	RunStillGoing  RunState = "STILL RUNNING" // recovered: no status yet, the recorder's pid file exists
)

// RunResult is what is known about a recorded run when its stream ended, or after recovery.
type RunResult struct {
	State    RunState
	Code     int    // exit code when State is RunConfirmed (or the reported one when RunUnconfirmed)
	Evidence string // why the state was decided, in words
	Inferred bool   // the state is inferred (LOST, container changes), not observed
	ErrCode  string // RunErrored: the bridge's code
	Message  string // RunErrored / RunInterrupted: the bridge's text or the read error
	// Recovered is the output the recorder's files hold (byte for byte), filled by Recover.
	RecoveredOut, RecoveredErr []byte
}

// RunEvent is one event of a recorded run: output (Kind ExecStdout/ExecStderr, Text), the
// recorder's header (Kind 0, Result nil: the run's PID and Incarnation are set from then on), or
// the end (Kind 0, Result set).
type RunEvent struct {
	Kind   ExecEventKind
	Text   []byte
	Result *RunResult
}

// RecordedRun is a command started under the in-sandbox recorder.
type RecordedRun struct {
	ID      string // the run's ID (its directory under RecorderDir)
	Sandbox string
	Session string
	// Incarnation is the container marker the recorder printed, and PID the recorder's pid in the
	// container. Both are set by the goroutine reading the run, just before the header's event (an
	// empty RunEvent, the first of Events): read them after receiving an event, not before.
	Incarnation string
	PID         int

	s      *Stable
	exec   *ExecRun
	nonce  string
	events chan RunEvent
	done   chan struct{}
	result RunResult
}

// Events delivers output, then one event with the Result; then it is closed.
func (r *RecordedRun) Events() <-chan RunEvent { return r.events }

// Dir is the run's directory in the sandbox.
func (r *RecordedRun) Dir() string { return RecorderDir + "/" + r.ID }

// Close stops reading (the command runs on in the sandbox).
func (r *RecordedRun) Close() error {
	err := r.exec.Close()
	<-r.done
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Run starts argv under the recorder through /exec (this starts the container when none runs).
// The streamed output is text decoded by the container (U+FFFD for invalid UTF-8); the recorder's
// files keep it byte for byte.
func (s *Stable) Run(ctx context.Context, sandbox string, opts ExecOptions) (*RecordedRun, error) {
	if len(opts.Argv) == 0 {
		return nil, fmt.Errorf("run: empty command: %w", ErrInvalidRequest)
	}
	id := time.Now().UTC().Format(runIDTime) + "-" + randomHex(4)
	nonce := "\x1esandscope-" + randomHex(8)
	r := &RecordedRun{ID: id, Sandbox: sandbox, Session: opts.Session, s: s, nonce: nonce,
		events: make(chan RunEvent, 64), done: make(chan struct{})}
	wrapped := opts
	wrapped.Argv = append([]string{"bash", "-c", recorderScript, "sandscope-run", r.Dir(), nonce, IncarnationMarker}, opts.Argv...)
	run, err := s.Exec(ctx, sandbox, wrapped)
	if err != nil {
		return nil, err
	}
	r.exec = run
	go r.read(ctx)
	return r, nil
}

// reStart is compiled at first use, not at every command's start.
var reStart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+):([0-9a-f]*)\n`) })

// read strips the recorder's header and trailer from stdout and classifies the ending.
func (r *RecordedRun) read(ctx context.Context) {
	defer close(r.done)
	defer close(r.events)
	emit := func(ev RunEvent) bool {
		select {
		case r.events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var pending []byte // stdout not yet passed on: may hold the header or the start of the trailer
	headerDone := false
	trailerCode := -1
	startTag := []byte(r.nonce + ":start:")
	endTag := []byte("\n" + r.nonce + ":end:")
	flushSafe := func(final bool) bool {
		if !headerDone {
			if bytes.HasPrefix(pending, startTag) {
				m := reStart().FindSubmatch(pending[len(startTag):])
				if m == nil {
					if !final && len(pending) < len(startTag)+64 {
						return true
					}
					headerDone = true
				} else {
					r.PID, _ = strconv.Atoi(string(m[1]))
					r.Incarnation = string(m[2])
					pending = pending[len(startTag)+len(m[0]):]
					headerDone = true
					// Say so at once: a command that prints nothing would otherwise keep its
					// container marker unseen until it ends.
					if !emit(RunEvent{}) {
						return false
					}
				}
			} else if !final && bytes.HasPrefix(startTag, pending) {
				return true
			} else {
				headerDone = true
			}
		}
		if i := bytes.Index(pending, endTag); i >= 0 {
			rest := pending[i+len(endTag):]
			if j := bytes.IndexByte(rest, '\n'); j >= 0 {
				if n, err := strconv.Atoi(string(rest[:j])); err == nil {
					trailerCode = n
					out := pending[:i]
					pending = nil
					return len(out) == 0 || emit(RunEvent{Kind: ExecStdout, Text: out})
				}
			}
			if !final {
				if i > 0 {
					out := append([]byte(nil), pending[:i]...)
					pending = pending[i:]
					return emit(RunEvent{Kind: ExecStdout, Text: out})
				}
				return true
			}
		}
		keep := 0
		if !final {
			// Hold back a suffix that could start the trailer.
			for k := min(len(endTag)-1, len(pending)); k > 0; k-- {
				if bytes.HasPrefix(endTag, pending[len(pending)-k:]) {
					keep = k
					break
				}
			}
		}
		if len(pending)-keep > 0 {
			out := append([]byte(nil), pending[:len(pending)-keep]...)
			pending = pending[len(pending)-keep:]
			return emit(RunEvent{Kind: ExecStdout, Text: out})
		}
		return true
	}
	var res RunResult
	for ev := range r.exec.Events() {
		switch ev.Kind {
		case ExecStdout:
			pending = append(pending, ev.Text...)
			if !flushSafe(false) {
				return
			}
			continue
		case ExecStderr:
			if !emit(RunEvent{Kind: ExecStderr, Text: ev.Text}) {
				return
			}
			continue
		}
		if !flushSafe(true) {
			return
		}
		switch ev.Kind {
		case ExecExit:
			switch {
			case trailerCode >= 0 && trailerCode == ev.Code:
				res = RunResult{State: RunConfirmed, Code: ev.Code, Evidence: "the recorder's exit status matches the reported exit code"}
			case trailerCode >= 0:
				res = RunResult{State: RunConfirmed, Code: trailerCode,
					Evidence: fmt.Sprintf("the recorder saw exit status %d; the stream reported %d", trailerCode, ev.Code)}
			default:
				res = RunResult{State: RunUnconfirmed, Code: ev.Code,
					Evidence: fmt.Sprintf("the stream reported exit code %d without the recorder's trailer (a 0.12 completion without an exit code is written as 0)", ev.Code)}
			}
		case ExecError:
			res = RunResult{State: RunErrored, ErrCode: ev.ErrCode, Message: ev.Message,
				Evidence: "the bridge sent an error event; the command's outcome is unknown"}
		case ExecInterrupted:
			msg := ""
			if ev.Err != nil {
				msg = ev.Err.Error()
			}
			res = RunResult{State: RunInterrupted, Message: msg,
				Evidence: "the stream broke off without an exit or error event (a cut between the bridge and sandscope); the command's outcome is unknown"}
		}
	}
	if res.State == "" {
		if ctx.Err() != nil {
			return
		}
		res = RunResult{State: RunInterrupted, Evidence: "the stream ended early"}
	}
	r.result = res
	emit(RunEvent{Result: &res})
}

// Result is the run's result once Events is closed.
func (r *RecordedRun) Result() RunResult {
	<-r.done
	return r.result
}

// runIDTime is the layout of the launch time that starts every run ID (Run writes it,
// launchedWithin reads it back).
const runIDTime = "20060102T150405Z"

// recorderStartGrace is how long after launch a run whose recorder has left no files is still
// taken as starting rather than lost.
const recorderStartGrace = 20 * time.Second

// launchedWithin reports whether run id (whose name starts with its launch time, see Run) was
// launched less than d ago. An ID that does not parse is not recent.
func launchedWithin(id string, d time.Duration) bool {
	stamp, _, ok := strings.Cut(id, "-")
	if !ok {
		return false
	}
	at, err := time.Parse(runIDTime, stamp)
	if err != nil {
		return false
	}
	age := time.Since(at)
	return age > -time.Minute && age < d
}

// probeScript reports what the sandbox holds of a run, for Recover: its status file, whether its
// recorder still runs (its heartbeat is at most 10 s old), and the container marker; the last line (nonce:done) proves the
// answer is complete. It creates nothing. Arguments: run dir, marker path, nonce.
const probeScript = `w=${SANDSCOPE_WORKSPACE:-/workspace}; d=$w/${1#/workspace/}; m=$w/${2#/workspace/}
if [ -f "$d/status" ]; then printf 'status %s\n' "$(cat "$d/status")"; fi
if [ -f "$d/pid" ]; then p=$(cat "$d/pid"); a=$(cat "$d/alive" 2>/dev/null); if [ -n "$a" ] && [ $(( $(date +%s) - a )) -le 10 ]; then echo "pid $p alive"; else echo "pid $p dead"; fi; fi
if [ -s "$m" ]; then printf 'marker %s\n' "$(cat "$m")"; else echo "marker none"; fi
printf '%s:done\n' "$3"`

// runProbe is what probeScript found.
type runProbe struct {
	status    *int
	pid       int
	alive     bool
	marker    string // "" = none
	hasPIDRec bool
}

func (s *Stable) probe(ctx context.Context, sandbox, id string) (runProbe, error) {
	nonce := "sandscope-probe-" + randomHex(8)
	run, err := s.Exec(ctx, sandbox, ExecOptions{Argv: []string{"bash", "-c", probeScript, "sandscope-probe",
		RecorderDir + "/" + id, IncarnationMarker, nonce}})
	if err != nil {
		return runProbe{}, err
	}
	defer run.Close()
	var out bytes.Buffer
	var end ExecEvent
	for ev := range run.Events() {
		if ev.Kind == ExecStdout {
			out.Write(ev.Text)
			continue
		}
		if ev.Kind != ExecStderr {
			end = ev
		}
	}
	text := out.String()
	if !strings.Contains(text, nonce+":done\n") {
		switch end.Kind {
		case ExecError:
			return runProbe{}, fmt.Errorf("probe: the bridge sent %s: %s", end.ErrCode, end.Message)
		case ExecInterrupted:
			return runProbe{}, fmt.Errorf("probe: %w", &TransportError{Op: "probe", Err: end.Err})
		}
		return runProbe{}, fmt.Errorf("probe: incomplete answer %q", clipBytes([]byte(text)))
	}
	var p runProbe
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "status":
			if n, err := strconv.Atoi(f[1]); err == nil {
				p.status = &n
			}
		case len(f) == 3 && f[0] == "pid":
			p.pid, _ = strconv.Atoi(f[1])
			p.alive, p.hasPIDRec = f[2] == "alive", true
		case len(f) == 2 && f[0] == "marker":
			if f[1] != "none" {
				p.marker = f[1]
			}
		}
	}
	return p, nil
}

// Recover finds out what became of run id, through a probe (/exec) and the files API; each
// request starts the container if it slept, which then answers from an empty one.
// seenIncarnation is the marker the run printed when it started ("" when unknown). It decides:
//   - status file present: EXITED with that code (confirmed by the recorder), output read back
//     byte for byte;
//   - no status, the recorder's pid alive: STILL RUNNING (output so far read back);
//   - no status, the pid dead: ENDED without a status (killed; outcome unknown) — UNCONFIRMED;
//   - no files yet, the recorder's header never seen and the run launched under
//     recorderStartGrace ago: STILL RUNNING (it may not have started yet);
//   - no files, and the container marker missing or different: LOST (inferred: the container that
//     ran it slept or was replaced, and took the files).
//
// A probe that breaks off is an error (try again), never a decision.
func (s *Stable) Recover(ctx context.Context, sandbox, id, seenIncarnation string) (RunResult, error) {
	if strings.ContainsAny(id, "/\x00") || id == "" || id == "." || id == ".." {
		return RunResult{}, fmt.Errorf("recover: run ID %q: %w", id, ErrInvalidRequest)
	}
	pr, err := s.probe(ctx, sandbox, id)
	if err != nil {
		return RunResult{}, fmt.Errorf("recover %s: %w", id, err)
	}
	dir := RecorderDir + "/" + id
	readOutput := func(res *RunResult) {
		var errOut, errErr error
		res.RecoveredOut, errOut = s.ReadFile(ctx, sandbox, dir+"/out")
		res.RecoveredErr, errErr = s.ReadFile(ctx, sandbox, dir+"/err")
		if errOut != nil || errErr != nil {
			// A command that wrote nothing to one stream leaves that file missing.
			if errOut != nil && !errors.Is(errOut, ErrFileUnreadable) {
				res.Message = "output not read back: " + errOut.Error()
			}
		}
	}
	switch {
	case pr.status != nil:
		res := RunResult{State: RunConfirmed, Code: *pr.status, Evidence: "the recorder's status file in the sandbox"}
		readOutput(&res)
		return res, nil
	case pr.hasPIDRec && pr.alive:
		res := RunResult{State: RunStillGoing, Evidence: fmt.Sprintf("the recorder (pid %d) is still running", pr.pid)}
		readOutput(&res)
		return res, nil
	case pr.hasPIDRec:
		res := RunResult{State: RunUnconfirmed, Code: -1,
			Evidence: fmt.Sprintf("the recorder (pid %d) ended without writing a status: it was killed; the outcome is unknown", pr.pid)}
		readOutput(&res)
		return res, nil
	case seenIncarnation == "" && launchedWithin(id, recorderStartGrace):
		// The recorder's header never arrived, so the run may simply not have started yet (a
		// busy container starts bash slowly, and a cut can come before the first byte): absent
		// files decide nothing until the grace has passed.
		return RunResult{State: RunStillGoing, Evidence: "the run was launched moments ago and its recorder has not written its files yet"}, nil
	case pr.marker == "":
		return RunResult{State: RunLost, Inferred: true,
			Evidence: "the run's files and sandscope's container marker are gone: the container that ran it slept or was replaced"}, nil
	case seenIncarnation != "" && pr.marker != seenIncarnation:
		return RunResult{State: RunLost, Inferred: true,
			Evidence: "the container marker changed since the run started: another container answers now, and the run's files went with the old one"}, nil
	}
	return RunResult{State: RunLost, Inferred: true,
		Evidence: "the run's files are not in the sandbox (the recorder never started, or they were removed)"}, nil
}

// StableArgv applies an environment and a timeout, which the stable /exec has no fields for, by
// wrapping argv in timeout(1) and env(1).
func StableArgv(argv []string, env map[string]string, timeout time.Duration) []string {
	out := []string{}
	if timeout > 0 {
		secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
		out = append(out, "timeout", "--kill-after=1s", secs+"s")
	}
	if len(env) > 0 {
		out = append(out, "env")
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, k+"="+env[k])
		}
	}
	return append(out, argv...)
}
