package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sandscope/internal/cli/cmdutil"
	"sandscope/sanitize"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/record"
)

// ExecOptions are exec's flags and arguments, and what it gets from the Factory.
type ExecOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Sandbox  string
	Argv     []string
	Cwd      string
	Env      []string // NAME=VALUE, as given
	NoRecord bool
	Timeout  time.Duration
	Session  string

	// ArgsAtDash is how many arguments came before "--" (-1: no "--"); the usage wants one.
	ArgsAtDash int
	// Request is the launch Complete builds from the flags; Validate fills its environment.
	Request client.ExecRequest
}

// NewCmdExec is the exec command; runF, when not nil, is called with the checked options instead
// of Run (a test checks the parsing without running anything).
func NewCmdExec(f *cmdutil.Factory, runF func(*ExecOptions) error) *cobra.Command {
	o := &ExecOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "exec SANDBOX [--cwd D] [--env K=V] [--timeout DUR] -- ARGV...",
		Short: "Launch a process in a sandbox, follow its output, exit with its code",
		Long: `Launch a process in a sandbox and follow its output (stdout to stdout, stderr to stderr).
Exit with the process's own exit code once the bridge confirms it ended; 2 for usage,
authentication or not-found errors; otherwise (lost, bridge unreachable, ended in error) exit 255
with a "sandscope: " notice on stderr. A bridge that does not answer the launch within 12 s is
reported as such (255); once launched, the output is followed as logs -f follows it (retries
announced, then 255). Ctrl-C or SIGTERM (130) and SIGHUP (129) leave the process running.

On a stable (0.12) bridge the command runs through /exec under a small recorder inside the sandbox
that keeps its pid, output and real exit status in /workspace/.sandscope/runs/RUN: the stream's
exit code counts only when the recorder's trailer confirms it; after a cut or an unconfirmed exit
code sandscope reads the recorder's files (byte-exact output, true status). --session runs it in a
stable session (cwd and environment kept between calls).`,
		Example: `  sandscope exec myapp -- npm test -- --watch=false
  sandscope exec myapp --cwd /workspace/app --env CI=1 --env NODE_ENV=test -- npm run build
  sandscope exec myapp --timeout 10m -- sh -c 'make -j4 2>&1 | tee build.log'

  # scripts branch on the exit status: the process's own code, or 255 when it is not confirmed
  sandscope exec myapp -- ./check.sh || echo "failed with $?"`,
		Args: cobra.MinimumNArgs(2),
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
	cmd.Flags().BoolVar(&o.NoRecord, "no-record", false, "do not record what this command saw (the launch, the sandbox, the stream's events) in sandscope's record")
	cmd.Flags().StringVar(&o.Cwd, "cwd", "", "working directory (inside /workspace)")
	cmd.Flags().StringArrayVar(&o.Env, "env", nil, "environment variable NAME=VALUE (repeatable)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "kill the process after this long (e.g. 30s)")
	cmd.Flags().StringVar(&o.Session, "session", "", "stable bridges: run in this session (created by first use)")
	return cmd
}

// Complete takes the sandbox and the argv from args and the streams from cmd.
func (o *ExecOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	o.ArgsAtDash = cmd.ArgsLenAtDash()
	if len(args) > 0 {
		o.Sandbox, o.Argv = args[0], args[1:]
	}
	o.Request = client.ExecRequest{Argv: o.Argv, Cwd: o.Cwd}
	return nil
}

// Validate refuses, with exit status 2, what the bridge would: a bad sandbox ID, no "--" after the sandbox, an
// --env without NAME=, a --timeout under 1ms, a session ID the bridge refuses.
func (o *ExecOptions) Validate() error {
	// the sandbox first, as the root's argument check does: the error is about what was typed
	if err := cmdutil.CheckSandboxArg(o.Sandbox); err != nil {
		return err
	}
	if o.ArgsAtDash != 1 {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("usage: sandscope exec SANDBOX [flags] -- ARGV...")}
	}
	o.Request.Env = nil
	if len(o.Env) > 0 {
		o.Request.Env = map[string]string{}
		for _, kv := range o.Env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--env %q: want NAME=VALUE", kv)}
			}
			o.Request.Env[k] = v
		}
	}
	if o.Timeout < 0 || (o.Timeout > 0 && o.Timeout < time.Millisecond) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--timeout %v: must be at least 1ms", o.Timeout)}
	}
	o.Request.Timeout = o.Timeout.Milliseconds()
	return cmdutil.ValidSession("--session", o.Session)
}

