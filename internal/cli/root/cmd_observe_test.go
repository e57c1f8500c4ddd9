package root

// What the command line sees is history: logs, logs --all, exec and wait record the sandbox's
// state, the processes they looked up, and their streams' events (with the loss evidence), so
// the record (the TUI's screens, report) shows them as if the TUI had watched.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/cli/cmdutil"
	"sandscope/internal/e2e"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
	"sandscope/record"
)

// commandRecordOf opens, read-only, the record the commands wrote under stateHome for the bridge
// that flags (--url URL --token-file FILE) name, found through the functions the commands use.
func commandRecordOf(t *testing.T, stateHome string, flags []string) *record.Record {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", stateHome)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	for _, k := range []string{"SANDSCOPE_URL", "SANDSCOPE_CONTEXT", "SANDBOX_API_KEY", "SANDSCOPE_CONFIG"} {
		t.Setenv(k, "")
	}
	n, err := cmdutil.ReaderRecordName(context.Background(), &cmdutil.Factory{URL: flags[1], TokenFile: flags[3]})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.Open(record.Options{Dir: cmdutil.RecordDir(), Bridge: n.Identity, Legacy: n.Legacy, Version: cmdutil.Version, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

func incarnationNumbers(st *record.State) []int {
	var out []int
	for _, inc := range st.Incarnations {
		out = append(out, inc.Number)
	}
	return out
}

// logs --all -f sees a process LOST in a replaced container and exits 3; the record then holds
// the process with its incarnation and the loss, the sandbox running its new incarnation, and
// both incarnations; report shows the same.
func TestLogsAllRecordsWhatItSaw(t *testing.T) {
	bin := sandscopeBinary(t)
	b, flags := bridgeArgs(t)
	beta := startProc(t, b, "sh", "-c", "echo b1; sleep 60", "beta")
	if beta.Incarnation == 0 {
		t.Fatal("the local bridge reports no incarnation")
	}
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, flags...), "logs", "local", "--all", "-f")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "beta's output", &stdout, regexp.MustCompile(`beta-\w+ \| b1\n`))
	if err := b.Server.ReplaceSandbox("local"); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cmdutil.ExitLost {
		t.Fatalf("exit %v\nstderr %q", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "sandscope: record:") {
		t.Fatalf("the record was not written: %q", stderr.String())
	}
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := c.Running(ctx, "local")
	if err != nil || rs.Incarnation <= beta.Incarnation {
		t.Fatalf("after the replacement: %+v %v", rs, err)
	}

	rec := commandRecordOf(t, state, flags)
	st := rec.State("local")
	e := st.Find(record.Process, beta.ID)
	if e == nil {
		t.Fatalf("the LOST process is not in the record: %+v", st.Processes)
	}
	if e.Incarnation != beta.Incarnation || e.Inferred || !e.Lost || len(e.Evidence) == 0 || record.StateWord(st, e) != "LOST" {
		t.Errorf("the LOST process: %+v (%s)", e, record.StateWord(st, e))
	}
	if st.Running == nil || !*st.Running || st.Current.Number != rs.Incarnation {
		t.Errorf("the sandbox: running %v, current %+v, want incarnation %d", st.Running, st.Current, rs.Incarnation)
	}
	incs := incarnationNumbers(st)
	if len(incs) != 2 || incs[0] != beta.Incarnation || incs[1] != rs.Incarnation {
		t.Errorf("incarnations %v, want [%d %d]", incs, beta.Incarnation, rs.Incarnation)
	}

	r := runSandscope(t, []string{"XDG_STATE_HOME=" + state}, append(append([]string{}, flags...), "report", "local", "--json")...)
	if r.code != 0 {
		t.Fatalf("report: %d %q", r.code, r.stderr)
	}
	var rep record.Report
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		t.Fatal(err)
	}
	lost := false
	for _, in := range rep.Incidents {
		lost = lost || (in.Kind == "lost" && in.Entity == "process "+beta.ID)
	}
	if !lost || len(rep.Incarnations) != 2 || rep.Running == nil || !*rep.Running || rep.Incarnation != rs.Incarnation {
		t.Errorf("report: running %v incarnation %d incarnations %+v incidents %+v", rep.Running, rep.Incarnation, rep.Incarnations, rep.Incidents)
	}

	// The TUI opened afterwards lists that run on the all-runs screen, LOST in its incarnation,
	// and the sandbox without adding it.
	tmuxPath := e2e.NeedTmux(t)
	dir := t.TempDir()
	env := append(e2e.Env(t, dir), "XDG_STATE_HOME="+state)
	s := e2e.LaunchTUI(t, tmuxPath, dir, env, flags...)
	s.WaitFor("the sandbox the command saw", "Sandboxes (", "local")
	s.Keys("W")
	sc := s.WaitUntil("the LOST run on the all-runs screen", func(sc string) bool {
		for _, l := range e2e.Lines(sc) {
			if strings.Contains(l, beta.ID[:8]) && strings.Contains(l, "LOST") && strings.Contains(l, fmt.Sprintf("#%d", beta.Incarnation)) {
				return true
			}
		}
		return false
	})
	if strings.Contains(sc, "FOLLOW FAILED") {
		t.Fatalf("all-runs screen:\n%s", sc)
	}
}

