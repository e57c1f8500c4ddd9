package configcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"sandscope/config"
	"sandscope/internal/cli/cmdutil"
	"sandscope/keymap"
	"sandscope/localbridge"
)

// ConfigOptions are config's flags, what it gets from the Factory (the --url, --token-file and
// --context flags) and the settings Complete loads.
type ConfigOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	JSON       bool
	CheckToken bool

	// Config is the file as loaded and Effective the settings resolved from it, the environment
	// and the flags (Complete).
	Config    *config.Config
	Effective *config.Effective
}

// NewCmdConfig is the config command (and its path subcommand); runF, when not nil, is called
// with the checked options instead of Run.
func NewCmdConfig(f *cmdutil.Factory, runF func(*ConfigOptions) error) *cobra.Command {
	o := &ConfigOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective configuration and where each value comes from",
		Long: `Show the effective settings — bridge URL, context, how the token is obtained, theme, keys,
log memory, detach key, poll intervals, the record's budget — and where each came from: default,
file:line, env or flag. The token itself is never shown.

The file is $XDG_CONFIG_HOME/sandscope/config.yaml ($SANDSCOPE_CONFIG overrides; see
'sandscope config path'). Example:

  currentContext: cloud
  theme: auto                  # auto, dark, light, high-contrast
  logMemoryLines: 100000       # log lines kept ready in memory per view; all output is on disk
  detachKey: ctrl+]
  pollFast: 1s                 # sandbox polling while focused
  pollSlow: 10s                # otherwise
  record:                      # what the record keeps per bridge
    keep: 14d
    maxEvents: 200000
    capturePerProcess: 8MiB
    captureTotal: 512MiB
  keys:
    quit: [q, ctrl+c]
  contexts:
    - name: cloud
      url: https://sandscope-bridge.example.workers.dev
      tokenEnv: SANDBOX_API_KEY          # or tokenFile: ~/.config/sandscope/cloud.key
    - name: vault
      url: https://other.example.workers.dev
      tokenCommand: [pass, show, sandscope/vault]   # argv, run directly (no shell)
      # tokenCommand: "op read op://dev/bridge/key | head -1"   # a string runs with sh -c
      tokenCommandTimeout: 10s
      # token: …   only allowed when the file is mode 0600

Precedence: flag, then environment (SANDSCOPE_URL, SANDBOX_API_KEY, SANDSCOPE_CONTEXT,
SANDSCOPE_THEME), then the file, then defaults.`,
		Example: `  # where each setting comes from
  sandscope config

  # the same as JSON, also checking that the token can be obtained (its value is never shown)
  sandscope config --json --check-token

  # another context, and the file's location
  sandscope --context staging config
  sandscope config path`,
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
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON: {file, settings: [{setting, value, source}]}")
	cmd.Flags().BoolVar(&o.CheckToken, "check-token", false, "also obtain the token (runs tokenCommand) and report whether that worked, never its value")
	cmd.AddCommand(&cobra.Command{
		Use:   "path",
		Short: "Print where the configuration file is read from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), config.DefaultPath(os.LookupEnv))
			return err
		},
	})
	return cmd
}

// Complete loads the configuration file and resolves the settings (a file with problems is exit
// 2, every problem told).
func (o *ConfigOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	var err error
	o.Config, o.Effective, err = cmdutil.LoadSettings(o.Factory)
	return err
}

// Validate refuses a theme the settings name that does not exist (exit 2).
func (o *ConfigOptions) Validate() error {
	if err := cmdutil.CheckTheme(o.Config, o.Effective); err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	return nil
}

// Run shows the settings, and with --check-token obtains the token and says whether that worked.
func (o *ConfigOptions) Run(ctx context.Context) error {
	eff := o.Effective
	info := configInfo{Bridge: commandBridge(eff), Contexts: contextList(o.Config, eff)}
	if o.JSON {
		if err := writeConfigJSON(o.IO.Out, eff, info); err != nil {
			return err
		}
	} else if err := writeConfigTable(o.IO.Out, eff, info); err != nil {
		return err
	}
	if o.CheckToken {
		// Obtain the token (running tokenCommand if that is the source) and say whether it
		// worked; the value itself is never printed.
		tok, err := eff.Token.Get(ctx)
		if err != nil {
			return &cmdutil.ExitError{Code: 2, Err: err}
		}
		if tok == "" {
			fmt.Fprintln(o.IO.ErrOut, "sandscope: no token configured (fine for the embedded local bridge)")
		} else {
			fmt.Fprintf(o.IO.ErrOut, "sandscope: token obtained %s (%d characters)\n", eff.Token, len(tok))
		}
	}
	return nil
}

