package logs

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"sandscope/internal/cli/cmdutil"
	"sandscope/sanitize"
	"sandscope/vocab"
	"time"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/ui/common"
)

// LogsOptions are logs' flags and arguments, and what it gets from the Factory.
type LogsOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Sandbox  string
	Process  string // "" with --all
	Args     []string
	Follow   bool
	All      bool
	NoRecord bool
	Notify   bool
	Since    string
	States   []string // --state, with --all
	Pattern  string   // --command, with --all

	// Bell receives a BEL when a followed process ends (--notify with -f and stderr a terminal;
	// nil: none).
	Bell io.Writer
	// all is logs --all's options, made by Validate.
	all allOptions
}

// NewCmdLogs is the logs command; runF, when not nil, is called with the checked options instead
// of Run.
func NewCmdLogs(f *cmdutil.Factory, runF func(*LogsOptions) error) *cobra.Command {
	o := &LogsOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "logs SANDBOX PROCESS | logs SANDBOX --all",
		Short: "Print a process's output (stdout to stdout, stderr to stderr); -f to follow",
		Long: `Print a process's output exactly: its stdout bytes to stdout, its stderr bytes to stderr.
sandscope's own notices go to stderr as lines starting "sandscope: ".

With -f, follow until the process ends, resuming from the last cursor when the stream breaks.
Exit status: 0 the bridge confirms the process ended (the final notice gives its exit code),
3 the process was lost with its container, 4 the stream could not be resumed,
2 usage, authentication or not-found errors (a --since that is not a cursor included),
130 Ctrl-C or SIGTERM and 129 SIGHUP (the notice gives the cursor to resume from).
An unreachable bridge is retried 10 times, each retry announced on stderr (the pause doubling from
0.1 s to 10 s): about 40 s when it refuses connections, about 2.5 minutes when it accepts them and
never answers (each attempt waits 8 s for an answer); then exit 4. Without -f a bridge that does
not answer within 12 s ends the command with exit status 1.

With --all (no PROCESS), follow every process of the sandbox at once, including the ones that
start while it runs (-f), each line prefixed with a short, stable name ("build-1a2b3c4d | ..."),
coloured when the output is a terminal and NO_COLOR is unset; stdout and stderr stay apart, and
every interruption, gap, suspect end, ending and loss is a "sandscope: NAME | ..." notice.
--state keeps the processes in a state (running, exited, error, ended; a process that starts
while sandscope runs counts as running), --command those whose command line matches a regular
expression. With -f it exits once every followed process has ended and one more look (a second
later when one was lost: a relaunch often follows a replacement) finds no new one: 0 if every ending was confirmed, 3 if any process was lost, 4 if any
stream could not be resumed (this wins over 3: how that process ended is unknown), 2 usage,
authentication or not-found errors, 130 Ctrl-C. Without -f it prints what the bridge holds of
each and exits 0 (1 when a stream could not be read).

On a stable (0.12) bridge there is no process list: PROCESS is a run sandscope started (exec, the
TUI's exec prompt; a unique prefix of its ID will do), and --all covers the runs the record holds
for the sandbox (runs recorded while it follows join). Output comes from the in-sandbox
recorder's files, byte for byte, read every 2 s while a run goes on (each read is a request to the
sandbox); the same exit statuses, where a run that ended without a status file (killed) counts as
one whose ending is unknown (4), and a LOST run (its container took the files) as lost (3).

--notify (with -f) rings the terminal bell (BEL on stderr, only when stderr is a terminal) when the
followed process ends, is lost or cannot be resumed; with --all, for each followed process.`,
		Example: `  # everything the bridge still holds, stdout and stderr kept apart
  sandscope logs myapp 7d56e9e2-d5c1-4b8e-a7f0-2b9c8d1e3f45 > out.log 2> err.log

  # follow until the process ends; exit 0 only when the bridge confirms the ending
  sandscope logs -f myapp 7d56e9e2-d5c1-4b8e-a7f0-2b9c8d1e3f45

  # resume strictly after a cursor (the TUI's log view copies one with y)
  sandscope logs -f --since "$CURSOR" myapp 7d56e9e2-d5c1-4b8e-a7f0-2b9c8d1e3f45

  # every process of the sandbox, new ones joining; exit 3 if any was lost
  sandscope logs myapp --all -f --state running --command 'claude|node'

  # follow, and ring the terminal bell when it ends (or is lost)
  sandscope logs -f --notify myapp 7d56e9e2-d5c1-4b8e-a7f0-2b9c8d1e3f45`,
		Args: cobra.RangeArgs(1, 2),
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
	cmd.Flags().BoolVar(&o.Notify, "notify", false, "with -f: ring the terminal bell when the process ends or is lost (only when stderr is a terminal)")
	cmd.Flags().BoolVar(&o.NoRecord, "no-record", false, "do not record what this command saw (the process, the sandbox, the stream's events) in sandscope's record")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "follow the log until the process ends")
	cmd.Flags().StringVar(&o.Since, "since", "", "start strictly after this cursor")
	cmd.Flags().BoolVar(&o.All, "all", false, "every process of the sandbox, each line prefixed with its name")
	cmd.Flags().StringArrayVar(&o.States, "state", nil, "with --all: only processes in this state (running, exited, error, ended; repeatable)")
	cmd.Flags().StringVar(&o.Pattern, "command", "", "with --all: only processes whose command line matches this regular expression")
	return cmd
}

