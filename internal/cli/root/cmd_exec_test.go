package root

import (
	"strconv"
	"strings"
	"testing"

	"sandscope/faultproxy"
	"sandscope/localbridge/bridgetest"
)

// seq writes 1.29 MB in a few milliseconds. Like the real bridge, the local one keeps 1 MiB per process
// log and never makes a writer wait for a reader, so on a busy machine the head can be evicted before
// exec's follower attaches (exec then reports the gap instead of printing it). The retention is raised
// here so the test checks what exec itself does with every byte the bridge holds.
func TestExecPrintsOutputAndExitsWithItsCode(t *testing.T) {
	_, flags := bridgeArgs(t, bridgetest.WithProcessLogLimits(16<<20, 100_000))
	r := runSandscope(t, nil, append(flags, "exec", "local", "--", "sh", "-c", "seq 1 200000; exit 7")...)
	if r.code != 7 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var want strings.Builder
	for i := 1; i <= 200000; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	if string(r.stdout) != want.String() {
		t.Fatalf("stdout: %d bytes, want %d; stderr %q", len(r.stdout), want.Len(), r.stderr)
	}
}

func TestExecFlagsAndUsage(t *testing.T) {
	_, flags := bridgeArgs(t)
	r := runSandscope(t, nil, append(flags, "exec", "local", "--env", "GREETING=hi there", "--cwd", "sub/..", "--", "sh", "-c", `printf '%s %s' "$GREETING" "$PWD"`)...)
	if r.code != 0 || !strings.HasPrefix(string(r.stdout), "hi there /") {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runSandscope(t, nil, append(flags, "exec", "local", "sh")...); r.code != 2 {
		t.Fatalf("missing --: exit %d", r.code)
	}
	if r := runSandscope(t, nil, append(flags, "exec", "NOT-VALID", "--", "true")...); r.code != 2 {
		t.Fatalf("bad sandbox: exit %d", r.code)
	}
	r = runSandscope(t, nil, append(flags, "exec", "local", "--timeout", "200ms", "--", "sleep", "10")...)
	if r.code == 0 || !strings.Contains(string(r.stderr), "TIMED OUT") {
		t.Fatalf("timeout: exit %d stderr %q", r.code, r.stderr)
	}
}

// Under capacity pressure the launch is retried with backoff (nothing was started), and said so.
func TestExecRetriesCapacity(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := faultproxy.New(b.URL)
	defer p.Close()
	rule := p.Add(faultproxy.Rule{Path: "/processes", Method: "POST", Times: 2, Fault: faultproxy.CapacityExceeded()})
	flags[1] = p.URL()
	r := runSandscope(t, nil, append(flags, "exec", "local", "--", "sh", "-c", "echo ok; exit 3")...)
	if r.code != 3 || string(r.stdout) != "ok\n" || rule.Hits() != 2 || strings.Count(string(r.stderr), "capacity") != 2 {
		t.Fatalf("exit %d stdout %q stderr %q hits %d", r.code, r.stdout, r.stderr, rule.Hits())
	}
}
