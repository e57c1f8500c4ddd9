package democmd

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
)

func execute(f *cmdutil.Factory, runF func(*DemoOptions) error, args ...string) (string, error) {
	cmd := NewCmdDemo(f, runF)
	var errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return errOut.String(), err
}

func TestDemoOptions(t *testing.T) {
	var got *DemoOptions
	runF := func(o *DemoOptions) error { got = o; return nil }
	if _, err := execute(&cmdutil.Factory{}, runF); err != nil || got == nil ||
		got.Scene.Sandbox != "demo" || got.Scene.Speed != 1 || got.Scene.ReplaceAfter != 25*time.Second || got.Scene.NoReplace || got.ShAgent {
		t.Fatalf("defaults: err %v, options %+v", err, got)
	}
	got = nil
	if _, err := execute(&cmdutil.Factory{}, runF, "--speed", "4", "--sandbox", "demo2", "--no-replace", "--sh-agent", "--replace-after", "5s"); err != nil || got == nil ||
		got.Scene.Sandbox != "demo2" || got.Scene.Speed != 4 || got.Scene.ReplaceAfter != 5*time.Second || !got.Scene.NoReplace || !got.ShAgent {
		t.Fatalf("flags: err %v, options %+v", err, got)
	}
}

// terminalless is a driver without driver.Terminals; what it does not script is the nil
// embedded interface's.
type terminalless struct{ driver.Driver }

func (terminalless) BaseURL() string { return "http://bridge.test" }
func (terminalless) Close() error    { return nil }

// The scene needs terminals: a driver without them is refused (exit 2) before anything is started.
func TestDemoWithAnInjectedDriver(t *testing.T) {
	f := &cmdutil.Factory{ConnectHook: func(context.Context, cmdutil.ConnectOptions) (*cmdutil.Conn, error) {
		return &cmdutil.Conn{D: terminalless{}}, nil
	}}
	stderr, err := execute(f, nil)
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || !strings.HasPrefix(err.Error(), "this bridge has no terminals (the demo scene opens") {
		t.Fatalf("err %v", err)
	}
	if !strings.HasPrefix(stderr, "sandscope: demo: bridge http://bridge.test (") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestDemoAgentOptions(t *testing.T) {
	var got *DemoAgentOptions
	cmd := NewCmdDemoAgent(func(o *DemoAgentOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--speed", "8", "--resume"})
	if err := cmd.Execute(); err != nil || got == nil || got.Speed != 8 || !got.Resumed {
		t.Fatalf("err %v, options %+v", err, got)
	}
}
