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
	cmd := NewCmdExec(f)
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
