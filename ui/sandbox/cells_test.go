package sandbox

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/ui/common"
)

// The process rows' fixed cells (and the title, tab strip and detail lines View keeps) are kept
// across redraws: after an entry's argv, cwd, start, incarnation or ID changes, in place (no
// record) or in a new copy (what the record hands over), the next redraw shows the new values, as
// a screen drawn afresh does.
func TestKeptRowCellsFollowTheEntry(t *testing.T) {
	m, _ := newModel(t)
	m.SetSize(160, 27)
	apply(m,
		client.SandboxEvent{Kind: client.SandboxStarted, Time: at(-600), Incarnation: inc(1, false)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-500), Incarnation: inc(1, false), Process: proc("p1", "running", 1, 500)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-400), Incarnation: inc(1, false), Process: proc("p2", "running", 1, 400)},
	)
	// fresh are the cells made without the cache, from the entry as it is now
	fresh := func(e *procEntry) []string {
		return []string{common.SanitizeText(e.Process.ID), incLabel(e.Incarnation, e.Inferred), common.Argv(e.Process.Command),
			common.SanitizeText(e.Process.Cwd), common.Clock(e.Process.StartedAt)}
	}
	// afresh is the screen drawn by a new model of the same state: nothing kept from earlier redraws
	afresh := func() string {
		f := New(m.ctx, m.id)
		f.st = m.st
		f.SetSize(m.width, m.height)
		return f.View()
	}
	check := func(what string, shows ...string) {
		t.Helper()
		v := m.View()
		if want := afresh(); v != want {
			t.Fatalf("after %s the screen differs from one drawn afresh:\n%s\n--- afresh ---\n%s", what, v, want)
		}
		now := m.ctx.Clock()
		for _, e := range m.st.Processes {
			c := m.procCells(e, m.procWord(e, now), now)
			if got, want := []string{c[0], c[2], c[3], c[4], c[5]}, fresh(e); !reflect.DeepEqual(got, want) {
				t.Fatalf("after %s: %s's cells %q, made afresh %q", what, e.Process.ID, got, want)
			}
		}
		for _, s := range shows {
			if !strings.Contains(v, s) {
				t.Fatalf("after %s the screen does not show %q:\n%s", what, s, v)
			}
		}
	}
	check("the first redraw", "sh -c 'work p1'")
	check("a second redraw", "sh -c 'work p1'")

	e := m.st.Processes[0]
	e.Process.Command[2] = "work again" // in place, in the same array
	check("argv changed in place", "sh -c 'work again'")
	e.Process.Command = []string{"make", "test"}
	check("argv replaced", "make test ")
	e.Process.Cwd = "/srv/app"
	check("cwd changed", "/srv/app")
	e.Process.StartedAt = e.Process.StartedAt.Add(-time.Hour)
	check("start changed", common.Clock(e.Process.StartedAt))
	e.Inferred = true
	check("incarnation inferred", "#1?")
	e.Incarnation = 2
	check("incarnation changed", "#2?")

	// the record's way: a new copy of the state, the entry changed in the copy
	m.st = m.st.Clone()
	e = m.st.Processes[1]
	e.Process.Command = []string{"sleep", "9"}
	e.Process.Cwd = "/tmp/other"
	e.Inferred = true
	check("a new copy changed", "sleep 9", "/tmp/other")
	e.Process.ID = "p3"
	check("ID changed", "p3 ")
	m.SetSize(90, 20)
	check("a resize", "p3 ")
	e.Process.State = "exited"
	check("a state changed", "p3 ")
	// what the title, the tab strip and the detail line show
	m.st.Current.Number = 7
	check("the sandbox's incarnation changed", "incarnation #7")
	m.st.Processes[0].Process.ID = "p9"
	check("the selected process's ID changed", "p9 belongs")
	m.st.Processes = append(m.st.Processes, m.st.Processes[1])
	check("a row more", "Processes (3)")

	// only what the last redraw listed is kept
	m.st = m.st.Clone()
	m.st.Processes = m.st.Processes[:1]
	m.View()
	m.View()
	if n := len(m.procFixed.cells); n != 1 {
		t.Fatalf("%d rows' cells kept for 1 process listed", n)
	}
}
