package session

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

func execute(f *cmdutil.Factory, runF func(*SessionOptions) error, args ...string) (string, error) {
	cmd := NewCmdSession(f, runF)
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return out.String(), err
}

func TestSessionOptions(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		check   func(*SessionOptions) bool
	}{
		{args: []string{"create", "box"}, check: func(o *SessionOptions) bool { return o.Verb == "create" && o.ID == "" && o.Session.Env == nil }},
		{args: []string{"create", "box", "dev", "--cwd", "/workspace/app", "--env", "NODE_ENV=test"}, check: func(o *SessionOptions) bool {
			return o.Session.ID == "dev" && o.Session.Cwd == "/workspace/app" && o.Session.Env["NODE_ENV"] == "test"
		}},
		{args: []string{"ls", "box"}, check: func(o *SessionOptions) bool { return o.Verb == "ls" && o.Sandbox == "box" }},
		{args: []string{"rm", "box", "dev"}, check: func(o *SessionOptions) bool { return o.Verb == "rm" && o.ID == "dev" }},
		{args: []string{"rm", "box"}, wantErr: "usage: sandscope session rm SANDBOX ID"},
		{args: []string{"create", "box", "--env", "X"}, wantErr: `--env "X": want NAME=VALUE`},
		{args: []string{"list", "box"}, wantErr: `session "list": want create, ls or rm`},
		// the sandbox is checked before the verb
		{args: []string{"list", "Bad!"}, wantErr: common.BadSandboxID("Bad!")},
	}
	for _, tt := range tests {
		var got *SessionOptions
		_, err := execute(&cmdutil.Factory{}, func(o *SessionOptions) error { got = o; return nil }, tt.args...)
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

// sessionDriver keeps sessions; the methods it does not script are the nil embedded interface's.
type sessionDriver struct {
	driver.Driver
	created client.SessionOptions
}

func (d *sessionDriver) Sessions(context.Context, string) ([]driver.Session, error) { return nil, nil }
func (d *sessionDriver) CreateSession(_ context.Context, _ string, o client.SessionOptions) (string, error) {
	d.created = o
	return "dev", nil
}
func (d *sessionDriver) DeleteSession(context.Context, string, string) error { return nil }
func (d *sessionDriver) Close() error                                        { return nil }

type plainDriver struct{ driver.Driver }

func (plainDriver) Close() error { return nil }

func injecting(d driver.Driver) *cmdutil.Factory {
	return &cmdutil.Factory{ConnectHook: func(context.Context, cmdutil.ConnectOptions) (*cmdutil.Conn, error) {
		return &cmdutil.Conn{D: d}, nil
	}}
}

// The Factory's driver decides: one with sessions creates what the flags asked for, one without
// is refused with exit 2.
func TestSessionWithAnInjectedDriver(t *testing.T) {
	d := &sessionDriver{}
	out, err := execute(injecting(d), nil, "create", "box", "dev", "--env", "A=1")
	if err != nil || out != "dev\n" || d.created.ID != "dev" || d.created.Env["A"] != "1" {
		t.Fatalf("create: out %q, err %v, asked %+v", out, err, d.created)
	}
	_, err = execute(injecting(plainDriver{}), nil, "ls", "box")
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || !strings.HasPrefix(err.Error(), "this bridge has no sessions (") {
		t.Fatalf("no sessions: %v", err)
	}
}
