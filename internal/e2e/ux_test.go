package e2e_test

// End-to-end checks of issue-level user experience: what a person sees on screen or in exit codes.

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
)

// TestE2EKeysTypedTogether types jj as one write (as fast typing, key repeat or a busy machine
// deliver it): the cursor moves two rows, and enter opens the third sandbox.
func TestE2EKeysTypedTogether(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	b, c := e2e.Bridge(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range []string{"keysb", "keysc"} {
		if _, err := c.StartProcess(ctx, id, client.ExecRequest{Argv: []string{"true"}}); err != nil {
			t.Fatalf("create sandbox %s: %v", id, err)
		}
	}
	dir := t.TempDir()
	s := e2e.LaunchTUI(t, tmuxPath, dir, e2e.Env(t, dir), "--url", b.URL, "--token-file", e2e.TokenFile(t, b))
	sc := s.WaitFor("three sandboxes", "Sandboxes (3)", "e2e", "keysb", "keysc")
	// the rows in screen order
	var order []string
	for _, l := range e2e.Lines(sc) {
		for _, id := range []string{"e2e", "keysb", "keysc"} {
			if strings.Contains(l, " "+id+" ") || strings.HasSuffix(strings.TrimSpace(l), id) || strings.Contains(l, "▸ "+id) {
				order = append(order, id)
			}
		}
	}
	if len(order) != 3 {
		t.Fatalf("could not read the row order (%v) from:\n%s", order, sc)
	}
	s.Type("jj")
	s.Keys("Enter")
	s.WaitFor("the third sandbox opened", "Sandbox "+order[2])
}

// TestE2EStatusMessageLifetime: a status message shows once, fades, and does not follow the user
// to another screen.
func TestE2EStatusMessageLifetime(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.Keys("a")
	s.WaitFor("the add form", "Add sandboxes by ID")
	s.Type("Bad-ID")
	s.Keys("Enter")
	// a validation error keeps the form open with what was typed
	s.WaitFor("the error in the form", `sandbox ID "Bad-ID": must be 1-128 characters of a-z and 2-7`, "Bad-ID")
	for i := 0; i < 6; i++ {
		s.Keys("BSpace")
	}
	s.Type("keptbox")
	s.Keys("Enter")
	sc := s.WaitFor("the message", "added sandbox keptbox")
	if n := strings.Count(sc, "added sandbox keptbox"); n != 1 {
		t.Fatalf("the message shows %d times:\n%s", n, sc)
	}
	// it fades (6 s for an info)
	s.WaitUntil("the message faded", func(sc string) bool { return !strings.Contains(sc, "added sandbox keptbox") })

	// a message about the sandbox screen stays there (the cursor is on the added sandbox: the
	// filter finds e2e)
	s.Type("/e2e")
	s.WaitFor("the filter", "/e2e")
	s.Keys("Enter")
	s.Keys("Enter")
	s.WaitFor("the sandbox screen", "Sandbox e2e", "Processes (")
	s.Keys("e")
	s.WaitFor("the exec prompt", "Run a process in e2e")
	s.Type("true")
	s.Keys("Enter")
	s.WaitFor("the started message", "started ")
	s.Keys("Escape")
	sc = s.WaitFor("the sandboxes screen", "Sandboxes (")
	if strings.Contains(sc, "started ") {
		t.Fatalf("the sandbox screen's message followed to the sandboxes screen:\n%s", sc)
	}
}

// TestE2EJSONLWrapAndFilter: wrap folds a long JSONL summary onto several rows; in the sandbox
// screen / filters the processes, esc clears the filter first and only then leaves.
func TestE2EJSONLWrapAndFilter(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.OpenSandbox()
	long := strings.Repeat("word ", 50) + "THEEND"
	s.ExecInTUI(`printf '%s\n' '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + long + `"}]}}'`)
	s.WaitFor("the JSON line", `{"type":"assistant"`)
	s.Keys("J")
	s.WaitFor("the JSONL view", "jsonl on", "assistant")
	if sc := s.Screen(); strings.Contains(sc, "THEEND") {
		t.Fatalf("wrap off shows the end of a line wider than the screen:\n%s", sc)
	}
	s.Keys("w")
	s.WaitFor("the wrapped summary", "wrap on", "THEEND")

	s.Keys("Escape")
	s.WaitFor("the sandbox screen", "Sandbox e2e", "Processes (")
	s.Type("/printf")
	s.WaitFor("the filter typed", "/printf", "1 of")
	s.Keys("Enter")
	s.Keys("Escape")
	s.WaitUntil("the filter cleared, still on the sandbox screen", func(sc string) bool {
		return strings.Contains(sc, "Sandbox e2e") && !strings.Contains(sc, "1 of")
	})
	s.Keys("Escape")
	s.WaitFor("the sandboxes screen", "Sandboxes (")
}

// TestE2ELayoutAt80x24: at 80×24 the processes table keeps the command readable, the frame keeps
// its header and key hints, and the LOST detail wraps instead of being cut.
func TestE2ELayoutAt80x24(t *testing.T) {
	s, b, _ := e2e.StartTUI(t)
	s.Resize(80, 24)
	s.WaitFor("the resized frame", "Sandboxes (1)")
	s.Keys("Enter")
	s.WaitFor("the sandbox screen", "Sandbox e2e", "Processes (")
	s.Keys("e")
	s.WaitFor("the exec prompt", "Run a process in e2e")
	s.Type("sh -c 'echo layout-check; sleep 300'")
	s.Keys("Enter")
	// the process's own row says RUNNING (the header says RUNNING of the sandbox, and the status
	// line quotes the command while the request is still on its way: replacing the container then
	// would start the process in the new one)
	sc := s.WaitUntil("the process row", func(sc string) bool {
		for _, l := range e2e.Lines(sc) {
			if strings.Contains(l, "sh -c 'echo layout-check") && strings.Contains(l, "RUNNING") && !strings.Contains(l, "Sandbox e2e") {
				return true
			}
		}
		return false
	})
	ls := e2e.Lines(sc)
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
	s.WaitUntil("the detail, whole", func(sc string) bool {
		return strings.Contains(sc, "incarnation #2") && strings.Contains(sc, "(now #2)") && strings.Contains(sc, "relaunches it here")
	})
}

// TestE2EPaneSizeAfterFullScreenAttach: after a full-screen attach and a detach, the terminal
// shown in the pane has the pane's size again (not the whole screen's), without a resize.
func TestE2EPaneSizeAfterFullScreenAttach(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.OpenSandbox()
	s.Keys("s")
	s.WaitFor("the new-terminal form", "New terminal in e2e", "Size")
	s.Keys("Enter")
	s.WaitFor("the focused pane", "LIVE", "focused (")
	s.Type(`echo "size=$(stty size | tr ' ' x)"`)
	s.Keys("Enter")
	before := s.WaitUntil("the pane's size", func(sc string) bool { return regexp.MustCompile(`size=\d+x\d+`).MatchString(sc) })
	paneSize := regexp.MustCompile(`size=(\d+x\d+)`).FindStringSubmatch(before)[1]
	s.Keys("C-]")
	s.WaitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.Keys("A")
	s.WaitUntil("the full-screen attachment", func(sc string) bool { return !strings.Contains(sc, "sandscope │") })
	s.Type(`echo "full=$(stty size | tr ' ' x)"`)
	s.Keys("Enter")
	s.WaitFor("the full size", "full=48x160")
	s.Keys("C-]")
	s.WaitFor("back in the TUI", "sandscope │", "› terminal")
	s.Keys("Enter")
	s.WaitFor("the pane focused again", "focused (")
	s.Type(`echo "after=$(stty size | tr ' ' x)"`)
	s.Keys("Enter")
	sc := s.WaitUntil("the size after", func(sc string) bool { return regexp.MustCompile(`after=\d+x\d+`).MatchString(sc) })
	if got := regexp.MustCompile(`after=(\d+x\d+)`).FindStringSubmatch(sc)[1]; got != paneSize {
		t.Fatalf("after the attachment the terminal is %s, the pane %s:\n%s", got, paneSize, sc)
	}
}
