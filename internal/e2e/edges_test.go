package e2e_test

// End-to-end checks of the smaller edges: the create prompt, a status message under a later
// dialog, the processes table's headers at 160 columns, a terminal's notification, bridge errors in
// the bridge panel and the Terminals tab, closing the terminal window, and commands with control
// characters in `ls`.

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/faultproxy"
	"sandscope/internal/e2e"
)

// TestE2ECreateAsksForAName: c offers a name (checked as add-by-ID checks it), an empty one gets a
// random ID from the bridge, and the message of the last action does not stay under the next
// dialog.
func TestE2ECreateAsksForAName(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.Keys("c")
	s.WaitFor("the create prompt", "Create a sandbox", "leave it empty for a")
	s.Type("Bad-ID")
	s.Keys("Enter")
	s.WaitFor("the error in the form", `sandbox ID "Bad-ID": must be 1-128 characters of a-z and 2-7`)
	for range "Bad-ID" {
		s.Keys("BSpace")
	}
	s.Type("namedbox")
	s.Keys("Enter")
	s.WaitFor("the named sandbox", "created sandbox namedbox", "Sandboxes (2)")
	// the next dialog opens without the message under it
	s.Keys("c")
	sc := s.WaitFor("the create prompt again", "Create a sandbox")
	if strings.Contains(sc, "created sandbox namedbox") {
		t.Fatalf("the last message stays under the dialog:\n%s", sc)
	}
	s.Keys("Enter") // empty: a random ID
	s.WaitFor("a random sandbox", "Sandboxes (3)", "created sandbox ")
}

// TestE2ETerminalNotificationAndHeaders: at 160 columns the processes table's last header is a
// whole word; enter on a terminal's notification opens the Terminals tab on that terminal.
func TestE2ETerminalNotificationAndHeaders(t *testing.T) {
	s, _, c := e2e.StartTUI(t)
	s.OpenSandbox()
	sc := s.WaitFor("the processes table", "STARTED")
	for _, l := range e2e.Lines(sc) {
		if strings.Contains(l, "STARTED") && !strings.HasSuffix(strings.TrimRight(l, " "), "RUNTIME") {
			t.Fatalf("the last header is cut: %q", l)
		}
	}
	s.Keys("Escape")
	s.WaitFor("the sandboxes screen", "Sandboxes (")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for _, argv := range [][]string{{"sleep", "300"}, {"sh", "-c", "sleep 2; exit 3"}} {
		tm, err := c.CreateTerminal(ctx, "e2e", client.TerminalRequest{Argv: argv})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tm.ID)
	}
	s.WaitFor("the terminal's notification", "M 1 new")
	s.Keys("M")
	s.WaitFor("the list", "Notifications (1)")
	s.Keys("Enter")
	sc = s.WaitFor("the Terminals tab", "Sandbox e2e", "[Terminals (2)]")
	for _, l := range e2e.Lines(sc) {
		if strings.HasPrefix(l, "> ") && !strings.Contains(l, ids[1][:8]) {
			t.Fatalf("the cursor is not on the terminal of the notification (%s): %q\n%s", ids[1], l, sc)
		}
	}
}

// TestE2EBridgeErrorsShown: a pool call and a terminal list that fail are shown, classified and
// with what to do, in the bridge panel and on the Terminals tab.
func TestE2EBridgeErrorsShown(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	b, _ := e2e.Bridge(t)
	fp := faultproxy.New(b.URL)
	t.Cleanup(fp.Close)
	fp.Add(faultproxy.Rule{Path: "/v1/pool/stats", Fault: faultproxy.InternalError()})
	dir := t.TempDir()
	s := e2e.LaunchTUI(t, tmuxPath, dir, e2e.Env(t, dir), "--url", fp.URL(), "--token-file", e2e.TokenFile(t, b))
	s.WaitFor("the sandboxes screen", "Sandboxes (1)", "e2e")
	s.Keys("B")
	s.WaitFor("the panel's error", "pool stats: bridge answered 500", "What to do:", "tries again")
	s.Keys("Escape")
	fp.Add(faultproxy.Rule{Path: "/terminals", Method: http.MethodGet, Fault: faultproxy.InternalError()})
	s.Keys("Enter")
	s.WaitFor("the sandbox screen", "Sandbox e2e")
	s.Keys("Tab")
	s.WaitFor("the tab's error", "[Terminals (0)]", "cannot list terminals", "what to do:")
}

// TestE2EClosedTerminalWindowSaysSo: SIGHUP (the terminal window closed) ends the TUI saying the
// terminal went away, not "program was killed: context canceled".
func TestE2EClosedTerminalWindowSaysSo(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	b, _ := e2e.Bridge(t)
	dir := t.TempDir()
	stderr := filepath.Join(dir, "stderr")
	s := e2e.LaunchTUI(t, tmuxPath, dir, e2e.Env(t, dir), "--url", b.URL, "--token-file", e2e.TokenFile(t, b))
	s.WaitFor("the sandboxes screen", "Sandboxes (1)")
	// again, its own stderr kept in a file (a closed window has nowhere to show it)
	s.Respawn(s.Command("--url", b.URL, "--token-file", e2e.TokenFile(t, b)) + " 2>" + stderr)
	s.WaitFor("the sandboxes screen", "Sandboxes (1)")
	if err := syscall.Kill(s.PID, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(e2e.Wait)
	for e2e.Alive(s.PID) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	out, err := os.ReadFile(stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "the terminal went away (SIGHUP)") || strings.Contains(string(out), "program was killed") {
		t.Fatalf("stderr: %q", out)
	}
}

// TestLsShowsControlCharactersAsTheTUIDoes: a newline in a command is "^J" in `ls`, as on every
// screen (not "\x0a").
func TestLsShowsControlCharactersAsTheTUIDoes(t *testing.T) {
	b, flags := e2e.BridgeArgs(t)
	e2e.StartProc(t, b, "sh", "-c", "echo a\necho b; sleep 10")
	r := e2e.Run(t, nil, append(flags, "ls", "local")...)
	out := string(r.Stdout)
	if r.Code != 0 || !strings.Contains(out, `'echo a^Jecho b; sleep 10'`) || strings.Contains(out, `\x0a`) {
		t.Fatalf("exit %d:\n%s", r.Code, out)
	}
}
