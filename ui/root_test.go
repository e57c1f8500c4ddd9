package ui

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
	"sandscope/ui/logview"
	"sandscope/ui/sandbox"
)

// updating reports -update (the flag is registered by x/exp/golden, which teatest imports).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const wait = 50 * time.Millisecond

func newRoot(t *testing.T, br *uitest.Bridge) *Model {
	t.Helper()
	return newRootWith(t, br, Options{})
}

// step sends msg and feeds back what its commands yield within the wait (one level per call).
func step(m *Model, msg tea.Msg, depth int) {
	_, cmd := m.Update(msg)
	if depth == 0 {
		return
	}
	for _, out := range uitest.Exec(cmd, wait) {
		step(m, out, depth-1)
	}
}

func TestGoldenRootSandboxes(t *testing.T) {
	br := uitest.NewBridge()
	br.Sandboxes = []client.SandboxInfo{{ID: "abcdefghijklmnopqrstuvwx", Running: true, Incarnation: 2, Processes: 1, CreatedAt: uitest.T0}}
	m := newRoot(t, br)
	for _, msg := range uitest.Exec(m.Init(), wait) {
		step(m, msg, 2)
	}
	v := m.View()
	if !strings.Contains(v, "local bridge http://127.0.0.1:7681 (embedded)") {
		t.Fatalf("header lacks the bridge:\n%s", v)
	}
	uitest.Golden(t, "root_sandboxes", v, updating())

	step(m, uitest.Key("?"), 0)
	v = m.View()
	for _, want := range []string{"create sandbox", "add sandbox by ID", "forget sandbox", "replace container (local)", "toggle help"} {
		if !strings.Contains(v, want) {
			t.Errorf("help overlay lacks %q", want)
		}
	}
	uitest.Golden(t, "root_help", v, updating())
	step(m, uitest.Key("esc"), 0)
	if m.help {
		t.Fatal("esc did not close help")
	}
}

func TestOpenSandboxThenLogsThenBack(t *testing.T) {
	br := uitest.NewBridge()
	m := newRoot(t, br)
	step(m, common.OpenSandboxMsg{ID: "sandboxaaaa"}, 0)
	// the record's watcher starts on a goroutine of its own (it reads the record first)
	for deadline := time.Now().Add(10 * time.Second); !br.Called("watch sandboxaaaa") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if _, ok := m.top().(*sandbox.Model); !ok || !br.Called("watch sandboxaaaa") {
		t.Fatal("sandbox screen not opened with a watcher")
	}
	step(m, common.OpenLogsMsg{Targets: []common.LogTarget{{Sandbox: "sandboxaaaa", Process: client.Process{ID: "p1", Command: []string{"make"}}}}}, 0)
	if _, ok := m.top().(*logview.Model); !ok || !br.Called("follow p1") {
		t.Fatal("log view not opened with a follower")
	}
	uitest.Golden(t, "root_logs", m.View(), updating())

	// q with live streams asks first
	step(m, uitest.Key("q"), 0)
	if m.confirm == nil || !strings.Contains(m.View(), "stops the embedded bridge") {
		t.Fatalf("quit with attached streams did not ask:\n%s", m.View())
	}
	step(m, uitest.Key("n"), 0)
	if m.confirm != nil || m.quitting {
		t.Fatal("declined quit still quits")
	}
	step(m, uitest.Key("esc"), 0)
	step(m, uitest.Key("esc"), 0)
	if len(m.stack) != 1 {
		t.Fatalf("esc did not go back to the sandboxes screen: %d screens", len(m.stack))
	}
	// departed screens are closed: history lives in the record, and reopening reads it
	if m.attached() != 0 {
		t.Fatalf("%d streams still attached after leaving the screens", m.attached())
	}
	step(m, common.OpenSandboxMsg{ID: "sandboxaaaa"}, 0)
	step(m, common.OpenLogsMsg{Targets: []common.LogTarget{{Sandbox: "sandboxaaaa", Process: client.Process{ID: "p1", Command: []string{"make"}}}}}, 0)
	if _, ok := m.top().(*logview.Model); !ok {
		t.Fatal("reopened logs not shown")
	}
	step(m, uitest.Key("esc"), 0)
	step(m, uitest.Key("esc"), 0)
	_, cmd := m.Update(uitest.Key("q"))
	if cmd == nil || cmd() != tea.Quit() {
		t.Fatal("q with nothing attached did not quit")
	}
}

