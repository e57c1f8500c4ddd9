package runs

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// scene is a record of three sandboxes: shopweb had its container replaced (a LOST agent, a
// STALE test run, a relaunched agent, a process whose stream ended while its status said
// running, a terminal), nightly ran two jobs, and idle has nothing yet.
func scene(t *testing.T) (*common.Context, *record.Record) {
	t.Helper()
	ctx := uitest.Context(t, nil, 80, 24)
	t0 := uitest.T0
	rec, err := record.Open(record.Options{Dir: filepath.Join(ctx.StateDir, "record"), Bridge: "test", Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Close() })
	ctx.Record = rec
	inc1, inc2 := client.Incarnation{Number: 1}, client.Incarnation{Number: 2}
	at := func(ago time.Duration) time.Time { return t0.Add(-ago) }
	proc := func(id, state string, inc int, argv []string, ago time.Duration, exit *client.Exit) *client.Process {
		return &client.Process{ID: id, PID: 100, Command: argv, State: state, StartedAt: at(ago), Incarnation: inc, Exit: exit}
	}
	watch := func(ev client.SandboxEvent) { rec.Add(record.FromSandboxEvent(ev)) }
	watch(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "shopweb", Time: at(time.Hour), Incarnation: inc1})
	watch(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "shopweb", Time: at(50 * time.Minute), Incarnation: inc1,
		Process: proc("a9e1c0d2-agent", "running", 1, []string{"claude", "-p", "fix the failing checkout test"}, 50*time.Minute, nil)})
	watch(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "shopweb", Time: at(40 * time.Minute), Incarnation: inc1,
		Process: proc("b7f2d3e4-test", "exited", 1, []string{"npm", "test"}, 40*time.Minute, &client.Exit{Code: 1})})
	watch(client.SandboxEvent{Kind: client.IncarnationChanged, Sandbox: "shopweb", Time: at(30 * time.Minute), Incarnation: inc2, Previous: inc1,
		Evidence: []string{"the bridge reports incarnation 2 (was 1)"}})
	watch(client.SandboxEvent{Kind: client.ProcessVanished, Sandbox: "shopweb", Time: at(30 * time.Minute), Incarnation: inc2,
		Process:  proc("a9e1c0d2-agent", "running", 1, []string{"claude", "-p", "fix the failing checkout test"}, 50*time.Minute, nil),
		Evidence: []string{"absent from the process list of incarnation 2"}})
	watch(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "shopweb", Time: at(29 * time.Minute), Incarnation: inc2,
		Process: proc("c3d4e5f6-agent2", "running", 2, []string{"claude", "-p", "fix the failing checkout test", "--resume"}, 29*time.Minute, nil)})
	watch(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "shopweb", Time: at(10 * time.Minute), Incarnation: inc2,
		Process: proc("d5e6f7a8-dev", "running", 2, []string{"npm", "run", "dev", "\x1b[2Jhostile\x07"}, 10*time.Minute, nil)})
	rec.Add(record.FromLogEvent("shopweb", "d5e6f7a8-dev", client.LogEvent{Kind: client.SuspectEnd, Time: at(time.Minute), Reason: "stream ended, status running"}))
	watch(client.SandboxEvent{Kind: client.TerminalAppeared, Sandbox: "shopweb", Time: at(5 * time.Minute), Incarnation: inc2,
		Terminal: &client.Terminal{ID: "e1f2a3b4-term", PID: 7, Command: []string{"bash", "-l"}, Status: "running", Incarnation: 2}})
	rec.CaptureData("shopweb", "c3d4e5f6-agent2", client.LogEvent{Kind: client.Data, Cursor: "c1", Time: at(20 * time.Second), Data: []byte("{\"type\":\"assistant\"}\n")})

	watch(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "nightly", Time: at(3 * time.Hour), Incarnation: inc1})
	watch(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "nightly", Time: at(3 * time.Hour), Incarnation: inc1,
		Process: proc("f0e1d2c3-build", "exited", 1, []string{"make", "release"}, 3*time.Hour, &client.Exit{Code: 0})})
	watch(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "nightly", Time: at(2 * time.Hour), Incarnation: inc1,
		Process: proc("0a1b2c3d-e2e", "exited", 1, []string{"npx", "playwright", "test"}, 2*time.Hour, &client.Exit{Code: 137, Signal: 9})})
	watch(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "idle", Time: at(time.Minute), Incarnation: inc1})
	return ctx, rec
}

func newScreen(t *testing.T, w, h int) *Model {
	t.Helper()
	ctx, _ := scene(t)
	m := New(ctx)
	m.SetSize(w, h)
	return known(m)
}

