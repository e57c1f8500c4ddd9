package record

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/buildinfo"
)

var update = flag.Bool("update", false, "rewrite golden files")

var gT = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return gT.Add(time.Duration(s) * time.Second) }

// scripted records a scene with every kind of incident: an agent that prints JSONL (one line
// carrying a terminal escape), loses its stream and resumes, has a gap, and is lost when the
// container is replaced; a test run that ends; the user's actions.
func scripted(t *testing.T) *Record {
	t.Helper()
	now := at(3600)
	r, err := Open(Options{Dir: t.TempDir(), Bridge: "https://bridge.example.com", Version: "1.2.3", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	inc1, inc2 := client.Incarnation{Number: 1, Inferred: true}, client.Incarnation{Number: 2, Inferred: true}
	watch := func(s int, ev client.SandboxEvent) {
		ev.Sandbox, ev.Time = "demo", at(s)
		r.Add(FromSandboxEvent(ev))
	}
	stream := func(s int, p string, ev client.LogEvent) {
		ev.Time = at(s)
		if ev.Kind == client.Data {
			r.CaptureData("demo", p, ev)
			return
		}
		r.Add(FromLogEvent("demo", p, ev))
	}
	agent := &client.Process{ID: "agentaaaa1", PID: 41, Command: []string{"claude", "-p", "fix | the tests"}, Cwd: "/workspace", State: "running", StartedAt: at(0)}
	tests := &client.Process{ID: "testsbbbb2", PID: 42, Command: []string{"npm", "test"}, Cwd: "/workspace", State: "running", StartedAt: at(1)}
	r.Add(Event{Time: at(0), Sandbox: "demo", Source: FromAction, Kind: "exec", Action: &Action{Kind: "exec", Detail: "claude -p 'fix | the tests'", Outcome: "ok", Result: "agentaaaa1"}})
	r.Add(Event{Time: at(0), Sandbox: "demo", Source: FromLaunch, Kind: "launch", Entity: Process, EntityID: agent.ID, Process: agent, Incarnation: inc1,
		Launch: LaunchOf(agent.Command, agent.Cwd, map[string]string{"ANTHROPIC_API_KEY": "secret-value", "CI": "1"}, 0)})
	watch(0, client.SandboxEvent{Kind: client.SandboxStarted, Incarnation: inc1, Evidence: []string{"GET running: true (first poll)"}})
	watch(0, client.SandboxEvent{Kind: client.ProcessAppeared, Incarnation: inc1, Process: agent})
	watch(1, client.SandboxEvent{Kind: client.ProcessAppeared, Incarnation: inc1, Process: tests})
	r.CaptureBegin("demo", agent.ID, false, "")
	stream(2, agent.ID, client.LogEvent{Kind: client.Data, Cursor: "c1", Data: []byte("{\"type\":\"system\",\"subtype\":\"init\"}\n{\"type\":\"assistant\",\"text\":\"reading the tests\"}\n")})
	stream(3, agent.ID, client.LogEvent{Kind: client.Data, Cursor: "c2", Data: []byte("{\"type\":\"tool_use\",\"name\":\"Bash\",\"input\":\"\x1b]52;c;ZXZpbA==\x07npm test\"}\n")})
	stream(4, agent.ID, client.LogEvent{Kind: client.Interrupted, Cursor: "c2", Reason: "connection reset by peer"})
	stream(5, agent.ID, client.LogEvent{Kind: client.Reconnecting, Cursor: "c2", Attempt: 1})
	stream(6, agent.ID, client.LogEvent{Kind: client.Resumed, Cursor: "c2", Attempt: 1})
	stream(7, agent.ID, client.LogEvent{Kind: client.Gap, Cursor: "c2", Gap: &client.GapInfo{Reason: client.GapTruncated, Bytes: 4096}})
	stream(8, agent.ID, client.LogEvent{Kind: client.Data, Cursor: "c4", Data: []byte("{\"type\":\"assistant\",\"text\":\"the discount is applied twice\"}\n")})
	ended := *tests
	ended.State, ended.Exit = "exited", &client.Exit{Code: 1}
	watch(9, client.SandboxEvent{Kind: client.ProcessChanged, Incarnation: inc1, Process: &ended})
	watch(20, client.SandboxEvent{Kind: client.IncarnationChanged, Previous: inc1, Incarnation: inc2,
		Evidence: []string{"inferred: process agentaaaa1 was running and is now absent", "inferred: the set of process and terminal IDs reset"}})
	watch(20, client.SandboxEvent{Kind: client.ProcessVanished, Incarnation: inc2, Process: agent, Evidence: []string{"absent from the process list", "it was running"}})
	watch(20, client.SandboxEvent{Kind: client.ProcessVanished, Incarnation: inc2, Process: &ended, Evidence: []string{"absent from the process list", "it had finished"}})
	running := true
	stream(21, agent.ID, client.LogEvent{Kind: client.Lost, Cursor: "c4", Loss: &client.LossEvidence{Lookup: "GET process: 404 not_found", SandboxRunning: &running, Incarnation: 2, Previous: 1, Inferred: true}})
	r.CaptureEnd("demo", agent.ID, "the process was lost")
	r.Add(Event{Time: at(30), Sandbox: "demo", Source: FromAction, Kind: "relaunch", Entity: Process, EntityID: agent.ID,
		Action: &Action{Kind: "relaunch", Detail: "claude -p 'fix | the tests'", Outcome: "ok", Result: "agentcccc3"}})
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test ./record -run %s -update):\n%s", name, t.Name(), got)
	}
}

