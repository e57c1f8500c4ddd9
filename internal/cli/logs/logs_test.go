package logs

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"sandscope/internal/cli/cmdutil"
	"sandscope/ui/common"
)

// parseLogs runs logs' command with a runF: the options it would run with, or the checks' error.
func parseLogs(t *testing.T, args ...string) (*LogsOptions, error) {
	t.Helper()
	var got *LogsOptions
	cmd := NewCmdLogs(&cmdutil.Factory{}, func(o *LogsOptions) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err == nil && got == nil {
		t.Fatalf("%q: no error and runF not called", args)
	}
	return got, err
}

func TestLogsOptions(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string // "": valid; a prefix of the message otherwise
		check   func(*LogsOptions) bool
	}{
		{args: []string{"box", "p1"}, check: func(o *LogsOptions) bool {
			return o.Sandbox == "box" && o.Process == "p1" && !o.Follow && !o.All && o.Bell == nil
		}},
		{args: []string{"-f", "--since", exampleCursor, "box", "p1"}, check: func(o *LogsOptions) bool { return o.Follow && o.Since == exampleCursor }},
		// the bell rings only on a terminal: a buffer is none
		{args: []string{"-f", "--notify", "box", "p1"}, check: func(o *LogsOptions) bool { return o.Notify && o.Bell == nil }},
		{args: []string{"box", "--all", "--state", "running", "--command", "claude|node"}, check: func(o *LogsOptions) bool {
			return o.All && o.Process == "" && o.all.filter.Pattern != nil && o.all.filter.Pattern.MatchString("node x") &&
				len(o.all.filter.States) == 1 && !o.all.colorOut && !o.all.cleanErr
		}},
		{args: []string{"Bad!"}, wantErr: common.BadSandboxID("Bad!")},
		{args: []string{"box"}, wantErr: "logs takes SANDBOX PROCESS (or SANDBOX --all), got 1 argument"},
		{args: []string{"box", "p1", "--since", "nope"}, wantErr: "--since nope is not a log cursor: a cursor is the token sandscope prints"},
		{args: []string{"box", "p1", "--since", "a b"}, wantErr: "--since (as given) is not a log cursor"},
		// --since is checked as a cursor before --all refuses it
		{args: []string{"box", "--all", "--since", "nope"}, wantErr: "--since nope is not a log cursor"},
		{args: []string{"box", "--all", "--since", exampleCursor}, wantErr: "logs --all: --since names a cursor of one process; use it without --all"},
		{args: []string{"box", "p1", "--all"}, wantErr: "logs --all takes the sandbox only (no PROCESS)"},
		{args: []string{"box", "--all", "--command", "("}, wantErr: "--command: error parsing regexp"},
		{args: []string{"box", "--all", "--state", "sleeping"}, wantErr: "--state"},
	}
	for _, tt := range tests {
		o, err := parseLogs(t, tt.args...)
		if tt.wantErr != "" {
			var ee *cmdutil.ExitError
			if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want exit 2 %q…", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !tt.check(o) {
			t.Errorf("%q: err %v, options %+v", tt.args, err, o)
		}
	}
}
