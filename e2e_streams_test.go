package main

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
)

// After `seq 1 100` in the embedded pane, the paging keys read back what scrolled off while the
// pane is not focused; the header says the view is scrolled back; end and focusing return to live.
func TestE2EPaneScrollback(t *testing.T) {
	s, _, _ := startTUI(t)
	s.must("resize-window", "-t", s.session(), "-x", "80", "-y", "24")
	s.waitFor("the resized frame", "Sandboxes (1)")
	s.openSandbox()
	s.keys("s")
	s.waitFor("the new-terminal form", "New terminal in e2e", "Size")
	s.keys("Enter")
	s.waitFor("the focused pane", "LIVE", "focused (")
	s.typeText("seq 1 100")
	s.keys("Enter")
	s.waitUntil("the end of the output", func(sc string) bool { return regexp.MustCompile(`(?m)^100\s*$`).MatchString(sc) })
	s.keys("C-]")
	s.waitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.keys("PPage")
	sc := s.waitFor("the scrollback", "scrollback: line ")
	if regexp.MustCompile(`(?m)^100\s*$`).MatchString(sc) {
		t.Fatalf("a page up still shows the last line:\n%s", sc)
	}
	s.keys("Home")
	sc = s.waitFor("the oldest row", "scrollback: line 1 of ")
	if !strings.Contains(sc, "seq 1 100") || !regexp.MustCompile(`(?m)^1\s*$`).MatchString(sc) {
		t.Fatalf("the top of the scrollback lacks the command and its first line:\n%s", sc)
	}
	s.keys("End")
	s.waitUntil("live again", func(sc string) bool {
		return !strings.Contains(sc, "scrollback:") && regexp.MustCompile(`(?m)^100\s*$`).MatchString(sc)
	})
	// focusing returns to live too; keys then go to the sandbox
	s.keys("PPage")
	s.waitFor("the scrollback again", "scrollback: line ")
	s.keys("Enter")
	s.waitUntil("focused and live", func(sc string) bool {
		return strings.Contains(sc, "focused (") && !strings.Contains(sc, "scrollback:")
	})
}

// A failing run's notification leads with its outcome and the process's short name, at 200×60 in
// the status line and at 80×24 in the M list, where a failing and a passing run differ at once.
func TestE2ENotificationsLeadWithTheOutcome(t *testing.T) {
	s, _, c := startTUI(t)
	s.must("resize-window", "-t", s.session(), "-x", "200", "-y", "60")
	s.waitFor("the resized frame", "Sandboxes (1)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := strings.Repeat("echo checking the discount rules of the checkout; ", 8) + "sleep 1; exit "
	fail, err := c.StartProcess(ctx, "e2e", client.ExecRequest{Argv: []string{"sh", "-c", script + "2", "npm-test"}})
	if err != nil {
		t.Fatal(err)
	}
	status := regexp.MustCompile(`(?m)^EXITED 2 npm-test-` + fail.ID[:8] + ` · e2e/` + fail.ID[:8])
	sc := s.waitUntil("the failing run's notification", func(sc string) bool { return status.MatchString(sc) })
	checkHeader(t, sc)
	ok, err := c.StartProcess(ctx, "e2e", client.ExecRequest{Argv: []string{"sh", "-c", script + "0", "npm-test"}})
	if err != nil {
		t.Fatal(err)
	}
	s.waitFor("the passing run's notification", "EXITED 0 npm-test-"+ok.ID[:8])
	s.must("resize-window", "-t", s.session(), "-x", "80", "-y", "24")
	s.keys("M")
	sc = s.waitFor("the list at 80×24", "Notifications (2)", "EXITED 2 npm-test-"+fail.ID[:8], "EXITED 0 npm-test-"+ok.ID[:8])
	checkHeader(t, sc)
}

// Follow-all with timestamps on interleaves two processes by time, and the copy-cursor key names
// the process it acts on.
func TestE2EFollowAllInTimeOrder(t *testing.T) {
	s, _, c := startTUI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"ping", "pong"} {
		loop := `i=0; while [ $i -lt 200 ]; do echo "$0 $i"; i=$((i+1)); sleep 0.05; done`
		if _, err := c.StartProcess(ctx, "e2e", client.ExecRequest{Argv: []string{"sh", "-c", loop, name}}); err != nil {
			t.Fatal(err)
		}
	}
	s.openSandbox()
	s.keys("F")
	s.waitFor("follow-all", "every process", "ping ", "pong ")
	s.keys("t")
	s.waitFor("timestamps on", "time on")
	time.Sleep(2 * time.Second) // lines placed by time since the toggle
	sc := s.waitFor("both processes", "ping-", "pong-")
	stamp := regexp.MustCompile(`^(\d\d:\d\d:\d\d\.\d\d\d) (ping|pong)-`)
	var last string
	n := 0
	for _, l := range lines(sc) {
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
	s.keys("y")
	s.waitUntil("the copy message naming the process", func(sc string) bool {
		return regexp.MustCompile(`cursor of (ping|pong)-\w+ \(the newest line\)`).MatchString(sc)
	})
}

// The demo's failing test ends while only the background watcher looks (the Sandboxes screen stays
// open past the replacement): its retained output is captured before the container goes, and the
// all-runs screen shows it kept, not "no capture".
func TestE2EDemoFailedTestIsCaptured(t *testing.T) {
	tmuxPath := needTmux(t)
	dir := t.TempDir()
	s := launchTUI(t, tmuxPath, dir, tuiEnv(t, dir), "--demo")
	s.waitFor("the demo sandbox", "(embedded)", "> demo")
	s.waitUntil("the replacement, seen from the Sandboxes screen", func(sc string) bool {
		return regexp.MustCompile(`(?m)^> demo\s+RUNNING\s+#2`).MatchString(sc)
	})
	s.keys("W")
	sc := s.waitFor("the failed test run", "STALE #1 · EXITED 2")
	for _, l := range lines(sc) {
		if strings.Contains(l, "STALE #1 · EXITED 2") {
			if strings.Contains(l, "no capture") || !strings.Contains(l, "kept") {
				t.Fatalf("the failed test run was not captured: %q\n%s", l, sc)
			}
			return
		}
	}
}
