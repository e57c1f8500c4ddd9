package e2e_test

// End-to-end tests of the TUI: the real sandscope binary in tmux, pointed at a local bridge the
// test controls (--url and --token-file), driven with send-keys and read back with capture-pane the
// way a person would look at it. The test replaces the sandbox's container "from another client"
// (the bridge's own ReplaceSandbox) while the TUI watches.
//
// Every wait is a poll with a generous deadline (a guard against hangs on a loaded machine, never a
// timing assertion). Without tmux the tests skip, or fail when CI is set.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandscope/internal/e2e"
)

var numbered = regexp.MustCompile(`\bn=(\d+)\b`)

// TestE2ETUILogLostMidStream follows a process in the log view, replaces the container under it,
// and checks that the screen says LOST (log, process list, incarnation timeline) and that what the
// log shows is exactly what the process printed, in order, once, with nothing after the marker.
func TestE2ETUILogLostMidStream(t *testing.T) {
	s, b, _ := e2e.StartTUI(t)
	out := filepath.Join(t.TempDir(), "printed")
	s.OpenSandbox()
	// each line goes to stdout and, as a witness of what was really printed, to a file
	s.ExecInTUI(fmt.Sprintf(`sh -c 'i=0; while [ $i -lt 600 ]; do i=$((i+1)); echo "n=$i"; echo "n=$i" >> %s; sleep 0.1; done'`, out))
	s.WaitFor("live numbered lines, more than a page of them", "n=60", "LIVE")

	if err := b.Server.ReplaceSandbox("e2e"); err != nil {
		t.Fatal(err)
	}
	sc := s.WaitFor("the loss in the log view", "LOST")
	s.CheckFrame(sc)
	// the printed witness stops growing once the process is gone with its container
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	printed := map[int]bool{}
	maxPrinted := 0
	for _, m := range numbered.FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[1])
		printed[n] = true
		maxPrinted = max(maxPrinted, n)
	}
	if maxPrinted == 0 || maxPrinted >= 600 {
		t.Fatalf("the process printed up to n=%d; want it cut by the replacement", maxPrinted)
	}

	// Scroll to the top, then read the whole log page by page: every numbered line the process
	// printed, in order, once; the loss marker after the last of them.
	s.Keys("g")
	s.WaitUntil("the log scrolled to the top", func(sc string) bool { return strings.Contains(sc, "n=1\n") || strings.Contains(sc, "n=1 ") })
	var shown []int
	marker := -1
	seenRows := map[string]bool{}
	for page := 0; page < 100; page++ {
		sc := s.Screen()
		rows := e2e.Lines(sc)
		for _, r := range rows[2 : len(rows)-4] { // header and title; status, mode and hint rows
			key := strings.TrimSpace(r)
			if key == "" {
				continue
			}
			if m := numbered.FindStringSubmatch(r); m != nil && !strings.Contains(r, "LOST") {
				if seenRows[key] {
					continue // a row seen on the previous page (pages overlap at their edges)
				}
				seenRows[key] = true
				n, _ := strconv.Atoi(m[1])
				shown = append(shown, n)
				continue
			}
			if strings.Contains(r, "LOST") && marker < 0 {
				marker = len(shown)
			}
		}
		if marker >= 0 {
			break
		}
		s.Keys("PageDown")
		time.Sleep(200 * time.Millisecond)
	}
	if marker < 0 {
		t.Fatalf("no LOST marker in the log; shown %v", shown)
	}
	if len(shown) == 0 {
		t.Fatal("no numbered lines shown")
	}
	for i, n := range shown {
		if !printed[n] {
			t.Errorf("the log shows n=%d, which the process never printed", n)
		}
		if n != i+1 {
			t.Fatalf("line %d of the log is n=%d: lines missing, repeated or out of order: %v", i, n, shown)
		}
	}
	if marker != len(shown) {
		t.Errorf("numbered lines after the LOST marker (marker after %d of %d lines)", marker, len(shown))
	}
	t.Logf("the log shows n=1…%d, then the LOST marker", len(shown))
	// the bottom of the log: nothing numbered below the marker
	s.Keys("G")
	time.Sleep(300 * time.Millisecond)
	rows := e2e.Lines(s.Screen())
	after := false
	for _, r := range rows[2 : len(rows)-4] {
		if strings.Contains(r, "LOST") {
			after = true
		} else if after && numbered.MatchString(r) {
			t.Errorf("a numbered line below the LOST marker: %q", r)
		}
	}
	if !after {
		t.Errorf("the bottom of the log lacks the LOST marker:\n%s", strings.Join(rows, "\n"))
	}
	if len(shown) != maxPrinted {
		t.Logf("the log shows n=1…%d; the process printed up to n=%d before it was lost (the rest never reached the bridge's log)", len(shown), maxPrinted)
	}

	// The sandbox screen: the sandbox runs incarnation #2, the process stays listed with its
	// incarnation and last known state, and the timeline shows both incarnations.
	s.Keys("Escape")
	// (LOST when the watcher saw it vanish, STALE #1 · was RUNNING when it saw the new
	// container first: both keep the process listed with what was last known)
	s.WaitUntil("the lost process in the list", func(sc string) bool {
		return strings.Contains(sc, "Sandbox e2e") && strings.Contains(sc, "incarnation #2") &&
			(strings.Contains(sc, "LOST ") || strings.Contains(sc, "STALE #1 · was RUNNING"))
	})
	s.Keys("Tab")
	s.Keys("Tab")
	sc = s.WaitFor("the incarnation timeline", "[Incarnations (2)]", "#1", "#2")
	s.CheckFrame(sc)
}