// Run launches the run through the Factory's driver and follows it.
func (o *ExecOptions) Run(ctx context.Context) error {
	cmdutil.StreamOnOneCore()
	ctx, stop := cmdutil.InterruptContext(ctx)
	defer stop()
	cn, err := o.Factory.ConnectIO(ctx, o.IO, cmdutil.ConnectOptions{Op: "exec", NoAnswerExit: cmdutil.ExitExecUnsure})
	if err != nil {
		return err
	}
	defer cn.Close()
	cn.NoteIsolation()
	if _, ok := cn.D.(driver.Sessions); o.Session != "" && !ok {
		return cmdutil.Lacks("sessions", cmdutil.SessionsWhy)
	}
	rec := cn.Recorder(o.NoRecord)
	defer rec.Close()
	return runExec(ctx, cn.D, rec, o.Sandbox, driver.StartRequest{ExecRequest: o.Request, Session: o.Session}, cn.Out, cn.ErrOut)
}

// runExec launches a run and follows it; with a record, the launch (argv, cwd, environment
// names), the action's outcome and the stream's events are recorded.
func runExec(ctx context.Context, d driver.Driver, rec *cmdutil.CommandRecord, sandbox string, req driver.StartRequest, stdout, stderr io.Writer) error {
	if err := cmdutil.CheckSandboxArg(sandbox); err != nil {
		return err
	}
	cmdutil.TellWake(d, sandbox, "exec", stderr)
	p, err := startWithCapacityRetry(ctx, d, sandbox, req, stderr)
	if err == nil {
		// the launch's answer says the sandbox runs, in the incarnation the bridge reported
		if ev, ok := record.LookupRunningProcess(sandbox, p, "the launch"); ok {
			rec.Lookup(ev)
		}
	}
	if rec != nil {
		outcome := "ok"
		if err != nil {
			outcome = err.Error()
		}
		rec.Add(record.Event{Sandbox: sandbox, Source: record.FromAction, Kind: "exec", Entity: record.Process, EntityID: p.ID,
			Action: &record.Action{Kind: "exec", Detail: record.ShellJoin(req.Argv), Outcome: outcome, Result: p.ID}})
		if err == nil {
			pp := p
			rec.Add(record.Event{Sandbox: sandbox, Source: record.FromLaunch, Kind: "launch", Entity: record.Process, EntityID: p.ID, Process: &pp,
				Incarnation: client.Incarnation{Number: p.Incarnation}, Launch: record.LaunchOf(req.Argv, req.Cwd, req.Env, req.Timeout)})
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return &cmdutil.ExitError{Code: cmdutil.InterruptStatus(ctx)}
		}
		return cmdutil.BridgeExit("exec", err, cmdutil.ExitExecUnsure)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := d.Follow(fctx, sandbox, p.ID, driver.FollowOptions{FollowOptions: cmdutil.FollowOptions(client.FollowOptions{Status: &p})})
	final, ok, _ := cmdutil.PrintFollow(f, stdout, stderr, true, rec.Observe(sandbox, p.ID))
	if !ok {
		if ctx.Err() != nil {
			return &cmdutil.ExitError{Code: cmdutil.InterruptStatus(ctx), Err: fmt.Errorf("detached; process %s keeps running (sandscope logs %s %s -f)", p.ID, sandbox, p.ID)}
		}
		return &cmdutil.ExitError{Code: cmdutil.ExitExecUnsure, Err: fmt.Errorf("process %s: log stream closed without a confirmed end", p.ID)}
	}
	if final.Kind == client.Failed && cmdutil.UsageKind(final.Err) {
		// the token was rejected or the process is unknown: the caller's to fix
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage}
	}
	if final.Kind == client.Lost && cmdutil.KeptAfterLoss(final) {
		return &cmdutil.ExitError{Code: cmdutil.ExitExecUnsure, Err: fmt.Errorf("run %s is LOST: the output above is all sandscope received (sandscope logs %s %s prints what the record kept)", p.ID, sandbox, p.ID)}
	}
	// Lost and Failed are already reported by a notice; an ending is decided by EndingExit.
	if final.Kind != client.Ended {
		return &cmdutil.ExitError{Code: cmdutil.ExitExecUnsure}
	}
	return cmdutil.EndingExit(final.Status, stderr)
}

// startWithCapacityRetry starts the run, retrying with backoff only when the bridge's pool
// refused for capacity: then nothing was started (the container was never allocated). Any other
// failure may have had a side effect and is not retried.
func startWithCapacityRetry(ctx context.Context, d driver.Driver, sandbox string, req driver.StartRequest, stderr io.Writer) (driver.Run, error) {
	const attempts = 5
	delay := 250 * time.Millisecond
	for i := 1; ; i++ {
		p, err := d.Start(ctx, sandbox, req)
		if err == nil || !errors.Is(err, client.ErrCapacity) || i == attempts {
			return p, err
		}
		fmt.Fprintf(stderr, "sandscope: %s; retrying in %v (attempt %d of %d)\n", sanitize.Message(err.Error()), delay, i+1, attempts)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return p, ctx.Err()
		case <-t.C:
		}
		delay *= 2
	}
}
