package exec

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/ui/common"
)

// reportingDriver starts one run whose stream reports exit code 3 that nothing confirms (the
// ending a stable bridge's completion without the recorder's trailer gives). Methods it does not
// script are the nil embedded interface's: reaching one fails the test loudly.
type reportingDriver struct {
	driver.Driver
	starts int
}

func (d *reportingDriver) Start(context.Context, string, driver.StartRequest) (driver.Run, error) {
	d.starts++
	return driver.Run{ID: "r1", State: driver.StateRunning}, nil
}

func (d *reportingDriver) Follow(context.Context, string, string, driver.FollowOptions) <-chan client.LogEvent {
	ch := make(chan client.LogEvent, 2)
	ch <- client.LogEvent{Kind: client.Data, Stream: client.Stdout, Data: []byte("out\n")}
	ch <- client.LogEvent{Kind: client.Ended, Reason: "the stream's exit event, no trailer",
		Status: &client.Process{ID: "r1", State: driver.StateReported, Exit: &client.Exit{Code: 3}}}
	close(ch)
	return ch
}

func (d *reportingDriver) Close() error { return nil }

// The factory hands exec the driver a test injects: an ending nothing confirms is exit 255 with
// the ending line and a notice saying why, never the reported code.
func TestExecWithAnInjectedDriver(t *testing.T) {
	t.Setenv("GOMAXPROCS", "4") // exec would set the test process's to 1
	d := &reportingDriver{}
	f := &cmdutil.Factory{ConnectHook: func(context.Context, cmdutil.ConnectOptions) (*cmdutil.Conn, error) {
		return &cmdutil.Conn{D: d}, nil
	}}
	cmd := NewCmdExec(f, nil)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"box", "--", "sh", "-c", "exit 3"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitExecUnsure || d.starts != 1 {
		t.Fatalf("err %v after %d starts; stderr %q", err, d.starts, errOut.String())
	}
	if out.String() != "out\n" {
		t.Errorf("stdout %q", out.String())
	}
	for _, want := range []string{
		"sandscope: process r1 ended: REPORTED 3 (unconfirmed)\n",
		"sandscope: exit status 255: the stream reported exit code 3 and nothing confirms it\n",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q lacks %q", errOut.String(), want)
		}
	}
}

// parse parses args through exec's command with a runF: the options it would run with, or the
// error the checks gave (nothing is connected or run).
func parse(t *testing.T, args ...string) (*ExecOptions, error) {
	t.Helper()
	var got *ExecOptions
	cmd := NewCmdExec(&cmdutil.Factory{}, func(o *ExecOptions) error { got = o; return nil })
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

func TestExecOptions(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string // "" : valid
		check   func(*ExecOptions) bool
	}{
		{args: []string{"box", "--", "npm", "test"}, check: func(o *ExecOptions) bool {
			return o.Sandbox == "box" && strings.Join(o.Request.Argv, " ") == "npm test" && o.Request.Env == nil && o.Request.Timeout == 0
		}},
		{args: []string{"box", "--cwd", "/workspace/app", "--env", "CI=1", "--env", "A=b=c", "--timeout", "10m", "--", "make"}, check: func(o *ExecOptions) bool {
			return o.Request.Cwd == "/workspace/app" && o.Request.Env["CI"] == "1" && o.Request.Env["A"] == "b=c" && len(o.Request.Env) == 2 &&
				o.Request.Timeout == 600000
		}},
		{args: []string{"box", "--env", "EMPTY=", "--", "true"}, check: func(o *ExecOptions) bool {
			v, ok := o.Request.Env["EMPTY"]
			return ok && v == ""
		}},
		{args: []string{"box", "--session", "s-1", "--", "true"}, check: func(o *ExecOptions) bool { return o.Session == "s-1" }},
		// the sandbox is checked first, as the root's argument check does
		{args: []string{"Bad!", "npm", "test"}, wantErr: common.BadSandboxID("Bad!")},
		{args: []string{"box", "npm", "test"}, wantErr: "usage: sandscope exec SANDBOX [flags] -- ARGV..."},
		{args: []string{"box", "npm", "--", "test"}, wantErr: "usage: sandscope exec SANDBOX [flags] -- ARGV..."},
		{args: []string{"box", "--env", "NOEQUALS", "--", "true"}, wantErr: `--env "NOEQUALS": want NAME=VALUE`},
		{args: []string{"box", "--env", "=v", "--", "true"}, wantErr: `--env "=v": want NAME=VALUE`},
		{args: []string{"box", "--timeout", "-1s", "--", "true"}, wantErr: "--timeout -1s: must be at least 1ms"},
		{args: []string{"box", "--timeout", "10us", "--", "true"}, wantErr: "--timeout 10µs: must be at least 1ms"},
		{args: []string{"box", "--session", "a..b", "--", "true"}, wantErr: `--session "a..b": want 1-128 of a-z A-Z 0-9 . _ - (no "..")`},
	}
	for _, tt := range tests {
		o, err := parse(t, tt.args...)
		if tt.wantErr != "" {
			var ee *cmdutil.ExitError
			if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || err.Error() != tt.wantErr {
				t.Errorf("%q: err %v, want exit 2 %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !tt.check(o) {
			t.Errorf("%q: err %v, options %+v", tt.args, err, o)
		}
	}
}

// A --session on a driver without sessions is refused (exit 2) before anything is started.
func TestExecSessionNeedsADriverWithSessions(t *testing.T) {
	t.Setenv("GOMAXPROCS", "4") // exec would set the test process's to 1
	d := &reportingDriver{}
	f := &cmdutil.Factory{ConnectHook: func(context.Context, cmdutil.ConnectOptions) (*cmdutil.Conn, error) {
		return &cmdutil.Conn{D: d}, nil
	}}
	cmd := NewCmdExec(f, nil)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"box", "--session", "dev", "--", "true"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || !strings.HasPrefix(err.Error(), "this bridge has no sessions (") || d.starts != 0 {
		t.Fatalf("err %v after %d starts", err, d.starts)
	}
}
