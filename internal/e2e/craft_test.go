package e2e_test

// End-to-end checks that help, tables and the log search show what the keys and rows do.

import (
	"regexp"
	"strings"
	"testing"

	"sandscope/internal/e2e"
)

// helpBox returns the lines of the help box on screen (from its top border to its bottom one),
// or nil when either border is missing.
func helpBox(sc string) []string {
	ls := e2e.Lines(sc)
	top, bottom := -1, -1
	for i, l := range ls {
		if top < 0 && strings.Contains(l, "╭") && strings.Contains(l, "╮") {
			top = i
		}
		if top >= 0 && strings.Contains(l, "╰") && strings.Contains(l, "╯") {
			bottom = i
			break
		}
	}
	if top < 0 || bottom < 0 {
		return nil
	}
	return ls[top : bottom+1]
}

// TestE2EHelpAt80x24 opens help at 80×24 on the Processes and Terminals tabs: the box is whole
// (both borders, every side), it says it scrolls, the moving keys scroll it, and the report key,
// which works on the sandbox screen, is in it.
func TestE2EHelpAt80x24(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.Resize(80, 24)
	s.WaitFor("the resized frame", "Sandboxes (1)")
	s.OpenSandbox()
	for _, tab := range []string{"Processes", "Terminals"} {
		if tab == "Terminals" {
			s.Keys("Tab")
			s.WaitFor("the Terminals tab", "[Terminals")
		}
		s.Keys("?")
		// A capture can land while the frame is still being written, so wait for both borders
		// rather than judging the first capture that shows the title.
		sc := s.WaitUntil("the whole help box on "+tab, func(sc string) bool {
			return strings.Contains(sc, "Keys · ? or esc closes") && strings.Contains(sc, "scroll · 1–") && helpBox(sc) != nil
		})
		box := helpBox(sc)
		for _, l := range box[1 : len(box)-1] {
			if strings.Count(l, "│") < 2 {
				t.Fatalf("%s: a help line lost a side of the box: %q\n%s", tab, l, sc)
			}
		}
		s.Keys("G")
		sc = s.WaitUntil("help scrolled to its end on "+tab, func(sc string) bool {
			return helpBox(sc) != nil && strings.Contains(sc, "q quit") && !strings.Contains(sc, "scroll · 1–")
		})
		end := strings.Join(helpBox(sc), "\n")
		s.Keys("g")
		start := strings.Join(helpBox(s.WaitFor("help back at its top", "scroll · 1–")), "\n")
		if !strings.Contains(start+end, "write triage report") {
			t.Errorf("%s: help lacks the report key:\n%s\n%s", tab, start, end)
		}
		for _, w := range []string{start, end} {
			if strings.Count(w, "select for multi-follow") > 1 {
				t.Errorf("%s: select listed twice:\n%s", tab, w)
			}
		}
		s.Keys("Escape")
		s.WaitUntil("help closed", func(sc string) bool { return !strings.Contains(sc, "Keys · ? or esc closes") })
	}
}

// TestE2EProcessesFilterOnStateWords: after a container replacement, /STALE on the Processes tab
// keeps the stale row and /lost (no LOST row) keeps none: the filter looks in the STATE column as
// shown, in any case.
func TestE2EProcessesFilterOnStateWords(t *testing.T) {
	s, b, _ := e2e.StartTUI(t)
	s.OpenSandbox()
	if err := b.Server.ReplaceSandbox("e2e"); err != nil {
		t.Fatal(err)
	}
	s.WaitFor("the old process stale", "STALE #1")
	s.Keys("/")
	s.Type("stale")
	s.Keys("Enter")
	s.WaitFor("the filter kept the STALE row", `filter "stale": 1 of 1`, "STALE #1")
	s.Keys("Escape")
	s.Keys("/")
	s.Type("EXITED 0")
	s.Keys("Enter")
	s.WaitFor("the filter on the state word", `filter "EXITED 0": 1 of 1`)
}

// TestE2EAllRunsColumnsAt120: on the all-runs screen at 120 columns, OUTPUT and STREAM show
// their cells whole (COMMAND takes what is left, not their room).
func TestE2EAllRunsColumnsAt120(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.Resize(120, 40)
	s.OpenSandbox()
	s.Keys("e")
	s.WaitFor("the exec prompt", "Run a process in e2e")
	s.Type("sh -c 'echo a long command line that would gladly take every column there is; sleep 300'")
	s.Keys("Enter")
	s.WaitFor("the process row", "RUNNING")
	s.Keys("W")
	sc := s.WaitUntil("the run with its output age", func(sc string) bool {
		return strings.Contains(sc, "All runs") && regexp.MustCompile(`\d+s ago`).MatchString(sc)
	})
	var row, head string
	for _, l := range e2e.Lines(sc) {
		if strings.Contains(l, "OUTPUT") && strings.Contains(l, "STREAM") {
			head = l
		}
		if strings.Contains(l, "gladly") && strings.Contains(l, "RUNNING") {
			row = l
		}
	}
	if head == "" || row == "" {
		t.Fatalf("no OUTPUT and STREAM columns or no row:\n%s", sc)
	}
	if m := regexp.MustCompile(`\d+s ago +\S`).FindString(row); m == "" {
		t.Fatalf("OUTPUT cut (want \"Ns ago\" whole, then STREAM): %q\n%s", row, sc)
	}
	if strings.HasSuffix(strings.TrimSpace(row), "…") {
		t.Fatalf("STREAM cut: %q\n%s", row, sc)
	}
}

// TestE2ENextMatchTypedTogether: nnn in one write in the log view moves three matches, as three
// separate presses do.
func TestE2ENextMatchTypedTogether(t *testing.T) {
	s, _, _ := e2e.StartTUI(t)
	s.OpenSandbox()
	s.ExecInTUI(`sh -c 'i=0; while [ $i -lt 200 ]; do if [ $((i%20)) -eq 0 ]; then echo "row $i hit"; else echo "row $i"; fi; i=$((i+1)); done; sleep 300'`)
	s.WaitFor("the whole output", "row 199")
	first := regexp.MustCompile(`row (\d+)`)
	top := func(sc string) string {
		if m := first.FindStringSubmatch(sc); m != nil {
			return m[1]
		}
		return ""
	}
	s.Keys("g")
	s.WaitUntil("the top", func(sc string) bool { return top(sc) == "0" })
	s.Keys("/")
	s.Type("hit")
	s.Keys("Enter")
	s.Type("nnn") // one write: Bubble Tea reads it as one message of three runes
	// the fourth hit (row 60) sits a third of the way down: the top row moves past row 40
	sc := s.WaitUntil("three matches on", func(sc string) bool {
		n := top(sc)
		return n != "" && n != "0" && len(n) >= 2 && n[0] >= '4'
	})
	if !strings.Contains(sc, "row 60 hit") || strings.Contains(sc, "row 19\n") {
		t.Fatalf("nnn did not land on the fourth hit:\n%s", sc)
	}
}
