package sandbox

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// newWakingModel is the screen on a fake driver that offers what a stable bridge does (no
// process list, no kill, no terminals; sessions, shells and a wake notice).
func newWakingModel(t *testing.T) (*Model, *uitest.Waking) {
	st := uitest.NewWaking()
	ctx := uitest.Context(t, st, 120, 27)
	m := New(ctx, "box")
	m.SetSize(120, 27)
	for _, msg := range uitest.Exec(m.Init(), wait) {
		m.Update(msg)
	}
	return m, st
}

// run feeds m the messages its command yields, depth levels deep, and returns those m did not
// take itself (for the root).
func run(m *Model, cmd tea.Cmd, depth int) []tea.Msg {
	var up []tea.Msg
	for _, msg := range uitest.Exec(cmd, wait) {
		switch msg.(type) {
		case wakeMsg, execMsg, sessionsMsg, sessionMsg, killMsg, termMsg:
			if depth > 0 {
				_, c := m.Update(msg)
				up = append(up, run(m, c, depth-1)...)
			}
		default:
			up = append(up, msg)
		}
	}
	return up
}

func hit(m *Model, k string) []tea.Msg {
	_, cmd := m.Update(uitest.Key(k))
	return run(m, cmd, 3)
}

func called(b *uitest.Bridge, prefix string) int {
	n := 0
	for _, c := range b.CallList() {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// The page is built from the tabs the driver gives: a preview driver's Processes, Terminals and
// Incarnations; a stable-like driver's Runs (what sandscope started), Sessions and Incarnations.
func TestTabsComeFromTheDriver(t *testing.T) {
	pm, _ := newModel(t)
	v := pm.View()
	for _, want := range []string{"Processes (0)", "Terminals (0)", "Incarnations (0)"} {
		if !strings.Contains(v, want) {
			t.Errorf("preview: no %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "Sessions") {
		t.Errorf("preview shows a Sessions tab:\n%s", v)
	}
	sm, st := newWakingModel(t)
	v = sm.View()
	for _, want := range []string{"Runs (0)", "Sessions (0)", "Incarnations (0)", "no runs started by sandscope here", "not asked"} {
		if !strings.Contains(v, want) {
			t.Errorf("stable: no %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "Terminals") || strings.Contains(v, "waiting for the first answer") || strings.Contains(v, "connecting…") {
		t.Errorf("stable shows what it cannot have:\n%s", v)
	}
	// the keys the driver lacks are not offered, and say so when pressed
	for _, b := range sm.ShortHelp() {
		if b.Help().Key == sm.ctx.Keys.Kill.Help().Key {
			t.Errorf("kill is offered on a driver without driver.Killer")
		}
	}
	if got := statuses(hit(sm, "x")); !strings.Contains(got, "not offered by this bridge: kill") {
		t.Errorf("x on a driver without kill: %q", got)
	}
	if got := statuses(hit(sm, "A")); !strings.Contains(got, "not offered by this bridge: terminals") {
		t.Errorf("A on a driver without terminals: %q", got)
	}
	for _, c := range st.B.CallList() {
		if !strings.HasPrefix(c, "watch ") && !strings.HasPrefix(c, "sessions ") {
			t.Errorf("the screen sent %q without the user asking", c)
		}
	}
}

// With a driver.Waker, the first action that starts the container shows the driver's notice in
// a confirm dialog, and nothing is sent before the user says yes; a "no" asks again next time
// (the driver says its notice once). Exec then runs in the session chosen on the Sessions tab.
func TestWakeNoticeBeforeTheFirstRequest(t *testing.T) {
	m, st := newWakingModel(t)
	st.SessionList = []driver.Session{{ID: "dev", Created: true, Seen: uitest.T0}}
	m.applySessions(sessionsMsg{owner: m, list: st.SessionList})

	exec := func() {
		hit(m, "e")
		for _, k := range uitest.Type("make test") {
			m.Update(k)
		}
		hit(m, "enter")
	}
	exec()
	if v := m.View(); !strings.Contains(v, "Start the container of box?") || !strings.Contains(v, st.Notice) {
		t.Fatalf("no wake notice before the first request:\n%s", v)
	}
	hit(m, "n")
	if n := called(st.B, "start"); n != 0 {
		t.Fatalf("a run was started after no (%d starts)", n)
	}
	exec()
	if v := m.View(); !strings.Contains(v, "Start the container of box?") {
		t.Fatalf("after a no, the next action did not ask again:\n%s", v)
	}
	hit(m, "y")
	if n := called(st.B, "start box make test"); n != 1 {
		t.Fatalf("after yes: %d starts (calls %q)", n, st.B.CallList())
	}

	// choose the session, then exec: the form carries it and the start runs in it
	hit(m, "tab") // Sessions
	if m.tab != SessionsTab {
		t.Fatalf("tab went to %v", m.tab)
	}
	hit(m, " ")
	exec()
	if v := m.View(); strings.Contains(v, "Start the container") {
		t.Fatalf("asked again once told:\n%s", v)
	}
	if got := st.B.Sessions; len(got) != 2 || got[1] != "dev" {
		t.Errorf("sessions of the starts: %q", got)
	}
}

// Opening a LOST run's log reads the record (nothing asked, nothing sent); a live one asks first.
// Following everything follows in the background (only what the driver already receives).
func TestOpeningRunsOnAWakingDriver(t *testing.T) {
	m, st := newWakingModel(t)
	apply(m,
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-10), Process: proc("r1", "running", 0, 10)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-5), Process: proc("r2", "running", 0, 5)},
		client.SandboxEvent{Kind: client.ProcessVanished, Time: at(-1), Process: proc("r2", "running", 0, 5), Evidence: []string{"files and marker gone"}},
	)
	selectProc(m, "r2")
	up := hit(m, "enter")
	if len(up) != 1 {
		t.Fatalf("opening a LOST run: %#v", up)
	}
	if o, ok := up[0].(common.OpenLogsMsg); !ok || !o.Targets[0].Lost {
		t.Fatalf("opening a LOST run: %#v", up[0])
	}
	if m.dialog != nil {
		t.Fatal("opening a LOST run asked to start the container")
	}
	selectProc(m, "r1")
	if up := hit(m, "enter"); len(up) != 0 || m.dialog == nil {
		t.Fatalf("opening a live run did not ask first: %#v", up)
	}
	up = hit(m, "y")
	if len(up) != 1 {
		t.Fatalf("after yes: %#v", up)
	}
	if o, ok := up[0].(common.OpenLogsMsg); !ok || o.Targets[0].Process.ID != "r1" || o.Targets[0].Background {
		t.Fatalf("after yes: %#v", up[0])
	}
	up = hit(m, "F")
	o, ok := up[0].(common.OpenLogsMsg)
	if !ok || o.All != "box" || len(o.Targets) != 2 {
		t.Fatalf("F: %#v", up)
	}
	for _, tg := range o.Targets {
		if !tg.Background {
			t.Errorf("F follows %s in the foreground on a waking driver", tg.Process.ID)
		}
	}
	if n := called(st.B, "follow "); n != 0 {
		t.Errorf("the screen followed in the foreground itself: %q", st.B.CallList())
	}
}

// Sessions: created and deleted through the driver (after the notice), the list re-read after
// each; the shell key opens the driver's shell in the chosen session.
func TestSessionsAndShell(t *testing.T) {
	m, st := newWakingModel(t)
	hit(m, "tab")
	hit(m, "c")
	for _, k := range uitest.Type("dev") {
		m.Update(k)
	}
	hit(m, "enter")
	hit(m, "y") // the wake notice
	if n := called(st.B, "create-session box dev"); n != 1 {
		t.Fatalf("create: calls %q", st.B.CallList())
	}
	if v := m.View(); !strings.Contains(v, "Sessions (1)") || !strings.Contains(v, "dev") {
		t.Fatalf("the new session is not listed:\n%s", v)
	}
	hit(m, " ")
	up := hit(m, "s")
	var open *common.OpenTerminalMsg
	for _, msg := range up {
		if o, ok := msg.(common.OpenTerminalMsg); ok {
			open = &o
		}
	}
	if open == nil || !open.Shell || open.Session != "dev" || open.Sandbox != "box" {
		t.Fatalf("shell: %#v", up)
	}
	hit(m, "d")
	hit(m, "y") // delete's own question (the container was started already)
	if n := called(st.B, "delete-session box dev"); n != 1 {
		t.Fatalf("delete: calls %q", st.B.CallList())
	}
	if v := m.View(); !strings.Contains(v, "Sessions (0)") {
		t.Fatalf("the deleted session is still listed:\n%s", v)
	}
	if m.session != "" {
		t.Errorf("exec and shell still use the deleted session %q", m.session)
	}
}
