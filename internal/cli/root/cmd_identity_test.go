package root

// One bridge, one record: `sandscope serve` found through serve.json, by --url and by a context,
// and again after a restart on another port, is one record; a bridge never reached gets none.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandscope/internal/e2e"
	"sandscope/record"
)

// startServeProc runs `sandscope serve` with env and waits for its discovery file (e2e.StartServe).
func startServeProc(t *testing.T, env []string, state string) *e2e.Serve {
	t.Helper()
	return e2e.StartServe(t, env, state)
}

// identityEnv is an isolated sandscope environment: state, config and cache under dir.
func identityEnv(t *testing.T, dir string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}
}

// runIn runs the binary with exactly env and returns its combined output and exit code.
func runIn(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	return e2e.RunIn(t, env, args...)
}

func recordFiles(t *testing.T, state string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(state, "sandscope", "record", "*.db"))
	return files
}

func TestOneRecordForOneServeFoundEveryWay(t *testing.T) {
	sandscopeBinary(t) // built before the parallel tests start
	t.Parallel()
	dir := t.TempDir()
	env := identityEnv(t, dir)
	state := filepath.Join(dir, "state")
	srv := startServeProc(t, env, state)
	cfgDir := filepath.Join(dir, "config", "sandscope")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeContext := func(url string) {
		cfg := "contexts:\n  - name: mine\n    url: " + url + "/\n    tokenFile: " + srv.Disc.TokenFile + "\n"
		if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeContext(srv.Disc.URL)
	ways := [][]string{
		{"exec", "ids", "--", "echo", "found-through-serve-json"},
		{"--url", strings.ToUpper(srv.Disc.URL[:4]) + srv.Disc.URL[4:], "--token-file", srv.Disc.TokenFile, "exec", "ids", "--", "echo", "found-by-url"},
		{"--context", "mine", "exec", "ids", "--", "echo", "found-by-context"},
	}
	for _, args := range ways {
		if out, code := runIn(t, env, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
	}
	// the same serve, restarted: another port, the same bridge
	srv.Stop()
	srv = startServeProc(t, env, state)
	writeContext(srv.Disc.URL)
	if out, code := runIn(t, env, "--url", srv.Disc.URL, "--token-file", srv.Disc.TokenFile, "exec", "ids", "--", "echo", "after-restart"); code != 0 {
		t.Fatalf("exec after restart: exit %d\n%s", code, out)
	}
	if files := recordFiles(t, state); len(files) != 1 {
		t.Fatalf("record files %v, want one", files)
	}
	out, code := runIn(t, env, "--context", "mine", "report", "ids", "--json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	var rep record.Report
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, e := range rep.Entities {
		seen[strings.Join(e.Command, " ")] = true
	}
	for _, want := range []string{"echo found-through-serve-json", "echo found-by-url", "echo found-by-context", "echo after-restart"} {
		if !seen[want] {
			t.Errorf("the report lacks %q: %v", want, seen)
		}
	}
	if !strings.Contains(rep.Bridge.Kind, "local") {
		t.Errorf("bridge kind %q", rep.Bridge.Kind)
	}
	// the report finds the record without the bridge, through serve.json's URL or the context
	srv.Stop()
	if out, code := runIn(t, env, "report", "ids"); code != 0 || !strings.Contains(out, "after-restart") {
		t.Errorf("report with the bridge down: exit %d\n%s", code, out)
	}
}

func TestNoRecordForABridgeNeverReached(t *testing.T) {
	sandscopeBinary(t) // built before the parallel tests start
	t.Parallel()
	dir := t.TempDir()
	env := append(identityEnv(t, dir), "SANDBOX_API_KEY=x")
	state := filepath.Join(dir, "state")
	for _, args := range [][]string{
		{"--url", "http://127.0.0.1:1", "exec", "nothere", "--", "true"},
		{"--url", "http://127.0.0.1:1", "logs", "nothere", "p1"},
		{"--url", "http://127.0.0.1:1", "ls", "nothere"},
	} {
		if _, code := runIn(t, env, args...); code == 0 {
			t.Errorf("%v succeeded against a closed port", args)
		}
	}
	if files := recordFiles(t, state); len(files) != 0 {
		t.Fatalf("record files for a bridge never reached: %v", files)
	}
	if aliases, _ := filepath.Glob(filepath.Join(state, "sandscope", "record", "aliases", "*")); len(aliases) != 0 {
		t.Fatalf("identities learned from a bridge never reached: %v", aliases)
	}
}