// After exec, logs and wait only, report shows the sandbox's state, its incarnation table, and
// each process with its launch or lookup and its confirmed ending.
func TestReportAfterCommandLineUse(t *testing.T) {
	b, flags := bridgeArgs(t)
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	run := func(a ...string) runResult {
		t.Helper()
		return runSandscope(t, env, append(append([]string{}, flags...), a...)...)
	}
	if r := run("exec", "local", "--", "sh", "-c", "echo built; exit 0"); r.code != 0 {
		t.Fatalf("exec: %d %q", r.code, r.stderr)
	}
	p := startProc(t, b, "sh", "-c", "echo waited; sleep 0.3; exit 5")
	if r := run("wait", "local", p.ID[:8]); r.code != 5 {
		t.Fatalf("wait: %d %q", r.code, r.stderr)
	}
	q := startProc(t, b, "sh", "-c", "echo logged; exit 0")
	waitEnded(t, b, q.ID) // logs then looks at an ended process, which the report shows
	if r := run("logs", "local", q.ID); r.code != 0 || string(r.stdout) != "logged\n" {
		t.Fatalf("logs: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r := run("report", "local", "--json")
	if r.code != 0 {
		t.Fatalf("report: %d %q", r.code, r.stderr)
	}
	var rep record.Report
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Running == nil || !*rep.Running || rep.Incarnation != p.Incarnation || len(rep.Incarnations) == 0 || rep.Incarnations[0].Number != p.Incarnation {
		t.Errorf("sandbox: running %v incarnation %d incarnations %+v", rep.Running, rep.Incarnation, rep.Incarnations)
	}
	states := map[string]string{}
	for _, e := range rep.Entities {
		states[e.ID] = e.State
		if e.Incarnation != p.Incarnation {
			t.Errorf("%s: incarnation %d, want %d", e.ID, e.Incarnation, p.Incarnation)
		}
	}
	if states[p.ID] != "EXITED 5" || states[q.ID] != "EXITED 0" || len(states) != 3 {
		t.Errorf("entities %+v", rep.Entities)
	}
	if md := run("report", "local"); !strings.Contains(string(md.stdout), "- sandbox: RUNNING, incarnation #") || !strings.Contains(string(md.stdout), "| #1 |") {
		t.Errorf("markdown:\n%s", md.stdout)
	}
}

// waitEnded waits until the bridge no longer reports process id of sandbox "local" running.
func waitEnded(t *testing.T, b *bridgetest.Bridge, id string) {
	t.Helper()
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	e2e.WaitEnded(t, c, "local", id)
}

// On a stable bridge: a run LOST with its replaced container is an incident of the report beside
// a confirmed ending, incidents is a list, and the command exec's advice names (logs SANDBOX RUN)
// prints what sandscope kept of the run's output, from the record, without a request.
func TestStableLostRunIsHistory(t *testing.T) {
	bin := sandscopeBinary(t)
	b, flags := bridgeArgs(t, bridgetest.WithDialect(localbridge.DialectStable))
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	run := func(a ...string) runResult {
		t.Helper()
		return runSandscope(t, env, append(append([]string{}, flags...), a...)...)
	}
	// Before any ending: incidents is an empty list, not null.
	if r := run("exec", "box", "--", "sh", "-c", "echo ok; exit 0"); r.code != 0 {
		t.Fatalf("exec: %d %q", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, flags...), "exec", "box", "--", "sh", "-c", "echo one; echo e1 >&2; sleep 30; echo two")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run's output", &stdout, regexp.MustCompile(`one\n`))
	waitFor(t, "the run's stderr", &stderr, regexp.MustCompile(`e1\n`))
	// The stream breaks off and the container is replaced: the recorder's files went with it.
	if n := b.Server.CutExecStreams("box"); n != 1 {
		t.Fatalf("cut %d streams", n)
	}
	if err := b.Server.ReplaceSandbox("box"); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cmdutil.ExitExecUnsure {
		t.Fatalf("exec of a LOST run: %v\n%q", err, stderr.String())
	}
	m := e2e.RunID.FindAllStringSubmatch(stderr.String(), -1)
	if m == nil || !strings.Contains(stderr.String(), "LOST") {
		t.Fatalf("no LOST run in %q", stderr.String())
	}
	id := m[len(m)-1][1]
	advice := "sandscope logs box " + id
	if !strings.Contains(stderr.String(), advice) || strings.Contains(stderr.String(), "prints the exact bytes") {
		t.Errorf("exec's advice: %q", stderr.String())
	}

	// The advice works: what the stream delivered, from the record, and no request.
	before := b.Server.TotalAllocations()
	r := run(strings.Fields(advice)[1:]...)
	if r.code != cmdutil.ExitLost || string(r.stdout) != stdout.String() || !strings.HasPrefix(string(r.stderr), "e1\n") ||
		!strings.Contains(string(r.stderr), "LOST") || !strings.Contains(string(r.stderr), "the stream delivered before the loss") {
		t.Errorf("%s: %d stdout %q stderr %q", advice, r.code, r.stdout, r.stderr)
	}
	if after := b.Server.TotalAllocations(); after != before {
		t.Errorf("logs of a run the record settled as LOST made %d sandbox requests, want 0", after-before)
	}

	r = run("report", "box", "--json")
	if r.code != 0 {
		t.Fatalf("report: %d %q", r.code, r.stderr)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.stdout, &raw); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw["incidents"]), "[") {
		t.Fatalf("incidents: %s", raw["incidents"])
	}
	var rep record.Report
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, in := range rep.Incidents {
		kinds[in.Kind+" "+in.Entity] = true
		if in.Kind == "lost" && !strings.Contains(strings.Join(in.LastLines, "\n"), "one") {
			t.Errorf("the LOST incident's lines: %+v", in)
		}
	}
	if !kinds["lost run "+id] || len(kinds) < 2 {
		t.Errorf("incidents %+v", rep.Incidents)
	}
	ended := 0
	for _, e := range rep.Entities {
		if e.Kind == "run" && (e.State == "EXITED 0" || e.State == "LOST (inferred)") {
			ended++
		}
	}
	if ended != 2 {
		t.Errorf("entities %+v", rep.Entities)
	}
}
