package wait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/sanitize"
	"sandscope/ui/common"
)

// ExitWaitTimeout is wait's status when --timeout elapsed first: 75 (EX_TEMPFAIL, "try again
// later"), apart from the statuses of the other commands and from 124, the status the bridge gives a
// process it killed for its own timeout.
const ExitWaitTimeout = 75

// WaitOptions are wait's flags and arguments, and what it gets from the Factory.
type WaitOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Sandbox  string
	Process  string
	Timeout  time.Duration
	Notify   bool
	NoRecord bool

	// Bell receives the BEL once the outcome is known (io.Discard: none; --notify rings it only
	// when stderr is a terminal).
	Bell io.Writer
}

// NewCmdWait is the wait command; runF, when not nil, is called with the checked options instead
// of Run.
func NewCmdWait(f *cmdutil.Factory, runF func(*WaitOptions) error) *cobra.Command {
	o := &WaitOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "wait SANDBOX PROCESS",
		Short: "Block until a process's ending is confirmed; exit with its own exit code",
		Long: `Block until the bridge confirms that the process ended, and exit with the process's own
exit code; its output is not printed (use logs -f for that). The last line on stderr says how it
ended, so a script can tell a process that exited 3 from a lost one.

Exit status: the process's exit code once the bridge confirms the ending; 3 the process was lost
with its container; 4 the bridge could not be reached past the retry budget; 75 --timeout elapsed
first (the process keeps running); 255 it ended in an error without an exit code; 2 usage,
authentication or not-found errors; 130 interrupted with Ctrl-C or SIGTERM, 129 SIGHUP.
An unreachable bridge is retried 10 times, each retry announced on stderr: about 40 s when it
refuses connections, about 2.5 minutes when it accepts them and never answers (each attempt waits
8 s for an answer); then exit 4.

On a stable (0.12) bridge PROCESS is a run sandscope started (exec, the TUI's exec prompt; a unique
prefix of its ID will do): the in-sandbox recorder's status file settles it, read every 2 s (each
read is a request to the sandbox), and a run the record already settled is answered without one.
Its own exit code only when the status file confirms it; 3 LOST (its container slept or was
replaced and took the files: inferred); 255 it ended without a status (killed); 4 the files could
not be read 5 times in a row.`,
		Example: `  # launch an agent, then learn how it really ended
  sandscope wait myapp 7d56e9e2 && echo "agent succeeded"

  # give up after ten minutes (exit 75), ring the terminal bell when it is decided
  sandscope wait --timeout 10m --notify myapp 7d56e9e2`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.NoRecord, "no-record", false, "do not record what this command saw (the process, the sandbox, the stream's events) in sandscope's record")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "give up after this long with exit status 75 (0: wait for ever)")
	cmd.Flags().BoolVar(&o.Notify, "notify", false, "ring the terminal bell when the outcome is known (only when stderr is a terminal)")
	return cmd
}

// Complete takes the sandbox and process from args, the streams from cmd, and where the bell
// rings.
func (o *WaitOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	if len(args) == 2 {
		o.Sandbox, o.Process = args[0], args[1]
	}
	o.Bell = io.Discard
	if o.Notify && cmdutil.IsTerminal(o.IO.ErrOut) {
		o.Bell = o.IO.ErrOut
	}
	return nil
}

// Validate refuses a bad sandbox ID and a negative --timeout (exit 2).
func (o *WaitOptions) Validate() error {
	// the sandbox first, as the root's argument check does: the error is about what was typed
	if err := cmdutil.CheckSandboxArg(o.Sandbox); err != nil {
		return err
	}
	if o.Timeout < 0 {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--timeout %v: must not be negative", o.Timeout)}
	}
	return nil
}

// Run waits for the process's ending through the Factory's driver.
func (o *WaitOptions) Run(ctx context.Context) error {
	ctx, stop := cmdutil.InterruptContext(ctx)
	defer stop()
	ctx = cmdutil.FollowContext(ctx)
	cn, err := o.Factory.ConnectIO(ctx, o.IO, cmdutil.ConnectOptions{Op: "wait", Follow: true})
	if err != nil {
		return err
	}
	defer cn.Close()
	rec := cn.Recorder(o.NoRecord)
	defer rec.Close()
	return RunWait(ctx, cn.D, rec, o.Sandbox, o.Process, o.Timeout, cn.ErrOut, o.Bell)
}

