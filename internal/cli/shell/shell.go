package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sandscope/internal/cli/cmdutil"
	"sandscope/sanitize"
	"sandscope/vocab"
	"time"

	"github.com/spf13/cobra"

	"sandscope/attach"
	"sandscope/client"
	"sandscope/driver"
	"sandscope/ui/common"
)

// defaultShellArgv starts a login shell: bash when the bridge host has it, else sh. It goes through
// /bin/sh so the choice is made where the terminal runs, not here.
var defaultShellArgv = common.LoginShellArgv

// ShellOptions are shell's flags and arguments, and what it gets from the Factory.
type ShellOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Sandbox string
	// Argv is what runs in the terminal: after "--", else the login shell (defaultShellArgv).
	Argv       []string
	ArgsAtDash int // arguments before "--" (-1: none)
	Args       []string
	Cwd        string
	Session    string
	NoRecord   bool
	// DetachKey is --detach-key when given, else the config's (Complete); detachKeyErr is why the
	// config could not say, told in Validate's order.
	DetachKey    string
	detachKeyErr error
}

// NewCmdShell is the shell command; runF, when not nil, is called with the checked options
// instead of Run.
func NewCmdShell(f *cmdutil.Factory, runF func(*ShellOptions) error) *cobra.Command {
	o := &ShellOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "shell SANDBOX [--cwd DIR] [--detach-key KEY] [-- ARGV...]",
		Short: "Create a terminal in a sandbox and attach to it (raw, full screen)",
		Long: `Create a PTY terminal in a sandbox and attach your terminal to it: keystrokes go to the
sandbox, output comes straight back, window size changes are forwarded, and dropped connections
resume from the last cursor with a one-line notice.

Without ARGV the terminal runs a login shell: bash -l when the sandbox has bash, else sh -l.
Detach with ctrl-] (or --detach-key, e.g. "ctrl-a d"); the terminal keeps running and
"sandscope attach SANDBOX TERMINAL" reattaches.

Scripted input (a pipe or a file) need not end in exit: its end reaches the shell as ctrl-D once
the shell is ready, and a terminal that neither ends nor prints for 10 s after the input ended is
ended (exit 255, with a notice).

Exit status: the terminal's own exit code when it exits; 0 on detach; 3 when the terminal was lost
with its container; 4 when the bridge stayed unreachable (or did not answer within 12 s); 2 on
usage, auth or not-found errors.`,
		Example: `  sandscope shell myapp
  sandscope shell myapp --cwd /workspace/app -- bash -l
  sandscope shell --detach-key "ctrl-a d" myapp -- python3`,
		Args: cobra.MinimumNArgs(1),
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
	cmd.Flags().BoolVar(&o.NoRecord, "no-record", false, "do not record the terminal, its launch and how the attachment ended in sandscope's record")
	cmd.Flags().StringVar(&o.Cwd, "cwd", "", "working directory of the terminal (default: the bridge's, /workspace)")
	cmd.Flags().StringVar(&o.Session, "session", "", "bridges with sessions: the session whose shell to open (default: the sandbox's session-less shell)")
	cmd.Flags().StringVar(&o.DetachKey, "detach-key", attach.DefaultDetachKey, `detach key: "ctrl-]" or a prefix and a key like "ctrl-a d" (prefix twice sends it once)`)
	return cmd
}

// Complete takes the sandbox and the argv from args, the streams from cmd, and the detach key
// from the config when --detach-key is not given.
func (o *ShellOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	o.Args = args
	o.ArgsAtDash = cmd.ArgsLenAtDash()
	o.Sandbox = ""
	if len(args) > 0 {
		o.Sandbox = args[0]
	}
	o.Argv = defaultShellArgv
	if o.ArgsAtDash == 1 {
		o.Argv = args[1:]
	}
	o.DetachKey, o.detachKeyErr = configuredDetachKey(cmd, o.Factory, o.DetachKey)
	return nil
}

