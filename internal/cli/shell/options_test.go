package shell

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"sandscope/attach"
	"sandscope/internal/cli/cmdutil"
	"sandscope/ui/common"
)

// withConfig points sandscope at a config file holding text (none when text is "").
func withConfig(t *testing.T, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if text != "" {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SANDSCOPE_CONFIG", path)
	t.Setenv("SANDSCOPE_URL", "")
}

// execute runs cmd with args and a buffer as stdin (input the caller feeds itself: no terminal
// check refuses it).
func execute(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetIn(&bytes.Buffer{})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return cmd.Execute()
}

func wantUsage(t *testing.T, args []string, err error, want string) {
	t.Helper()
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%q: err %v, want exit 2 %q…", args, err, want)
	}
}

func TestShellOptions(t *testing.T) {
	withConfig(t, "detachKey: \"ctrl-a d\"\n")
	tests := []struct {
		args    []string
		wantErr string
		check   func(*ShellOptions) bool
	}{
		{args: []string{"box"}, check: func(o *ShellOptions) bool {
			return o.Sandbox == "box" && strings.Join(o.Argv, " ") == strings.Join(defaultShellArgv, " ") && o.DetachKey == "ctrl-a d"
		}},
		{args: []string{"--detach-key", "ctrl-b x", "--cwd", "/workspace/app", "box", "--", "bash", "-l"}, check: func(o *ShellOptions) bool {
			return strings.Join(o.Argv, " ") == "bash -l" && o.DetachKey == "ctrl-b x" && o.Cwd == "/workspace/app" && o.ArgsAtDash == 1
		}},
		{args: []string{"--session", "s1", "box"}, check: func(o *ShellOptions) bool { return o.Session == "s1" }},
		{args: []string{"box", "bash"}, wantErr: "usage: sandscope shell SANDBOX [--cwd DIR] [-- ARGV...]"},
		{args: []string{"box", "x", "--", "bash"}, wantErr: "usage: sandscope shell SANDBOX [--cwd DIR] [-- ARGV...]"},
		{args: []string{"box", "--"}, wantErr: "shell: nothing after --"},
		{args: []string{"--detach-key", "ctrl-a ctrl-space", "box"}, wantErr: `detach key "ctrl-a ctrl-space"`},
		{args: []string{"--session", "a..b", "box"}, wantErr: `--session "a..b": want 1-128`},
	}
	for _, tt := range tests {
		var got *ShellOptions
		err := execute(NewCmdShell(&cmdutil.Factory{}, func(o *ShellOptions) error { got = o; return nil }), tt.args...)
		if tt.wantErr != "" {
			wantUsage(t, tt.args, err, tt.wantErr)
			continue
		}
		if err != nil || got == nil || !tt.check(got) {
			t.Errorf("%q: err %v, options %+v", tt.args, err, got)
		}
	}
}

func TestAttachOptions(t *testing.T) {
	withConfig(t, "")
	var got *AttachOptions
	runF := func(o *AttachOptions) error { got = o; return nil }
	if err := execute(NewCmdAttach(&cmdutil.Factory{}, runF), "box", "0f9d"); err != nil || got == nil ||
		got.Sandbox != "box" || got.Terminal != "0f9d" {
		t.Fatalf("err %v, options %+v", err, got)
	}
	// without a config, the config's default: the same key as the flag's default
	k, err := attach.ParseDetachKey(got.DetachKey)
	if def, _ := attach.ParseDetachKey(attach.DefaultDetachKey); err != nil || k.Prefix != def.Prefix || k.Second != def.Second {
		t.Errorf("detach key %q (%v), want the default", got.DetachKey, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--detach-key", "ctrl-a ctrl-space", "box", "t1"}, `detach key "ctrl-a ctrl-space"`},
		{[]string{"Bad!", "t1"}, common.BadSandboxID("Bad!")},
	} {
		got = nil
		err := execute(NewCmdAttach(&cmdutil.Factory{}, runF), tt.args...)
		wantUsage(t, tt.args, err, tt.want)
		if got != nil {
			t.Errorf("%q: ran", tt.args)
		}
	}
}

// A configuration that cannot be read is told after the usage checks that need none, as before.
func TestShellUsageBeforeABrokenConfig(t *testing.T) {
	withConfig(t, "detachKey: \"\"\n")
	err := execute(NewCmdShell(&cmdutil.Factory{}, nil), "box", "bash")
	wantUsage(t, []string{"box", "bash"}, err, "usage: sandscope shell")
	err = execute(NewCmdShell(&cmdutil.Factory{}, nil), "box")
	wantUsage(t, []string{"box"}, err, "")
	if err == nil || !strings.Contains(err.Error(), "detachKey must not be empty") {
		t.Errorf("broken config: %v", err)
	}
}
