// Package add is `sandscope add`: put sandboxes on the lists by their IDs, for bridges that cannot
// list them (the 1.0 preview and stable APIs have no list route; a Worker with the sandbox
// registry can, and needs no adding).
package add

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/internal/cli/cmdutil"
	"sandscope/sanitize"
	"sandscope/ui/common"
)

// Options are `add`'s arguments: the IDs given, or "-" for standard input.
type Options struct {
	f      *cmdutil.Factory
	cmd    *cobra.Command
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	Args  []string
	stdin bool

	// what Complete parsed
	IDs []string
	Bad []client.BadSandboxID
}

// NewCmdAdd makes the command. runF, when set, replaces Run (tests check parsing with it).
func NewCmdAdd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{f: f}
	cmd := &cobra.Command{
		Use:   "add SANDBOX... | add -",
		Short: "Add sandboxes by ID, so the TUI, ls, watch and reports follow them",
		Long: `Add sandboxes by their IDs to what sandscope keeps of this bridge: the Sandboxes screen, ls,
the record's watcher and watch list them from then on (until forgotten with f on the Sandboxes
screen). With "-", the IDs are read from standard input, separated by spaces or newlines (lines
starting with # are comments). IDs that are not sandbox IDs are named with their line numbers and
the rest are added; the exit status is then 2. Nothing is sent to the sandboxes: only the bridge's
document is read, to know which bridge this is. A bridge that lists its sandboxes (sandscope's
local bridge, or a Worker with the sandbox registry) needs no adding.`,
		Example: `  sandscope add agent7 agent8
  my-orchestrator list-sandboxes | sandscope add -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.cmd, o.In, o.Out, o.ErrOut = cmd, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.Run(cmd.Context())
		},
	}
	return cmd
}

// Complete reads the IDs: from the arguments, or from standard input with "-".
func (o *Options) Complete(args []string) error {
	o.Args = args
	if len(args) == 1 && args[0] == "-" {
		o.stdin = true
		ids, bad, err := client.ParseSandboxIDs(o.In)
		o.IDs, o.Bad = ids, bad
		if err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("add: %w", err)}
		}
		return nil
	}
	// arguments: one ID each; numbered as positions, not lines
	ids, bad, _ := client.ParseSandboxIDs(strings.NewReader(strings.Join(args, "\n")))
	for i := range bad {
		bad[i].Line = 0
	}
	o.IDs, o.Bad = ids, bad
	return nil
}

// Validate refuses "-" beside IDs, and an input that names no sandbox at all.
func (o *Options) Validate() error {
	for _, a := range o.Args {
		if a == "-" && len(o.Args) > 1 {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New(`add: give IDs or "-" (standard input), not both`)}
		}
	}
	if len(o.IDs) == 0 {
		o.tellBad()
		what := "the arguments name"
		if o.stdin {
			what = "standard input holds"
		}
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("add: %s no sandbox ID (%s)", what, common.SandboxIDRule)}
	}
	return nil
}

// tellBad names each entry that is not a sandbox ID, sanitised, with its line.
func (o *Options) tellBad() {
	for _, b := range o.Bad {
		b.Text = sanitize.Label(b.Text).String()
		fmt.Fprintf(o.ErrOut, "sandscope: add: %s\n", b.Error())
	}
}

// Run adds the IDs to the record of the bridge (which it asks who it is), then says what it did.
func (o *Options) Run(ctx context.Context) error {
	cn, err := o.f.Connect(ctx, o.cmd, cmdutil.ConnectOptions{Op: "add", NoAnswerExit: cmdutil.ExitFailure})
	if err != nil {
		return err
	}
	defer cn.Close()
	rec, err := cmdutil.OpenCommandRecord(o.f)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("add: %w", err)}
	}
	if rec == nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: errors.New("add: nothing is recorded for this bridge (no state directory, or the bridge has not answered yet)")}
	}
	how := "command"
	if o.stdin {
		how = "stdin"
	}
	for _, id := range o.IDs {
		rec.Remember(id, how)
	}
	cmdutil.TellRecordNotices(rec, o.ErrOut)
	if err := rec.Close(); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("add: record: %w", err)}
	}
	if len(o.IDs) == 1 {
		fmt.Fprintf(o.Out, "added sandbox %s\n", o.IDs[0])
	} else {
		fmt.Fprintf(o.Out, "added %d sandboxes: %s\n", len(o.IDs), strings.Join(o.IDs, " "))
	}
	if len(o.Bad) > 0 {
		o.tellBad()
		what := fmt.Sprintf("%d entries are not sandbox IDs", len(o.Bad))
		if len(o.Bad) == 1 {
			what = "1 entry is not a sandbox ID"
		}
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("add: %s (%s); the others were added", what, common.SandboxIDRule)}
	}
	return nil
}