// Validate refuses (exit 2) arguments that are not SANDBOX [-- ARGV...], an empty ARGV after
// "--", a detach key that is not one, input that is not a terminal and a bad session ID; a
// configuration that could not be read is its own error.
func (o *ShellOptions) Validate() error {
	if (o.ArgsAtDash == -1 && len(o.Args) != 1) || o.ArgsAtDash > 1 {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("usage: sandscope shell SANDBOX [--cwd DIR] [-- ARGV...]")}
	}
	if o.ArgsAtDash == 1 && len(o.Args) < 2 {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("shell: nothing after --")}
	}
	if o.detachKeyErr != nil {
		return o.detachKeyErr
	}
	if _, err := attach.ParseDetachKey(o.DetachKey); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	if err := cmdutil.NeedTerminal("shell", o.IO.In); err != nil {
		return err
	}
	return cmdutil.ValidSession("--session", o.Session)
}

// Run creates a terminal (or opens the driver's shell) and attaches to it full screen.
func (o *ShellOptions) Run(ctx context.Context) error {
	cn, err := o.Factory.ConnectIO(ctx, o.IO, cmdutil.ConnectOptions{Op: "shell", NoAnswer: cmdutil.SetupError})
	if err != nil {
		return err
	}
	defer cn.Close()
	sandbox, argv, cwd, session := o.Sandbox, o.Argv, o.Cwd, o.Session
	if _, ok := cn.D.(driver.Sessions); session != "" && !ok {
		return cmdutil.Lacks("sessions", cmdutil.SessionsWhy)
	}
	if tm, ok := cn.D.(driver.Terminals); ok && session == "" {
		// The bridge's own terminal objects: any ARGV and --cwd, and a terminal ID that attach
		// reattaches to.
		cols, rows := cmdutil.LocalSize()
		rec := cn.Recorder(o.NoRecord)
		defer rec.Close()
		tt, err := tm.CreateTerminal(ctx, sandbox, client.TerminalRequest{Argv: argv, Cwd: cwd, Cols: cols, Rows: rows})
		rec.LaunchedTerminal(sandbox, tt, argv, cwd, err)
		if err != nil {
			return cmdutil.SetupError(err) // the client's error names the call: "create terminal in SANDBOX: …"
		}
		return attachTerminal(ctx, tm, rec, sandbox, tt.ID, true, o.DetachKey, cn.In, cn.Out, cn.ErrOut)
	}
	sh, ok := cn.D.(driver.Shells)
	if !ok {
		return cmdutil.Lacks("shells", "it offers neither terminals nor a shell")
	}
	// The driver's shell: one program, started where the session (or the sandbox) is.
	shell := ""
	if o.ArgsAtDash == 1 {
		if len(argv) != 1 {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("shell: this bridge's shell runs one program (e.g. -- zsh), no arguments")}
		}
		shell = argv[0]
	}
	if cwd != "" {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("shell: --cwd is not available on this bridge (its shell starts where its session is)")}
	}
	return runShell(ctx, cn, sh, sandbox, session, shell, o.DetachKey)
}

