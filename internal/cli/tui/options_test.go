package tui

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"sandscope/internal/cli/cmdutil"
	"sandscope/localbridge"
)

func TestTUIOptions(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"SANDSCOPE_URL", "SANDSCOPE_CONTEXT", "SANDSCOPE_THEME", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	absent := filepath.Join(dir, "absent.yaml")
	twoKeys := file("two-keys.yaml", "detachKey: \"ctrl-a ctrl-space\"\n")
	broken := file("broken.yaml", "detachKey: \"\"\n")
	budget := file("budget.yaml", "record:\n  keep: 30d\n  maxEvents: 5000000\n  captureTotal: 8GiB\n")
	badBudget := file("bad-budget.yaml", "record:\n  maxEvents: 10\n")
	tests := []struct {
		name    string
		config  string
		env     map[string]string
		args    []string
		wantErr string // a part of the message; exit 2
		check   func(*TUIOptions) bool
	}{
		{name: "defaults", check: func(o *TUIOptions) bool {
			return !o.Demo && o.Dialect == localbridge.DialectPreview && !o.OTLP.Enabled && o.Effective.Local()
		}},
		{name: "demo on the stable dialect", args: []string{"--demo", "--dialect", "stable"}, check: func(o *TUIOptions) bool {
			return o.Demo && o.Dialect == localbridge.DialectStable
		}},
		{name: "export", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, check: func(o *TUIOptions) bool { return o.OTLP.Enabled }},
		{name: "the record's budget", config: budget, check: func(o *TUIOptions) bool {
			b := o.settings(dir).RecordBudget
			return b.MaxAge == 30*24*time.Hour && b.MaxEvents == 5_000_000 && b.CaptureTotal == 8<<30 && b.CapturePerRun == 8<<20
		}},
		{name: "the record's budget out of range", config: badBudget, wantErr: "record.maxEvents 10 is out of range"},
		{name: "unknown dialect", args: []string{"--dialect", "v2"}, wantErr: `--dialect "v2": want v1-preview or stable`},
		{name: "broken file", config: broken, args: []string{"--dialect", "v2"}, wantErr: "detachKey must not be empty"},
		{name: "detach key", config: twoKeys, args: []string{"--dialect", "v2"}, wantErr: "ctrl-space"},
		{name: "bad endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://collector"}, args: []string{"--dialect", "v2"}, wantErr: `otlp: an endpoint's scheme is "ftp"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := absent
			if tt.config != "" {
				cfg = tt.config
			}
			t.Setenv("SANDSCOPE_CONFIG", cfg)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var got *TUIOptions
			f := &cmdutil.Factory{}
			root := &cobra.Command{Use: "sandscope", SilenceErrors: true, SilenceUsage: true,
				RunE: func(cmd *cobra.Command, _ []string) error {
					return Execute(cmd, f, func(o *TUIOptions) error { got = o; return nil })
				}}
			RegisterTUIFlags(root)
			root.SetArgs(tt.args)
			err := root.Execute()
			if tt.wantErr != "" {
				var ee *cmdutil.ExitError
				if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || !strings.Contains(err.Error(), tt.wantErr) || got != nil {
					t.Errorf("err %v, want exit 2 with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got == nil || !tt.check(got) {
				t.Errorf("err %v, options %+v", err, got)
			}
		})
	}
}
