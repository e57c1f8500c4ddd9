package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/config"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/internal/watch"
	"sandscope/otlpexport"
	"sandscope/record"
)

// WatchOptions are watch's flags, what it gets from the Factory, and the settings Complete
// resolves.
type WatchOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Contexts   []string // --context, repeatable: one bridge each; none: the configured bridge
	JSON       bool
	OTLPOutput bool

	// Settings are the resolved configuration and OTLP the export it and the environment ask for
	// (Complete); settingsErr and otlpErr are why they could not be, told in Validate's order.
	Settings    *config.Effective
	OTLP        otlpexport.Resolved
	settingsErr error
	otlpErr     error
}

// NewCmdWatch is the watch command; runF, when not nil, is called with the checked options
// instead of Run.
func NewCmdWatch(f *cmdutil.Factory, runF func(*WatchOptions) error) *cobra.Command {
	o := &WatchOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Watch every sandbox of a bridge without a screen, keep the record, and export it over OpenTelemetry",
		Long: `Run the record's watcher without a screen, as a service: every sandbox known on the bridge
(--url, --context, or several bridges with --context repeated) is watched, output is captured
within the same budgets as the TUI, and the record is kept. One line per notable change goes to
stderr in the words of the TUI's notifications (--json: one JSON object per line). It runs until
SIGTERM or SIGINT, then flushes and exits 0 within 5 s. On a bridge whose lookups start
containers (stable) it sends nothing of its own.

With OTEL_EXPORTER_OTLP_ENDPOINT (or otlp: in the configuration file) set, every process,
terminal and run is exported as a span, every marker as a span event and a log record
(--otlp-output: captured output lines too), from a position kept in the record, so nothing is
lost while the collector is down. See the README's "Running watch as a service".`,
		Example: `  sandscope watch                                   # the configured bridge
  sandscope watch --context prod --context staging --json
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 sandscope watch --otlp-output`,
		Args: cobra.NoArgs,
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
	// a local --context, repeatable, in place of the global one
	fl.StringArrayVar(&o.Contexts, "context", nil, "watch the bridge of this config context (repeat for several bridges)")
	fl.BoolVar(&o.JSON, "json", false, "write one JSON object per line instead of text")
	fl.BoolVar(&o.OTLPOutput, "otlp-output", false, "export captured output lines as OpenTelemetry log records")
	return cmd
}

// Complete loads the settings and resolves the OTLP export from the configuration file, the
// environment and --otlp-output.
func (o *WatchOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	cfg, eff, err := cmdutil.LoadSettings(o.Factory)
	o.Settings, o.settingsErr, o.otlpErr = eff, err, nil
	if err != nil {
		return nil
	}
	o.OTLP, o.otlpErr = cmdutil.OTLPSettings(cfg, o.OTLPOutput)
	return nil
}

// Validate refuses (exit 2) --url with --context, settings that cannot be read, an OTLP export
// that cannot be resolved, and --otlp-output without an endpoint.
func (o *WatchOptions) Validate() error {
	if o.Factory.URL != "" && len(o.Contexts) > 0 {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("watch: give --url or --context, not both")}
	}
	if o.settingsErr != nil {
		return o.settingsErr
	}
	if o.otlpErr != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: o.otlpErr}
	}
	if o.OTLPOutput && !o.OTLP.Enabled {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("watch: --otlp-output needs an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or otlp.endpoint in the configuration file)")}
	}
	return nil
}

// Run watches every bridge until SIGINT or SIGTERM (or ctx) ends it.
func (o *WatchOptions) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	g, stderr, otlp := o.Factory, o.IO.ErrOut, o.OTLP
	names := o.Contexts
	if len(names) == 0 {
		names = []string{""} // the bridge the global flags and configuration choose
	}
	var targets []watch.Target
	defer func() {
		for _, t := range targets {
			_ = t.Driver.Close()
			cmdutil.TellRecordNotices(t.Record, stderr)
			_ = t.Record.Close()
		}
	}()
	for _, name := range names {
		gc := &cmdutil.Factory{URL: g.URL, TokenFile: g.TokenFile, Context: name, OpenDriver: g.OpenDriver}
		t, err := watchTarget(ctx, gc, otlp, stderr)
		if err != nil {
			if name != "" {
				err = fmt.Errorf("context %s: %w", name, err)
			}
			return err
		}
		if len(names) > 1 {
			t.Name = name
		}
		targets = append(targets, t)
	}
	if otlp.Enabled {
		fmt.Fprintf(stderr, "sandscope: exporting to %s\n", otlp.Describe())
	}
	budget := record.DefaultWatchBudget
	budget.Fast, budget.Slow = o.Settings.PollFast, o.Settings.PollSlow
	return watch.Run(ctx, targets, watch.Options{JSON: o.JSON, Budget: budget}, stderr)
}

// watchTarget resolves one bridge as every command does: its client, its record (named by asking
// the bridge who it is), its driver, and its export.
func watchTarget(ctx context.Context, g *cmdutil.Factory, otlp otlpexport.Resolved, stderr io.Writer) (watch.Target, error) {
	c, _, err := cmdutil.NewBridgeClient(g)
	if err != nil {
		return watch.Target{}, err
	}
	rec, err := cmdutil.OpenCommandRecord(g)
	if err != nil {
		return watch.Target{}, &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
	}
	if rec == nil {
		return watch.Target{}, &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("the bridge at %s does not answer, so it has no record to keep yet", c.BaseURL())}
	}
	open := g.OpenDriver
	if open == nil {
		open = driver.Open
	}
	d, err := open(ctx, c, driver.Options{Record: rec, Notices: stderr})
	if err != nil {
		_ = rec.Close()
		return watch.Target{}, cmdutil.BridgeExit("", err, cmdutil.ExitFailure)
	}
	t := watch.Target{Driver: d, Record: rec}
	if !otlp.Enabled {
		return t, nil
	}
	fail := func(err error) (watch.Target, error) {
		_ = d.Close()
		_ = rec.Close()
		return watch.Target{}, &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
	}
	traces, logs, err := otlp.Exporters(ctx)
	if err != nil {
		return fail(err)
	}
	res, err := otlp.Resource(ctx, cmdutil.Version)
	if err != nil {
		return fail(err)
	}
	dialect := string(d.Capabilities().Dialect)
	if dialect == "" {
		dialect = string(client.DialectPreview)
	}
	t.Export, err = otlpexport.New(otlpexport.Options{Record: rec, Bridge: otlpexport.Bridge{URL: d.BaseURL(), Dialect: dialect},
		Name: otlp.PositionName(), Traces: traces, Logs: logs, Resource: res, Output: otlp.Output})
	if err != nil {
		return fail(err)
	}
	return t, nil
}
