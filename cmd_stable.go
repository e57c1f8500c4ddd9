package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"sandscope/attach"
	"sandscope/client"
	"sandscope/record"
	"sandscope/sanitize"
	"sandscope/vocab"
)

// The command line on stable (0.12) bridges. Every /v1/sandbox/{id}/… request starts the sandbox's
// container there, so these paths send one only for what the user asked (a run, a shell, a
// session change) and read what sandscope itself recorded (the run book) for everything else.

// stableRecoverEvery is how often `exec` and `logs -f` read a run's recorder files while the run
// has not finished (each read is a request that keeps the container awake).
var stableRecoverEvery = 2 * time.Second

// stableAdapter returns the stable adapter when the bridge's document says it speaks the stable
// API. Reading the document starts nothing. err is set when the bridge did not answer at all (see
// probeBridge).
func stableAdapter(ctx context.Context, c *client.Client) (*client.Stable, bool, error) {
	return probeBridge(ctx, c)
}

// wakeNotice says, the first time per sandbox, that an action starts its container.
func wakeNotice(book runBook, bridge, sandbox, what string, stderr io.Writer) {
	sb, err := book.Sandbox(bridge, sandbox)
	if err == nil && sb.Told {
		return
	}
	fmt.Fprintf(stderr, "sandscope: stable bridge: %s starts the container of sandbox %s when it is not running (on 0.12 every request to a sandbox does); sandscope sends none on its own\n",
		what, vocab.Text(sandbox))
	_ = book.Update(bridge, sandbox, func(s *bookSandbox) { s.Told = true })
}

// stableExecArgv applies --env and --timeout, which the stable /exec has no fields for, by wrapping
// the command in env(1) and timeout(1).
func stableExecArgv(argv []string, env map[string]string, timeout time.Duration) []string {
	return client.StableArgv(argv, env, timeout)
}

// runStableExec runs argv under the recorder and exits with the process's own code only when the
// recorder confirms it; otherwise 255 with a notice.
func runStableExec(ctx context.Context, s *client.Stable, book runBook, bridge, sandbox string, opts client.ExecOptions, stdout, stderr io.Writer) error {
	if err := checkSandboxArg(sandbox); err != nil {
		return err
	}
	wakeNotice(book, bridge, sandbox, "exec", stderr)
	run, err := s.Run(ctx, sandbox, opts)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: interruptStatus(ctx)}
		}
		return bridgeExit("exec", err, exitExecUnsure)
	}
	entry := bookRun{ID: run.ID, Argv: opts.Argv, Session: opts.Session, Started: time.Now().UTC()}
	_ = book.Update(bridge, sandbox, func(sb *bookSandbox) {
		sb.SetRun(entry, client.RunResult{State: client.RunRunning, Evidence: "started here"}, time.Now())
		if opts.Session != "" {
			sb.UseSession(opts.Session, false, time.Now())
		}
	})
	var outN, errN int64
	var sawFFFD bool
	var res client.RunResult
	// What the stream delivers is kept in the record too: when the run is LOST, its files went
	// with its container, and this is all that is left of its output (logs SANDBOX RUN prints it).
	capture := runCapture(book, sandbox, run.ID)
	capture.begin()
	for ev := range run.Events() {
		switch {
		case ev.Result != nil:
			res = *ev.Result
		case ev.Kind == client.ExecStdout:
			sawFFFD = sawFFFD || bytes.ContainsRune(ev.Text, '\uFFFD')
			n, _ := stdout.Write(ev.Text)
			capture.data(client.Stdout, ev.Text[:n])
			outN += int64(n)
		case ev.Kind == client.ExecStderr:
			sawFFFD = sawFFFD || bytes.ContainsRune(ev.Text, '\uFFFD')
			n, _ := stderr.Write(ev.Text)
			capture.data(client.Stderr, ev.Text[:n])
			errN += int64(n)
		}
	}
	noteIncarnation(book, bridge, sandbox, run.Incarnation, stderr)
	entry.Incarnation = run.Incarnation
	if ctx.Err() != nil {
		_ = book.Update(bridge, sandbox, func(sb *bookSandbox) {
			sb.SetRun(entry, client.RunResult{State: client.RunInterrupted, Evidence: "sandscope stopped following; the command runs on"}, time.Now())
		})
		return &exitError{code: interruptStatus(ctx), err: fmt.Errorf("detached; run %s keeps going in the sandbox (sandscope logs -f %s %s)", run.ID, sandbox, run.ID)}
	}
	if sawFFFD {
		fmt.Fprintf(stderr, "sandscope: the stable bridge decodes output as text: bytes that were not UTF-8 show as U+FFFD; the exact bytes are in %s/out and err (sandscope logs %s %s)\n",
			run.Dir(), sandbox, run.ID)
	}
	if res.State != client.RunConfirmed {
		describeStableEnding(res, stderr)
		fmt.Fprintf(stderr, "sandscope: reading the recorder's files for run %s (each read is a request to the sandbox)\n", run.ID)
		res = followRecorder(ctx, s, sandbox, run.ID, run.Incarnation, &outN, &errN, stdout, stderr, capture)
	}
	capture.end(res)
	_ = book.Update(bridge, sandbox, func(sb *bookSandbox) { sb.SetRun(entry, res, time.Now()) })
	if res.State == client.RunLost {
		// the run's files went with its container: what was printed above is all there is, and
		// the record kept it
		return &exitError{code: exitExecUnsure, err: fmt.Errorf("run %s is LOST (inferred): %s; the output above is all sandscope received (sandscope logs %s %s prints what the record kept)",
			run.ID, res.Evidence, sandbox, run.ID)}
	}
	return stableExit(ctx, res, run.ID, stderr)
}