// known gives m the sandboxes the record knows, as loadKnown's command reads them (these scenes
// have a record and no background watcher).
func known(m *Model) *Model {
	if c := m.loadKnown(); c != nil {
		m.Update(c())
	}
	return m
}

func press(m *Model, keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		_, last = m.Update(uitest.Key(k))
	}
	return last
}

// checkFrame checks every line fits the width and the view has exactly the height.
func checkFrame(t *testing.T, name, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("%s at %dx%d: %d lines", name, w, h, len(lines))
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("%s at %dx%d: line %d is %d cells: %q", name, w, h, i, lw, l)
		}
	}
}

func TestGoldenAtTwoSizes(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {200, 60}} {
		w, h := sz[0], sz[1]
		m := newScreen(t, w, h)
		shot := func(name string) {
			t.Helper()
			v := m.View()
			checkFrame(t, name, v, w, h)
			uitest.Golden(t, fmt.Sprintf("runs_%s_%dx%d", name, w, h), v, *update)
		}
		shot("all")
		press(m, "!")
		shot("attention")
		press(m, "!")
		press(m, "o")
		shot("by_state")
	}
}

func TestRowsSayWhatTheOtherScreensSay(t *testing.T) {
	m := newScreen(t, 200, 60)
	v := m.View()
	for _, want := range []string{"All runs (7)", "3 sandboxes", "3 need attention", "LOST", "STALE #1 · EXITED 1",
		"SUSPECT END", "RUNNING", "EXITED 0", "KILLED KILL", "terminal: bash -l", "21 B kept", "20s ago"} {
		if !strings.Contains(v, want) {
			t.Errorf("the screen lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "\x1b[2J") || strings.Contains(v, "\x07") {
		t.Errorf("a command's control bytes reached the screen:\n%q", v)
	}
	// the LOST row's detail names the evidence
	press(m, "!")
	if v := m.View(); !strings.Contains(v, "absent from the process list of incarnation 2") {
		t.Errorf("the LOST run's detail lacks its evidence:\n%s", v)
	}
}

func TestAttentionKeyNarrowsAndEscWidens(t *testing.T) {
	m := newScreen(t, 120, 30)
	press(m, "!")
	if !m.Attention() || m.list.Len() != 3 {
		t.Fatalf("attention: %v, %d rows", m.Attention(), m.list.Len())
	}
	for _, i := range m.list.Window() {
		if r := m.rowAt(i); !r.attention {
			t.Errorf("row %s does not need attention", r.e.ID)
		}
	}
	if !m.Back() || m.Attention() || m.list.Len() != 7 {
		t.Fatalf("esc did not widen: %v, %d rows", m.Attention(), m.list.Len())
	}
	if m.Back() {
		t.Fatal("esc with nothing to clear is the root's")
	}
}

func TestFilterThenEnterOpensTheLostLogFromTheRecord(t *testing.T) {
	m := newScreen(t, 120, 30)
	press(m, "/")
	if !m.Capturing() {
		t.Fatal("the filter does not take the keys")
	}
	for _, k := range uitest.Type("lost") {
		m.Update(k)
	}
	press(m, "enter")
	if m.Capturing() || m.list.Len() != 1 {
		t.Fatalf("filter: capturing %v, %d rows", m.Capturing(), m.list.Len())
	}
	cmd := press(m, "enter")
	msgs := uitest.Exec(cmd, time.Second)
	if len(msgs) != 1 {
		t.Fatalf("enter: %v", msgs)
	}
	open, ok := msgs[0].(common.OpenLogsMsg)
	if !ok || len(open.Targets) != 1 {
		t.Fatalf("enter: %#v", msgs[0])
	}
	tg := open.Targets[0]
	if tg.Sandbox != "shopweb" || tg.Process.ID != "a9e1c0d2-agent" || !tg.Lost || tg.Incarnation != 1 {
		t.Fatalf("target: %+v", tg)
	}
}

func TestEnterOnATerminalOpensThePane(t *testing.T) {
	m := newScreen(t, 120, 30)
	m.list.SetFilter("terminal")
	msgs := uitest.Exec(press(m, "enter"), time.Second)
	if len(msgs) != 1 {
		t.Fatalf("enter: %v", msgs)
	}
	if o, ok := msgs[0].(common.OpenTerminalMsg); !ok || o.Terminal.ID != "e1f2a3b4-term" || o.Sandbox != "shopweb" {
		t.Fatalf("enter on a terminal: %#v", msgs[0])
	}
}

func TestSortCyclesStateAgeSandbox(t *testing.T) {
	m := newScreen(t, 120, 30)
	ids := func() []string {
		var out []string
		for _, i := range m.list.Window() {
			out = append(out, m.rowAt(i).e.ID)
		}
		return out
	}
	press(m, "o")
	if got := ids(); got[0] != "a9e1c0d2-agent" || got[1] != "d5e6f7a8-dev" {
		t.Errorf("by state: LOST then SUSPECT END first, got %v", got)
	}
	press(m, "o")
	if got := ids(); got[0] != "e1f2a3b4-term" || got[len(got)-1] != "f0e1d2c3-build" {
		t.Errorf("by age: newest first, got %v", got)
	}
	press(m, "o")
	if got := ids(); m.rowAt(m.list.Window()[0]).sandbox != "idle" && m.rowAt(m.list.Window()[0]).sandbox != "nightly" {
		t.Errorf("by sandbox, got %v", got)
	}
}

func TestLiveFromTheRecord(t *testing.T) {
	ctx, rec := scene(t)
	m := known(New(ctx))
	m.SetSize(120, 30)
	_ = m.Init() // its commands are not run: the test waits for the change itself
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "idle", Time: uitest.T0, Incarnation: client.Incarnation{Number: 1},
		Process: &client.Process{ID: "new-run-1", Command: []string{"python", "train.py"}, State: "running", StartedAt: uitest.T0, Incarnation: 1}}))
	msg := waitForChange(m, m.changes, m.gen)()
	m.Update(msg)
	if v := m.View(); !strings.Contains(v, "python train.py") || !strings.Contains(v, "All runs (8)") {
		t.Fatalf("a run recorded after the screen opened does not show:\n%s", v)
	}
	m.Close()
}