// TestE2ETUIHostileOutput prints title, clipboard and cursor-movement sequences: tmux's pane title
// and paste buffers stay as they were, sandscope's frame stays in place, and the sequences show
// as visible text in the log.
func TestE2ETUIHostileOutput(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	title := s.Display("#{pane_title}")
	buffers := s.Must("list-buffers")
	s.OpenSandbox()
	s.ExecInTUI(`sh -c 'printf "start\033]2;PWNED\007mid\033]52;c;cHduZWQ=\007\033[2J\033[H\033[10;10H\033[?1049hend\n"; echo done-marker; sleep 600'`)
	// the title row quotes the command; the log rows start with what the process printed
	logRow := func(sc, prefix string) int {
		for i, r := range e2e.Lines(sc) {
			if strings.HasPrefix(strings.TrimSpace(r), prefix) {
				return i
			}
		}
		return -1
	}
	sc := s.WaitUntil("the hostile line in the log", func(sc string) bool {
		return logRow(sc, "start") > 0 && logRow(sc, "done-marker") > 0
	})
	s.CheckFrame(sc)
	if got := s.Display("#{pane_title}"); got != title || strings.Contains(got, "PWNED") {
		t.Errorf("the pane title changed from %q to %q", title, got)
	}
	if got := s.Must("list-buffers"); got != buffers {
		t.Errorf("tmux paste buffers changed: %q (was %q)", got, buffers)
	}
	// the sequences are removed or made visible: the text stays on the line it was printed on, in
	// order, at the log's left edge, and the next line follows it
	rows := e2e.Lines(sc)
	at := logRow(sc, "start")
	if at < 0 || at+1 >= len(rows) {
		t.Fatalf("no hostile line:\n%s", sc)
	}
	line := rows[at]
	i, j, k := strings.Index(line, "start"), strings.Index(line, "mid"), strings.Index(line, "end")
	if !(i >= 0 && i < j && j < k) || strings.TrimSpace(line[:i]) != "" {
		t.Errorf("the hostile line was not kept in place and in order: %q", line)
	}
	if !strings.Contains(rows[at+1], "done-marker") {
		t.Errorf("the next line moved: %q after %q", rows[at+1], line)
	}
	// -e keeps colour sequences: anything else from the process (titles, clipboard, cursor
	// moves) must not reach tmux either
	raw := s.ScreenEscapes()
	for _, bad := range []string{"\x1b]", "\x1b[2J", "\x1b[10;10H", "\x1b[?1049h", "\x07"} {
		if strings.Contains(raw, bad) {
			t.Errorf("the screen holds %q", bad)
		}
	}
	// the log's own status row stays above the mode and hint rows
	if st := rows[len(rows)-4]; !strings.Contains(st, "LIVE") && !strings.Contains(st, "QUIET") {
		t.Errorf("the log status row moved (%q):\n%s", st, sc)
	}
	// a frame later, still intact
	time.Sleep(500 * time.Millisecond)
	s.CheckFrame(s.Screen())
}