// describeStableEnding prints how a run's stream ended, before recovery.
func describeStableEnding(res client.RunResult, stderr io.Writer) {
	switch res.State {
	case client.RunUnconfirmed:
		fmt.Fprintf(stderr, "sandscope: the stream reported exit code %d, not confirmed: %s\n", res.Code, sanitize.Message(res.Evidence))
	case client.RunErrored:
		fmt.Fprintf(stderr, "sandscope: the bridge sent an error: %s: %s; the command's outcome is unknown\n",
			sanitize.Message(res.ErrCode), sanitize.Message(res.Message))
	case client.RunInterrupted:
		fmt.Fprintf(stderr, "sandscope: INTERRUPTED: %s (%s)\n", sanitize.Message(res.Evidence), sanitize.Message(res.Message))
	}
}

// stableExit turns a run's final result into the exit status: the code when confirmed, 3 when
// lost, 255 otherwise.
func stableExit(ctx context.Context, res client.RunResult, id string, stderr io.Writer) error {
	switch res.State {
	case client.RunConfirmed:
		if res.Code == 0 {
			return nil
		}
		code := res.Code
		if code < 0 || code > 255 {
			code = exitExecUnsure
		}
		return &exitError{code: code}
	case client.RunLost:
		return &exitError{code: exitExecUnsure, err: fmt.Errorf("run %s is LOST (inferred): %s", id, res.Evidence)}
	}
	if ctx.Err() != nil {
		return &exitError{code: interruptStatus(ctx), err: fmt.Errorf("detached; run %s may still be going", id)}
	}
	return &exitError{code: exitExecUnsure, err: fmt.Errorf("run %s: no confirmed ending (%s)", id, res.Evidence)}
}

