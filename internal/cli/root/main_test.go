package root

// The command tree itself (in-process; the end-to-end tests of the binary are in internal/e2e).

import (
	"sandscope/internal/cli/cmdutil"
	"strings"
	"testing"
)

// TestCommandLineHelp checks every visible subcommand shows examples, --version prints the
// version, and cobra's completion command answers.
func TestCommandLineHelp(t *testing.T) {
	g := &cmdutil.Factory{}
	root := newRootCmd(g)
	if root.Example == "" || root.Flags().Lookup("demo") == nil {
		t.Error("the root command lacks the TUI's examples or --demo")
	}
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if !strings.Contains(c.Example, "sandscope "+c.Name()) {
			t.Errorf("%s: no example invoking it: %q", c.Name(), c.Example)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		r := newRootCmd(&cmdutil.Factory{})
		var out strings.Builder
		r.SetOut(&out)
		r.SetErr(&out)
		r.SetArgs(args)
		if err := r.Execute(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	if got := run("--version"); !strings.Contains(got, cmdutil.Version) {
		t.Errorf("--version printed %q", got)
	}
	if got := run("completion", "bash"); !strings.Contains(got, "bash completion") || !strings.Contains(got, "__start_sandscope") {
		t.Errorf("completion bash printed %.200q", got)
	}
}
