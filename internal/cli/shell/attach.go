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

func NewCmdAttach(g *cmdutil.Factory) *cobra.Command {
	var detachKey string
	var noRecord bool
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
			detachKey, err := configuredDetachKey(cmd, g, detachKey)
			if err != nil {
				return err
			}
			if _, err := attach.ParseDetachKey(detachKey); err != nil {
				return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
			}
			if err := cmdutil.NeedTerminal("attach", cmd.InOrStdin()); err != nil {
				return err
			}
			if err := cmdutil.CheckSandboxArg(args[0]); err != nil {
				return err
			}
			ctx := cmd.Context()
			cn, err := g.Connect(ctx, cmd, cmdutil.ConnectOptions{Op: "attach", NoAnswer: cmdutil.SetupError})
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
				session, err := shellTarget(cn.D, args[1])
				if err != nil {
					return err
				}
				return runShell(ctx, cn, sh, args[0], session, "", detachKey)
			}
			rec := cn.Recorder(noRecord)
			defer rec.Close()
			tid, found, err := lookupTerminal(ctx, tm, args[0], args[1])
			if err != nil {
				return err
			}
			if found != nil {
				if ev, ok := record.LookupRunningTerminal(args[0], *found, "the terminal list"); ok {
					rec.Lookup(ev)
				}
				rec.Lookup(record.LookupTerminal(args[0], *found))
			}
			return attachTerminal(ctx, tm, rec, args[0], tid, false, detachKey, cn.In, cn.Out, cn.ErrOut)
		},
	}
	cmd.Flags().BoolVar(&noRecord, "no-record", false, "do not record the terminal and how the attachment ended in sandscope's record")
	cmd.Flags().StringVar(&detachKey, "detach-key", attach.DefaultDetachKey, `detach key: "ctrl-]" or a prefix and a key like "ctrl-a d" (prefix twice sends it once)`)
	return cmd
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
