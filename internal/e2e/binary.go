// Package e2e holds what the end-to-end tests of sandscope share: the real binary, built once per
// test process; a private tmux server driven with send-keys and read back with capture-pane, as a
// person would look at the screen; sandscope's TUI launched in it; and the small fixtures around
// them (a local bridge with its token in a file, an environment with its own state directories).
//
// It is a normal package so that tests in any package of the module can import it; it imports
// "testing" for testing.TB and is never imported by the product.
package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
	// goEnv is the environment the go command runs with: the one the test process started
	// with, before Main moved the XDG directories (Go keeps its build cache and its settings
	// under them), or nil (the current one) without Main.
	goEnv []string
)

// Binary builds the sandscope binary from the module root once per test process (the first caller
// waits for the build; every other gets the same file) and returns its path. Main, or a TestMain
// calling RemoveBinary, deletes it when the tests end.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			binErr = err
			return
		}
		binDir, binErr = os.MkdirTemp("", "sandscope-e2e-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "sandscope")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = root
		cmd.Env = goEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// RemoveBinary deletes the binary Binary built, if it built one.
func RemoveBinary() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// moduleRoot is the directory of the go.mod of the package under test (a test runs in its
// package's directory), which is sandscope's module root.
func moduleRoot() (string, error) {
	cmd := exec.Command("go", "env", "GOMOD")
	cmd.Env = goEnv
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(mod), nil
}

// Main runs a package's tests with XDG_STATE_HOME, XDG_CACHE_HOME and XDG_CONFIG_HOME pointed at a
// temporary directory, for every test and every binary a test starts with the inherited
// environment (sandscope records what it observes under the state directory: tests never write
// into the developer's own), then removes that directory and the binary, and exits. The go
// command that builds the binary keeps the environment the tests started with (its build cache
// lives under XDG_CACHE_HOME: a fresh one would rebuild the module and the standard library
// every run). Call it from TestMain.
func Main(m *testing.M) {
	home, err := os.MkdirTemp("", "sandscope-test-xdg-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	goEnv = os.Environ() // the build of the binary keeps the developer's Go build cache
	for _, v := range []string{"XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"} {
		os.Setenv(v, filepath.Join(home, strings.ToLower(strings.TrimPrefix(v, "XDG_"))))
	}
	code := m.Run()
	RemoveBinary()
	_ = os.RemoveAll(home)
	os.Exit(code)
}
