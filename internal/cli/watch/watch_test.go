package watch

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandscope/internal/cli/cmdutil"
)

func TestWatchOptions(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"SANDSCOPE_URL", "SANDSCOPE_CONTEXT", "SANDSCOPE_THEME", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		t.Setenv(k, "")
	}
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("detachKey: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(dir, "absent.yaml")
	tests := []struct {
		name    string
		url     string
		config  string
		env     map[string]string
		args    []string
		wantErr string // a part of the message; exit 2
		check   func(*WatchOptions) bool
	}{
		{name: "defaults", check: func(o *WatchOptions) bool {
			return len(o.Contexts) == 0 && !o.JSON && !o.OTLP.Enabled && o.Settings.PollFast > 0
		}},
		{name: "contexts", args: []string{"--context", "prod", "--context", "staging", "--json"}, check: func(o *WatchOptions) bool {
			return strings.Join(o.Contexts, ",") == "prod,staging" && o.JSON
		}},
		{name: "export", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, args: []string{"--otlp-output"},
			check: func(o *WatchOptions) bool { return o.OTLP.Enabled && o.OTLP.Output }},
		{name: "url and context", url: "http://127.0.0.1:9", args: []string{"--context", "prod"}, wantErr: "watch: give --url or --context, not both"},
		// the flags are checked before the file is
		{name: "url and context, broken file", url: "http://127.0.0.1:9", config: broken, args: []string{"--context", "prod"}, wantErr: "watch: give --url or --context, not both"},
		{name: "broken file", config: broken, wantErr: "detachKey must not be empty"},
		{name: "bad endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://collector"}, wantErr: `otlp: an endpoint's scheme is "ftp"`},
		{name: "output without an endpoint", args: []string{"--otlp-output"}, wantErr: "watch: --otlp-output needs an OTLP endpoint"},
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
			var got *WatchOptions
			cmd := NewCmdWatch(&cmdutil.Factory{URL: tt.url}, func(o *WatchOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
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
