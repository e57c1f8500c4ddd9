package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"sandscope/client"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

var update = flag.Bool("update", false, "rewrite golden files")

const wait = 50 * time.Millisecond

var t0 = uitest.T0

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func proc(id, state string, inc int, startedAgo int) *client.Process {
	return &client.Process{ID: id, PID: 100 + len(id), Command: []string{"sh", "-c", "work " + id}, Cwd: "/workspace",
		State: state, StartedAt: at(-startedAgo), Incarnation: inc}
}

func ended(p *client.Process, exit *client.Exit, rerr *client.RunError, took int) *client.Process {
	end := p.StartedAt.Add(time.Duration(took) * time.Second)
	p.EndedAt, p.Exit, p.Error = &end, exit, rerr
	return p
}

func inc(n int, inferred bool) client.Incarnation {
	return client.Incarnation{Number: n, Inferred: inferred}
}

func newModel(t *testing.T) (*Model, *uitest.Bridge) {
	br := uitest.NewBridge()
	ctx := uitest.Context(t, br, 100, 27)
	m := New(ctx, "sandboxaaaaaaaaaaaaaaaaa")
	m.SetSize(100, 27)
	m.Init()
	return m, br
}

func apply(m *Model, evs ...client.SandboxEvent) []tea.Msg {
	_, cmd := m.Update(watchMsg{sb: m.id, gen: m.watchGen, events: evs, closed: true})
	return uitest.Exec(cmd, wait)
}

func press(t *testing.T, m *Model, keys ...string) []tea.Msg {
	t.Helper()
	var up []tea.Msg
	for _, k := range keys {
		_, cmd := m.Update(uitest.Key(k))
		for _, msg := range uitest.Exec(cmd, wait) {
			switch msg.(type) {
			case execMsg, killMsg:
				_, c := m.Update(msg)
				up = append(up, uitest.Exec(c, wait)...)
			default:
				up = append(up, msg)
			}
		}
	}
	return up
}

func statuses(msgs []tea.Msg) string {
	var s []string
	for _, m := range msgs {
		if st, ok := m.(common.StatusMsg); ok {
			s = append(s, st.Text)
		}
	}
	return strings.Join(s, "\n")
}

// history is a sandbox that went through a container replacement: one process of each ending in
// incarnation 1, a process lost with it, and new processes in incarnation 2.
func history(m *Model) []tea.Msg {
	return apply(m,
		client.SandboxEvent{Kind: client.SandboxStarted, Time: at(-600), Incarnation: inc(1, false)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-600), Incarnation: inc(1, false), Process: ended(proc("old-ok", "exited", 1, 600), &client.Exit{Code: 0}, nil, 12)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-590), Incarnation: inc(1, false), Process: proc("old-run", "running", 1, 590)},
		client.SandboxEvent{Kind: client.ProcessVanished, Time: at(-300), Incarnation: inc(1, false), Process: proc("old-run", "running", 1, 590), Evidence: []string{"absent from process list"}},
		client.SandboxEvent{Kind: client.IncarnationChanged, Time: at(-299), Previous: inc(1, false), Incarnation: inc(2, false), Evidence: []string{"the bridge reports incarnation 2 (was 1)"}},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-200), Incarnation: inc(2, false), Process: proc("run", "running", 2, 200)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-100), Incarnation: inc(2, false), Process: ended(proc("fail", "exited", 2, 100), &client.Exit{Code: 3}, nil, 5)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-90), Incarnation: inc(2, false), Process: ended(proc("killed", "exited", 2, 90), &client.Exit{Code: 143, Signal: 15}, nil, 7)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-80), Incarnation: inc(2, false), Process: ended(proc("slow", "exited", 2, 80), &client.Exit{Code: 143, TimedOut: true}, nil, 60)},
		client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-70), Incarnation: inc(2, false), Process: ended(proc("broken", "error", 2, 70), nil, &client.RunError{Code: "spawn_failed", Message: "no such file"}, 0)},
		client.SandboxEvent{Kind: client.TerminalAppeared, Time: at(-60), Incarnation: inc(2, false), Terminal: &client.Terminal{ID: "t1", PID: 7, Command: []string{"bash"}, Cwd: "/workspace", Status: "running", Incarnation: 2}},
		client.SandboxEvent{Kind: client.ProcessChanged, Time: at(-1), Incarnation: inc(2, false), Process: proc("run", "running", 2, 200)},
	)
}