// followRecorder reads the run's recorder files until they say how it ended (or the container that
// ran it is gone), printing the output the stream did not deliver, byte for byte. outN and errN
// are how many bytes were already printed.
// capture (nil: none) keeps what is printed in the record.
func followRecorder(ctx context.Context, s *client.Stable, sandbox, id, inc string, outN, errN *int64, stdout, stderr io.Writer, capture *stableCapture) client.RunResult {
	warnedRaw := false
	for {
		res, err := s.Recover(ctx, sandbox, id, inc)
		if err != nil {
			if ctx.Err() != nil {
				return client.RunResult{State: client.RunInterrupted, Evidence: "sandscope stopped following"}
			}
			fmt.Fprintf(stderr, "sandscope: reading run %s: %s\n", id, sanitize.Message(err.Error()))
		} else {
			for _, p := range []struct {
				data   []byte
				n      *int64
				w      io.Writer
				stream client.Stream
			}{{res.RecoveredOut, outN, stdout, client.Stdout}, {res.RecoveredErr, errN, stderr, client.Stderr}} {
				if res.State == client.RunLost {
					break // nothing was read: the files went with the container
				}
				if int64(len(p.data)) > *p.n {
					_, _ = p.w.Write(p.data[*p.n:])
					capture.data(p.stream, p.data[*p.n:])
					*p.n = int64(len(p.data))
				} else if int64(len(p.data)) < *p.n && !warnedRaw {
					// The stream's text and the file's bytes differ in length (U+FFFD replaced
					// invalid bytes): the file is the exact output.
					fmt.Fprintf(stderr, "sandscope: the recorder's file of run %s differs from the text the stream delivered (not byte-exact); `sandscope logs %s %s` prints the exact bytes\n", id, sandbox, id)
					warnedRaw = true
				}
			}
			switch res.State {
			case client.RunConfirmed:
				fmt.Fprintf(stderr, "sandscope: run %s EXITED %d (confirmed: %s)\n", id, res.Code, res.Evidence)
				return res
			case client.RunLost:
				fmt.Fprintf(stderr, "sandscope: run %s LOST (inferred): %s\n", id, res.Evidence)
				return res
			case client.RunUnconfirmed:
				fmt.Fprintf(stderr, "sandscope: run %s ended, exit code unknown: %s\n", id, res.Evidence)
				return res
			}
		}
		t := time.NewTimer(stableRecoverEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return client.RunResult{State: client.RunInterrupted, Evidence: "sandscope stopped following; the run may still be going"}
		case <-t.C:
		}
	}
}

// noteIncarnation compares the container marker a run printed with the one last seen here: a
// different marker means another container answers now (inferred).
func noteIncarnation(book runBook, bridge, sandbox, marker string, stderr io.Writer) {
	if marker == "" {
		return
	}
	sb, err := book.Sandbox(bridge, sandbox)
	if err == nil && sb.Incarnation != "" && sb.Incarnation != marker {
		fmt.Fprintf(stderr, "sandscope: sandbox %s runs in a different container than at sandscope's last contact (%s): its files, sessions and shells were not kept (inferred from sandscope's marker file)\n",
			vocab.Text(sandbox), sb.MarkerSeen.Local().Format("2006-01-02 15:04"))
	}
	_ = book.Update(bridge, sandbox, func(s *bookSandbox) { s.Incarnation, s.MarkerSeen = marker, time.Now().UTC() })
}

// runStableLogs prints a run's output from its recorder files (byte for byte); with follow it reads
// them until the run ends: exit 0 when the recorder confirms the ending, 3 when the run is lost.
func runStableLogs(ctx context.Context, s *client.Stable, book runBook, bridge, sandbox, id string, follow bool, stdout, stderr io.Writer) error {
	run, err := recordedRun(book, bridge, sandbox, id)
	if err != nil {
		return err
	}
	if client.RunState(run.State) == client.RunLost {
		// The record settled it: its files went with its container, and a request would only
		// start another one. What sandscope kept of its output is all there is.
		note := printKeptOutput(book, sandbox, run.ID, stdout, stderr)
		evidence := run.Evidence
		if evidence == "" {
			evidence = "its container is gone"
		}
		fmt.Fprintf(stderr, "sandscope: run %s LOST (inferred; from the record, no request sent): %s\n", run.ID, sanitize.Message(evidence))
		fmt.Fprintf(stderr, "sandscope: %s\n", note)
		return &exitError{code: exitLost}
	}
	wakeNotice(book, bridge, sandbox, "reading a run's output", stderr)
	var outN, errN int64
	var res client.RunResult
	if follow {
		res = followRecorder(ctx, s, sandbox, run.ID, run.Incarnation, &outN, &errN, stdout, stderr, nil)
	} else {
		res, err = s.Recover(ctx, sandbox, run.ID, run.Incarnation)
		if err != nil {
			return bridgeExit("logs", err, exitNoResume)
		}
		if res.State == client.RunLost {
			fmt.Fprintf(stderr, "sandscope: run %s LOST (inferred): %s\n", run.ID, res.Evidence)
		} else {
			_, _ = stdout.Write(res.RecoveredOut)
			_, _ = stderr.Write(res.RecoveredErr)
			fmt.Fprintf(stderr, "sandscope: run %s %s: %s\n", run.ID, res.State, res.Evidence)
		}
	}
	if res.State == client.RunLost {
		fmt.Fprintf(stderr, "sandscope: %s\n", printKeptOutput(book, sandbox, run.ID, stdout, stderr))
	}
	_ = book.Update(bridge, sandbox, func(sb *bookSandbox) {
		if res.State != client.RunInterrupted {
			sb.SetRun(run, res, time.Now())
		}
	})
	switch res.State {
	case client.RunConfirmed:
		return nil
	case client.RunLost:
		return &exitError{code: exitLost}
	}
	if ctx.Err() != nil {
		return &exitError{code: interruptStatus(ctx)}
	}
	if follow {
		return &exitError{code: exitNoResume}
	}
	return nil
}

