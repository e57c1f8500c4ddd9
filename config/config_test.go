package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const secret = "s3cr3t-token-value"

func writeConfig(t *testing.T, mode os.FileMode, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// resolvedFile writes text as the configuration file (with mode), loads it and resolves it with no
// flags and no environment.
func resolvedFile(t *testing.T, mode os.FileMode, text string) (string, *Config, *Effective) {
	t.Helper()
	path := writeConfig(t, mode, text)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Resolve(Flags{}, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	return path, c, e
}

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

const full = `# sandscope
currentContext: cloud
theme: dark
logMemoryLines: 20000
detachKey: ctrl+g
pollFast: 500ms
pollSlow: 5s
keys:
  quit: [q, ctrl+c]
  relaunch: R
contexts:
  - name: cloud
    url: https://bridge.example.workers.dev
    tokenEnv: CLOUD_KEY
  - name: local
    url: http://127.0.0.1:7681
    tokenFile: local.key
  - name: vault
    url: https://vault.example.dev
    tokenCommand: [printf, '%s', "from-command"]
`

func TestLoadFull(t *testing.T) {
	path := writeConfig(t, 0o644, full)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Exists || c.CurrentContext != "cloud" || c.Theme != "dark" || c.LogMemoryLines != 20000 ||
		c.DetachKey != "ctrl+g" || c.PollFast != 500*time.Millisecond || c.PollSlow != 5*time.Second {
		t.Fatalf("unexpected config: %+v", c)
	}
	if got := c.Keys["quit"]; len(got) != 2 || got[1] != "ctrl+c" {
		t.Fatalf("keys.quit = %v", got)
	}
	if got := c.Keys["relaunch"]; len(got) != 1 || got[0] != "R" {
		t.Fatalf("keys.relaunch = %v", got)
	}
	if len(c.Contexts) != 3 || c.Contexts[2].TokenArgv[0] != "printf" {
		t.Fatalf("contexts = %+v", c.Contexts)
	}
	if c.Line("theme") != 3 || c.Line("keys.relaunch") != 10 || c.Contexts[1].Line != 15 {
		t.Fatalf("lines: theme %d keys.relaunch %d local %d", c.Line("theme"), c.Line("keys.relaunch"), c.Contexts[1].Line)
	}
}

func TestLoadMissingFileIsEmpty(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err != nil || c.Exists {
		t.Fatalf("Load missing = %+v, %v", c, err)
	}
	e, err := c.Resolve(Flags{}, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !e.Local() || e.Theme != "auto" || e.ThemeSource.Kind != FromDefault || e.Token.Kind != TokenNone {
		t.Fatalf("defaults: %+v", e)
	}
}

// Each bad file must fail with the file name, the right line and a message naming the problem.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name string
		mode os.FileMode
		text string
		line int
		want string
	}{
		{"syntax", 0o644, "theme: dark\n  bad: [\n", 2, "not valid YAML"},
		{"top level list", 0o644, "- a\n- b\n", 1, "top level must be a mapping"},
		{"unknown key", 0o644, "theme: dark\nthemes: light\n", 2, `unknown setting "themes"`},
		{"duplicate key", 0o644, "theme: dark\ntheme: light\n", 2, `"theme" is set twice (first on line 1)`},
		{"theme value", 0o644, "theme: purple\n", 1, `theme "purple" is not one of auto, dark, light, high-contrast`},
		{"theme type", 0o644, "theme: [dark]\n", 1, "theme must be a string, not a list"},
		{"lines type", 0o644, "logMemoryLines: lots\n", 1, "logMemoryLines must be a whole number"},
		{"lines range", 0o644, "logMemoryLines: 10\n", 1, "logMemoryLines 10 is out of range"},
		{"lines float", 0o644, "logMemoryLines: 1.5\n", 1, "logMemoryLines must be a whole number, not a number"},
		{"duration", 0o644, "pollFast: fast\n", 1, `pollFast: "fast" is not a duration`},
		{"duration no unit", 0o644, "pollSlow: 10\n", 1, "pollSlow must be a duration"},
		{"duration range", 0o644, "pollFast: 1ms\n", 1, "pollFast 1ms is out of range"},
		{"fast slower than slow", 0o644, "pollFast: 20s\npollSlow: 5s\n", 1, "pollFast (20s) must not be longer than pollSlow (5s)"},
		{"detach empty", 0o644, "detachKey: ''\n", 1, "detachKey must not be empty"},
		{"detach bool", 0o644, "detachKey: true\n", 1, "detachKey must be a string, not a boolean"},
		{"keys shape", 0o644, "keys: [q]\n", 1, "keys must be a mapping"},
		{"keys entry type", 0o644, "keys:\n  quit: {a: b}\n", 2, "keys.quit must be a key or a list of keys, not a mapping"},
		{"keys empty list", 0o644, "keys:\n  quit: []\n", 2, "keys.quit is an empty list"},
		{"contexts shape", 0o644, "contexts: {a: b}\n", 1, "contexts must be a list"},
		{"contexts text", 0o644, "contexts: " + secret + "\n", 1, "contexts must be a list of contexts (- name: …), not a string"},
		{"token pasted as tokenEnv", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n    tokenEnv: " + secret + "\n", 4, "tokenEnv must name an environment variable"},
		{"token pasted as keys", 0o644, "keys: " + secret + "\n", 1, "keys must be a mapping of action: [key, …], not a string"},
		{"context entry", 0o644, "contexts:\n  - cloud\n", 2, "each context must be a mapping"},
		{"context no name", 0o644, "contexts:\n  - url: https://x.dev\n", 2, "context has no name"},
		{"context no url", 0o644, "contexts:\n  - name: a\n", 2, `context "a" has no url`},
		{"context bad scheme", 0o644, "contexts:\n  - name: a\n    url: ftp://x\n", 2, "must start with http:// or https://"},
		{"context url creds", 0o644, "contexts:\n  - name: a\n    url: https://u:pw@x.dev\n", 2, "must not carry credentials"},
		{"context url query", 0o644, "contexts:\n  - name: a\n    url: https://x.dev/?token=abc\n", 2, "must not carry a query"},
		{"context unknown key", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n    tokenenv: X\n", 4, `unknown context setting "tokenenv"`},
		{"context duplicate", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n  - name: a\n    url: https://y.dev\n", 4, `context "a" is defined twice (first on line 2)`},
		{"two token sources", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n    tokenEnv: X\n    tokenFile: f\n", 5, "more than one of token, tokenEnv, tokenFile, tokenCommand"},
		{"bad env name", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n    tokenEnv: 1X-Y\n", 4, "tokenEnv must name an environment variable"},
		{"empty command", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n    tokenCommand: []\n", 4, "tokenCommand needs a program"},
		{"command type", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n    tokenCommand: {a: b}\n", 4, "tokenCommand must be a list (argv, run directly) or a string"},
		{"timeout without command", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n    tokenCommandTimeout: 2s\n", 2, "tokenCommandTimeout without tokenCommand"},
		{"inline token public file", 0o644, "contexts:\n  - name: a\n    url: https://x.dev\n    token: " + secret + "\n", 4, "needs the file to be private: it is mode 0644, run `chmod 600"},
		{"inline token group readable", 0o640, "contexts:\n  - name: a\n    url: https://x.dev\n    token: " + secret + "\n", 4, "it is mode 0640"},
		{"inline token type", 0o600, "contexts:\n  - name: a\n    url: https://x.dev\n    token: [" + secret + "]\n", 4, "token must be a non-empty string"},
		{"unknown current context", 0o644, "currentContext: prod\ncontexts:\n  - name: a\n    url: https://x.dev\n", 1, `currentContext "prod" names no context (have: a)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.mode, tc.text)
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded; want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, secret) {
				t.Fatalf("error reveals the token: %s", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q does not contain %q", msg, tc.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error", err)
			}
			if ce.File != path {
				t.Fatalf("error file %q, want %q", ce.File, path)
			}
			// The matching error must carry the expected line.
			found := false
			for _, line := range strings.Split(msg, "\n") {
				if strings.Contains(line, tc.want) && strings.HasPrefix(line, path+":"+strconv.Itoa(tc.line)+":") {
					found = true
				}
			}
			if !found {
				t.Fatalf("error %q: want %q on line %d", msg, tc.want, tc.line)
			}
		})
	}
}

func TestLoadReportsEveryError(t *testing.T) {
	path := writeConfig(t, 0o644, "theme: purple\nbogus: 1\npollFast: x\n")
	_, err := Load(path)
	if err == nil {
		t.Fatal("want errors")
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 3 {
		t.Fatalf("want 3 errors, got %d: %v", n, err)
	}
}

func TestInlineTokenPrivateFile(t *testing.T) {
	_, _, e := resolvedFile(t, 0o600, "currentContext: a\ncontexts:\n  - name: a\n    url: https://x.dev\n    token: "+secret+"\n")
	if e.Token.Kind != TokenInline || e.Token.Source.Line != 5 {
		t.Fatalf("token ref %+v", e.Token)
	}
	for _, r := range e.Rows() {
		if strings.Contains(r.Value, secret) {
			t.Fatalf("row %q shows the token", r.Setting)
		}
	}
	if s := e.Token.String(); strings.Contains(s, secret) {
		t.Fatalf("TokenRef.String shows the token: %s", s)
	}
	tok, err := e.Token.Get(context.Background())
	if err != nil || tok != secret {
		t.Fatalf("Get = %q, %v", tok, err)
	}
}

func TestResolvePrecedenceAndSources(t *testing.T) {
	path := writeConfig(t, 0o644, full)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}

	// File only.
	e, err := c.Resolve(Flags{}, envMap(map[string]string{"CLOUD_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.Context != "cloud" || e.ContextSource.String() != path+":2" {
		t.Fatalf("context %q from %s", e.Context, e.ContextSource)
	}
	if e.URL != "https://bridge.example.workers.dev" || e.URLSource.String() != path+":12" {
		t.Fatalf("url %q from %s", e.URL, e.URLSource)
	}
	if e.Token.Kind != TokenEnv || e.Token.Env != "CLOUD_KEY" || e.Token.Source.String() != path+":14" {
		t.Fatalf("token %+v from %s", e.Token, e.Token.Source)
	}
	if e.Theme != "dark" || e.ThemeSource.String() != path+":3" {
		t.Fatalf("theme %q from %s", e.Theme, e.ThemeSource)
	}
	if e.PollSlow != 5*time.Second || e.KeysSource["quit"].Line != 9 {
		t.Fatalf("poll/keys: %v %+v", e.PollSlow, e.KeysSource)
	}

	// Environment beats the file.
	e, err = c.Resolve(Flags{}, envMap(map[string]string{
		EnvContext: "local", EnvURL: "http://127.0.0.1:9999", EnvToken: "x", EnvTheme: "light",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if e.Context != "local" || e.ContextSource.String() != "env SANDSCOPE_CONTEXT" ||
		e.URL != "http://127.0.0.1:9999" || e.URLSource.String() != "env SANDSCOPE_URL" ||
		e.Token.Kind != TokenEnv || e.Token.Env != EnvToken || e.Token.Source.String() != "env SANDBOX_API_KEY" ||
		e.Theme != "light" || e.ThemeSource.String() != "env SANDSCOPE_THEME" {
		t.Fatalf("env layer: %+v", e)
	}

	// Flags beat the environment.
	e, err = c.Resolve(Flags{Context: "vault", URL: "https://flag.dev", TokenFile: "/tmp/tok", Theme: "high-contrast"},
		envMap(map[string]string{EnvContext: "local", EnvURL: "http://127.0.0.1:9999", EnvToken: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.Context != "vault" || e.ContextSource.String() != "flag --context" ||
		e.URL != "https://flag.dev" || e.URLSource.String() != "flag --url" ||
		e.Token.Kind != TokenFile || e.Token.File != "/tmp/tok" || e.Token.Source.String() != "flag --token-file" ||
		e.ThemeSource.String() != "flag --theme" {
		t.Fatalf("flag layer: %+v", e)
	}

	// --context beats SANDSCOPE_URL; a context from SANDSCOPE_CONTEXT does not.
	e, err = c.Resolve(Flags{Context: "local"}, envMap(map[string]string{EnvURL: "http://127.0.0.1:9999"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.URL != "http://127.0.0.1:7681" || e.URLSource.String() != path+":15" {
		t.Fatalf("--context vs SANDSCOPE_URL: %q from %s", e.URL, e.URLSource)
	}

	// A context's relative token file is relative to the config file.
	e, err = c.Resolve(Flags{Context: "local"}, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if e.Token.File != filepath.Join(filepath.Dir(path), "local.key") {
		t.Fatalf("token file %q", e.Token.File)
	}
}

func TestResolveErrors(t *testing.T) {
	c, err := Load(writeConfig(t, 0o644, full))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(Flags{Context: "prod"}, envMap(nil)); err == nil || !strings.Contains(err.Error(), `context "prod" (flag --context) is not defined`) || !strings.Contains(err.Error(), "cloud, local, vault") {
		t.Fatalf("unknown context: %v", err)
	}
	if _, err := c.Resolve(Flags{URL: "localhost:80"}, envMap(nil)); err == nil || !strings.Contains(err.Error(), "flag --url") {
		t.Fatalf("bad url flag: %v", err)
	}
	if _, err := c.Resolve(Flags{}, envMap(map[string]string{EnvTheme: "neon"})); err == nil || !strings.Contains(err.Error(), "env SANDSCOPE_THEME") {
		t.Fatalf("bad theme env: %v", err)
	}
	var nilConfig *Config
	if _, err := nilConfig.Resolve(Flags{Context: "x"}, envMap(nil)); err == nil || !strings.Contains(err.Error(), "no configuration file") {
		t.Fatalf("context without file: %v", err)
	}
}

func TestTokenSources(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tok")
	if err := os.WriteFile(tokFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	got, err := TokenRef{Kind: TokenFile, File: tokFile}.Get(ctx)
	if err != nil || got != secret {
		t.Fatalf("file: %q %v", got, err)
	}
	got, err = TokenRef{Kind: TokenEnv, Env: "K", lookupEnv: envMap(map[string]string{"K": " " + secret + " "})}.Get(ctx)
	if err != nil || got != secret {
		t.Fatalf("env: %q %v", got, err)
	}
	got, err = TokenRef{Kind: TokenCommand, Argv: []string{"printf", "%s\n", secret}}.Get(ctx)
	if err != nil || got != secret {
		t.Fatalf("command: %q %v", got, err)
	}

	// The argv form never goes through a shell: metacharacters are plain arguments.
	got, err = TokenRef{Kind: TokenCommand, Argv: []string{"printf", "%s", "$(echo injected);x"}}.Get(ctx)
	if err != nil || got != "$(echo injected);x" {
		t.Fatalf("argv form ran a shell: %q %v", got, err)
	}
	// The string form is an explicit sh -c.
	c, err := Parse("/x/config.yaml", 0o644, []byte("contexts:\n  - name: a\n    url: https://x.dev\n    tokenCommand: printf '%s' abc | tr a-c A-C\n"))
	if err != nil {
		t.Fatal(err)
	}
	if argv := c.Contexts[0].TokenArgv; len(argv) != 3 || argv[0] != "sh" || argv[1] != "-c" {
		t.Fatalf("string form argv %q", argv)
	}
	got, err = TokenRef{Kind: TokenCommand, Argv: c.Contexts[0].TokenArgv}.Get(ctx)
	if err != nil || got != "ABC" {
		t.Fatalf("sh -c form: %q %v", got, err)
	}
}

func TestTokenErrorsNeverShowTheToken(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	twoLines := filepath.Join(dir, "two")
	if err := os.WriteFile(twoLines, []byte(secret+"\n"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ref  TokenRef
		want string
	}{
		{"missing file", TokenRef{Kind: TokenFile, File: filepath.Join(dir, "nope")}, "no such file"},
		{"empty file", TokenRef{Kind: TokenFile, File: empty}, "empty token"},
		{"two lines", TokenRef{Kind: TokenFile, File: twoLines}, "spans several lines"},
		{"unset env", TokenRef{Kind: TokenEnv, Env: "NOPE", lookupEnv: envMap(nil)}, "variable not set"},
		{"failing command", TokenRef{Kind: TokenCommand, Argv: []string{"sh", "-c", "cat " + secretFile + "; echo vault is locked >&2; exit 3"}}, "exit status 3: vault is locked"},
		{"missing program", TokenRef{Kind: TokenCommand, Argv: []string{filepath.Join(dir, "no-such-program")}}, "no such file"},
		{"slow command", TokenRef{Kind: TokenCommand, Argv: []string{"sleep", "5"}, Timeout: 200 * time.Millisecond}, "timed out after 200ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.ref.Get(ctx)
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error reveals the token: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestDefaultPath(t *testing.T) {
	if got := DefaultPath(envMap(map[string]string{"SANDSCOPE_CONFIG": "/a/b.yaml"})); got != "/a/b.yaml" {
		t.Fatalf("SANDSCOPE_CONFIG: %s", got)
	}
	if got := DefaultPath(envMap(map[string]string{"XDG_CONFIG_HOME": "/cfg"})); got != "/cfg/sandscope/config.yaml" {
		t.Fatalf("XDG_CONFIG_HOME: %s", got)
	}
	if got := DefaultPath(envMap(nil)); !strings.HasSuffix(got, filepath.Join("sandscope", "config.yaml")) {
		t.Fatalf("default: %s", got)
	}
}

func TestEmptyAndCommentOnlyFiles(t *testing.T) {
	for _, text := range []string{"", "# only a comment\n", "---\n"} {
		c, err := Load(writeConfig(t, 0o644, text))
		if err != nil || !c.Exists {
			t.Fatalf("%q: %+v %v", text, c, err)
		}
	}
}

func TestCheckKeys(t *testing.T) {
	c, err := Parse("/c.yaml", 0o644, []byte("keys:\n  quit: q\n  jump: ' '\n  fly: [f]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckKeys([]string{"quit", "jump", "fly"}); err != nil {
		t.Fatalf("known actions: %v", err)
	}
	err = c.CheckKeys([]string{"quit"})
	if err == nil || !strings.Contains(err.Error(), `/c.yaml:3: keys: no action "jump"`) || !strings.Contains(err.Error(), `/c.yaml:4: keys: no action "fly"`) {
		t.Fatalf("unknown actions: %v", err)
	}
	var nilConfig *Config
	if err := nilConfig.CheckKeys(nil); err != nil {
		t.Fatal(err)
	}
}