// configInfo is what `config` shows beside the settings: the bridge commands will use and the
// file's contexts.
type configInfo struct {
	Bridge   string        `json:"commandBridge"`
	Contexts []contextInfo `json:"contexts"`
}

type contextInfo struct {
	Name    string `json:"name"`
	URL     string `json:"url"`
	Token   string `json:"token"` // how the token is obtained, never its value
	Current bool   `json:"current"`
}

// commandBridge names the bridge `ls`, `logs`, `exec`, `shell` and `attach` will talk to, decided
// the way ResolveBridge decides it (without obtaining the token).
func commandBridge(eff *config.Effective) string {
	if eff.URL != "" {
		return eff.URL + " (" + eff.URLSource.String() + ")"
	}
	path := filepath.Join(localbridge.DefaultStateDir(), "serve.json")
	d, err := localbridge.ReadDiscovery(path)
	switch {
	case err == nil:
		return fmt.Sprintf("%s (the running 'sandscope serve', pid %d, announced in %s)", d.URL, d.PID, path)
	case errors.Is(err, localbridge.ErrStaleDiscovery):
		return fmt.Sprintf("none: %s names %s (pid %d), which is not running anymore; start 'sandscope serve'", path, d.URL, d.PID)
	}
	return "none: no URL configured and no 'sandscope serve' running (the TUI starts its own embedded bridge)"
}

func contextList(cfg *config.Config, eff *config.Effective) []contextInfo {
	out := []contextInfo{}
	if cfg == nil {
		return out
	}
	for _, c := range cfg.Contexts {
		tok := "none"
		switch {
		case c.TokenEnv != "":
			tok = "env " + c.TokenEnv
		case c.TokenFile != "":
			tok = "file " + c.TokenFile
		case len(c.TokenArgv) > 0:
			tok = "tokenCommand"
		case c.HasInlineToken():
			tok = "in the file (hidden)"
		}
		out = append(out, contextInfo{Name: c.Name, URL: c.URL, Token: tok, Current: c.Name == eff.Context})
	}
	return out
}

func writeConfigTable(w io.Writer, eff *config.Effective, info configInfo) error {
	state := "found"
	if !eff.ConfigExists {
		state = "not found; using defaults"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "file\t%s\t(%s)\n", eff.ConfigPath, state)
	fmt.Fprintf(tw, "commands use\t%s\n", info.Bridge)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	for _, r := range eff.Rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Setting, r.Value, r.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(info.Contexts) == 0 {
		fmt.Fprintln(w, "contexts: none in the file")
	} else {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CONTEXT\tURL\tTOKEN")
		for _, c := range info.Contexts {
			name := c.Name
			if c.Current {
				name += " *"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, c.URL, c.Token)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	return writeKeys(w, eff)
}

// writeKeys lists every key binding of the TUI per screen, with the configuration's overrides
// applied (the names are what keys: in the file takes).
func writeKeys(w io.Writer, eff *config.Effective) error {
	km := keymap.New()
	if err := km.ApplyOverrides(eff.Keys); err != nil {
		return err
	}
	fmt.Fprintln(w, "KEYS (name: keys)")
	for _, s := range keymap.ScreenOrder() {
		line := fmt.Sprintf("  %-10s", s)
		width := len(line)
		for i, nb := range km.NamedBindings(s) {
			keys := make([]string, 0, len(nb.Binding.Keys()))
			for _, k := range nb.Binding.Keys() {
				if k == " " {
					k = "space"
				}
				keys = append(keys, k)
			}
			part := nb.Name + ": " + strings.Join(keys, " ")
			if i > 0 {
				part = " · " + part
			}
			if width+len(part) > 100 {
				line += "\n" + strings.Repeat(" ", 12)
				width = 12
				part = strings.TrimPrefix(part, " · ")
			}
			line += part
			width += len(part)
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

func writeConfigJSON(w io.Writer, eff *config.Effective, info configInfo) error {
	out := struct {
		File     string        `json:"file"`
		Exists   bool          `json:"exists"`
		Settings []config.Row  `json:"settings"`
		Bridge   string        `json:"commandBridge"`
		Contexts []contextInfo `json:"contexts"`
	}{eff.ConfigPath, eff.ConfigExists, eff.Rows(), info.Bridge, info.Contexts}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