// runStableLs prints what sandscope recorded of a stable sandbox (or of every sandbox it knows)
// without sending a single sandbox request.
func runStableLs(book runBook, bridge, sandbox string, asJSON bool, w io.Writer) error {
	if sandbox == "" {
		ids, err := book.Sandboxes(bridge)
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		if asJSON {
			return writeJSON(w, ids)
		}
		fmt.Fprintln(w, "stable bridge: sandboxes sandscope used here (the bridge has no list; nothing was asked of it)")
		for _, id := range ids {
			sb, _ := book.Sandbox(bridge, id)
			fmt.Fprintf(w, "%s\t%d runs\t%d sessions\n", safeText(id), len(sb.Runs), len(sb.Sessions))
		}
		return nil
	}
	if err := checkSandboxArg(sandbox); err != nil {
		return err
	}
	sb, err := book.Sandbox(bridge, sandbox)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	if asJSON {
		return writeJSON(w, struct {
			Sandbox string `json:"sandbox"`
			bookSandbox
		}{sandbox, sb})
	}
	fmt.Fprintf(w, "sandbox %s on a stable bridge: what sandscope recorded (asking the bridge would start the container)\n", safeText(sandbox))
	if sb.Incarnation != "" {
		fmt.Fprintf(w, "container marker %s, last seen %s (inferred container identity)\n", safeText(sb.Incarnation), sb.MarkerSeen.Local().Format("2006-01-02 15:04:05"))
	}
	fmt.Fprintln(w, "RUN\tSTATE\tSTARTED\tCOMMAND")
	for i := len(sb.Runs) - 1; i >= 0; i-- {
		r := sb.Runs[i]
		state := record.StableStateWord(r)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", safeText(r.ID), state, ago(r.Started), commandLine(r.Argv))
	}
	if len(sb.Sessions) > 0 {
		fmt.Fprintln(w, "SESSION\tCREATED HERE\tLAST USED")
		for _, s := range sb.Sessions {
			if s.Deleted {
				continue
			}
			fmt.Fprintf(w, "%s\t%v\t%s\n", safeText(s.ID), s.Created, ago(s.Seen))
		}
	}
	return nil
}

