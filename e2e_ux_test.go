package main

// End-to-end checks of issue-level user experience: what a person sees on screen or in exit codes.

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

// TestE2EKeysTypedTogether types jj as one write (as fast typing, key repeat or a busy machine
// deliver it): the cursor moves two rows, and enter opens the third sandbox.
func TestE2EKeysTypedTogether(t *testing.T) {
	tmuxPath := needTmux(t)
	b, c := e2eBridge(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range []string{"keysb", "keysc"} {
		if _, err := c.StartProcess(ctx, id, client.ExecRequest{Argv: []string{"true"}}); err != nil {
			t.Fatalf("create sandbox %s: %v", id, err)
		}
	}
	dir := t.TempDir()
	s := launchTUI(t, tmuxPath, dir, tuiEnv(t, dir), "--url", b.URL, "--token-file", tokenFile(t, b))
	sc := s.waitFor("three sandboxes", "Sandboxes (3)", "e2e", "keysb", "keysc")
	// the rows in screen order
	var order []string
	for _, l := range lines(sc) {
		for _, id := range []string{"e2e", "keysb", "keysc"} {
			if strings.Contains(l, " "+id+" ") || strings.HasSuffix(strings.TrimSpace(l), id) || strings.Contains(l, "▸ "+id) {
				order = append(order, id)
			}
		}
	}
	if len(order) != 3 {
		t.Fatalf("could not read the row order (%v) from:\n%s", order, sc)
	}
	s.typeText("jj")
	s.keys("Enter")
	s.waitFor("the third sandbox opened", "Sandbox "+order[2])
}

// TestE2EStatusMessageLifetime: a status message shows once, fades, and does not follow the user
// to another screen.
func TestE2EStatusMessageLifetime(t *testing.T) {
	s, _, _ := startTUI(t)
	s.keys("a")
	s.waitFor("the add form", "Add a sandbox by ID")
	s.typeText("Bad-ID")
	s.keys("Enter")
	// a validation error keeps the form open with what was typed
	s.waitFor("the error in the form", `sandbox ID "Bad-ID": must be 1-128 characters of a-z and 2-7`, "Bad-ID")
	for i := 0; i < 6; i++ {
		s.keys("BSpace")
	}
	s.typeText("keptbox")
	s.keys("Enter")
	sc := s.waitFor("the message", "added sandbox keptbox")
	if n := strings.Count(sc, "added sandbox keptbox"); n != 1 {
		t.Fatalf("the message shows %d times:\n%s", n, sc)
	}
	// it fades (6 s for an info)
	s.waitUntil("the message faded", func(sc string) bool { return !strings.Contains(sc, "added sandbox keptbox") })

	// a message about the sandbox screen stays there (the cursor is on the added sandbox: the
	// filter finds e2e)
	s.typeText("/e2e")
	s.waitFor("the filter", "/e2e")
	s.keys("Enter")
	s.keys("Enter")
	s.waitFor("the sandbox screen", "Sandbox e2e", "Processes (")
	s.keys("e")
	s.waitFor("the exec prompt", "Run a process in e2e")
	s.typeText("true")
	s.keys("Enter")
	s.waitFor("the started message", "started ")
	s.keys("Escape")
	sc = s.waitFor("the sandboxes screen", "Sandboxes (")
	if strings.Contains(sc, "started ") {
		t.Fatalf("the sandbox screen's message followed to the sandboxes screen:\n%s", sc)
	}
}

// TestE2EJSONLWrapAndFilter: wrap folds a long JSONL summary onto several rows; in the sandbox
// screen / filters the processes, esc clears the filter first and only then leaves.
func TestE2EJSONLWrapAndFilter(t *testing.T) {
	s, _, _ := startTUI(t)
	s.openSandbox()
	long := strings.Repeat("word ", 50) + "THEEND"
	s.execInTUI(`printf '%s\n' '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + long + `"}]}}'`)
	s.waitFor("the JSON line", `{"type":"assistant"`)
	s.keys("J")
	s.waitFor("the JSONL view", "jsonl on", "assistant")
	if sc := s.screen(); strings.Contains(sc, "THEEND") {
		t.Fatalf("wrap off shows the end of a line wider than the screen:\n%s", sc)
	}
	s.keys("w")
	s.waitFor("the wrapped summary", "wrap on", "THEEND")

	s.keys("Escape")
	s.waitFor("the sandbox screen", "Sandbox e2e", "Processes (")
	s.typeText("/printf")
	s.waitFor("the filter typed", "/printf", "1 of")
	s.keys("Enter")
	s.keys("Escape")
	s.waitUntil("the filter cleared, still on the sandbox screen", func(sc string) bool {
		return strings.Contains(sc, "Sandbox e2e") && !strings.Contains(sc, "1 of")
	})
	s.keys("Escape")
	s.waitFor("the sandboxes screen", "Sandboxes (")
}

// TestE2ELayoutAt80x24: at 80×24 the processes table keeps the command readable, the frame keeps
// its header and key hints, and the LOST detail wraps instead of being cut.
func TestE2ELayoutAt80x24(t *testing.T) {
	s, b, _ := startTUI(t)
	s.must("resize-window", "-t", s.session(), "-x", "80", "-y", "24")
	s.waitFor("the resized frame", "Sandboxes (1)")
	s.keys("Enter")
	s.waitFor("the sandbox screen", "Sandbox e2e", "Processes (")
	s.keys("e")
	s.waitFor("the exec prompt", "Run a process in e2e")
	s.typeText("sh -c 'echo layout-check; sleep 300'")
	s.keys("Enter")
	// the process's own row says RUNNING (the header says RUNNING of the sandbox, and the status
	// line quotes the command while the request is still on its way: replacing the container then
	// would start the process in the new one)
	sc := s.waitUntil("the process row", func(sc string) bool {
		for _, l := range lines(sc) {
			if strings.Contains(l, "sh -c 'echo layout-check") && strings.Contains(l, "RUNNING") && !strings.Contains(l, "Sandbox e2e") {
				return true
			}
		}
		return false
	})
	ls := lines(sc)
	if len(ls) != 24 || !strings.HasPrefix(ls[0], " sandscope │") {
		t.Fatalf("the frame is not 24 rows with the header first:\n%s", sc)
	}
	if !strings.Contains(sc, "COMMAND") || !strings.Contains(sc, "RUNNING") {
		t.Fatalf("the table lost a column that matters:\n%s", sc)
	}
	if err := b.Server.ReplaceSandbox("e2e"); err != nil {
		t.Fatal(err)
	}
	// the old container's process: its detail (long) wraps over the detail lines, whole
	s.waitUntil("the detail, whole", func(sc string) bool {
		return strings.Contains(sc, "incarnation #2") && strings.Contains(sc, "(now #2)") && strings.Contains(sc, "relaunches it here")
	})
}

// TestE2EPaneSizeAfterFullScreenAttach: after a full-screen attach and a detach, the terminal
// shown in the pane has the pane's size again (not the whole screen's), without a resize.
func TestE2EPaneSizeAfterFullScreenAttach(t *testing.T) {
	s, _, _ := startTUI(t)
	s.openSandbox()
	s.keys("s")
	s.waitFor("the new-terminal form", "New terminal in e2e", "Size")
	s.keys("Enter")
	s.waitFor("the focused pane", "LIVE", "focused (")
	s.typeText(`echo "size=$(stty size | tr ' ' x)"`)
	s.keys("Enter")
	before := s.waitUntil("the pane's size", func(sc string) bool { return regexp.MustCompile(`size=\d+x\d+`).MatchString(sc) })
	paneSize := regexp.MustCompile(`size=(\d+x\d+)`).FindStringSubmatch(before)[1]
	s.keys("C-]")
	s.waitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.keys("A")
	s.waitUntil("the full-screen attachment", func(sc string) bool { return !strings.Contains(sc, "sandscope │") })
	s.typeText(`echo "full=$(stty size | tr ' ' x)"`)
	s.keys("Enter")
	s.waitFor("the full size", "full=48x160")
	s.keys("C-]")
	s.waitFor("back in the TUI", "sandscope │", "› terminal")
	s.keys("Enter")
	s.waitFor("the pane focused again", "focused (")
	s.typeText(`echo "after=$(stty size | tr ' ' x)"`)
	s.keys("Enter")
	sc := s.waitUntil("the size after", func(sc string) bool { return regexp.MustCompile(`after=\d+x\d+`).MatchString(sc) })
	if got := regexp.MustCompile(`after=(\d+x\d+)`).FindStringSubmatch(sc)[1]; got != paneSize {
		t.Fatalf("after the attachment the terminal is %s, the pane %s:\n%s", got, paneSize, sc)
	}
}