// RunWait follows the process's log without printing it, so its ending is decided exactly as
// logs -f decides it (a status lookup and the stream's terminal event must agree). bell receives
// the BEL byte once the outcome is known (io.Discard for none). With a record, what it saw (the
// process as its lookup found it, the stream's events, the ending) is recorded as logs -f records it.
func RunWait(ctx context.Context, d driver.Driver, rec *cmdutil.CommandRecord, sandbox, process string, timeout time.Duration, stderr, bell io.Writer) error {
	if err := cmdutil.CheckSandboxArg(sandbox); err != nil {
		return err
	}
	process, found, err := cmdutil.LookupProcess(ctx, d, sandbox, process, false)
	if err != nil {
		return err
	}
	rec.LookedUpProcess(sandbox, found, "the process list")
	notice := func(format string, a ...any) {
		fmt.Fprintf(stderr, "sandscope: %s\n", sanitize.Message(fmt.Sprintf(format, a...)))
	}
	ring := func() { _, _ = bell.Write([]byte{'\a'}) }
	if found != nil && !d.Features().NonWakingLookups && settled(found.State) {
		// Where reading a run starts its container, an ending the driver already knows is the
		// answer: a stream would only be a request that starts the container to say it again.
		notice("%s (from the record, no request sent)", cmdutil.DescribeEnd(found))
		ring()
		if found.State == driver.StateLost {
			return &cmdutil.ExitError{Code: cmdutil.ExitLost}
		}
		return cmdutil.EndingExit(found, stderr)
	}
	observe := rec.Observe(sandbox, process)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	events := d.Follow(wctx, sandbox, process, driver.FollowOptions{FollowOptions: cmdutil.FollowOptions(client.FollowOptions{ReuseData: true, Buffer: 8})})
	for {
		var ev client.LogEvent
		var more bool
		select {
		case ev, more = <-events:
		case <-expired:
			cancel()
			notice("timed out after %v; process %s is still not confirmed ended", timeout, process)
			ring()
			return &cmdutil.ExitError{Code: ExitWaitTimeout}
		}
		if !more {
			if ctx.Err() != nil {
				return &cmdutil.ExitError{Code: cmdutil.InterruptStatus(ctx)}
			}
			return &cmdutil.ExitError{Code: cmdutil.ExitNoResume, Err: fmt.Errorf("wait %s: log stream closed without an ending", process)}
		}
		if ev.Kind != client.Data && observe != nil {
			observe(ev)
		}
		switch ev.Kind {
		case client.Interrupted:
			notice("stream interrupted: %s; resuming", ev.Reason)
		case client.Reconnecting:
			notice("%s", cmdutil.DescribeRetry(ev))
		case client.Resumed:
			notice("resumed (attempt %d)", ev.Attempt)
		case client.SuspectEnd:
			notice("suspect end: %s; still waiting", ev.Reason)
		case client.Ended:
			notice("%s", cmdutil.DescribeEnd(ev.Status))
			ring()
			return cmdutil.EndingExit(ev.Status, stderr)
		case client.Lost:
			notice("lost: %s", ev.Reason)
			ring()
			return &cmdutil.ExitError{Code: cmdutil.ExitLost}
		case client.Failed:
			notice("failed: %s", ev.Reason)
			ring()
			if errors.Is(ev.Err, client.ErrUnauthorized) {
				notice("%s", common.UnauthorizedHint)
			}
			return &cmdutil.ExitError{Code: cmdutil.FailedExitCode(ev.Err)}
		}
	}
}

// settled says a run's state is its final one: a confirmed ending, an error, an ending without a
// code, a loss. (A code only the stream reported, or a stream that broke off, may still be
// settled by reading the run.)
func settled(state string) bool {
	switch state {
	case driver.StateExited, driver.StateError, driver.StateEnded, driver.StateLost:
		return true
	}
	return false
}
