package record

import (
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

// lives folds watcher events into a fresh state, one second apart.
type lives struct {
	t  *testing.T
	st *State
	at time.Time
}

func newLives(t *testing.T) *lives {
	return &lives{t: t, st: NewState("demo"), at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
}

func (l *lives) watch(ev client.SandboxEvent) string {
	l.at = l.at.Add(time.Second)
	ev.Sandbox, ev.Time = "demo", l.at
	return l.st.Apply(FromSandboxEvent(ev))
}

func (l *lives) process(id, state string, inc client.Incarnation) {
	l.watch(client.SandboxEvent{Kind: client.ProcessAppeared, Incarnation: inc,
		Process: &client.Process{ID: id, State: state, Incarnation: inc.Number}})
}

func (l *lives) numbers() []int {
	var out []int
	for _, inc := range l.st.Incarnations {
		out = append(out, inc.Number)
	}
	return out
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A bridge that numbers from 1 again after a restart starts a new life in the record: the record's
// number never repeats, the earlier #1's entries stay STALE, and new entries the bridge calls #1
// belong to the new life.
func TestBridgeNumberingFromOneAgainIsANewLife(t *testing.T) {
	l := newLives(t)
	one, two := client.Incarnation{Number: 1}, client.Incarnation{Number: 2}
	l.watch(client.SandboxEvent{Kind: client.SandboxStarted, Incarnation: one})
	l.process("build", "exited", one)
	l.watch(client.SandboxEvent{Kind: client.IncarnationChanged, Previous: one, Incarnation: two, Evidence: []string{"the bridge reports incarnation 2 (was 1)"}})
	l.process("agent", "running", two)

	// the bridge restarted and numbers from 1 again
	notice := l.watch(client.SandboxEvent{Kind: client.IncarnationChanged, Previous: two, Incarnation: one, Evidence: []string{"the bridge reports incarnation 1 (was 2)"}})
	l.process("echo", "exited", one)

	if got := l.numbers(); !sameInts(got, []int{1, 2, 3}) {
		t.Fatalf("timeline %v, want [1 2 3]", got)
	}
	if l.st.Current.Number != 3 {
		t.Fatalf("current #%d, want #3", l.st.Current.Number)
	}
	if !strings.Contains(notice, "incarnation #3") || !strings.Contains(notice, "calls it #1") {
		t.Errorf("notice %q", notice)
	}
	ev := strings.Join(l.st.Incarnations[2].Evidence, "; ")
	if !strings.Contains(ev, "numbering started again") || !strings.Contains(ev, "recorded as #3") {
		t.Errorf("evidence %q", ev)
	}
	build, echo := l.st.Find(Process, "build"), l.st.Find(Process, "echo")
	if build.Incarnation != 1 || !l.st.Stale(build.Incarnation) {
		t.Errorf("the first container's build: #%d stale=%v, want #1 stale", build.Incarnation, l.st.Stale(build.Incarnation))
	}
	if echo.Incarnation != 3 || l.st.Stale(echo.Incarnation) {
		t.Errorf("the new echo: #%d stale=%v, want #3 current", echo.Incarnation, l.st.Stale(echo.Incarnation))
	}
	// the watcher resumes with the bridge's own number for the current life
	l.st.Running = new(true)
	if r := l.st.Resume(); r == nil || r.Incarnation.Number != 1 {
		t.Errorf("resume %+v, want the bridge's #1", r)
	}
}

// The same number with another start time is another life.
func TestSameNumberOtherStartIsANewLife(t *testing.T) {
	l := newLives(t)
	a := client.Incarnation{Number: 1, Started: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixNano()}
	b := client.Incarnation{Number: 1, Started: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC).UnixNano()}
	l.watch(client.SandboxEvent{Kind: client.SandboxStarted, Incarnation: a})
	l.process("old", "running", a)
	l.watch(client.SandboxEvent{Kind: client.SandboxStarted, Incarnation: a}) // the same life again: nothing new
	if got := l.numbers(); !sameInts(got, []int{1}) {
		t.Fatalf("timeline %v, want [1]", got)
	}
	notice := l.watch(client.SandboxEvent{Kind: client.ProcessAppeared, Incarnation: b, Process: &client.Process{ID: "new", State: "running", Incarnation: 1}})
	if got := l.numbers(); !sameInts(got, []int{1, 2}) {
		t.Fatalf("timeline %v, want [1 2]", got)
	}
	if notice == "" || !strings.Contains(strings.Join(l.st.Incarnations[1].Evidence, "; "), "started at") {
		t.Errorf("notice %q evidence %q", notice, l.st.Incarnations[1].Evidence)
	}
	if e := l.st.Find(Process, "new"); e.Incarnation != 2 {
		t.Errorf("new process in #%d, want #2", e.Incarnation)
	}
	if e := l.st.Find(Process, "old"); !l.st.Stale(e.Incarnation) {
		t.Errorf("old process not stale")
	}
}

// The watcher's evidence of a boundary under an unchanged number (a running process vanished) is a
// new life too.
func TestWatcherBoundaryUnderTheSameNumber(t *testing.T) {
	l := newLives(t)
	one := client.Incarnation{Number: 1}
	l.watch(client.SandboxEvent{Kind: client.SandboxStarted, Incarnation: one})
	l.process("agent", "running", one)
	l.watch(client.SandboxEvent{Kind: client.IncarnationChanged, Previous: one, Incarnation: one,
		Evidence: []string{"the bridge reports the same incarnation #1, but: process agent was running and is gone"}})
	if got := l.numbers(); !sameInts(got, []int{1, 2}) {
		t.Fatalf("timeline %v, want [1 2]", got)
	}
}

// Numbers that agree with the bridge stay the bridge's, and a first explicit report renames the
// life sandscope had numbered itself.
func TestExplicitNumbersAgreeWithTheBridge(t *testing.T) {
	l := newLives(t)
	inferred := client.Incarnation{Number: 1, Inferred: true}
	l.watch(client.SandboxEvent{Kind: client.SandboxStarted, Incarnation: inferred})
	l.process("p", "running", inferred)
	l.watch(client.SandboxEvent{Kind: client.ProcessChanged, Incarnation: client.Incarnation{Number: 4}, Process: &client.Process{ID: "p", State: "running", Incarnation: 4}})
	if got := l.numbers(); !sameInts(got, []int{4}) {
		t.Fatalf("timeline %v, want [4]", got)
	}
	if e := l.st.Find(Process, "p"); e.Incarnation != 4 || e.Inferred {
		t.Errorf("entry #%d inferred=%v", e.Incarnation, e.Inferred)
	}
	l.watch(client.SandboxEvent{Kind: client.IncarnationChanged, Previous: client.Incarnation{Number: 4}, Incarnation: client.Incarnation{Number: 5}, Evidence: []string{"the bridge reports incarnation 5 (was 4)"}})
	if got := l.numbers(); !sameInts(got, []int{4, 5}) || l.st.Current.Number != 5 {
		t.Fatalf("timeline %v current %d, want [4 5] and 5", got, l.st.Current.Number)
	}
}

// A process launched into a container the record has not seen yet (the bridge restarted and
// numbers from 1 again; the watcher has not polled since) starts the new life at the launch, and
// the watcher's later report of the same life adds its evidence rather than a fourth life.
func TestLaunchIntoANewLifeBeforeTheWatcherSeesIt(t *testing.T) {
	l := newLives(t)
	one, two := client.Incarnation{Number: 1}, client.Incarnation{Number: 2}
	l.watch(client.SandboxEvent{Kind: client.SandboxStarted, Incarnation: one})
	l.process("build", "exited", one)
	l.watch(client.SandboxEvent{Kind: client.IncarnationChanged, Previous: one, Incarnation: two, Evidence: []string{"the bridge reports incarnation 2 (was 1)"}})
	l.at = l.at.Add(time.Second)
	notice := l.st.Apply(Event{Time: l.at, Sandbox: "demo", Source: FromLaunch, Kind: "launch", Entity: Process, EntityID: "echo",
		Process: &client.Process{ID: "echo", State: "running", Incarnation: 1}, Launch: &Launch{Argv: []string{"echo", "hi"}}})
	if !strings.Contains(notice, "incarnation #3") {
		t.Errorf("launch notice %q", notice)
	}
	l.watch(client.SandboxEvent{Kind: client.IncarnationChanged, Previous: two, Incarnation: one, Evidence: []string{"the bridge reports incarnation 1 (was 2)"}})
	l.process("echo", "exited", one)
	if got := l.numbers(); !sameInts(got, []int{1, 2, 3}) {
		t.Fatalf("timeline %v, want [1 2 3]", got)
	}
	n := 0
	for _, e := range l.st.Processes {
		if e.ID == "echo" {
			n++
			if e.Incarnation != 3 {
				t.Errorf("echo in #%d, want #3", e.Incarnation)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d entries for one process, want 1", n)
	}
	if e := l.st.Find(Process, "build"); !l.st.Stale(e.Incarnation) {
		t.Error("the first container's build is not stale")
	}
}

// A terminal's connection that saw it exit ends its entry, as a process's stream ending does.
func TestTerminalEndingEndsItsEntry(t *testing.T) {
	l := newLives(t)
	one := client.Incarnation{Number: 1}
	l.watch(client.SandboxEvent{Kind: client.TerminalAppeared, Incarnation: one, Terminal: &client.Terminal{ID: "t1", Status: "running", Incarnation: 1}})
	l.st.Apply(FromTermEvent("demo", "t1", client.TermEvent{Kind: client.TermExited, Exit: &client.Exit{Code: 0}}))
	e := l.st.Find(Terminal, "t1")
	if e.Terminal.Status != "exited" || e.Terminal.Exit == nil || e.Terminal.Exit.Code != 0 {
		t.Fatalf("terminal after its exit: %+v", e.Terminal)
	}
}

// A sandbox first seen stopped (a life sandscope numbered itself), then a process launched in it:
// the launch names the life with the bridge's number, and the watcher's later boundary from its
// own inferred number to the bridge's is the same container, not a second one.
func TestFirstLaunchNamesTheLifeTheWatcherThenReports(t *testing.T) {
	l := newLives(t)
	inferred, one := client.Incarnation{Number: 1, Inferred: true}, client.Incarnation{Number: 1}
	l.watch(client.SandboxEvent{Kind: client.SandboxStopped, Incarnation: inferred})
	l.at = l.at.Add(time.Second)
	l.st.Apply(Event{Time: l.at, Sandbox: "demo", Source: FromLaunch, Kind: "launch", Entity: Process, EntityID: "p",
		Process: &client.Process{ID: "p", State: "running", Incarnation: 1}})
	l.watch(client.SandboxEvent{Kind: client.IncarnationChanged, Previous: inferred, Incarnation: one, Evidence: []string{"running false → true"}})
	l.process("p", "exited", one)
	if got := l.numbers(); !sameInts(got, []int{1}) {
		t.Fatalf("timeline %v, want [1]", got)
	}
	if e := l.st.Find(Process, "p"); l.st.Stale(e.Incarnation) || e.Inferred {
		t.Errorf("the process: #%d stale=%v inferred=%v", e.Incarnation, l.st.Stale(e.Incarnation), e.Inferred)
	}
}

// A sandbox known only from a command's lookup of an exited process has no known running state:
// the watcher resumes it as not known to have stopped, so its first poll (running) is no new
// container. Once the watcher saw it stopped, it resumes as stopped.
func TestResumeWithoutRunningState(t *testing.T) {
	st := NewState("demo")
	st.Apply(LookupProcess("demo", client.Process{ID: "p1", State: "exited", Incarnation: 1}))
	r := st.Resume()
	if r == nil || r.Running || !r.RunningUnknown || r.Incarnation.Number != 1 {
		t.Fatalf("resume %+v, want #1 with running unknown", r)
	}
	st.Apply(FromSandboxEvent(client.SandboxEvent{Sandbox: "demo", Time: time.Now(), Kind: client.SandboxStopped, Incarnation: client.Incarnation{Number: 1}}))
	if r := st.Resume(); r == nil || r.Running || r.RunningUnknown {
		t.Fatalf("resume %+v, want #1 known stopped", r)
	}
}
