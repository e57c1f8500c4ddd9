package report

import (
	"bytes"
	"errors"
	"testing"

	"sandscope/internal/cli/cmdutil"
	"sandscope/ui/common"
)

func TestReportOptions(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		want    ReportOptions
	}{
		{args: []string{"demo"}, want: ReportOptions{Sandbox: "demo", Lines: 10}},
		{args: []string{"demo", "4ed5c14b", "-o", "agent.md", "--json", "--host", "--lines", "3"},
			want: ReportOptions{Sandbox: "demo", Entity: "4ed5c14b", Output: "agent.md", JSON: true, Host: true, Lines: 3}},
		{args: []string{"Bad!", "4ed5c14b"}, wantErr: common.BadSandboxID("Bad!")},
	}
	for _, tt := range tests {
		var got *ReportOptions
		cmd := NewCmdReport(&cmdutil.Factory{}, func(o *ReportOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if tt.wantErr != "" {
			var ee *cmdutil.ExitError
			if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || err.Error() != tt.wantErr || got != nil {
				t.Errorf("%q: err %v, want exit 2 %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got == nil {
			t.Fatalf("%q: err %v", tt.args, err)
		}
		g := *got
		g.Factory, g.IO = nil, cmdutil.IOStreams{}
		if g != tt.want {
			t.Errorf("%q: options %+v, want %+v", tt.args, g, tt.want)
		}
	}
}
