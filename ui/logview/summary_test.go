package logview

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"sandscope/client"
)

// TestManySourcesStatusSummarised: with more sources than fit the line one by one (follow-all of
// a busy sandbox), the status line says how many are in each state instead of being cut.
func TestManySourcesStatusSummarised(t *testing.T) {
	var ts = make([]string, 0, 22)
	for i := range 22 {
		ts = append(ts, fmt.Sprintf("p%02d", i))
	}
	tg := target(ts[0], "worker")
	m, _ := newView(t, tg)
	for _, id := range ts[1:] {
		m.sources = append(m.sources, &source{target: target(id, "worker"), name: id})
	}
	for i := range m.sources {
		m.sources[i].state = Live
	}
	m.sources[3].state, m.sources[4].state = Ended, Lost
	feed(m, 0, data(0, client.Stdout, "a1", "up\n"))
	line := statusLine(m)
	plain := ansi.Strip(line)
	for _, w := range []string{"22 sources:", "1 LOST", "20 LIVE", "1 ENDED", "in all"} {
		if !strings.Contains(plain, w) {
			t.Fatalf("summary lacks %q: %q", w, plain)
		}
	}
	if strings.Contains(plain, "…") || ansi.StringWidth(strings.TrimRight(plain, " ")) > 100 {
		t.Fatalf("the summary is cut: %q", plain)
	}
}
