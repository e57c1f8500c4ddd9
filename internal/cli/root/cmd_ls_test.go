package root

import (
	"encoding/json"
	"sandscope/internal/cli/cmdutil"
	"sandscope/internal/cli/ls"
	"strings"
	"testing"
)

func TestLsSandboxTableAndJSON(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "printf '\\033]0;pwned\\007'; sleep 10", "\x1b[31mred")
	r := runSandscope(t, nil, append(flags, "ls", "local")...)
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	out := string(r.stdout)
	if !strings.Contains(out, "RUNNING") || !strings.Contains(out, p.ID) || strings.Contains(out, "\x1b") {
		t.Fatalf("table %q", out)
	}
	r = runSandscope(t, nil, append(flags, "ls", "local", "--json")...)
	var l ls.SandboxListing
	if err := json.Unmarshal(r.stdout, &l); err != nil || l.Running == nil || !*l.Running || len(l.Processes) != 1 || l.Processes[0].ID != p.ID || l.Incarnation == 0 {
		t.Fatalf("%s %v", r.stdout, err)
	}
	r = runSandscope(t, nil, append(flags, "ls")...)
	if r.code != 0 || !strings.Contains(string(r.stdout), "local") {
		t.Fatalf("sandboxes: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestSafeText(t *testing.T) {
	for in, want := range map[string]string{
		"plain ✓":        "plain ✓",
		"\x1b]52;c;x\a":  `\x1b]52;c;x\x07`,
		"bad\xffutf8":    `bad\xffutf8`,
		"c1\u009bcursor": `c1\x9bcursor`,
	} {
		if got := cmdutil.SafeText(in); got != want {
			t.Errorf("SafeText(%q) = %q, want %q", in, got, want)
		}
	}
}
