package root

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sandscope/internal/cli/cmdutil"
	"strings"
	"testing"
	"time"
)

func TestMatchPrefix(t *testing.T) {
	ids := []string{"7d56e9e2-aaaa", "7d56f000-bbbb", "0f9d3c2e-cccc", "20261202T161500Z-1a2b3c4d", "20261202T161700Z-9e8f7a6b"}
	for _, c := range []struct {
		want, got string
		err       error
	}{
		{"7d56e9e2-aaaa", "7d56e9e2-aaaa", nil},
		{"7d56e", "7d56e9e2-aaaa", nil},
		{"0f", "0f9d3c2e-cccc", nil},
		{"7d56", "", cmdutil.ErrAmbiguous},
		{"zz", "", cmdutil.ErrNoMatch},
		{"1a2b", "20261202T161500Z-1a2b3c4d", nil}, // what the screens show of a recorded run
		{"20261202T1617", "20261202T161700Z-9e8f7a6b", nil},
		{"20261202", "", cmdutil.ErrAmbiguous},
		{"", "", cmdutil.ErrNoMatch},
	} {
		got, err := cmdutil.MatchPrefix(c.want, ids)
		if got != c.got || !errors.Is(err, c.err) {
			t.Errorf("MatchPrefix(%q) = %q, %v; want %q, %v", c.want, got, err, c.got, c.err)
		}
	}
}

// wrongToken returns the flags of b with a token the bridge rejects.
func wrongToken(t *testing.T, flags []string) []string {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(tok, []byte("not-the-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{flags[0], flags[1], "--token-file", tok}
}

// TestExitStatusesAndHints runs the binary the way scripts do and checks the exit statuses the
// README promises, and the hint a rejected token gets on every command.
func TestExitStatusesAndHints(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "echo hello; sleep 30")
	bad := wrongToken(t, flags)
	for _, args := range [][]string{
		{"exec", "local", "--", "true"},
		{"ls", "local"},
		{"logs", "local", p.ID},
		{"logs", "-f", "local", p.ID},
	} {
		r := runSandscope(t, nil, append(append([]string{}, bad...), args...)...)
		if r.code != cmdutil.ExitUsage || !strings.Contains(string(r.stderr), "check SANDBOX_API_KEY or --token-file") {
			t.Errorf("%v with a wrong token: exit %d, stderr %q; want 2 and the hint", args, r.code, r.stderr)
		}
	}

	// a sandbox this bridge never saw
	r := runSandscope(t, nil, append(flags, "ls", "nosuchbox")...)
	if r.code != cmdutil.ExitUsage || !strings.Contains(string(r.stderr), "sandscope: sandbox nosuchbox: never seen by this bridge") || len(r.stdout) != 0 {
		t.Errorf("ls nosuchbox: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// a unique prefix of a process ID is enough
	r = runSandscope(t, nil, append(flags, "logs", "local", p.ID[:8])...)
	if r.code != 0 || string(r.stdout) != "hello\n" {
		t.Errorf("logs with an ID prefix: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestLogsSnapshotUnreachable: without -f, an unreachable bridge is reported within seconds, with
// exit status 1 and no talk of resuming from a cursor nothing delivered.
func TestLogsSnapshotUnreachable(t *testing.T) {
	sandscopeBinary(t) // the build is not the command's time
	start := time.Now()
	r := runSandscope(t, []string{"SANDBOX_API_KEY=x"}, "--url", "http://127.0.0.1:1", "logs", "local", "7d56e9e2")
	took := time.Since(start)
	if r.code != cmdutil.ExitFailure {
		t.Errorf("exit %d, stderr %q; want 1", r.code, r.stderr)
	}
	if strings.Contains(string(r.stderr), "resuming from cursor") || strings.Contains(string(r.stderr), "after the last cursor") {
		t.Errorf("a snapshot with nothing received talks of a cursor: %q", r.stderr)
	}
	// a guard against the follower's 42 s retry budget, not a timing assertion
	if took > 20*time.Second {
		t.Errorf("logs without -f kept retrying for %v", took)
	}
}

// TestConfigNamesTheBridgeAndContexts: config says which bridge the commands use — a dead
// serve.json named as such — and lists the file's contexts and every key.
func TestConfigNamesTheBridgeAndContexts(t *testing.T) {
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "sandscope"), 0o700); err != nil {
		t.Fatal(err)
	}
	disc, _ := json.Marshal(map[string]any{"url": "http://127.0.0.1:45678", "pid": 999999999, "tokenFile": "/nonexistent"})
	if err := os.WriteFile(filepath.Join(state, "sandscope", "serve.json"), disc, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("contexts:\n  - name: cloud\n    url: https://b.example.dev\n    tokenEnv: CLOUD_KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_STATE_HOME=" + state, "SANDSCOPE_CONFIG=" + cfg}
	r := runSandscope(t, env, "config")
	out := string(r.stdout)
	for _, want := range []string{"not running anymore", "http://127.0.0.1:45678", "cloud", "https://b.example.dev", "env CLOUD_KEY", "next_marker: ]", "quit: q ctrl+c"} {
		if !strings.Contains(out, want) {
			t.Errorf("config lacks %q:\n%s", want, out)
		}
	}
	r = runSandscope(t, env, "ls")
	if r.code != cmdutil.ExitUsage || !strings.Contains(string(r.stderr), "not running anymore") {
		t.Errorf("ls with a dead serve.json: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Arguments are checked first: a wrong count says the usage and an example, and a bad sandbox ID is
// named before sandscope looks for a bridge (none is configured here).
func TestArgumentsCheckedFirst(t *testing.T) {
	r := runSandscope(t, nil, "wait")
	if r.code != cmdutil.ExitUsage || !strings.Contains(string(r.stderr), "usage: sandscope wait SANDBOX PROCESS") ||
		!strings.Contains(string(r.stderr), "e.g. sandscope wait myapp ") {
		t.Errorf("wait without arguments: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runSandscope(t, nil, "logs", "Bad!", "x")
	if r.code != cmdutil.ExitUsage || !strings.Contains(string(r.stderr), `sandbox ID "Bad!"`) || strings.Contains(string(r.stderr), "bridge") {
		t.Errorf("logs with a bad ID and no bridge: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A token that cannot be read is named once, with where it was set, in the error of a command.
func TestUnreadableTokenNamedOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-token")
	r := runSandscope(t, nil, "--url", "http://127.0.0.1:1", "--token-file", missing, "ls")
	msg := string(r.stderr)
	if r.code == 0 || strings.Count(msg, missing) != 1 || !strings.Contains(msg, "--token-file") {
		t.Errorf("ls with a token file that does not exist: exit %d, stderr %q; want a failure naming the file once, and the flag", r.code, msg)
	}
}