func TestReportGolden(t *testing.T) {
	r := scripted(t)
	rep, err := r.BuildReport(ReportOptions{Sandbox: "demo", Entity: "agent", Version: "1.2.3", Dialect: "v1-preview", Kind: "remote", Now: at(3600)})
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Markdown()
	golden(t, "report_agent.md", md)
	s := string(md)
	for _, want := range []string{"**LOST**", "process agentaaaa1: process vanished (was running) → LOST", "absent from the process list; it was running",
		"| #2 |", "inferred: process agentaaaa1 was running and is now absent", "### 2026-03-04 10:00:04.000Z · INTERRUPTED",
		"the discount is applied twice", "env names: ANTHROPIC_API_KEY, CI", "fix \\| the tests"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"\x1b", "\x07", "secret-value", "bridge.example.com"} {
		if strings.Contains(s, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	j, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report_agent.json", j)
	var back Report
	if err := json.Unmarshal(j, &back); err != nil || back.Schema != ReportSchema || back.Subject == nil || !back.Subject.Lost || len(back.Incarnations) != 2 {
		t.Fatalf("JSON report: %v %+v", err, back.Subject)
	}
}

func TestReportWholeSandboxAndBadEntity(t *testing.T) {
	r := scripted(t)
	rep, err := r.BuildReport(ReportOptions{Sandbox: "demo", Version: "1.2.3", Dialect: "v1-preview", Kind: "remote", Host: "bridge.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	md := string(rep.Markdown())
	if !strings.Contains(md, "process testsbbbb2") || !strings.Contains(md, "STALE #1 · EXITED 1") || !strings.Contains(md, "host bridge.example.com") {
		t.Fatalf("whole-sandbox report:\n%s", md)
	}
	var ee *EntityError
	if _, err := r.BuildReport(ReportOptions{Sandbox: "demo", Entity: "nosuch"}); !errors.As(err, &ee) {
		t.Fatalf("unknown entity: %v", err)
	}
	if _, err := r.BuildReport(ReportOptions{Sandbox: "nosuchbox"}); err == nil {
		t.Fatal("report on an unknown sandbox")
	}
}

// TestReportVersionNeverEmpty: a report built without a version (as the TUI's were) names this
// build's version, never "by sandscope " with nothing after it.
func TestReportVersionNeverEmpty(t *testing.T) {
	r := scripted(t)
	rep, err := r.BuildReport(ReportOptions{Sandbox: "demo", Dialect: "v1-preview", Kind: "remote"})
	if err != nil {
		t.Fatal(err)
	}
	want := "by sandscope " + buildinfo.Version() + "\n"
	if md := string(rep.Markdown()); rep.Sandscope == "" || !strings.Contains(md, want) {
		t.Fatalf("report version %q; want %q in:\n%.400s", rep.Sandscope, want, md)
	}
}

// A stable run the driver's watcher also reported as a process is one entity in a report: the
// run's, placed in the container the process entry names.
func TestReportStableRunIsOneEntity(t *testing.T) {
	r, err := Open(Options{Dir: t.TempDir(), Bridge: "https://bridge.example.com", Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const id = "20261202T171307Z-3fb922fb"
	now := time.Now()
	if err := r.UpdateStable("boxa", func(sb *StableSandbox) {
		sb.SetRun(StableRun{ID: id, Argv: []string{"make"}, Started: now}, client.RunResult{State: client.RunConfirmed, Code: 3, Evidence: "the recorder's exit status"}, now)
	}); err != nil {
		t.Fatal(err)
	}
	inc := client.Incarnation{Number: 1, Inferred: true}
	p := client.Process{ID: id, Command: []string{"make"}, State: "running", StartedAt: now, Incarnation: 1}
	r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "boxa", Time: now, Process: &p, Incarnation: inc}))
	p.State, p.Exit = "exited", &client.Exit{Code: 3}
	r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "boxa", Time: now.Add(time.Second), Process: &p, Incarnation: inc}))
	rep, err := r.BuildReport(ReportOptions{Sandbox: "boxa", Entity: "3fb9"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range rep.Entities {
		if e.ID == id {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the run is %d entities: %+v", n, rep.Entities)
	}
	if rep.Subject == nil || rep.Subject.ID != id || rep.Subject.Incarnation != 1 || rep.Subject.Kind != string(StableRunEntity) {
		t.Fatalf("subject %+v", rep.Subject)
	}
}