// TestE2ETUITerminalPaneAndAttach opens a terminal in the embedded pane, runs a command in it,
// leaves focus, attaches full screen and detaches back to the same screen, then replaces the
// container under the open pane: LOST.
func TestE2ETUITerminalPaneAndAttach(t *testing.T) {
	s, b, _ := e2e.StartTUI(t)
	s.OpenSandbox()
	s.Keys("s")
	s.WaitFor("the new-terminal form", "New terminal in e2e", "Size")
	s.Keys("Enter")
	s.WaitFor("the focused pane", "▌term ", "LIVE", "focused (")
	s.Type("echo hi-$((6*7))")
	s.Keys("Enter")
	sc := s.WaitFor("the command's output in the pane", "hi-42")
	s.CheckFrame(sc)

	// The leave key gives the keyboard back: ? opens sandscope's help instead of typing.
	s.Keys("C-]")
	s.WaitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.Keys("?")
	s.WaitFor("the help overlay over the pane", "Keys ·", "attach full screen")
	s.Keys("Escape")
	s.WaitUntil("the help closed", func(sc string) bool { return !strings.Contains(sc, "Keys ·") })

	// Full-screen attach and back.
	s.Keys("A")
	s.WaitUntil("the full-screen attachment", func(sc string) bool { return !strings.Contains(sc, "sandscope │") })
	s.Type("echo att-$((5*5))")
	s.Keys("Enter")
	s.WaitFor("the command's output attached", "att-25")
	s.Keys("C-]")
	sc = s.WaitFor("back in the TUI on the same screen", "sandscope │", "› terminal", "▌term ", "detached from terminal")
	s.CheckFrame(sc)

	// Interrupt reaches the terminal's program: its INT trap prints the (computed) proof.
	s.Keys("Enter")
	s.WaitFor("the pane focused again", "focused (")
	s.Type(`sh -c 'trap "echo int-\$((2*4)); exit 0" INT; echo trap-set; while :; do sleep 1; done'`)
	s.Keys("Enter")
	s.WaitUntil("the trap set", func(sc string) bool {
		for _, r := range e2e.Lines(sc) {
			if strings.TrimSpace(r) == "trap-set" {
				return true
			}
		}
		return false
	})
	s.Keys("C-]")
	s.WaitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.Keys("i")
	s.WaitFor("the interrupt and the program's answer", "sent SIGINT to terminal", "int-8")

	// The container goes away under the open pane.
	if err := b.Server.ReplaceSandbox("e2e"); err != nil {
		t.Fatal(err)
	}
	sc = s.WaitFor("the pane's terminal lost", "LOST")
	s.CheckFrame(sc)
	s.Keys("Escape")
	s.WaitFor("the sandbox screen", "Sandbox e2e", "incarnation #2")

	// A new terminal in the new container, ended from the pane: T asks how, saying what terminate
	// does to a shell; ctrl-D (the default) makes bash at its prompt exit by itself: EXITED 0.
	s.Keys("s")
	s.WaitFor("the new-terminal form", "New terminal in e2e")
	s.Keys("Enter")
	s.WaitFor("the focused pane", "▌term ", "LIVE", "focused (")
	s.Keys("C-]")
	s.WaitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.Keys("T")
	s.WaitFor("the end dialog", "End terminal", "ctrl-D (end of input)", "KILLED KILL")
	s.Keys("Enter")
	sc = s.WaitUntil("the terminal ended by ctrl-D", func(sc string) bool {
		return strings.Contains(sc, "sent ctrl-D") && strings.Contains(sc, "EXITED 0")
	})
	s.CheckFrame(sc)

	// Another, ended with terminate: an interactive bash ignores TERM, so the KILL ends it.
	s.Keys("Escape")
	s.WaitFor("the sandbox screen", "Sandbox e2e")
	s.Keys("s")
	s.WaitFor("the new-terminal form", "New terminal in e2e")
	s.Keys("Enter")
	s.WaitFor("the focused pane", "▌term ", "LIVE", "focused (")
	s.Keys("C-]")
	s.WaitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.Keys("T")
	s.WaitFor("the end dialog", "End terminal")
	s.Keys("Down", "Enter")
	sc = s.WaitUntil("the terminated terminal", func(sc string) bool {
		return strings.Contains(sc, "terminating terminal") && strings.Contains(sc, "KILLED KILL")
	})
	s.CheckFrame(sc)
}