func TestStatusAreaErrors(t *testing.T) {
	br := uitest.NewBridge()
	m := newRoot(t, br)
	cases := []struct {
		err  error
		want string
	}{
		{&client.APIError{Status: 401, Code: "unauthorized", Message: "Unauthorized"}, "UNAUTHORIZED · retrying in 4s (attempt 3, ctrl+r now) · the bridge rejected the token"},
		{&client.TransportError{Op: "GET running", Err: errors.New("connection refused")}, "UNREACHABLE · retrying in 4s (attempt 3, ctrl+r now) · GET running: bridge unreachable"},
		{&client.APIError{Status: 503, Code: "capacity_exceeded", Message: "instance limit reached"}, "NO CAPACITY"},
	}
	for _, c := range cases {
		step(m, common.ConnMsg{Err: c.err, RetryAt: uitest.T0.Add(4 * time.Second), Attempts: 2}, 0)
		if v := m.View(); !strings.Contains(v, c.want) {
			t.Errorf("status for %v lacks %q:\n%s", c.err, c.want, v)
		}
	}
	uitest.Golden(t, "root_capacity", m.View(), updating())
	step(m, common.ConnMsg{}, 0)
	if strings.Contains(m.View(), "NO CAPACITY") {
		t.Fatal("cleared error still shown")
	}
}

func TestTerminalConnectFailureExplains(t *testing.T) {
	m := newRoot(t, uitest.NewBridge())
	step(m, common.OpenTerminalMsg{Sandbox: "sbx", Terminal: client.Terminal{ID: "t1"}}, 1)
	if !strings.Contains(m.View(), "sandscope attach sbx t1") {
		t.Fatalf("no explanation:\n%s", m.View())
	}
}

func TestKeyOverridesAndBadTheme(t *testing.T) {
	p, _ := themes.Builtin("dark")
	_, err := New(Options{Target: Target{Driver: uitest.NewBridge()}, Styles: themes.New(p, themes.AsciiRenderer()), KeyOverrides: map[string][]string{"nosuch": {"z"}}})
	if err == nil {
		t.Fatal("unknown key override accepted")
	}
	m, err := New(Options{Target: Target{Driver: uitest.NewBridge()}, Styles: themes.New(p, themes.AsciiRenderer()), KeyOverrides: map[string][]string{"quit": {"Q"}}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 20})
	if _, cmd := m.Update(uitest.Key("q")); cmd != nil && cmd() == tea.Quit() {
		t.Fatal("q still quits after override")
	}
	if _, cmd := m.Update(uitest.Key("Q")); cmd == nil || cmd() != tea.Quit() {
		t.Fatal("Q does not quit")
	}
	if _, err := New(Options{Target: Target{Driver: uitest.NewBridge()}, Theme: "nosuch"}); err == nil {
		t.Fatal("unknown theme accepted")
	}
}

func TestTinyAndOddSizesDoNotPanic(t *testing.T) {
	br := uitest.NewBridge()
	m := newRoot(t, br)
	step(m, common.OpenSandboxMsg{ID: "sandboxaaaa"}, 0)
	step(m, common.OpenLogsMsg{Targets: []common.LogTarget{{Sandbox: "sandboxaaaa", Process: client.Process{ID: "p1"}}}}, 0)
	for _, sz := range [][2]int{{0, 0}, {1, 1}, {5, 3}, {20, 4}, {300, 2}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		for i := 0; i < 3; i++ {
			_ = m.View()
			step(m, uitest.Key("?"), 0)
			_ = m.View()
			step(m, uitest.Key("esc"), 0)
		}
	}
}