// Complete takes the sandbox and process from args, the streams from cmd, and where the bell
// rings.
func (o *LogsOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	o.Args = args
	o.Sandbox, o.Process = "", ""
	if len(args) > 0 {
		o.Sandbox = args[0]
	}
	if len(args) > 1 {
		o.Process = args[1]
	}
	o.Bell = nil
	if o.Notify && o.Follow && cmdutil.IsTerminal(o.IO.ErrOut) {
		o.Bell = o.IO.ErrOut
	}
	return nil
}

// Validate refuses (exit 2) a bad sandbox ID, a wrong argument count, a --since that is not a cursor, and for
// --all a PROCESS, a --since, an unknown --state or a --command that does not compile.
func (o *LogsOptions) Validate() error {
	// the sandbox first, as the root's argument check does: the error is about what was typed
	if len(o.Args) > 0 {
		if err := cmdutil.CheckSandboxArg(o.Sandbox); err != nil {
			return err
		}
	}
	if !o.All && len(o.Args) != 2 {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("logs takes SANDBOX PROCESS (or SANDBOX --all), got %s", vocab.Count(len(o.Args), "argument"))}
	}
	if err := checkSince(o.Since); err != nil {
		return err
	}
	if o.All {
		all, err := logsAllOptions(o.Args, o.Follow, o.Since, o.States, o.Pattern, o.Bell, o.IO.Out, o.IO.ErrOut)
		if err != nil {
			return err
		}
		o.all = all
	}
	return nil
}

// Run prints (or follows) the log of the process, or of every process with --all.
func (o *LogsOptions) Run(ctx context.Context) error {
	if o.All {
		return runLogsAllCommand(ctx, o.Factory, o.IO, o.Sandbox, o.Follow, o.NoRecord, o.all)
	}
	cmdutil.StreamOnOneCore()
	ctx, stop := cmdutil.InterruptContext(ctx)
	defer stop()
	if o.Follow {
		ctx = cmdutil.FollowContext(ctx)
	}
	cn, err := o.Factory.ConnectIO(ctx, o.IO, cmdutil.ConnectOptions{Op: "logs", Follow: o.Follow, NoAnswerExit: cmdutil.ExitFailure})
	if err != nil {
		return err
	}
	defer cn.Close()
	rec := cn.Recorder(o.NoRecord)
	defer rec.Close()
	err = runLogs(ctx, cn.D, rec, o.Sandbox, o.Process, o.Since, o.Follow, cn.Out, cn.ErrOut)
	if o.Bell != nil && ringsAfterFollow(err) {
		_, _ = o.Bell.Write([]byte{'\a'})
	}
	return err
}

