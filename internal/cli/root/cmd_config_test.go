package root

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sandscope/internal/cli/cmdutil"
	"strings"
	"testing"
)

func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	g := &cmdutil.Factory{}
	root := newRootCmd(g)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestConfigCommandShowsSourcesNotTokens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	const inline = "inline-secret-value"
	text := "currentContext: cloud\ntheme: light\ncontexts:\n  - name: cloud\n    url: https://b.example.dev\n    token: " + inline + "\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SANDSCOPE_CONFIG", path)
	t.Setenv("SANDSCOPE_URL", "")
	t.Setenv("SANDSCOPE_CONTEXT", "")
	t.Setenv("SANDSCOPE_THEME", "")
	t.Setenv("SANDBOX_API_KEY", "")

	out, err := runRoot(t, "config")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{path + ":1", "https://b.example.dev", path + ":6", "written in the configuration file (hidden)", "light", path + ":2", "default"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, inline) {
		t.Fatalf("config shows the token:\n%s", out)
	}

	const envSecret = "env-secret-value"
	t.Setenv("SANDBOX_API_KEY", envSecret)
	out, err = runRoot(t, "config", "--json", "--url", "http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, envSecret) || strings.Contains(out, inline) {
		t.Fatalf("config --json shows a token:\n%s", out)
	}
	var doc struct {
		File     string `json:"file"`
		Settings []struct {
			Setting string `json:"setting"`
			Value   string `json:"value"`
			Source  struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"source"`
		} `json:"settings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("config --json: %v\n%s", err, out)
	}
	found := map[string]string{}
	for _, s := range doc.Settings {
		found[s.Setting] = s.Source.Kind + " " + s.Source.Name
	}
	if doc.File != path || found["url"] != "flag url" || found["token"] != "env SANDBOX_API_KEY" {
		t.Fatalf("config --json: %+v", doc)
	}

	out, err = runRoot(t, "config", "--check-token")
	if err != nil || !strings.Contains(out, "token obtained from environment variable SANDBOX_API_KEY (16 characters)") || strings.Contains(out, envSecret) {
		t.Fatalf("config --check-token = %v:\n%s", err, out)
	}
	t.Setenv("SANDBOX_API_KEY", "")
	if _, err := runRoot(t, "config", "--check-token", "--token-file", filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "from file") {
		t.Fatalf("config --check-token with a missing file: %v", err)
	}

	out, err = runRoot(t, "config", "path")
	if err != nil || strings.TrimSpace(out) != path {
		t.Fatalf("config path = %q, %v", out, err)
	}
}

func TestConfigCommandReportsFileErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("theme: dark\ncolour: red\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SANDSCOPE_CONFIG", path)
	_, err := runRoot(t, "config")
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), path+":2: unknown setting \"colour\"") {
		t.Fatalf("err = %v", err)
	}
}

// configRun runs the real binary's `sandscope config` with the file text and the XDG config
// directory given (themes live there), and returns its stderr lines and exit code.
func configRun(t *testing.T, text, xdgConfig string) ([]string, string, int) {
	t.Helper()
	bin := sandscopeBinary(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "config")
	cmd.Env = append(os.Environ(), "SANDSCOPE_CONFIG="+path, "XDG_CONFIG_HOME="+xdgConfig,
		"SANDSCOPE_THEME=", "SANDSCOPE_URL=", "SANDSCOPE_CONTEXT=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		code = xe.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(stderr.String()), "\n"), path, code
}

// TestConfigCommandReportsEveryProblem: a file with several problems — a bad value, a bad type,
// a key clash, a bad key notation, an unknown action — gets every one of them, one a line, each
// with file:line, in line order, and exit status 2.
func TestConfigCommandReportsEveryProblem(t *testing.T) {
	text := "theme: purple\npollFast: 5\nkeys:\n  quit: [j]\n  help: ctrl+zz\n  nosuch: x\nlogMemoryLines: 3\n"
	lines, path, code := configRun(t, text, t.TempDir())
	if code != 2 {
		t.Fatalf("exit %d, want 2: %q", code, lines)
	}
	want := []string{
		path + `:1: theme "purple"`,
		path + `:2: pollFast must be a duration`,
		path + `:4: keys.quit: key "j" is also "down"`,
		path + `:5: keys.help: key "ctrl+zz"`,
		path + `:6: keys: no action "nosuch"`,
		path + `:7: logMemoryLines 3 is out of range`,
	}
	if len(lines) != len(want) {
		t.Fatalf("want %d problems, one a line, got %d:\n%s", len(want), len(lines), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], "sandscope: "+w) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], "sandscope: "+w)
		}
	}
}

// TestConfigCommandRefusesKeyClash: a key that a screen would handle two ways is refused, with
// file:line and both binding names; the same key on screens that never share it is accepted.
func TestConfigCommandRefusesKeyClash(t *testing.T) {
	lines, path, code := configRun(t, "keys:\n  down: [j]\n  search: [x]\n  save: [n]\n", t.TempDir())
	if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], path+`:4: keys.save: key "n" is also "next_match" on the log view`) {
		t.Fatalf("exit %d: %q", code, lines)
	}
	if lines, _, code := configRun(t, "keys:\n  save: [x]\n", t.TempDir()); code != 0 {
		t.Fatalf("save: [x] (no screen has both save and kill) refused: %q", lines)
	}
}

// TestConfigCommandRefusesBadTheme: a user theme file that is not JSON is refused by `sandscope
// config` as the TUI refuses it, with where the theme was chosen.
func TestConfigCommandRefusesBadTheme(t *testing.T) {
	xdgDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdgDir, "sandscope", "themes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdgDir, "sandscope", "themes", "dark.json"), []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, path, code := configRun(t, "pollFast: 2s\ntheme: dark\n", xdgDir)
	if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], path+`:2: theme "dark": user theme`) || !strings.Contains(lines[0], "parse theme") {
		t.Fatalf("exit %d: %q", code, lines)
	}
	// auto picks dark or light by the terminal: both must load
	if lines, _, code := configRun(t, "pollFast: 2s\n", xdgDir); code != 2 || !strings.Contains(lines[0], `theme "auto"`) {
		t.Fatalf("auto with a broken dark theme: exit %d: %q", code, lines)
	}
	if lines, _, code := configRun(t, "theme: light\n", xdgDir); code != 0 {
		t.Fatalf("light refused: %q", lines)
	}
}
