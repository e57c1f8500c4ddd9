package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"sandscope/config"
	"sandscope/keymap"
)

// resolveSettings loads the configuration file and resolves the effective settings from it, the
// environment and the global flags. Every command that talks to a bridge starts here; the token is
// obtained separately with eff.Token.Get(ctx), only when needed.
func resolveSettings(g *globalOptions) (*config.Effective, error) {
	_, eff, err := loadSettings(g)
	return eff, err
}

// loadSettings is resolveSettings that also returns the loaded file (its contexts, for the TUI).
func loadSettings(g *globalOptions) (*config.Config, *config.Effective, error) {
	path := config.DefaultPath(os.LookupEnv)
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	if err := cfg.CheckKeys(keymap.New().Names()); err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	eff, err := cfg.Resolve(config.Flags{URL: g.url, TokenFile: g.tokenFile, Context: g.context}, os.LookupEnv)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	return cfg, eff, nil
}

func newConfigCmd(g *globalOptions) *cobra.Command {
	var asJSON, checkToken bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective configuration and where each value comes from",
		Long: `Show the effective settings — bridge URL, context, how the token is obtained, theme, keys,
log memory, detach key, poll intervals — and where each came from: default, file:line, env or flag.
The token itself is never shown.

The file is $XDG_CONFIG_HOME/sandscope/config.yaml ($SANDSCOPE_CONFIG overrides; see
'sandscope config path'). Example:

  currentContext: cloud
  theme: auto                  # auto, dark, light, high-contrast
  logMemoryLines: 100000       # log lines kept in memory per stream; older ones go to disk
  detachKey: ctrl+]
  pollFast: 1s                 # sandbox polling while focused
  pollSlow: 10s                # otherwise
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
			eff, err := resolveSettings(g)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeConfigJSON(cmd.OutOrStdout(), eff); err != nil {
					return err
				}
			} else if err := writeConfigTable(cmd.OutOrStdout(), eff); err != nil {
				return err
			}
			if checkToken {
				// Obtain the token (running tokenCommand if that is the source) and say whether it
				// worked; the value itself is never printed.
				tok, err := eff.Token.Get(cmd.Context())
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				if tok == "" {
					fmt.Fprintln(cmd.ErrOrStderr(), "sandscope: no token configured (fine for the embedded local bridge)")
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "sandscope: token obtained %s (%d characters)\n", eff.Token, len(tok))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: {file, settings: [{setting, value, source}]}")
	cmd.Flags().BoolVar(&checkToken, "check-token", false, "also obtain the token (runs tokenCommand) and report whether that worked, never its value")
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

func writeConfigTable(w io.Writer, eff *config.Effective) error {
	state := "found"
	if !eff.ConfigExists {
		state = "not found; using defaults"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "file\t%s\t(%s)\n", eff.ConfigPath, state)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	for _, r := range eff.Rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Setting, r.Value, r.Source)
	}
	return tw.Flush()
}

func writeConfigJSON(w io.Writer, eff *config.Effective) error {
	out := struct {
		File     string       `json:"file"`
		Exists   bool         `json:"exists"`
		Settings []config.Row `json:"settings"`
	}{eff.ConfigPath, eff.ConfigExists, eff.Rows()}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
