package e2e_test

// End-to-end checks of the terminal pane's scrollback, notifications that lead with the outcome,
// follow-all in time order, and the capture of a process that ended while only the background
// watcher saw it: the real binary in tmux, the screens read back with capture-pane.

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
)

// After `seq 1 100` in the embedded pane, the paging keys read back what scrolled off while the
// pane is not focused; the header says the view is scrolled back; end and focusing return to live.
func TestE2EPaneScrollback(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.Resize(80, 24)
	s.WaitFor("the resized frame", "Sandboxes (1)")
	s.OpenSandbox()
	s.Keys("s")
	s.WaitFor("the new-terminal form", "New terminal in e2e", "Size")
	s.Keys("Enter")
	s.WaitFor("the focused pane", "LIVE", "focused (")
	s.Type("seq 1 100")
	s.Keys("Enter")
	s.WaitUntil("the end of the output", func(sc string) bool { return regexp.MustCompile(`(?m)^100\s*$`).MatchString(sc) })
	s.Keys("C-]")
	s.WaitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.Keys("PPage")
	sc := s.WaitFor("the scrollback", "scrollback: line ")
	if regexp.MustCompile(`(?m)^100\s*$`).MatchString(sc) {
		t.Fatalf("a page up still shows the last line:\n%s", sc)
	}
	s.Keys("Home")
	sc = s.WaitFor("the oldest row", "scrollback: line 1 of ")
	if !strings.Contains(sc, "seq 1 100") || !regexp.MustCompile(`(?m)^1\s*$`).MatchString(sc) {
		t.Fatalf("the top of the scrollback lacks the command and its first line:\n%s", sc)
	}
	s.Keys("End")
	s.WaitUntil("live again", func(sc string) bool {
		return !strings.Contains(sc, "scrollback:") && regexp.MustCompile(`(?m)^100\s*$`).MatchString(sc)
	})
	// focusing returns to live too; keys then go to the sandbox
	s.Keys("PPage")
	s.WaitFor("the scrollback again", "scrollback: line ")
	s.Keys("Enter")
	s.WaitUntil("focused and live", func(sc string) bool {
		return strings.Contains(sc, "focused (") && !strings.Contains(sc, "scrollback:")
	})
}

// A failing run's notification leads with its outcome and the process's short name, at 200×60 in
// the status line and at 80×24 in the M list, where a failing and a passing run differ at once.
func TestE2ENotificationsLeadWithTheOutcome(t *testing.T) {
	s, _, c := e2e.StartTUI(t)
	s.Resize(200, 60)
	s.WaitFor("the resized frame", "Sandboxes (1)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := strings.Repeat("echo checking the discount rules of the checkout; ", 8) + "sleep 1; exit "
	fail, err := c.StartProcess(ctx, "e2e", client.ExecRequest{Argv: []string{"sh", "-c", script + "2", "npm-test"}})
	if err != nil {
		t.Fatal(err)
	}
	status := regexp.MustCompile(`(?m)^EXITED 2 npm-test-` + fail.ID[:8] + ` · e2e/` + fail.ID[:8])
	sc := s.WaitUntil("the failing run's notification", func(sc string) bool { return status.MatchString(sc) })
	e2e.CheckHeader(t, sc)
	ok, err := c.StartProcess(ctx, "e2e", client.ExecRequest{Argv: []string{"sh", "-c", script + "0", "npm-test"}})
	if err != nil {
		t.Fatal(err)
	}
	s.WaitFor("the passing run's notification", "EXITED 0 npm-test-"+ok.ID[:8])
	s.Resize(80, 24)
	s.Keys("M")
	sc = s.WaitFor("the list at 80×24", "Notifications (2)", "EXITED 2 npm-test-"+fail.ID[:8], "EXITED 0 npm-test-"+ok.ID[:8])
	e2e.CheckHeader(t, sc)
}

// Follow-all with timestamps on interleaves two processes by time, and the copy-cursor key names
// the process it acts on.
func TestE2EFollowAllInTimeOrder(t *testing.T) {
	s, _, c := e2e.StartTUI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"ping", "pong"} {
		loop := `i=0; while [ $i -lt 200 ]; do echo "$0 $i"; i=$((i+1)); sleep 0.05; done`
		if _, err := c.StartProcess(ctx, "e2e", client.ExecRequest{Argv: []string{"sh", "-c", loop, name}}); err != nil {
			t.Fatal(err)
		}
	}
	s.OpenSandbox()
	s.Keys("F")
	s.WaitFor("follow-all", "every process", "ping ", "pong ")
	s.Keys("t")
	s.WaitFor("timestamps on", "time on")
	time.Sleep(2 * time.Second) // lines placed by time since the toggle
	sc := s.WaitFor("both processes", "ping-", "pong-")
	stamp := regexp.MustCompile(`^(\d\d:\d\d:\d\d\.\d\d\d) (ping|pong)-`)
	var last string
	n := 0
	for _, l := range e2e.Lines(sc) {
		m := stamp.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if last != "" && m[1] < last {
			t.Fatalf("a line stamped %s shown after one stamped %s:\n%s", m[1], last, sc)
		}
		last = m[1]
		n++
	}
	if n < 10 {
		t.Fatalf("only %d stamped lines:\n%s", n, sc)
	}
	s.Keys("y")
	s.WaitUntil("the copy message naming the process", func(sc string) bool {
		return regexp.MustCompile(`cursor of (ping|pong)-\w+ \(the newest line\)`).MatchString(sc)
	})
}

// The demo's failing test ends while only the background watcher looks (the Sandboxes screen stays
// open past the replacement): its retained output is captured before the container goes, and the
// all-runs screen shows it kept, not "no capture".
func TestE2EDemoFailedTestIsCaptured(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	dir := t.TempDir()
	s := e2e.LaunchTUI(t, tmuxPath, dir, e2e.Env(t, dir), "--demo")
	s.WaitFor("the demo sandbox", "(embedded)", "> demo")
	s.WaitUntil("the replacement, seen from the Sandboxes screen", func(sc string) bool {
		return regexp.MustCompile(`(?m)^> demo\s+RUNNING\s+#2`).MatchString(sc)
	})
	s.Keys("W")
	sc := s.WaitFor("the failed test run", "STALE #1 · EXITED 2")
	for _, l := range e2e.Lines(sc) {
		if strings.Contains(l, "STALE #1 · EXITED 2") {
			if strings.Contains(l, "no capture") || !strings.Contains(l, "kept") {
				t.Fatalf("the failed test run was not captured: %q\n%s", l, sc)
			}
			return
		}
	}
}