func TestGoldenProcessesEveryBadge(t *testing.T) {
	m, _ := newModel(t)
	up := history(m)
	if !strings.Contains(statuses(up), "incarnation #2") {
		t.Fatalf("replacement not announced: %q", statuses(up))
	}
	v := m.View()
	for _, want := range []string{"RUNNING", "EXITED 0", "EXITED 3", "KILLED TERM", "TIMED OUT", "ERROR spawn_failed", "LOST", "STALE #1 · EXITED 0"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q", want)
		}
	}
	uitest.Golden(t, "processes", v, *update)
}

func TestGoldenTerminalsAndTimeline(t *testing.T) {
	m, _ := newModel(t)
	history(m)
	press(t, m, "tab")
	uitest.Golden(t, "terminals", m.View(), *update)
	press(t, m, "tab")
	v := m.View()
	if !strings.Contains(v, "the bridge reports incarnation 2 (was 1)") || !strings.Contains(v, "#1") {
		t.Fatalf("timeline lacks the boundary evidence:\n%s", v)
	}
	uitest.Golden(t, "timeline", v, *update)
}

func TestGoldenUnknownWhileUnreachable(t *testing.T) {
	m, _ := newModel(t)
	history(m)
	up := apply(m, client.SandboxEvent{Kind: client.WatchError, Time: at(0), Err: errors.New("bridge unreachable: connection refused")})
	var conn bool
	for _, msg := range up {
		if c, ok := msg.(common.ConnMsg); ok && c.Err != nil {
			conn = true
		}
	}
	if !conn {
		t.Fatal("watch error not reported to the root")
	}
	v := m.View()
	if !strings.Contains(v, "UNKNOWN (RUNNING") {
		t.Fatalf("running process not shown as unknown:\n%s", v)
	}
	uitest.Golden(t, "processes_unknown", v, *update)
}

// selectProc puts the processes list's cursor on process id.
func selectProc(m *Model, id string) {
	m.syncLists()
	m.lists[ProcessesTab].SelectIndex(rowOf(m, id))
}

func rowOf(m *Model, id string) int {
	for i, e := range m.st.Processes {
		if e.Process.ID == id {
			return i
		}
	}
	return -1
}

func TestKillRefusedOnStaleAndDefaultsToTERM(t *testing.T) {
	m, br := newModel(t)
	history(m)
	selectProc(m, "old-ok")
	up := press(t, m, "x")
	if m.Capturing() || !strings.Contains(statuses(up), "refused: kill: process old-ok belongs to incarnation #1") {
		t.Fatalf("stale kill not refused: %q", statuses(up))
	}
	selectProc(m, "old-run")
	if up := press(t, m, "x"); !strings.Contains(statuses(up), "lost with its container") {
		t.Fatalf("lost kill not refused: %q", statuses(up))
	}
	selectProc(m, "fail")
	if up := press(t, m, "x"); !strings.Contains(statuses(up), "already ended (EXITED 3)") {
		t.Fatalf("ended kill not refused: %q", statuses(up))
	}
	selectProc(m, "run")
	press(t, m, "x")
	if !m.Capturing() {
		t.Fatal("no signal picker")
	}
	uitest.Golden(t, "kill_picker", m.View(), *update)
	up = press(t, m, "enter")
	if !reflect.DeepEqual(br.Killed, []int{15}) {
		t.Fatalf("killed with %v, want TERM", br.Killed)
	}
	if !strings.Contains(statuses(up), "sent TERM to run") {
		t.Fatalf("status: %q", statuses(up))
	}
	press(t, m, "x", "down", "down", "down", "enter") // TERM, INT, HUP, KILL
	if !reflect.DeepEqual(br.Killed, []int{15, 9}) {
		t.Fatalf("killed with %v, want TERM then KILL", br.Killed)
	}
}

func TestRelaunch(t *testing.T) {
	m, br := newModel(t)
	history(m)
	selectProc(m, "run")
	if up := press(t, m, "r"); !strings.Contains(statuses(up), "still running in the current incarnation") {
		t.Fatalf("relaunch of a running process not refused: %q", statuses(up))
	}
	selectProc(m, "old-run")
	up := press(t, m, "r")
	if len(br.Started) != 1 || !reflect.DeepEqual(br.Started[0].Argv, []string{"sh", "-c", "work old-run"}) || br.Started[0].Cwd != "/workspace" {
		t.Fatalf("relaunch request: %+v", br.Started)
	}
	if !strings.Contains(statuses(up), "relaunched old-run as p9 in incarnation #2") {
		t.Fatalf("status: %q", statuses(up))
	}
	if e := m.st.Processes[len(m.st.Processes)-1]; e.Process.ID != "p9" || e.Incarnation != 2 {
		t.Fatalf("relaunched entry: %+v", e)
	}
}