// TestE2ETUIQuitEndsProcess checks that q (confirmed while a watcher is attached) ends sandscope:
// nothing is left running.
func TestE2ETUIQuitEndsProcess(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.OpenSandbox()
	s.Keys("q")
	s.WaitFor("the quit confirmation", "Quit sandscope?")
	deadline := time.Now().Add(e2e.Wait)
	for e2e.Alive(s.PID) {
		if time.Now().After(deadline) {
			t.Fatalf("sandscope still runs after q:\n%s", s.Screen())
		}
		// the pane (and the tmux server) close with the program: capturing may fail then
		if sc, err := s.Run("capture-pane", "-p", "-t", "tui"); err == nil && strings.Contains(sc, "Quit sandscope?") {
			_, _ = s.Run("send-keys", "-t", "tui", "y")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestE2ETUIFirstRunDeclinedAndContexts opens the TUI as `go run .` does (embedded bridge, fresh
// state): the demo is offered, n declines it for good; C switches to a context from the config
// file (another bridge) and back to the embedded one; a second run does not offer the demo again.
func TestE2ETUIFirstRunDeclinedAndContexts(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	b, _ := e2e.Bridge(t)
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	cfg := fmt.Sprintf("contexts:\n  - name: other\n    url: %s\n    tokenFile: %s\n", b.URL, e2e.TokenFile(t, b))
	if err := os.WriteFile(filepath.Join(dir, "config", "sandscope", "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := e2e.LaunchTUI(t, tmuxPath, dir, env)
	s.WaitFor("the first-run offer", "(embedded)", "Welcome to sandscope", "Start the demo scene?")
	s.Keys("n")
	sc := s.WaitUntil("the offer gone", func(sc string) bool { return !strings.Contains(sc, "Welcome to sandscope") })
	if !strings.Contains(sc, "Sandboxes (0)") {
		t.Fatalf("n started something:\n%s", sc)
	}

	s.Keys("C")
	s.WaitFor("the context picker", "Switch context", "other", "local (embedded) (current)")
	s.Keys("Up")
	s.Keys("Enter")
	sc = s.WaitFor("the other bridge", "context other", "switched to context other", "Sandboxes (1)", "e2e")
	if strings.Contains(sc, "(embedded)") {
		t.Errorf("the header still names the embedded bridge:\n%s", sc)
	}
	s.CheckFrame(sc)
	s.Keys("C")
	s.WaitFor("the context picker", "Switch context", "other (current)")
	s.Keys("Down")
	s.Keys("Enter")
	s.WaitFor("the embedded bridge again", "(embedded)", "Sandboxes (0)")

	s.Keys("q")
	deadline := time.Now().Add(e2e.Wait)
	for e2e.Alive(s.PID) {
		if time.Now().After(deadline) {
			t.Fatalf("sandscope did not quit:\n%s", s.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Relaunch()
	sc = s.WaitFor("the second run", "(embedded)", "Sandboxes (")
	if strings.Contains(sc, "Welcome to sandscope") {
		t.Errorf("the demo was offered again after n:\n%s", sc)
	}
}