// attachTerminal connects to a terminal and runs the full-screen attachment, turning its ending
// into the command's exit status. With a record, the connection's final event (exited, lost with
// its evidence, an error) is recorded. created says this command created the terminal (shell):
// with scripted input (stdin not a terminal) it is then never left running.
func attachTerminal(ctx context.Context, c driver.Terminals, rec *cmdutil.CommandRecord, sandbox, tid string, created bool, detachKey string, stdin io.Reader, stdout, stderr io.Writer) error {
	cols, rows := cmdutil.LocalSize()
	conn, err := c.ConnectTerminal(ctx, sandbox, tid, client.ConnectOptions{Cols: cols, Rows: rows})
	if err != nil {
		return cmdutil.SetupError(err)
	}
	defer conn.Close()
	res, err := attach.Run(ctx, conn, attach.Options{
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		DetachKey:    detachKey,
		EOFWait:      ScriptedEOFWait,
		Label:        fmt.Sprintf("sandbox %s terminal %s", sandbox, tid),
		ReattachHint: fmt.Sprintf("sandscope attach %s %s", sandbox, tid),
	})
	rec.TerminalEnded(sandbox, tid, res)
	scripted := !cmdutil.IsTerminalReader(stdin)
	if res.Ending == attach.InputEnded {
		if !created {
			fmt.Fprintf(stderr, "sandscope: the input ended and terminal %s did not end within %v; detached, it keeps running (sandscope attach %s %s)\n", vocab.Text(tid), ScriptedEOFWait, sandbox, vocab.Text(tid))
			return &cmdutil.ExitError{Code: cmdutil.ExitExecUnsure}
		}
		fmt.Fprintf(stderr, "sandscope: the input ended and terminal %s did not end within %v (no output since); ending it\n", vocab.Text(tid), ScriptedEOFWait)
	}
	if created && scripted && res.Ending != attach.Exited && res.Ending != attach.Lost && res.Ending != attach.EndedUnknown && res.Ending != attach.Detached {
		// this command made the terminal for its scripted input: it does not outlive the command
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmdutil.OneShotAnswerWait)
		if terr := c.TerminateTerminal(tctx, sandbox, tid); terr != nil && !errors.Is(terr, client.ErrNotFound) {
			fmt.Fprintf(stderr, "sandscope: could not end terminal %s: %s\n", vocab.Text(tid), sanitize.Message(terr.Error()))
		}
		cancel()
	}
	if err != nil {
		return &cmdutil.ExitError{Code: 255, Err: fmt.Errorf("attach %s: %w", tid, err)}
	}
	if res.Ending == attach.Exited && res.Exit != nil && res.Exit.Code != 0 {
		fmt.Fprintf(stderr, "sandscope: terminal %s ended: %s\n", vocab.Text(tid), vocab.EndingDetail(res.Exit))
	}
	if code := res.ExitStatus(); code != 0 {
		return &cmdutil.ExitError{Code: code}
	}
	return nil
}

// runShell attaches full screen to the driver's shell in sandbox (of a session, or the
// sandbox's session-less one): the shell a driver without terminal objects offers.
func runShell(ctx context.Context, cn *cmdutil.Conn, sh driver.Shells, sandbox, session, shell, detachKey string) error {
	if err := cmdutil.CheckSandboxArg(sandbox); err != nil {
		return err
	}
	cn.Wake(sandbox, "a shell")
	cols, rows := cmdutil.LocalSize()
	conn, err := sh.OpenShell(ctx, sandbox, driver.ShellRequest{Cols: cols, Rows: rows, Session: session, Shell: shell})
	if err != nil {
		return cmdutil.SetupError(err)
	}
	defer conn.Close()
	label, hint := "sandbox "+sandbox+" shell", "sandscope attach "+sandbox+" default"
	if session != "" {
		label, hint = "sandbox "+sandbox+" session "+session, "sandscope attach "+sandbox+" "+session
	}
	res, err := attach.Run(ctx, conn, attach.Options{Stdin: cn.In, Stdout: cn.Out, Stderr: cn.ErrOut,
		DetachKey: detachKey, Label: label, ReattachHint: hint})
	if err != nil {
		return &cmdutil.ExitError{Code: 255, Err: fmt.Errorf("attach %s: %w", label, err)}
	}
	if code := res.ExitStatus(); code != 0 {
		return &cmdutil.ExitError{Code: code}
	}
	return nil
}

// shellTarget maps attach's TERMINAL on a driver whose shells are not terminal objects: "default"
// (or "-") is the sandbox's session-less shell, anything else a session's (drivers with Sessions).
func shellTarget(d driver.Driver, arg string) (string, error) {
	if arg == "default" || arg == "-" {
		return "", nil
	}
	if _, ok := d.(driver.Sessions); !ok {
		return "", &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("terminal %q: this bridge has no terminals to attach to; \"default\" is the sandbox's shell", vocab.Text(arg))}
	}
	if !client.ValidSessionID(arg) {
		return "", &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("session %q: want 1-128 of a-z A-Z 0-9 . _ - (no \"..\"), or \"default\"", vocab.Text(arg))}
	}
	return arg, nil
}

// ScriptedEOFWait is how long a shell or attach fed by scripted input lasts after that input
// ended while the terminal neither ends nor prints (see attach.Options.EOFWait).
const ScriptedEOFWait = 10 * time.Second
