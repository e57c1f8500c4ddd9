package e2e_test

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"sandscope/internal/e2e"
)

// TestAddFromStdin: `printf 'abc\nBAD!\ndef\n' | sandscope add -` adds two, names line 2 and exits
// 2; `ls` then lists both as added, beside the sandboxes the bridge lists itself.
func TestAddFromStdin(t *testing.T) {
	_, args := e2e.BridgeArgs(t)
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	cmd := exec.Command(e2e.Binary(t), append([]string{"add", "-"}, args...)...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader("abc\nBAD!\ndef\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("add -: %v (want exit 2)\nstdout %s\nstderr %s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "added 2 sandboxes: abc def") || !strings.Contains(errOut.String(), `line 2: "BAD!"`) {
		t.Fatalf("stdout %q\nstderr %q", out.String(), errOut.String())
	}
	ls, code := e2e.RunIn(t, env, append([]string{"ls"}, args...)...)
	if code != 0 || !strings.Contains(ls, "abc") || !strings.Contains(ls, "def") || !strings.Contains(ls, "added, not seen yet") {
		t.Fatalf("ls after add (exit %d):\n%s", code, ls)
	}
}
