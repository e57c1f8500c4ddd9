package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sandscope/internal/e2e"
)

// The TUI on the embedded bridge speaking the stable API (`sandscope --dialect stable`): the same
// screens as preview, with the tabs and keys the stable driver offers. Each test adds sandbox
// "boxa", opens it and runs a command through the exec prompt (the first action says it starts
// the container, and asks).

// stableTUI launches `sandscope --dialect stable` with config (a config.yaml body, "" none) and
// private state directories, and waits for the sandboxes screen (a first run on a bridge without
// a process list offers no demo scene: it could not run there).
func stableTUI(t *testing.T, config string) (*e2e.TUI, string) {
	t.Helper()
	tmuxPath := e2e.NeedTmux(t)
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "config", "sandscope", "config.yaml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := e2e.LaunchTUI(t, tmuxPath, dir, env, "--dialect", "stable")
	sc := s.WaitFor("the sandboxes screen", "sandscope │", "Sandboxes (0)")
	if strings.Contains(sc, "Start the demo scene?") {
		t.Errorf("the demo scene is offered on a bridge it cannot run on:\n%s", sc)
	}
	return s, dir
}

// execInBoxa adds sandbox boxa, opens it (the stable driver's tabs: Runs, Sessions,
// Incarnations) and runs command through the exec prompt, answering the wake question.
func execInBoxa(t *testing.T, s *e2e.TUI, command string) {
	t.Helper()
	s.Keys("a")
	s.WaitFor("the add prompt", "Add sandboxes by ID")
	s.Type("boxa")
	s.Keys("Enter")
	s.WaitFor("the added sandbox", "Sandboxes (1)", "boxa")
	s.Keys("Enter")
	sc := s.WaitFor("the sandbox screen", "Sandbox boxa", "Runs (0)", "Sessions (0)", "Incarnations (0)", "no runs started by sandscope here")
	if strings.Contains(sc, "Terminals") {
		t.Errorf("a stable bridge's sandbox screen shows a Terminals tab:\n%s", sc)
	}
	s.Keys("e")
	s.WaitFor("the exec prompt", "Run a process in boxa", "Session")
	s.Type(command)
	s.Keys("Enter")
	s.WaitFor("the wake question", "Start the container of boxa?", "starts the container of sandbox boxa")
	s.Keys("y")
	s.WaitFor("the run in the list", "Runs (1)", "started ")
}

// `e` runs a command: the run shows in the list, its ending replaces RUNNING there, and opening
// it shows its output and the ending.
func TestE2EStableTUIExec(t *testing.T) {
	s, _ := stableTUI(t, "")
	execInBoxa(t, s, `sh -c "echo first-line; sleep 1; echo second-line; exit 3"`)
	s.WaitFor("the ending in the list", "EXITED 3")
	s.Keys("Enter")
	sc := s.WaitFor("the run's log", "Logs · boxa", "first-line", "second-line", "EXITED 3")
	e2e.CheckHeader(t, sc)
	if strings.Contains(sc, "EXITED 0") {
		t.Errorf("the log shows a success that did not happen:\n%s", sc)
	}
	s.QuitAndWait()
}

// W lists the stable run with the other runs sandscope recorded, from the record.
func TestE2EStableTUIAllRuns(t *testing.T) {
	s, _ := stableTUI(t, "")
	execInBoxa(t, s, `sh -c "echo hi; exit 0"`)
	s.WaitFor("the ending in the list", "EXITED 0")
	s.Keys("W")
	sc := s.WaitFor("the all-runs screen", "All runs (1)", "boxa", "EXITED 0", "sh -c")
	e2e.CheckHeader(t, sc)
	s.QuitAndWait()
}

// A stable run that ends while another screen is shown rings the configured bell, and the status
// area tells of the ending.
func TestE2EStableTUIBellOnEnding(t *testing.T) {
	s, _ := stableTUI(t, "theme: dark\nnotify:\n  ended: bell\n")
	s.Must("set-option", "-g", "monitor-bell", "on")
	execInBoxa(t, s, `sh -c "sleep 3; exit 6"`)
	s.Keys("Escape") // back to the sandboxes screen while the run goes on
	s.WaitFor("the sandboxes screen", "Sandboxes (1)")
	if strings.Contains(s.Screen(), "EXITED 6") {
		t.Fatalf("the run ended before another screen was shown:\n%s", s.Screen())
	}
	sc := s.WaitFor("the status area to tell of the ending", "EXITED 6", "boxa/")
	if !strings.Contains(sc, "Sandboxes (1)") {
		t.Errorf("the sandboxes screen is no longer shown:\n%s", sc)
	}
	s.WaitUntil("tmux to see the bell", func(string) bool { return s.Display("#{window_bell_flag}") == "1" })
	s.QuitAndWait()
}

// P on the sandbox screen writes a report that names the stable dialect.
func TestE2EStableTUIReport(t *testing.T) {
	s, _ := stableTUI(t, "")
	execInBoxa(t, s, `sh -c "echo report-me; exit 2"`)
	s.WaitFor("the ending in the list", "EXITED 2")
	s.Keys("P")
	sc := s.WaitFor("the report written", "wrote the report to ")
	path := regexp.MustCompile(`wrote the report to (\S+\.md)`).FindStringSubmatch(strings.ReplaceAll(sc, "\n", ""))
	if path == nil {
		t.Fatalf("no report path on the screen:\n%s", sc)
	}
	md, err := os.ReadFile(path[1])
	if err != nil {
		t.Fatalf("the report: %v", err)
	}
	if !strings.Contains(string(md), "dialect stable") || strings.Contains(string(md), "v1-preview") {
		t.Errorf("the report does not name the stable dialect:\n%s", md)
	}
	if !strings.Contains(string(md), "EXITED 2") {
		t.Errorf("the report lacks the run's ending:\n%s", md)
	}
	s.QuitAndWait()
}
