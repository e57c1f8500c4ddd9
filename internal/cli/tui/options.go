package tui

import (
	"fmt"

	"github.com/spf13/cobra"

	"sandscope/attach"
	"sandscope/config"
	"sandscope/internal/cli/cmdutil"
	"sandscope/localbridge"
	"sandscope/otlpexport"
)

// TUIOptions are the root command's: the TUI's flags (--demo, --dialect), what it gets from the
// Factory, and the settings Complete resolves.
type TUIOptions struct {
	Factory *cmdutil.Factory

	Demo    bool   // --demo: start the demo scene at once
	Dialect string // --dialect: the API of the embedded local bridge

	// Config is the file as loaded, Effective the settings and OTLP the export they ask for
	// (Complete); settingsErr and otlpErr are why they could not be, told in Validate's order.
	Config      *config.Config
	Effective   *config.Effective
	OTLP        otlpexport.Resolved
	settingsErr error
	otlpErr     error
}

// RunTUI opens the terminal UI: on a remote bridge when one is configured (--url, --context,
// SANDSCOPE_URL), else on a local bridge started in this process with a fresh random token. The
// embedded bridge is shut down on exit, which ends every process and terminal it started.
func RunTUI(cmd *cobra.Command, g *cmdutil.Factory) error { return Execute(cmd, g, nil) }

// Execute completes and checks the TUI's options from cmd (the root command, its flags added by
// RegisterTUIFlags) and runs the TUI; runF, when not nil, is called with them instead of Run.
func Execute(cmd *cobra.Command, f *cmdutil.Factory, runF func(*TUIOptions) error) error {
	o := &TUIOptions{Factory: f}
	if err := o.Complete(cmd, nil); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if runF != nil {
		return runF(o)
	}
	return o.Run(cmd.Context())
}

// Complete reads --demo and --dialect and resolves the settings and the OTLP export.
func (o *TUIOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.Demo, o.Dialect = false, localbridge.DialectPreview
	if fl := cmd.Flags().Lookup("demo"); fl != nil {
		o.Demo = fl.Value.String() == "true"
	}
	if fl := cmd.Flags().Lookup("dialect"); fl != nil {
		o.Dialect = fl.Value.String()
	}
	o.Config, o.Effective, o.settingsErr = cmdutil.LoadSettings(o.Factory)
	o.otlpErr = nil
	if o.settingsErr == nil {
		o.OTLP, o.otlpErr = cmdutil.OTLPSettings(o.Config, false)
	}
	return nil
}

// Validate refuses (exit 2) settings that cannot be read, a detach key that is not one, an OTLP
// export that cannot be resolved and an unknown --dialect.
func (o *TUIOptions) Validate() error {
	if o.settingsErr != nil {
		return o.settingsErr
	}
	if _, err := attach.ParseDetachKey(o.Effective.DetachKey); err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("detachKey (%s): %w", o.Effective.DetachKeySource, err)}
	}
	if o.otlpErr != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: o.otlpErr}
	}
	if err := localbridge.CheckDialect(o.Dialect); err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--dialect %w", err)}
	}
	return nil
}
