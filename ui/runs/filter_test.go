package runs

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/internal/uitest"
)

// filterScene is watchedScene with a sandbox of runs whose commands mix case and runes whose
// lower case is longer or shorter than they are, and repeat what the filters below look for.
func filterScene(t *testing.T) *Model {
	t.Helper()
	ctx, rec := watchedScene(t)
	inc := client.Incarnation{Number: 1}
	sb := "unicode"
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: sb, Time: uitest.T0.Add(-time.Hour), Incarnation: inc}))
	argvs := [][]string{{"ÉCHO", "Straße", "STRASSE"}, {"grep", "-i", "İstanbul"}, {"echo", "\u212aelvin", "KELVIN"}, {"日本語", "テスト"},
		{"job", "job", "jobjob"}, {"Agent", "--TASK", "fix ÉÉé"}}
	for j, argv := range argvs {
		p := &client.Process{ID: fmt.Sprintf("Uni-%d-ẞ", j), PID: 40 + j, Command: argv, State: "running",
			StartedAt: uitest.T0.Add(-time.Duration(50-j) * time.Minute), Incarnation: 1}
		if j%2 == 1 {
			p.State, p.Exit = "exited", &client.Exit{Code: j}
		}
		rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: sb, Time: p.StartedAt, Incarnation: inc, Process: p}))
	}
	ctx.Watch.Track(sb)
	return readAllNow(ctx, 200, 24)
}

// refShown is what a filter shows, worked out plainly: every run whose cells as formatted now,
// kind and whole ID contain the filter, case aside, in the order of sort (by, desc).
func refShown(m *Model, filter, by string, desc bool) []string {
	now := m.ctx.Clock()
	f := strings.ToLower(filter)
	var shown []*row
	for r := range m.all.Read() {
		text := strings.Join(cells(r, now), " ") + " " + string(r.e.Kind) + " " + r.e.ID
		if strings.Contains(strings.ToLower(text), f) {
			shown = append(shown, r)
		}
	}
	var less func(a, b *row) bool
	switch by {
	case "state":
		less = func(a, b *row) bool {
			if rank(a) != rank(b) {
				return rank(a) < rank(b)
			}
			return a.started.After(b.started)
		}
	case "age":
		less = func(a, b *row) bool { return a.started.After(b.started) }
	case "sandbox":
		less = func(a, b *row) bool {
			if a.sandbox != b.sandbox {
				return a.sandbox < b.sandbox
			}
			return a.started.Before(b.started)
		}
	}
	switch {
	case less != nil:
		sort.SliceStable(shown, func(i, j int) bool {
			if desc {
				return less(shown[j], shown[i])
			}
			return less(shown[i], shown[j])
		})
	case desc:
		slices.Reverse(shown)
	}
	keys := make([]string, len(shown))
	for i, r := range shown {
		keys[i] = rowKey(r)
	}
	return keys
}

// screenShown is the runs the screen shows, in order (read by moving the cursor, then put back).
func screenShown(m *Model) []string {
	n, cur := m.list.Len(), m.list.Position()
	keys := make([]string, 0, n)
	m.list.Move(-n)
	for p := 0; p < n; p++ {
		keys = append(keys, rowKey(m.rowAt(m.list.Cursor())))
		m.list.Move(1)
	}
	m.list.Move(-n)
	m.list.Move(cur)
	return keys
}

// TestFilterShowsWhatAPlainMatchShows: filters typed a key at a time (further, erased back,
// replaced, empty), in every order the screen sorts by and reversed, show exactly the runs whose
// row, kind and ID contain the filter case aside, in that order; unicode and case included.
func TestFilterShowsWhatAPlainMatchShows(t *testing.T) {
	m := filterScene(t)
	typed := []string{"job", "JOB 1", "job", "", "é", "ÉÉ", "straße", "STRASSE", "ẞ", "i̇stanbul", "İSTANBUL", "kelvin", "\u212a",
		"日本", "uni-", "UNI-3-ß", "exited", "exited 3", "running", "process", "terminal", "batch-1", "batch-19", "batch-1", "nothing-matches", "#1", " · ", "-"}
	check := func(filter, by string, desc bool) {
		t.Helper()
		want, got := refShown(m, filter, by, desc), screenShown(m)
		if !slices.Equal(got, want) {
			t.Fatalf("filter %q, sort %q, desc %v: the screen shows %d runs\n%q\na plain match %d\n%q", filter, by, desc, len(got), got, len(want), want)
		}
		if len(want) == 0 && !strings.Contains(m.View(), "No run matches") {
			t.Fatalf("filter %q matches nothing, the screen says:\n%s", filter, m.View())
		}
	}
	matched := 0
	for _, by := range []string{"", "state", "age", "sandbox"} {
		for _, desc := range []bool{false, true} {
			press(m, "esc", "esc") // the filter cleared, out of its input
			sortedBy := func() string {
				return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(m.list.SortName(), "default"), " ↑"), " ↓")
			}
			for i := 0; i < 5 && sortedBy() != by; i++ {
				press(m, "o")
			}
			if sortedBy() != by {
				t.Fatalf("o does not sort by %q (%q)", by, m.list.SortName())
			}
			if strings.HasSuffix(m.list.SortName(), " ↓") != desc {
				press(m, "O")
			}
			press(m, "/")
			check("", by, desc)
			var cur []rune
			for _, s := range typed {
				want := []rune(s)
				common := 0
				for common < len(cur) && common < len(want) && cur[common] == want[common] {
					common++
				}
				for len(cur) > common {
					m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
					cur = cur[:len(cur)-1]
					check(string(cur), by, desc)
				}
				for _, k := range uitest.Type(string(want[common:])) {
					m.Update(k)
					cur = append(cur, k.Runes...)
					check(string(cur), by, desc)
					matched += m.list.Len()
				}
			}
		}
	}
	if matched == 0 {
		t.Fatal("no filter matched a run")
	}
}
