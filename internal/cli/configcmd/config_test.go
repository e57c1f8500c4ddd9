package configcmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandscope/internal/cli/cmdutil"
)

func TestConfigOptions(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	for _, k := range []string{"SANDSCOPE_URL", "SANDSCOPE_CONTEXT", "SANDSCOPE_THEME", "SANDBOX_API_KEY"} {
		t.Setenv(k, "")
	}
	write := func(text string) string {
		path := filepath.Join(dir, "config-"+strings.ReplaceAll(t.Name(), "/", "_")+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		factory cmdutil.Factory
		args    []string
		wantErr string // a part of the message; exit 2
		check   func(*ConfigOptions) bool
	}{
		{name: "context from the file", file: "currentContext: cloud\ncontexts:\n  - name: cloud\n    url: https://b.example.dev\n",
			args: []string{"--json", "--check-token"}, check: func(o *ConfigOptions) bool {
				return o.JSON && o.CheckToken && o.Effective.URL == "https://b.example.dev" && len(o.Config.Contexts) == 1
			}},
		{name: "the flag wins", file: "currentContext: cloud\ncontexts:\n  - name: cloud\n    url: https://b.example.dev\n",
			factory: cmdutil.Factory{URL: "http://127.0.0.1:9"}, check: func(o *ConfigOptions) bool { return o.Effective.URL == "http://127.0.0.1:9" }},
		{name: "a file with a problem", file: "detachKey: \"\"\n", wantErr: "detachKey must not be empty"},
		{name: "a schemeless --url", factory: cmdutil.Factory{URL: "bridge.example.dev"}, wantErr: "--url bridge.example.dev has no scheme"},
		{name: "an unknown theme", env: map[string]string{"SANDSCOPE_THEME": "sepia"}, wantErr: `theme "sepia"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "absent.yaml")
			if tt.file != "" {
				path = write(tt.file)
			}
			t.Setenv("SANDSCOPE_CONFIG", path)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var got *ConfigOptions
			f := tt.factory
			cmd := NewCmdConfig(&f, func(o *ConfigOptions) error { got = o; return nil })
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
