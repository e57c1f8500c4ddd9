package wait

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/ui/common"
)

func runWaitCmd(t *testing.T, f *cmdutil.Factory, runF func(*WaitOptions) error, args ...string) (error, string) {
	t.Helper()
	cmd := NewCmdWait(f, runF)
	var errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return cmd.Execute(), errOut.String()
}

func TestWaitOptions(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		check   func(*WaitOptions) bool
	}{
		{args: []string{"box", "p1"}, check: func(o *WaitOptions) bool {
			return o.Sandbox == "box" && o.Process == "p1" && o.Timeout == 0 && o.Bell != nil
		}},
		{args: []string{"--timeout", "10m", "--notify", "--no-record", "box", "p1"}, check: func(o *WaitOptions) bool {
			// --notify rings only on a terminal: a buffer gets no bell
			return o.Timeout.Minutes() == 10 && o.Notify && o.NoRecord && o.Bell == io.Discard
		}},
		{args: []string{"--timeout", "-1s", "box", "p1"}, wantErr: "--timeout -1s: must not be negative"},
		{args: []string{"--timeout", "-1s", "Bad!", "p1"}, wantErr: common.BadSandboxID("Bad!")},
	}
	for _, tt := range tests {
		var got *WaitOptions
		err, _ := runWaitCmd(t, &cmdutil.Factory{}, func(o *WaitOptions) error { got = o; return nil }, tt.args...)
		if tt.wantErr != "" {
			var ee *cmdutil.ExitError
			if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || err.Error() != tt.wantErr || got != nil {
				t.Errorf("%q: err %v, want exit 2 %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got == nil || !tt.check(got) {
			t.Errorf("%q: err %v, options %+v", tt.args, err, got)
		}
	}
}

// recordedDriver is a driver whose lookups would start a container and whose record holds one
// settled run. Methods it does not script are the nil embedded interface's: a stream opened for
// an ending already known fails the test loudly.
type recordedDriver struct {
	driver.Driver
	code int
}

func (d *recordedDriver) Features() driver.Features { return driver.Features{} }
func (d *recordedDriver) Runs(context.Context, string) ([]driver.Run, error) {
	return []driver.Run{{ID: "run-7d56e9e2", State: driver.StateExited, Exit: &client.Exit{Code: d.code}}}, nil
}
func (d *recordedDriver) Close() error { return nil }

// wait through the Factory's driver: a prefix of the run's ID is enough, and an ending the record
// already settled is the answer without a stream.
func TestWaitWithAnInjectedDriver(t *testing.T) {
	d := &recordedDriver{code: 3}
	f := &cmdutil.Factory{ConnectHook: func(context.Context, cmdutil.ConnectOptions) (*cmdutil.Conn, error) {
		return &cmdutil.Conn{D: d}, nil
	}}
	err, stderr := runWaitCmd(t, f, nil, "box", "run-7d")
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("err %v, want exit 3; stderr %q", err, stderr)
	}
	if want := "sandscope: process run-7d56e9e2 ended: EXITED 3 (from the record, no request sent)\n"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q lacks %q", stderr, want)
	}
}
