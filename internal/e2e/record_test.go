package e2e_test

// End-to-end record: the demo scene watched from the Sandboxes screen only (no sandbox screen
// open while the container is replaced), then opened: the record kept the replacement, the LOST
// agent, the STALE entries and the agent's output; a restart on the same state directory shows
// the same history; `report` turns it into Markdown and JSON.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sandscope/internal/e2e"
	"sandscope/record"
)

func TestE2ERecordSurvivesReplacementAndRestart(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	s := e2e.LaunchTUI(t, tmuxPath, dir, env, "--demo")
	s.WaitFor("the demo sandbox", "(embedded)", "> demo")
	// Stay on the Sandboxes screen past the replacement: only the background watcher sees it.
	s.WaitUntil("the replacement, seen from the Sandboxes screen", func(sc string) bool {
		return regexp.MustCompile(`(?m)^> demo\s+RUNNING\s+#2`).MatchString(sc)
	})
	s.Keys("Enter")
	sc := s.WaitFor("the sandbox screen with its history", "Sandbox demo", "incarnation #2", "LOST", "STALE #1")
	if !strings.Contains(sc, "demo agent --speed 1 --resume") {
		t.Fatalf("the relaunched agent is missing:\n%s", sc)
	}
	s.Keys("Tab", "Tab")
	s.WaitFor("two incarnations with evidence", "Incarnations (2)", "#1", "#2", "the bridge reports incarnation 2 (was 1)")
	s.Keys("Tab")
	s.WaitFor("the processes tab", "[Processes (") // the key is handled before the rows are read
	s.SelectRow("LOST")
	s.Keys("Enter")
	sc = s.WaitFor("the LOST agent's captured log", "Logs · demo", "(LOST)", "CAPTURE BEGAN", `{"type":"system"`, "LOST: the process is gone")
	if strings.Contains(sc, "FOLLOW FAILED") {
		t.Fatalf("a LOST log shows FOLLOW FAILED:\n%s", sc)
	}
	// the LOST marker is the last line of the log
	var last string
	for _, l := range e2e.Lines(sc) {
		if strings.Contains(l, "──") || strings.HasPrefix(l, "  {") {
			last = l
		}
	}
	if !strings.Contains(last, "LOST: the process is gone") {
		t.Fatalf("the log does not end with the LOST marker (last: %q):\n%s", last, sc)
	}
	// the report key writes the report and names its absolute path
	s.Keys("P")
	sc = s.WaitFor("the report path", "wrote the report to "+filepath.Join(dir, "state"))
	reports, _ := filepath.Glob(filepath.Join(dir, "state", "sandscope", "reports", "demo-*.md"))
	if len(reports) != 1 {
		t.Fatalf("report files: %v\n%s", reports, sc)
	}
	if md, _ := os.ReadFile(reports[0]); !strings.Contains(string(md), "**LOST**") {
		t.Fatalf("the report lacks the LOST state:\n%s", md)
	}
	s.QuitAndWait()

	// The command line reads the same record.
	runReport := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(e2e.Binary(t), append([]string{"report", "demo"}, args...)...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("report %v: %v", args, err)
		}
		return out
	}
	var whole record.Report
	if err := json.Unmarshal(runReport("--json"), &whole); err != nil {
		t.Fatal(err)
	}
	agent := ""
	for _, e := range whole.Entities {
		if e.Lost && e.Incarnation == 1 && strings.Contains(strings.Join(e.Command, " "), "demo agent") {
			agent = e.ID
		}
	}
	if agent == "" {
		t.Fatalf("no LOST agent of incarnation #1 in the report: %+v", whole.Entities)
	}
	md := string(runReport(agent[:8]))
	for _, want := range []string{"**LOST**", "process vanished (was running) → LOST", "absent from the process list",
		"| #1 |", "| #2 |", "the bridge reports incarnation 2 (was 1)", "## Incidents"} {
		if !strings.Contains(md, want) {
			t.Errorf("report of %s lacks %q:\n%s", agent, want, md)
		}
	}
	var one record.Report
	if err := json.Unmarshal(runReport(agent, "--json"), &one); err != nil {
		t.Fatal(err)
	}
	if one.Subject == nil || !one.Subject.Lost || len(one.Incarnations) != 2 || one.Subject.Capture == nil || one.Subject.Capture.Bytes == 0 {
		t.Fatalf("JSON report of %s: %+v", agent, one.Subject)
	}

	// Start again on the same state directory: the same history.
	s.Relaunch()
	s.WaitFor("the sandboxes screen again", "(embedded)", "> demo")
	s.Keys("Enter")
	s.WaitFor("the history after a restart", "Sandbox demo", "LOST", "STALE #1", "Incarnations (2)")
	s.SelectRow("LOST")
	s.WaitFor("the earlier run marked", "seen by an earlier run of sandscope")
	s.Keys("Enter")
	s.WaitFor("the captured log after a restart", "CAPTURE BEGAN", `{"type":"system"`, "LOST: the process is gone")

	// The restarted embedded bridge is a new container life: a process started now runs in
	// incarnation #3, never in a second #1, and the first container's build stays STALE #1 with its
	// captured log.
	s.Keys("Escape")
	s.WaitFor("the sandbox screen", "Sandbox demo", "[Processes (")
	s.Keys("e")
	s.WaitFor("the exec prompt", "Run a process in demo")
	s.Type("echo hi")
	s.Keys("Enter")
	sc = s.WaitFor("a third container life", "RUNNING · incarnation #3", "echo hi")
	if strings.Contains(sc, "RUNNING · incarnation #1 ") || strings.Contains(sc, "new container, incarnation #1") {
		t.Fatalf("the new container is numbered #1 again:\n%s", sc)
	}
	s.Keys("Tab", "Tab")
	sc = s.WaitFor("three lives on the timeline", "Incarnations (3)", "#3")
	s.Keys("Tab")
	sc = s.WaitFor("the processes tab", "[Processes (")
	// exactly one row for the new process, in #3
	n := 0
	for _, l := range e2e.Lines(sc) {
		if strings.Contains(l, "echo hi") && strings.Contains(l, "/workspace") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d rows for one echo:\n%s", n, sc)
	}
	s.SelectRow("set -e")
	sc = s.Screen()
	for _, l := range e2e.Lines(sc) {
		if strings.HasPrefix(l, "> ") && !strings.Contains(l, "STALE #1 · EXITED 0") {
			t.Fatalf("the first container's build is not STALE #1 · EXITED 0: %q\n%s", l, sc)
		}
	}
	s.Keys("Enter")
	sc = s.WaitFor("the old build's captured log", "Logs · demo")
	sc = s.WaitUntil("the old build's log from the record", func(sc string) bool {
		return strings.Contains(sc, "CAPTURE BEGAN") || strings.Contains(sc, "no output was captured")
	})
	if strings.Contains(sc, "FOLLOW FAILED") {
		t.Fatalf("a STALE log shows FOLLOW FAILED:\n%s", sc)
	}
}