// A driver whose requests start containers gets the same screens: the sandbox screen shows the
// tabs its capabilities give (Runs, Sessions, Incarnations; no Terminals), and neither opening
// the sandboxes screen nor a sandbox sends a request to the sandbox (no status lookup, no list of
// runs, no follow).
func TestWakingDriverGetsTheSameScreensAndSendsNothing(t *testing.T) {
	st := uitest.NewWaking()
	m := newRootWith(t, st, Options{})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 30})
	step(m, m.Init(), 2)
	step(m, common.OpenSandboxMsg{ID: "box"}, 2)
	v := m.View()
	for _, want := range []string{"Runs (0)", "Sessions (0)", "Incarnations (0)", "not asked"} {
		if !strings.Contains(v, want) {
			t.Errorf("the sandbox screen lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "Terminals") || strings.Contains(v, "STABLE BRIDGE") {
		t.Errorf("a tab or a refusal of the old stable screen shows:\n%s", v)
	}
	for _, c := range st.B.CallList() {
		if strings.HasPrefix(c, "running") || strings.HasPrefix(c, "runs") || strings.HasPrefix(c, "follow ") {
			t.Errorf("a request was sent without the user asking: %q (calls %q)", c, st.B.CallList())
		}
	}
}

// TestKeysTypedTogether sends keys the way Bubble Tea reports them when they arrive in one read:
// one KeyRunes message with several runes. Each rune is one key: jj moves two rows.
func TestKeysTypedTogether(t *testing.T) {
	br := uitest.NewBridge()
	for _, id := range []string{"aaaa", "bbbb", "cccc", "dddd"} {
		br.Sandboxes = append(br.Sandboxes, client.SandboxInfo{ID: id, Running: true, CreatedAt: uitest.T0})
	}
	m := newRoot(t, br)
	step(m, tea.WindowSizeMsg{Width: 120, Height: 40}, 0)
	for _, msg := range uitest.Exec(m.Init(), wait) {
		step(m, msg, 2)
	}
	sel := func() string { return m.stack[0].(interface{ Selected() string }).Selected() }
	if first := sel(); first != "aaaa" {
		t.Fatalf("the cursor starts on %q", first)
	}
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")}, 0)
	if got := sel(); got != "cccc" {
		t.Fatalf("jj in one message moved to %q, want two rows down (cccc)", got)
	}
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("k")}, 0)
	if got := sel(); got != "bbbb" {
		t.Fatalf("k moved to %q", got)
	}
	// a paste is text, not keys: it does nothing on a list
	before := sel()
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jjj"), Paste: true}, 0)
	if sel() != before {
		t.Fatal("a paste was taken as keys")
	}
}

// TestStatusMessageLifetime: a status message shows once (in the status area), fades, a newer
// message is not cleared by the older one's fade, and leaving a screen takes its message along.
func TestStatusMessageLifetime(t *testing.T) {
	br := uitest.NewBridge()
	m := newRoot(t, br)
	step(m, tea.WindowSizeMsg{Width: 120, Height: 30}, 0)
	_, cmd := m.Update(common.StatusMsg{Level: common.Info, Text: "first message"})
	if cmd == nil || strings.Count(m.View(), "first message") != 1 {
		t.Fatalf("the message is not shown once, or no fade was armed:\n%s", m.View())
	}
	first := m.statusGen
	step(m, common.StatusMsg{Level: common.Info, Text: "second message"}, 0)
	step(m, statusExpiredMsg{gen: first}, 0)
	if !strings.Contains(m.View(), "second message") {
		t.Fatal("the first message's fade cleared the second")
	}
	step(m, statusExpiredMsg{gen: m.statusGen}, 0)
	if strings.Contains(m.View(), "second message") {
		t.Fatal("the message did not fade")
	}
	step(m, common.OpenSandboxMsg{ID: "sandboxaaaa"}, 0)
	step(m, common.StatusMsg{Level: common.Error, Text: "about this sandbox"}, 0)
	step(m, uitest.Key("esc"), 0)
	if strings.Contains(m.View(), "about this sandbox") {
		t.Fatal("the sandbox screen's message followed to the sandboxes screen")
	}
}

