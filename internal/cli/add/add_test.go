package add

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"sandscope/internal/cli/cmdutil"
)

// parse runs the command with args and stdin up to Run, which it replaces.
func parse(t *testing.T, stdin string, args ...string) (*Options, string, error) {
	t.Helper()
	var got *Options
	cmd := NewCmdAdd(&cmdutil.Factory{}, func(_ context.Context, o *Options) error { got = o; return nil })
	var errOut bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return got, errOut.String(), err
}

func exitCode(err error) int {
	var ee *cmdutil.ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestAddOptions(t *testing.T) {
	for _, tc := range []struct {
		name, stdin string
		args        []string
		ids         string
		bad         int
		code        int
		errText     string
	}{
		{name: "arguments", args: []string{"abc", "def", "abc"}, ids: "abc,def"},
		{name: "a bad argument is kept for the report", args: []string{"abc", "Nope"}, ids: "abc", bad: 1},
		{name: "stdin with a bad line", stdin: "abc\nBAD!\ndef\n", args: []string{"-"}, ids: "abc,def", bad: 1},
		{name: "stdin with comments and spaces", stdin: "# agents\n abc  def\n\n", args: []string{"-"}, ids: "abc,def"},
		{name: "empty stdin", stdin: "", args: []string{"-"}, code: 2, errText: "standard input holds no sandbox ID"},
		{name: "only bad IDs", args: []string{"Nope"}, code: 2, errText: "the arguments name no sandbox ID"},
		{name: "stdin beside IDs", args: []string{"-", "abc"}, code: 2, errText: `give IDs or "-"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, stderr, err := parse(t, tc.stdin, tc.args...)
			if code := exitCode(err); code != tc.code {
				t.Fatalf("exit %d (%v), want %d", code, err, tc.code)
			}
			if tc.code != 0 {
				if !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %q lacks %q", err, tc.errText)
				}
				return
			}
			if got := strings.Join(o.IDs, ","); got != tc.ids || len(o.Bad) != tc.bad {
				t.Fatalf("ids %q bad %v, want %q and %d bad (stderr %q)", got, o.Bad, tc.ids, tc.bad, stderr)
			}
		})
	}
}

func TestAddNamesBadLines(t *testing.T) {
	o, _, err := parse(t, "abc\nBAD!\ndef\n", "-")
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	o.ErrOut = &errOut
	o.tellBad()
	if !strings.Contains(errOut.String(), `line 2: "BAD!"`) {
		t.Fatalf("stderr %q", errOut.String())
	}
	o.Bad[0].Text = "\x1b]0;evil\x07x"
	errOut.Reset()
	o.tellBad()
	if strings.ContainsAny(errOut.String(), "\x1b\x07") {
		t.Fatalf("control characters reach the terminal: %q", errOut.String())
	}
}