// runLogs prints a process's log; with a record, what it saw (the process as its lookup found
// it, the sandbox running in that process's incarnation, the stream's events but not its output)
// is recorded as the TUI would record it.
func runLogs(ctx context.Context, d driver.Driver, rec *cmdutil.CommandRecord, sandbox, process, since string, follow bool, stdout, stderr io.Writer) error {
	if err := cmdutil.CheckSandboxArg(sandbox); err != nil {
		return err
	}
	process, found, err := cmdutil.LookupProcess(ctx, d, sandbox, process, !follow)
	if err != nil {
		return err
	}
	rec.LookedUpProcess(sandbox, found, "the process list")
	if follow && found != nil && found.State != "running" {
		rec.OpenAhead() // its replay ends with its ending, which the record keeps
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// found is the status of a lookup just made: the follower opens the stream at once instead of
	// asking again (one round trip less before the first byte), as logs --all does.
	opts := client.FollowOptions{Since: since, NoFollow: !follow, ReuseData: true, Buffer: 2, Status: found}
	if follow {
		opts = cmdutil.FollowOptions(opts)
	} else {
		// a snapshot does not wait out a long outage: a few quick attempts, then say so
		opts.RetryBudget, opts.MaxBackoff = 2, time.Second
	}
	// PrintFollow writes each event out before receiving the next, so Data buffers can be recycled.
	f := d.Follow(fctx, sandbox, process, driver.FollowOptions{FollowOptions: opts})
	final, ok, cursor := cmdutil.PrintFollow(f, stdout, stderr, follow, rec.Observe(sandbox, process))
	if !ok {
		if ctx.Err() != nil {
			switch {
			case cursor == "":
			case cmdutil.PlainToken(cursor) && cmdutil.PlainToken(process):
				fmt.Fprintf(stderr, "sandscope: interrupted; resume with: sandscope logs -f --since %s %s %s\n", cursor, sandbox, process)
			default:
				// a cursor a bridge filled with controls or spaces is shown safely, never offered as
				// a command line to paste
				fmt.Fprintf(stderr, "sandscope: interrupted; the bridge's resume cursor is not a plain token: %s\n", sanitize.Message(cursor))
			}
			return &cmdutil.ExitError{Code: cmdutil.InterruptStatus(ctx)}
		}
		return nil // snapshot delivered
	}
	switch final.Kind {
	case client.Ended:
		if follow && cmdutil.Unsettled(final.Status) {
			// an ending whose code nothing confirms: how the run ended is unknown
			return &cmdutil.ExitError{Code: cmdutil.ExitNoResume}
		}
		return nil
	case client.Lost:
		if cmdutil.KeptAfterLoss(final) {
			fmt.Fprintf(stderr, "sandscope: its files went with its container: the output above is what sandscope kept of what the stream delivered before the loss\n")
		}
		return &cmdutil.ExitError{Code: cmdutil.ExitLost}
	default: // Failed
		code := cmdutil.FailedExitCode(final.Err)
		if !follow && code == cmdutil.ExitNoResume {
			code = cmdutil.ExitFailure // a snapshot has nothing to resume: the bridge did not answer
		}
		if errors.Is(final.Err, client.ErrUnauthorized) {
			fmt.Fprintf(stderr, "sandscope: %s\n", common.UnauthorizedHint)
		}
		return &cmdutil.ExitError{Code: code}
	}
}

// ringsAfterFollow says whether logs -f's outcome is worth the bell: an ending (0), a loss (3), a
// stream that could not be resumed (4); not a usage error or Ctrl-C.
func ringsAfterFollow(err error) bool {
	var ee *cmdutil.ExitError
	if err == nil {
		return true
	}
	return errors.As(err, &ee) && (ee.Code == cmdutil.ExitLost || ee.Code == cmdutil.ExitNoResume)
}

// exampleCursor is what a log cursor looks like (the bridge's format: base64url, no padding, of
// "v1." + base64url(store) + "." + sequence number).
var exampleCursor = base64.RawURLEncoding.EncodeToString([]byte("v1." + base64.RawURLEncoding.EncodeToString([]byte("a1b2c3")) + ".42"))

// checkSince refuses a --since that is not a log cursor, before any request (exit 2): the bridge
// would reject it, and the follower would restart from the beginning.
func checkSince(since string) error {
	if since == "" || client.ParseCursor(since).Known {
		return nil
	}
	shown := since
	if len(shown) > 40 || !cmdutil.PlainToken(shown) {
		shown = "(as given)"
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--since %s is not a log cursor: a cursor is the token sandscope prints when a follow is interrupted (\"resume with: sandscope logs -f --since CURSOR …\") or the TUI's log view copies with y, like %s", shown, exampleCursor)}
}
