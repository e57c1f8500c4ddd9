package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/internal/cli/cmdutil"
	"sandscope/record"
)

// ReportOptions are report's flags and arguments, and what it gets from the Factory.
type ReportOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Sandbox string
	Entity  string // a process or terminal (a unique prefix will do: the record expands it); "": the whole sandbox
	JSON    bool
	Host    bool
	Lines   int
	Output  string // a file; "": stdout
}

// NewCmdReport is the report command; runF, when not nil, is called with the checked options
// instead of Run.
func NewCmdReport(f *cmdutil.Factory, runF func(*ReportOptions) error) *cobra.Command {
	o := &ReportOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "report SANDBOX [PROCESS|TERMINAL]",
		Short: "Write a triage report of what sandscope recorded about a sandbox or one of its processes",
		Long: `Write a report a developer can paste into a bug report, from what sandscope recorded (the TUI
and every command that talks to the bridge feed the record; the bridge is not asked, so a report
works after the sandbox is gone): the sandscope version, the bridge's dialect and kind, the timeline (time, what was seen,
evidence, cursor), every interruption, gap, suspect end, confirmed ending and loss with the last
lines of output before it, and the incarnation timeline with its evidence. PROCESS or TERMINAL may
be a unique prefix of the ID. Markdown by default; --json writes the sandscope.report/v1 schema
(see the README). Bridge-provided text is sanitised; the bridge's host appears only with --host,
a token never.`,
		Example: `  sandscope report demo                        # the whole sandbox, Markdown on stdout
  sandscope report demo 4ed5c14b -o agent.md   # one process, to a file
  sandscope report demo 4ed5c14b --json | jq '.incidents[] | select(.kind == "lost")'`,
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
	fl := cmd.Flags()
	fl.BoolVar(&o.JSON, "json", false, "write JSON (schema sandscope.report/v1) instead of Markdown")
	fl.StringVarP(&o.Output, "output", "o", "", "write the report to this file instead of stdout")
	fl.BoolVar(&o.Host, "host", false, "include the bridge URL's host (never a token or path)")
	fl.IntVar(&o.Lines, "lines", 10, "lines of output shown before each incident")
	return cmd
}

// Complete takes the sandbox and entity from args and the streams from cmd.
func (o *ReportOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	o.Sandbox, o.Entity = "", ""
	if len(args) > 0 {
		o.Sandbox = args[0]
	}
	if len(args) == 2 {
		o.Entity = args[1]
	}
	return nil
}

// Validate refuses a bad sandbox ID (exit 2).
func (o *ReportOptions) Validate() error { return cmdutil.CheckSandboxArg(o.Sandbox) }

// Run writes the report from the record of the Factory's bridge.
func (o *ReportOptions) Run(ctx context.Context) error {
	return runReport(ctx, o.Factory, o.Sandbox, o.Entity, o.JSON, o.Host, o.Lines, o.Output, o.IO.Out, o.IO.ErrOut)
}

func runReport(ctx context.Context, g *cmdutil.Factory, sandbox, entity string, asJSON, withHost bool, lines int, out string, stdout, stderr io.Writer) error {
	n, err := cmdutil.ReaderRecordName(ctx, g)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	kind, rawURL := n.Kind, n.RawURL
	if !record.Exists(cmdutil.RecordDir(), n.Identity, n.Legacy) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no record of this bridge in %s: sandscope records what the TUI and the commands (exec, logs, wait, ls, shell, attach) observe on a bridge once it has answered", cmdutil.RecordDir())}
	}
	rec, err := record.Open(record.Options{Dir: cmdutil.RecordDir(), Bridge: n.Identity, Legacy: n.Legacy, Version: cmdutil.Version, ReadOnly: true})
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
	}
	defer rec.Close()
	defer cmdutil.TellRecordNotices(rec, stderr)
	// The dialect is what the bridge says it speaks (a `sandscope serve --dialect stable` found
	// through its discovery file included); the embedded bridge, when none runs to ask, is preview.
	o := record.ReportOptions{Sandbox: sandbox, Entity: entity, Version: cmdutil.Version, Kind: kind, Dialect: string(client.DialectPreview), Lines: lines}
	if _, _, err := g.ResolvedBridge(); err == nil || rawURL != "" {
		o.Dialect = dialectOf(ctx, g)
	}
	if rawURL != "" {
		if withHost {
			if u, err := url.Parse(rawURL); err == nil {
				o.Host = u.Hostname()
			}
		}
	}
	rep, err := rec.BuildReport(o)
	if errors.Is(err, record.ErrDamaged) {
		// the damage it met is repaired first (see Flush); then the record reads
		_ = rec.Flush()
		rep, err = rec.BuildReport(o)
	}
	if err != nil {
		// an unknown sandbox or entity, or an ambiguous prefix
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	var data []byte
	if asJSON {
		if data, err = rep.JSON(); err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
		}
	} else {
		data = rep.Markdown()
	}
	if out == "" {
		_, err := stdout.Write(data)
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
	}
	if err := os.WriteFile(abs, data, 0o600); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("report: %w", err)}
	}
	fmt.Fprintf(stderr, "sandscope: wrote the report to %s\n", abs)
	return nil
}

// dialectOf asks a configured bridge which API it speaks (3 s at most, no container is
// contacted); "unknown" when it does not answer.
func dialectOf(ctx context.Context, g *cmdutil.Factory) string {
	c, _, err := g.ResolvedBridge()
	if err != nil {
		return string(client.DialectUnknown)
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	caps, err := c.Capabilities(cctx)
	if err != nil {
		return string(client.DialectUnknown) + " (the bridge did not answer)"
	}
	return string(caps.Dialect)
}