// `sandscope serve` restarted on the same root is the same bridge and a new container life: the
// sandbox it already had is listed without adding it, a process started now runs in the next
// incarnation, and the earlier one's row is STALE with its log from the record.
func TestE2EServeRestartIsANewContainerLife(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	state := filepath.Join(dir, "state")
	srv := e2e.StartServe(t, env, state)
	if out, code := e2e.RunIn(t, env, "exec", "keep", "--", "sh", "-c", "echo before the restart"); code != 0 {
		t.Fatalf("exec before the restart: exit %d\n%s", code, out)
	}
	srv.Stop()
	srv = e2e.StartServe(t, env, state)
	if out, code := e2e.RunIn(t, env, "ls"); code != 0 || !strings.Contains(out, "keep") {
		t.Fatalf("ls after a restart of serve: exit %d\n%s", code, out)
	}
	s := e2e.LaunchTUI(t, tmuxPath, dir, env, "--url", srv.Disc.URL, "--token-file", srv.Disc.TokenFile)
	s.WaitFor("the sandbox serve already had", "Sandboxes (", "keep")
	s.SelectRow("keep")
	s.Keys("Enter")
	s.WaitFor("its history", "Sandbox keep", "echo before the restart")
	s.Keys("e")
	s.WaitFor("the exec prompt", "Run a process in keep")
	s.Type("echo after")
	s.Keys("Enter")
	sc := s.WaitFor("the next container life", "incarnation #2", "echo after")
	for _, l := range e2e.Lines(sc) {
		if strings.Contains(l, "echo before the restart") && !strings.Contains(l, "STALE #1") {
			t.Fatalf("the earlier life's process is not STALE #1: %q\n%s", l, sc)
		}
	}
	s.SelectRow("echo before the restart")
	s.Keys("Enter")
	sc = s.WaitUntil("the earlier process's log from the record", func(sc string) bool {
		return strings.Contains(sc, "Logs · keep") && (strings.Contains(sc, "CAPTURE BEGAN") || strings.Contains(sc, "no output was captured") || strings.Contains(sc, "before the restart"))
	})
	if strings.Contains(sc, "FOLLOW FAILED") {
		t.Fatalf("a STALE log shows FOLLOW FAILED:\n%s", sc)
	}
}
