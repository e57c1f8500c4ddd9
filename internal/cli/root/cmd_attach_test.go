package root

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/internal/cli/cmdutil"
	"sandscope/localbridge/bridgetest"
)

// attachRunCmd runs the command line in-process with the given stdin; it returns the exit status main
// would use and what went to stdout and stderr.
func attachRunCmd(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	g := &cmdutil.Factory{}
	root := newRootCmd(g)
	var out, errb bytes.Buffer
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	code := 0
	if err != nil {
		code = 2
		var ee *cmdutil.ExitError
		if errors.As(err, &ee) {
			code = ee.Code
		}
		if ee == nil || ee.Err != nil {
			errb.WriteString("sandscope: " + err.Error() + "\n")
		}
	}
	return code, out.String(), errb.String()
}

func TestShellAttachUsageErrors(t *testing.T) {
	t.Setenv("SANDSCOPE_URL", "")
	for _, args := range [][]string{
		{"shell"},
		{"attach", "abc"},
		{"shell", "abc", "--detach-key", "shift-q"},
		{"attach", "abc", "t1", "--detach-key", "ctrl-a ctrl-a"},
		{"shell", "abc", "--"},
	} {
		if code, _, _ := attachRunCmd(t, strings.NewReader(""), args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestAttachExitCodesWithoutATTY(t *testing.T) {
	b := bridgetest.Start(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(b.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(b.URL, client.WithToken(b.Token))
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--url", b.URL, "--token-file", tok}

	// The remote code becomes the exit status; output reaches stdout untouched.
	code, out, errs := attachRunCmd(t, strings.NewReader(""), append(flags, "shell", sb, "--", "sh", "-c", "echo from-remote; exit 4")...)
	if code != 4 || !strings.Contains(out, "from-remote") || !strings.Contains(errs, "EXITED 4") {
		t.Fatalf("shell: exit %d stdout %q stderr %q", code, out, errs)
	}
	if strings.Contains(out+errs, b.Token) {
		t.Fatal("token on screen")
	}

	// Input from a pipe reaches the shell.
	code, out, _ = attachRunCmd(t, strings.NewReader("echo piped-$((3*3))\nexit 6\n"), append(flags, "shell", sb, "--", "/bin/sh")...)
	if code != 6 || !strings.Contains(out, "piped-9") {
		t.Fatalf("piped shell: exit %d stdout %q", code, out)
	}

	// Without ARGV: a login shell, bash when the host has it.
	want := "shell=sh"
	if _, err := exec.LookPath("bash"); err == nil {
		want = "shell=bash"
	}
	code, out, _ = attachRunCmd(t, strings.NewReader("echo shell=$(basename -- \"${0#-}\")\nexit 0\n"), append(flags, "shell", sb)...)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("default shell: exit %d stdout %q, want %s", code, out, want)
	}

	// Unknown terminal: a not-found error, exit 2.
	if code, _, errs := attachRunCmd(t, strings.NewReader(""), append(flags, "attach", sb, "nope")...); code != 2 || !strings.Contains(errs, "not_found") {
		t.Fatalf("attach unknown: exit %d %q", code, errs)
	}

	// Unreachable bridge: exit 4.
	dead := []string{"--url", "http://127.0.0.1:1", "--token-file", tok}
	if code, _, errs := attachRunCmd(t, strings.NewReader(""), append(dead, "attach", sb, "t1")...); code != 4 {
		t.Fatalf("unreachable: exit %d %q", code, errs)
	}
}

// TestShellNeedsATerminal: with stdin /dev/null (neither a terminal nor scripted input) shell and
// attach say they need a terminal and exit 2 at once instead of waiting forever; scripted input
// that ends without "exit" ends the remote shell (its EOF goes on as ^D).
func TestShellNeedsATerminal(t *testing.T) {
	_, flags := bridgeArgs(t)
	for _, args := range [][]string{{"shell", "demo"}, {"attach", "demo", "t1"}} {
		r := runSandscope(t, nil, append(flags, args...)...) // stdin is /dev/null
		if r.code != 2 || !strings.Contains(string(r.stderr), "needs a terminal") {
			t.Errorf("%v with stdin /dev/null: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	b := bridgetest.Start(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(b.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := attachRunCmd(t, strings.NewReader("echo scripted-$((6*7))\n"), "--url", b.URL, "--token-file", tok, "shell", "demo", "--", "/bin/sh")
	if code != 0 || !strings.Contains(out, "scripted-42") {
		t.Fatalf("scripted input without exit: exit %d stdout %q stderr %q", code, out, errs)
	}
}
