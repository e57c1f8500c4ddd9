package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	g := &globalOptions{}
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
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), path+":2: unknown setting \"colour\"") {
		t.Fatalf("err = %v", err)
	}
}
