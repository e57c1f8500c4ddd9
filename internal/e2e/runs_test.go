package e2e_test

// End-to-end all-runs screen: the real binary in tmux on a bridge with three sandboxes and thirty
// processes; one sandbox's container is replaced while sandscope watches from the Sandboxes
// screen; the all-runs screen (one key) lists every run, is filtered to the LOST ones, and enter
// opens a LOST run's log from what the record kept.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
)

func TestE2EAllRunsFilterLostAndJump(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	b, c := e2e.Bridge(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// e2e's own process is one of the thirty: nine more there, ten in each of the others
	running := map[string]int{}
	var ending [][2]string // sandbox and process ID of the runs that exit at once
	for _, sb := range []string{"e2e", "gamma", "omega"} {
		n := 10
		if sb == "e2e" {
			n = 9
		}
		for i := 0; i < n; i++ {
			argv := []string{"sh", "-c", fmt.Sprintf("echo started %s-%d; sleep 600", sb, i)}
			if i%3 == 0 {
				argv = []string{"sh", "-c", fmt.Sprintf("echo ran %s-%d; exit 3", sb, i)}
			} else {
				running[sb]++
			}
			p, err := c.StartProcess(ctx, sb, client.ExecRequest{Argv: argv})
			if err != nil {
				t.Fatalf("start %s #%d: %v", sb, i, err)
			}
			if i%3 == 0 {
				ending = append(ending, [2]string{sb, p.ID})
			}
		}
	}
	// the runs that exit have ended before gamma's replacement, however slow the machine: one
	// still running then would rightly be LOST with the others
	for _, e := range ending {
		e2e.WaitEnded(t, c, e[0], e[1])
	}
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	// background sandboxes polled every second: the replacement shows within seconds
	if err := os.WriteFile(filepath.Join(dir, "config", "sandscope", "config.yaml"), []byte("pollSlow: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := e2e.LaunchTUI(t, tmuxPath, dir, env, "--url", b.URL, "--token-file", e2e.TokenFile(t, b))
	s.WaitFor("the sandboxes screen", "Sandboxes (3)", "e2e", "gamma", "omega")

	s.Keys("W")
	s.WaitFor("every run of every sandbox", "All runs (30)", "3 sandboxes", "sleep 600")
	s.CheckFrame(s.Screen())

	// another client replaces gamma's container while sandscope watches
	if err := b.Server.ReplaceSandbox("gamma"); err != nil {
		t.Fatal(err)
	}
	lostRow := regexp.MustCompile(`(?m)^[> ] LOST\s+gamma\s`)
	s.WaitUntil("gamma's running processes LOST", func(sc string) bool {
		return len(lostRow.FindAllString(sc, -1)) == running["gamma"]
	})

	// filter to LOST
	s.Keys("/")
	s.Type("LOST")
	s.Keys("Enter")
	sc := s.WaitFor("the LOST runs only", fmt.Sprintf(`filter "LOST": %d of 30`, running["gamma"]))
	rows := 0
	for _, l := range e2e.Lines(sc) {
		// table rows only (the status area may tell of a LOST run with its command)
		if (strings.HasPrefix(l, "> ") || strings.HasPrefix(l, "  ")) && (strings.Contains(l, "sleep 600") || strings.Contains(l, "exit 3")) {
			rows++
			if !lostRow.MatchString(l) {
				t.Errorf("a row that is not a LOST run of gamma passes the filter: %q", l)
			}
		}
	}
	if rows != running["gamma"] {
		t.Fatalf("%d rows shown, want %d:\n%s", rows, running["gamma"], sc)
	}
	s.CheckFrame(sc)

	// jump into the log
	s.Keys("Enter")
	sc = s.WaitFor("the LOST run's log", "Logs · gamma", "(LOST)")
	sc = s.WaitUntil("the log's captured output and LOST marker, or the plain no-capture line", func(sc string) bool {
		return strings.Contains(sc, "LOST: the process is gone") || strings.Contains(sc, "no output was captured")
	})
	if strings.Contains(sc, "FOLLOW FAILED") {
		t.Fatalf("a LOST log shows FOLLOW FAILED:\n%s", sc)
	}
	if strings.Contains(sc, "CAPTURE BEGAN") && !strings.Contains(sc, "started gamma-") {
		t.Fatalf("capture began but the process's output is missing:\n%s", sc)
	}
	s.CheckFrame(sc)

	// esc comes back to the filtered list; the attention key narrows to LOST and STALE runs
	s.Keys("Escape")
	s.WaitFor("the list again", fmt.Sprintf(`filter "LOST": %d of 30`, running["gamma"]))
	s.Keys("Escape")
	// (the next key waits for the screen: an escape followed at once by a key reads as alt+key)
	s.WaitUntil("the filter cleared", func(sc string) bool {
		return strings.Contains(sc, "All runs (30)") && !strings.Contains(sc, `filter "LOST"`)
	})
	s.Keys("!")
	s.WaitFor("the runs needing attention", fmt.Sprintf("Runs needing attention (%d of 30)", 10))
}