func TestExecForm(t *testing.T) {
	m, br := newModel(t)
	history(m)
	press(t, m, "e")
	for _, k := range uitest.Type(`npm test -- "a b"`) {
		m.Update(k)
	}
	press(t, m, "tab")
	for _, k := range uitest.Type("app") {
		m.Update(k)
	}
	press(t, m, "tab")
	for _, k := range uitest.Type("CI=1 NAME='x y'") {
		m.Update(k)
	}
	press(t, m, "tab")
	for _, k := range uitest.Type("90s") {
		m.Update(k)
	}
	uitest.Golden(t, "exec_form", m.View(), *update)
	press(t, m, "enter")
	if len(br.Started) != 1 {
		t.Fatal("exec did not start a process")
	}
	got := br.Started[0]
	want := client.ExecRequest{Argv: []string{"npm", "test", "--", "a b"}, Cwd: "app", Env: map[string]string{"CI": "1", "NAME": "x y"}, Timeout: 90000}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("exec request %+v, want %+v", got, want)
	}
	// a relaunch of it repeats the env too
	m.st.Processes[len(m.st.Processes)-1].Process.State = "exited"
	m.st.Processes[len(m.st.Processes)-1].Process.Exit = &client.Exit{}
	press(t, m, "r")
	if len(br.Started) != 2 || !reflect.DeepEqual(br.Started[1], want) {
		t.Fatalf("relaunch did not repeat the request: %+v", br.Started)
	}
}

func TestMultiFollowAndTerminals(t *testing.T) {
	m, _ := newModel(t)
	history(m)
	selectProc(m, "run")
	press(t, m, "space", "space")
	up := press(t, m, "enter")
	var open *common.OpenLogsMsg
	for _, msg := range up {
		if o, ok := msg.(common.OpenLogsMsg); ok {
			open = &o
		}
	}
	if open == nil || len(open.Targets) != 2 || open.Targets[0].Process.ID != "run" || open.Targets[1].Process.ID != "fail" {
		t.Fatalf("open logs: %+v", open)
	}
	selectProc(m, "old-ok")
	up = press(t, m, "enter")
	for _, msg := range up {
		if o, ok := msg.(common.OpenLogsMsg); ok {
			if len(o.Targets) != 1 || !o.Targets[0].Stale || o.Targets[0].Incarnation != 1 {
				t.Fatalf("stale target not marked: %+v", o.Targets)
			}
		}
	}
	press(t, m, "tab")
	up = press(t, m, "enter")
	found := false
	for _, msg := range up {
		if o, ok := msg.(common.OpenTerminalMsg); ok && o.Terminal.ID == "t1" {
			found = true
		}
	}
	if !found {
		t.Fatalf("enter on a terminal did not open it: %+v", up)
	}
}

func TestSameNumberReportedIsNotANewContainer(t *testing.T) {
	m, _ := newModel(t)
	apply(m,
		client.SandboxEvent{Kind: client.SandboxStopped, Time: at(-10), Incarnation: inc(1, true)},
		client.SandboxEvent{Kind: client.IncarnationChanged, Time: at(-5), Previous: inc(1, true), Incarnation: inc(1, false), Evidence: []string{"the bridge reports incarnation 1"}},
	)
	if len(m.st.Incarnations) != 1 || m.st.Incarnations[0].Inferred {
		t.Fatalf("timeline: %+v", m.st.Incarnations[0])
	}
}

