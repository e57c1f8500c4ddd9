package ls

import (
	"bytes"
	"errors"
	"testing"

	"sandscope/internal/cli/cmdutil"
	"sandscope/ui/common"
)

func TestLsOptions(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		want    LsOptions
	}{
		{args: nil, want: LsOptions{}},
		{args: []string{"--json", "myapp"}, want: LsOptions{Sandbox: "myapp", JSON: true}},
		{args: []string{"Bad!"}, wantErr: common.BadSandboxID("Bad!")},
	}
	for _, tt := range tests {
		var got *LsOptions
		cmd := NewCmdLs(&cmdutil.Factory{}, func(o *LsOptions) error { got = o; return nil })
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
		if err != nil || got == nil || got.Sandbox != tt.want.Sandbox || got.JSON != tt.want.JSON {
			t.Errorf("%q: err %v, options %+v", tt.args, err, got)
		}
	}
}
