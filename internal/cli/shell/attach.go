package shell

import (
	"context"

	"github.com/spf13/cobra"

	"sandscope/attach"
	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/record"
)

// AttachOptions are attach's flags and arguments, and what it gets from the Factory.
type AttachOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Sandbox  string
	Terminal string // an ID or a unique prefix of one; on a bridge without terminals, a shell
	NoRecord bool
	// DetachKey is --detach-key when given, else the config's (Complete); detachKeyErr is why the
	// config could not say, told in Validate's order.
	DetachKey    string
	detachKeyErr error
}

// NewCmdAttach is the attach command; runF, when not nil, is called with the checked options
// instead of Run.
func NewCmdAttach(f *cmdutil.Factory, runF func(*AttachOptions) error) *cobra.Command {
	o := &AttachOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "attach SANDBOX TERMINAL [--detach-key KEY]",
		Short: "Attach to an existing terminal (raw, full screen)",
		Long: `Attach your terminal to an existing sandbox terminal. The output the bridge still holds is
replayed first (a GAP notice says when older output was evicted), then output streams live.
Dropped connections resume from the last cursor with a one-line notice.

Detach with ctrl-] (or --detach-key, e.g. "ctrl-a d"); the terminal keeps running.
Exit status: the terminal's own exit code when it exits; 0 on detach; 3 when the terminal was lost
with its container; 4 when the bridge stayed unreachable; 2 on usage, auth or not-found errors.`,
		Example: `  # list a sandbox's terminals, then attach to one
  sandscope ls myapp
  sandscope attach myapp 0f9d3c2e-8a41-4d6b-9a4e-1c2b3d4e5f60

  # tmux-style detach: ctrl-a then d (ctrl-a twice sends one ctrl-a)
  sandscope attach --detach-key "ctrl-a d" myapp 0f9d3c2e-8a41-4d6b-9a4e-1c2b3d4e5f60

  # a remote bridge, token from a file
  sandscope --url https://bridge.example.workers.dev --token-file ~/.config/sandscope/token \
    attach myapp 0f9d3c2e-8a41-4d6b-9a4e-1c2b3d4e5f60`,
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
	cmd.Flags().BoolVar(&o.NoRecord, "no-record", false, "do not record the terminal and how the attachment ended in sandscope's record")
	cmd.Flags().StringVar(&o.DetachKey, "detach-key", attach.DefaultDetachKey, `detach key: "ctrl-]" or a prefix and a key like "ctrl-a d" (prefix twice sends it once)`)
	return cmd
}

// Complete takes the sandbox and terminal from args, the streams from cmd, and the detach key
// from the config when --detach-key is not given. The terminal's prefix is expanded in Run: that
// needs the bridge's list.
func (o *AttachOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	if len(args) == 2 {
		o.Sandbox, o.Terminal = args[0], args[1]
	}
	o.DetachKey, o.detachKeyErr = configuredDetachKey(cmd, o.Factory, o.DetachKey)
	return nil
}

// Validate refuses (exit 2) a detach key that is not one, input that is not a terminal and a bad
// sandbox ID; a configuration that could not be read is its own error.
func (o *AttachOptions) Validate() error {
	if o.detachKeyErr != nil {
		return o.detachKeyErr
	}
	if _, err := attach.ParseDetachKey(o.DetachKey); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	if err := cmdutil.NeedTerminal("attach", o.IO.In); err != nil {
		return err
	}
	return cmdutil.CheckSandboxArg(o.Sandbox)
}

// Run attaches full screen to the terminal (or, on a bridge without terminals, the shell).
func (o *AttachOptions) Run(ctx context.Context) error {
	cn, err := o.Factory.ConnectIO(ctx, o.IO, cmdutil.ConnectOptions{Op: "attach", NoAnswer: cmdutil.SetupError})
	if err != nil {
		return err
	}
	defer cn.Close()
	tm, ok := cn.D.(driver.Terminals)
	if !ok {
		// No terminal objects: TERMINAL names a shell, a session's or the sandbox's own.
		sh, ok := cn.D.(driver.Shells)
		if !ok {
			return cmdutil.Lacks("terminals", "it offers neither terminals nor a shell")
		}
		session, err := shellTarget(cn.D, o.Terminal)
		if err != nil {
			return err
		}
		return runShell(ctx, cn, sh, o.Sandbox, session, "", o.DetachKey)
	}
	rec := cn.Recorder(o.NoRecord)
	defer rec.Close()
	tid, found, err := lookupTerminal(ctx, tm, o.Sandbox, o.Terminal)
	if err != nil {
		return err
	}
	if found != nil {
		if ev, ok := record.LookupRunningTerminal(o.Sandbox, *found, "the terminal list"); ok {
			rec.Lookup(ev)
		}
		rec.Lookup(record.LookupTerminal(o.Sandbox, *found))
	}
	return attachTerminal(ctx, tm, rec, o.Sandbox, tid, false, o.DetachKey, cn.In, cn.Out, cn.ErrOut)
}

// lookupTerminal expands a unique prefix of a terminal ID (ExpandPrefix) and returns the
// terminal as the list showed it (nil
// when the list failed or did not hold it).
func lookupTerminal(ctx context.Context, c driver.Terminals, sandbox, id string) (string, *client.Terminal, error) {
	ts, err := c.ListTerminals(ctx, sandbox)
	if err != nil {
		return id, nil, nil
	}
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	full, err := cmdutil.ExpandPrefix("terminal", id, ids)
	if err != nil {
		return "", nil, err
	}
	for i := range ts {
		if ts[i].ID == full {
			return full, &ts[i], nil
		}
	}
	return full, nil, nil
}

// configuredDetachKey is --detach-key when given, else the config's detachKey (see
// `sandscope config`), else the default.
func configuredDetachKey(cmd *cobra.Command, g *cmdutil.Factory, flagValue string) (string, error) {
	if cmd.Flags().Changed("detach-key") {
		return flagValue, nil
	}
	eff, err := cmdutil.ResolveSettings(g)
	if err != nil {
		return "", err
	}
	return eff.DetachKey, nil // the config's, or its default
}