func TestSplitArgs(t *testing.T) {
	cases := map[string][]string{
		`a b  c`:             {"a", "b", "c"},
		`sh -c 'echo $HOME'`: {"sh", "-c", "echo $HOME"},
		`echo "a \"b\" \$x"`: {"echo", `a "b" $x`},
		`x\ y`:               {"x y"},
		`''`:                 {""},
	}
	for in, want := range cases {
		got, err := SplitArgs(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := SplitArgs(`echo "open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestServerStringsAreSanitised(t *testing.T) {
	m, _ := newModel(t)
	p := proc("evil\x1b]0;pwned\x07", "running", 1, 5)
	p.Command = []string{"sh", "-c", "echo \x1b[2J\x1b]52;c;ZXZpbA==\x07"}
	p.Cwd = "/workspace/\x1b[31mred"
	apply(m, client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(0), Incarnation: inc(1, false), Process: p})
	press(t, m, "x")
	v := m.View()
	if strings.Contains(v, "\x1b") || strings.Contains(v, "\x07") {
		t.Fatalf("escape reached the screen: %q", v)
	}
}

func TestTerminalsTabActions(t *testing.T) {
	m, br := newModel(t)
	history(m)
	press(t, m, "tab")
	if m.tab != TerminalsTab {
		t.Fatalf("tab = %v", m.tab)
	}
	press(t, m, "i")
	if !br.Called("interrupt sandboxaaaaaaaaaaaaaaaaa t1") {
		t.Fatalf("calls: %v", br.CallList())
	}
	// T asks how to end the terminal, saying what terminate does to a shell; ctrl-D is the default
	conn := uitest.NewTermConn()
	br.TermConns = map[string]*uitest.TermConn{"t1": conn}
	press(t, m, "T")
	v := m.View()
	for _, want := range []string{"End terminal t1", "ctrl-D (end of input)", "EXITED 0", "TERM, then KILL after 0.5 s", "KILLED KILL"} {
		if !strings.Contains(v, want) {
			t.Fatalf("end dialog lacks %q:\n%s", want, v)
		}
	}
	if br.Called("terminate") {
		t.Fatal("T terminated without asking")
	}
	conn.Ch <- client.TermEvent{Kind: client.TermReady}
	up := press(t, m, "enter")
	if w, closed := conn.Written(); w != "\x04" || !closed || !br.Called("connect t1 0x0") || br.Called("terminate") {
		t.Fatalf("ctrl-D: wrote %q closed %v calls %v", w, closed, br.CallList())
	}
	if st := statuses(up); !strings.Contains(st, "sent ctrl-D (end of input) to terminal t1") || !strings.Contains(st, "T offers terminate") {
		t.Fatalf("status %q", st)
	}
	press(t, m, "T", "down", "enter")
	if !br.Called("terminate sandboxaaaaaaaaaaaaaaaaa t1") {
		t.Fatalf("calls: %v", br.CallList())
	}
	up = press(t, m, "A")
	var att *common.AttachTerminalMsg
	for _, msg := range up {
		if a, ok := msg.(common.AttachTerminalMsg); ok {
			att = &a
		}
	}
	if att == nil || att.Terminal.ID != "t1" || att.Sandbox != m.id {
		t.Fatalf("A did not ask for a full-screen attach: %+v", up)
	}
	// a new terminal: the form asks for argv, cwd, env and size
	press(t, m, "s")
	if m.dialog == nil || m.dialog.ID != "terminal" {
		t.Fatalf("s did not open the new-terminal form: %+v", m.dialog)
	}
	for _, k := range uitest.Type(" -l") {
		m.Update(k)
	}
	press(t, m, "tab", "tab", "tab")
	for _, k := range uitest.Type("90x20") {
		m.Update(k)
	}
	up = press(t, m, "enter")
	if len(br.Terminals) != 1 {
		t.Fatalf("terminal requests: %+v (msgs %+v)", br.Terminals, up)
	}
	r := br.Terminals[0]
	if !reflect.DeepEqual(r.Argv, []string{"bash", "-l"}) || r.Cols != 90 || r.Rows != 20 {
		t.Fatalf("request: %+v", r)
	}
}

func TestParseTerminal(t *testing.T) {
	r, err := parseTerminal([]string{"sh", " /tmp ", "A=1 B='x y'", ""}, 80, 23)
	if err != nil || r.Cols != 80 || r.Rows != 23 || r.Cwd != "/tmp" || r.Env["B"] != "x y" {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"80", "0x10", "axb", "5000x10", "10x"} {
		if _, err := parseTerminal([]string{"sh", "", "", bad}, 80, 23); err == nil {
			t.Errorf("size %q accepted", bad)
		}
	}
	if _, err := parseTerminal([]string{"sh", "", "NOEQ", ""}, 80, 23); err == nil {
		t.Error("env without = accepted")
	}
}

// TestHelpOffersOnlyWhatWorksOnTheTab: the Incarnations tab offers no process or terminal keys.
func TestHelpOffersOnlyWhatWorksOnTheTab(t *testing.T) {
	m := New(uitest.Context(t, uitest.NewBridge(), 100, 30), "sandboxaaaa")
	m.SetSize(100, 30)
	has := func(cols [][]key.Binding, b key.Binding) bool {
		for _, c := range cols {
			for _, x := range c {
				if x.Help() == b.Help() {
					return true
				}
			}
		}
		return false
	}
	k := m.ctx.Keys
	m.tab = TimelineTab
	for _, b := range []key.Binding{k.Kill, k.Relaunch, k.Select, k.Attach, k.Interrupt, k.Terminate} {
		if has(m.FullHelp(), b) || has([][]key.Binding{m.ShortHelp()}, b) {
			t.Errorf("the Incarnations tab offers %q", b.Help().Key)
		}
	}
	m.tab = TerminalsTab
	if !has(m.FullHelp(), k.Attach) || has(m.FullHelp(), k.Relaunch) {
		t.Error("the Terminals tab's help is not the terminal keys")
	}
	m.tab = ProcessesTab
	if !has(m.FullHelp(), k.Kill) || has(m.FullHelp(), k.Terminate) {
		t.Error("the Processes tab's help is not the process keys")
	}
}

// TestNarrowProcessesTable: at 80×24 COMMAND keeps a useful width while STATE keeps what its
// words need, nothing passes the right edge, and the detail wraps instead of being cut.
func TestNarrowProcessesTable(t *testing.T) {
	m, _ := newModel(t)
	history(m)
	m.SetSize(80, 21) // 80×24 less the root's header, status and hints
	selectProc(m, "old-run")
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) != 21 {
		t.Fatalf("%d lines, want 21", len(lines))
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Fatalf("line of %d cells: %q", w, l)
		}
	}
	head := lines[2]
	cmd, state := strings.Index(head, "COMMAND"), strings.Index(head, "STATE")
	if cmd < 0 || state < 0 {
		t.Fatalf("header %q", head)
	}
	if !strings.Contains(v, "sh -c 'work old-run'") {
		t.Fatalf("COMMAND is cut at 80 columns:\n%s", v)
	}
	if !strings.Contains(v, "vanished with its container") || !strings.Contains(v, "incarnation #2") {
		t.Fatalf("the LOST detail is cut:\n%s", v)
	}
}

// TestPreviewFollowsTheSelection: p opens the preview; it shows the selected process's details
// and its output, and follows the selection.
func TestPreviewFollowsTheSelection(t *testing.T) {
	m, br := newModel(t)
	history(m)
	m.SetSize(140, 30)
	selectProc(m, "run")
	up := press(t, m, "p")
	_ = up
	if !br.Called("follow run") {
		t.Fatal("the preview does not follow the selected process")
	}
	v := m.View()
	if !strings.Contains(v, "Preview · run") || !strings.Contains(v, "sh -c 'work run'") {
		t.Fatalf("preview:\n%s", v)
	}
	press(t, m, "j")
	if !br.Called("follow fail") {
		t.Fatal("the preview did not follow the selection")
	}
	press(t, m, "p")
	if strings.Contains(m.View(), "Preview ·") {
		t.Fatal("p did not close the preview")
	}
}

// Every state word is whole at 80×24, 120×40 and 200×60: a narrow STATE column drops a word's
// detail (incarnation, age, error code), never the word itself; a wide one shows it all.
func TestStateWordsWholeAtEverySize(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		w, h := sz[0], sz[1]
		br := uitest.NewBridge()
		m := New(uitest.Context(t, br, w, h), "sandboxaaaaaaaaaaaaaaaaa")
		m.SetSize(w, h)
		m.Init()
		apply(m,
			client.SandboxEvent{Kind: client.SandboxStarted, Time: at(-600), Incarnation: inc(11, false)},
			client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-590), Incarnation: inc(11, false), Process: proc("agent-old", "running", 11, 590)},
			client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-580), Incarnation: inc(11, false), Process: ended(proc("killed-old", "exited", 11, 580), &client.Exit{Code: 154, Signal: 26}, nil, 3)},
			client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-570), Incarnation: inc(11, false), Process: ended(proc("error-old", "error", 11, 570), nil, &client.RunError{Code: "container_unavailable_during_start", Message: "no capacity"}, 0)},
			client.SandboxEvent{Kind: client.IncarnationChanged, Time: at(-299), Previous: inc(11, false), Incarnation: inc(12, false), Evidence: []string{"the bridge reports incarnation 12 (was 11)"}},
			client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-200), Incarnation: inc(12, false), Process: proc("agent", "running", 12, 200)},
			client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-90), Incarnation: inc(12, false), Process: ended(proc("vtalrm", "exited", 12, 90), &client.Exit{Code: 154, Signal: 26}, nil, 7)},
			client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-70), Incarnation: inc(12, false), Process: ended(proc("broken", "error", 12, 70), nil, &client.RunError{Code: "spawn_failed_because_of_a_long_reason", Message: "no such file"}, 0)},
			client.SandboxEvent{Kind: client.ProcessAppeared, Time: at(-60), Incarnation: inc(12, false), Process: ended(proc("exit127", "exited", 12, 60), &client.Exit{Code: 127}, nil, 1)},
			client.SandboxEvent{Kind: client.WatchError, Time: at(0), Err: errors.New("bridge unreachable: connection refused")},
		)
		v := m.View()
		lines := strings.Split(v, "\n")
		if len(lines) != h {
			t.Errorf("%dx%d: %d lines", w, h, len(lines))
		}
		row := map[string]string{}
		for i, l := range lines {
			if lw := ansi.StringWidth(l); lw > w {
				t.Errorf("%dx%d: line %d is %d cells: %q", w, h, i, lw, l)
			}
			if i < 3 || i > 9 {
				continue // title, tabs and head above the 7 rows; the detail below
			}
			if f := strings.Fields(strings.TrimLeft(l, "> *")); len(f) > 1 {
				row[f[0]] = l
			}
		}
		for id, word := range map[string]string{"agent-old": "STALE ", "killed-old": "STALE ", "error-old": "STALE ",
			"agent": "UNKNOWN", "vtalrm": "KILLED VTALRM", "broken": "ERROR spawn_", "exit127": "EXITED 127"} {
			l, ok := row[id]
			if !ok {
				t.Errorf("%dx%d: no row for %s:\n%s", w, h, id, v)
				continue
			}
			cell := strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(l, "> *"), id))
			if !strings.HasPrefix(cell, word) || strings.HasPrefix(cell, word+"…") {
				t.Errorf("%dx%d: %s's state is not whole (want %q): %q", w, h, id, word, l)
			}
			// a long bridge error code may be cut after the word; nothing else is
			if state, _, _ := strings.Cut(cell, "  "); id != "broken" && strings.Contains(state, "…") {
				t.Errorf("%dx%d: %s's state is cut: %q", w, h, id, l)
			}
		}
		if w >= 200 && (!strings.Contains(v, "STALE #11 · was RUNNING") || !strings.Contains(v, "UNKNOWN (RUNNING 3m20s ago)")) {
			t.Errorf("%dx%d: a wide screen shortens the wording:\n%s", w, h, v)
		}
		uitest.Golden(t, fmt.Sprintf("states_%dx%d", w, h), v, *update)
	}
}

// TestFilterMatchesWhatTheRowShows: the filter looks in the STATE column's words as shown
// (LOST, STALE, KILLED TERM…), in any case, on every tab.
func TestFilterMatchesWhatTheRowShows(t *testing.T) {
	m, _ := newModel(t)
	history(m)
	filter := func(f string) []string {
		m.syncLists()
		m.list().SetHeight(20)
		m.list().SetFilter(f)
		var ids []string
		for _, i := range m.list().Window() {
			switch m.tab {
			case ProcessesTab:
				ids = append(ids, m.st.Processes[i].Process.ID)
			case TerminalsTab:
				ids = append(ids, m.st.Terminals[i].Terminal.ID)
			default:
				ids = append(ids, fmt.Sprint(m.st.Incarnations[i].Number))
			}
		}
		return ids
	}
	for f, want := range map[string]string{"lost": "old-run", "LOST": "old-run", "stale": "old-ok", "killed term": "killed", "timed out": "slow", "spawn_failed": "broken"} {
		if got := filter(f); strings.Join(got, ",") != want {
			t.Errorf("/%s on Processes keeps %v, want %s", f, got, want)
		}
	}
	m.list().SetFilter("")
	m.tab = TerminalsTab
	if got := filter("running"); strings.Join(got, ",") != "t1" {
		t.Errorf("/running on Terminals keeps %v", got)
	}
	m.tab = TimelineTab
	if got := filter("FIRST SEEN"); len(got) != 1 {
		t.Errorf("/FIRST SEEN on Incarnations keeps %v", got)
	}
}