// TestLongStatusWraps: a status message longer than the width takes a second line; the screen
// above gives it up and gets it back when the message goes.
func TestLongStatusWraps(t *testing.T) {
	m := newRoot(t, uitest.NewBridge())
	step(m, tea.WindowSizeMsg{Width: 80, Height: 24}, 0)
	long := "relaunched 7d56e9e2-d5c1-4b8e-a7f0-2b9c8d1e3f45 as 0f9d3c2e-8a41-4d6b-9a4e-1c2b3d4e5f60 in incarnation #3 with its original env and cwd THEEND"
	step(m, common.StatusMsg{Level: common.Info, Text: long}, 0)
	v := m.View()
	if ls := strings.Split(v, "\n"); len(ls) != 24 {
		t.Fatalf("%d lines with a long status", len(ls))
	}
	if !strings.Contains(v, "THEEND") {
		t.Fatalf("the long message is cut:\n%s", v)
	}
	if _, h := m.bodySize(); h != 24-1-2-1 {
		t.Fatalf("body height %d with a two-line status", h)
	}
	step(m, statusExpiredMsg{gen: m.statusGen}, 0)
	if _, h := m.bodySize(); h != 24-1-2 || len(strings.Split(m.View(), "\n")) != 24 {
		t.Fatalf("body height %d after the message went", h)
	}
}

// timedStub is a screen whose text changes with the clock at next (zero: never).
type timedStub struct {
	common.Screen
	next time.Time
}

func (s *timedStub) NextChange(time.Time) time.Time { return s.next }
func (s *timedStub) Close()                         {}
func (s *timedStub) SetFocus(bool)                  {}

// The age tick: one pending at a time, at the moment the screen's text changes but not sooner
// than ageEvery, and none at all once the screen shows nothing that moves with the clock.
func TestAgeTicksOnlyWhileTextMoves(t *testing.T) {
	m := newRoot(t, uitest.NewBridge())
	now := uitest.T0
	m.ctx.Now = func() time.Time { return now }
	type other struct{}
	if m.scheduleAges(other{}) != nil {
		t.Fatal("a screen without ages armed a tick")
	}
	stub := &timedStub{}
	m.stack = append(m.stack, stub)
	fire := func() tea.Cmd { return m.scheduleAges(ageTickMsg{gen: m.ageGen}) }

	if m.scheduleAges(other{}) == nil || !m.ageDue.Equal(now.Add(ageEvery)) {
		t.Fatalf("a message on a timed screen: due %v", m.ageDue)
	}
	if m.scheduleAges(other{}) != nil {
		t.Fatal("a second tick while one is due")
	}
	now = now.Add(ageEvery)
	if fire() != nil || !m.ageDue.IsZero() {
		t.Fatal("nothing moves on screen, yet the ticks go on")
	}

	m.scheduleAges(other{})
	stub.next = now.Add(time.Second) // an age in seconds
	now = now.Add(ageEvery)
	if fire() == nil || !m.ageDue.Equal(now.Add(ageEvery)) {
		t.Fatalf("seconds: due %v, want %v", m.ageDue.Sub(now), ageEvery)
	}
	stub.next = now.Add(5 * ageEvery).Add(time.Minute) // only ages in minutes
	now = now.Add(ageEvery)
	if fire() == nil || !m.ageDue.Equal(stub.next) {
		t.Fatalf("minutes: due %v, want the change at %v", m.ageDue.Sub(now), stub.next.Sub(now))
	}
	stale := m.ageGen
	m.scheduleAges(other{}) // a message: a tick sooner than the minute's supersedes it
	if m.scheduleAges(ageTickMsg{gen: stale}) != nil {
		t.Fatal("a superseded tick armed another")
	}
	if !m.ageDue.Equal(now.Add(ageEvery)) {
		t.Fatalf("after a message: due %v", m.ageDue.Sub(now))
	}
}