// runStableShell attaches to the sandbox's PTY (of a session, or the session-less one) full screen.
func runStableShell(ctx context.Context, s *client.Stable, book runBook, bridge, sandbox, session, shell, detachKey string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := checkSandboxArg(sandbox); err != nil {
		return err
	}
	wakeNotice(book, bridge, sandbox, "a shell", stderr)
	cols, rows := localSize()
	conn, err := s.ConnectPTY(ctx, sandbox, client.PTYOptions{Cols: cols, Rows: rows, Session: session, Shell: shell})
	if err != nil {
		return setupError(err)
	}
	defer conn.Close()
	if session != "" {
		_ = book.Update(bridge, sandbox, func(sb *bookSandbox) { sb.UseSession(session, false, time.Now()) })
	}
	label, hint := "sandbox "+sandbox+" shell", "sandscope attach "+sandbox+" default"
	if session != "" {
		label, hint = "sandbox "+sandbox+" session "+session, "sandscope attach "+sandbox+" "+session
	}
	res, err := attach.Run(ctx, conn, attach.Options{Stdin: stdin, Stdout: stdout, Stderr: stderr,
		DetachKey: detachKey, Label: label, ReattachHint: hint})
	if err != nil {
		return &exitError{code: 255, err: fmt.Errorf("attach %s: %w", label, err)}
	}
	if code := res.ExitStatus(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// stableSessionTarget maps attach's TERMINAL argument on stable: "default" (or "-") is the
// session-less PTY, anything else a session ID.
func stableSessionTarget(arg string) (string, error) {
	if arg == "default" || arg == "-" {
		return "", nil
	}
	if !client.ValidSessionID(arg) {
		return "", &exitError{code: exitUsage, err: fmt.Errorf("session %q: want 1-128 of a-z A-Z 0-9 . _ - (no \"..\"), or \"default\"", arg)}
	}
	return arg, nil
}

// errStableOnly refuses a stable-only command on another bridge.
var errStableOnly = errors.New("sessions exist on stable bridges only (this bridge speaks the 1.0 preview API)")

// joinArgv is a command for notices.
func joinArgv(argv []string) string { return strings.Join(argv, " ") }

// stableCapture keeps a stable run's output in the record as it is printed (the record's
// per-process budget applies), so a run whose files go with its container still has what the
// stream delivered. A nil stableCapture keeps nothing.
type stableCapture struct {
	rec              *record.Record
	sandbox, run     string
	began, anyOutput bool
}

// runCapture returns the capture of a run in the book's record (nil without one).
func runCapture(book runBook, sandbox, run string) *stableCapture {
	rb, ok := book.(interface{ Record() *record.Record })
	if !ok || rb.Record() == nil {
		return nil
	}
	return &stableCapture{rec: rb.Record(), sandbox: sandbox, run: run}
}

func (c *stableCapture) begin() {
	if c != nil && !c.began {
		c.began = true
		c.rec.CaptureBegin(c.sandbox, c.run, false, "")
	}
}

func (c *stableCapture) data(stream client.Stream, b []byte) {
	if c == nil || len(b) == 0 {
		return
	}
	c.begin()
	c.anyOutput = true
	c.rec.CaptureData(c.sandbox, c.run, client.LogEvent{Kind: client.Data, Stream: stream, Data: b, Time: time.Now()})
}

func (c *stableCapture) end(res client.RunResult) {
	if c == nil || !c.began {
		return
	}
	c.rec.CaptureEnd(c.sandbox, c.run, "run "+record.StableStateWord(record.StableRun{State: string(res.State), Code: codeOf(res)}))
}

func codeOf(res client.RunResult) *int {
	if res.State != client.RunConfirmed {
		return nil
	}
	c := res.Code
	return &c
}

// printKeptOutput prints what the record kept of a LOST run's output (stdout to stdout, stderr to
// stderr, as sandscope printed it when the stream delivered it) and returns a note that says
// plainly what that is: its files went with its container, and whether sandscope kept anything.
func printKeptOutput(book runBook, sandbox, id string, stdout, stderr io.Writer) string {
	var kept record.Capture
	if rb, ok := book.(interface{ Record() *record.Record }); ok && rb.Record() != nil {
		_ = rb.Record().Flush()
		kept, _ = rb.Record().Captured(sandbox, id)
	}
	var n int64
	for _, ch := range kept.Chunks {
		w := stdout
		if ch.Stream == client.Stderr {
			w = stderr
		}
		_, _ = w.Write(ch.Data)
		n += int64(len(ch.Data))
	}
	switch {
	case n > 0 && kept.Dropped > 0:
		return fmt.Sprintf("its files went with its container; printed: the last %s sandscope kept of what the stream delivered (%s older were dropped by the record's budget)",
			vocab.Count(int(n), "byte"), vocab.Count(int(kept.Dropped), "byte"))
	case n > 0:
		return fmt.Sprintf("its files went with its container; printed: the %s the stream delivered before the loss, as sandscope kept them", vocab.Count(int(n), "byte"))
	case kept.Found:
		return "its files went with its container, and the stream delivered no output before the loss"
	}
	return "its files went with its container, and the record holds none of its output (sandscope keeps what its exec received; this run was started elsewhere or before it did)"
}