func TestEmptyStatesAreSentences(t *testing.T) {
	ctx := uitest.Context(t, nil, 80, 24)
	m := New(ctx)
	m.SetSize(80, 24)
	if v := m.View(); !strings.Contains(v, "Nothing is recorded here (no state directory)") {
		t.Errorf("no record:\n%s", v)
	}
	// a bridge that never answered has no record for another reason, and the screen says which
	ctx.NotRecorded = "this bridge has not answered yet"
	m.SetSize(200, 24)
	if v := m.View(); !strings.Contains(v, "Nothing is recorded here (this bridge has not answered yet)") || strings.Contains(v, "state directory") {
		t.Errorf("no record, bridge silent:\n%s", v)
	}
	ctx2, _ := scene(t)
	m2 := known(New(ctx2))
	m2.SetSize(80, 24)
	m2.list.SetFilter("no-such-thing")
	if v := m2.View(); !strings.Contains(v, `No run matches "no-such-thing"`) {
		t.Errorf("no match:\n%s", v)
	}
}

func TestTinyBodyKeepsItsHeight(t *testing.T) {
	for _, h := range []int{1, 2, 3, 4} {
		m := newScreen(t, 40, h)
		checkFrame(t, "tiny", m.View(), 40, h)
	}
}

func TestAttentionWordsAgreeWithTheCount(t *testing.T) {
	for _, c := range []struct {
		n         int
		verb, obj string
	}{{1, "needs", "it"}, {2, "need", "them"}, {10000, "need", "them"}} {
		if v, o := attentionWords(c.n); v != c.verb || o != c.obj {
			t.Errorf("attentionWords(%d) = %q, %q; want %q, %q", c.n, v, o, c.verb, c.obj)
		}
	}
}

// refreshAnswer is what the refresh tick asks of the record, read: the tick's commands run on
// goroutines of their own (the next tick's is left waiting), reloadLater's answer returned, not
// taken.
func refreshAnswer(t *testing.T, m *Model) reloadMsg {
	t.Helper()
	_, cmd := m.Update(tickMsg{owner: m, gen: m.gen})
	return reloadAnswer(t, cmd)
}

// reloadAnswer runs a tick's commands on goroutines of their own and returns reloadLater's
// answer.
func reloadAnswer(t *testing.T, cmd tea.Cmd) reloadMsg {
	t.Helper()
	got := runCmds(cmd)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case msg := <-got:
			if r, ok := msg.(reloadMsg); ok {
				return r
			}
		case <-deadline:
			t.Fatal("the refresh tick read nothing")
		}
	}
}

// runCmds runs cmd and the commands of its batches each on a goroutine of its own, and sends
// their messages.
func runCmds(cmd tea.Cmd) <-chan tea.Msg {
	got := make(chan tea.Msg, 16)
	var run func(c tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			msg := c()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					run(c)
				}
				return
			}
			got <- msg
		}()
	}
	run(cmd)
	return got
}

// refreshNow is a refresh tick and its answer taken.
func refreshNow(t *testing.T, m *Model) {
	t.Helper()
	m.Update(refreshAnswer(t, m))
}
