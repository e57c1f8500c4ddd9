package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

// Stable entries are events: what one record writes, a second one (another sandscope process)
// reads, and a restart folds to the same book.
func TestStableEntriesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a := open(t, dir)
	now := time.Now()
	if err := a.UpdateStable("box", func(sb *StableSandbox) {
		sb.Told = true
		sb.Incarnation, sb.MarkerSeen = "abc", now
		sb.SetRun(StableRun{ID: "20260101T000000Z-aaaaaaaa", Argv: []string{"make", "test"}, Session: "dev", Started: now},
			client.RunResult{State: client.RunRunning, Evidence: "started here"}, now)
		sb.UseSession("dev", true, now)
	}); err != nil {
		t.Fatal(err)
	}
	b := open(t, dir) // a second process on the same record
	sb, err := b.Stable("box")
	if err != nil {
		t.Fatal(err)
	}
	if !sb.Told || sb.Incarnation != "abc" || len(sb.Runs) != 1 || sb.Runs[0].State != "RUNNING" || len(sb.LiveSessions()) != 1 {
		t.Fatalf("the second reader sees %+v", sb)
	}
	// An unconfirmed exit keeps only the reported code; a confirmed one gets the code.
	_ = b.UpdateStable("box", func(sb *StableSandbox) {
		sb.SetRun(StableRun{ID: "20260101T000000Z-aaaaaaaa"}, client.RunResult{State: client.RunUnconfirmed, Code: 0, Evidence: "stream only"}, now)
	})
	sb, _ = a.Stable("box")
	r := sb.Runs[0]
	if r.Code != nil || r.Reported == nil || *r.Reported != 0 || StableStateWord(r) != "REPORTED 0 (unconfirmed)" || r.Argv[0] != "make" {
		t.Fatalf("unconfirmed: %+v (%s)", r, StableStateWord(r))
	}
	_ = a.UpdateStable("box", func(sb *StableSandbox) {
		sb.SetRun(StableRun{ID: r.ID}, client.RunResult{State: client.RunConfirmed, Code: 4, Evidence: "status file"}, now)
		sb.DeleteSession("dev", now)
	})
	evs, _ := a.Events("box", r.ID)
	_ = a.UpdateStable("box", func(sb *StableSandbox) {
		sb.SetRun(StableRun{ID: r.ID}, client.RunResult{State: client.RunConfirmed, Code: 4, Evidence: "read again"}, now.Add(time.Second))
	})
	if again, _ := a.Events("box", r.ID); len(again) != len(evs) {
		t.Errorf("the same ending settled again added %d events", len(again)-len(evs))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := open(t, dir)
	defer c.Close()
	sb, _ = c.Stable("box")
	if got := StableStateWord(sb.Runs[0]); got != "EXITED 4" || len(sb.LiveSessions()) != 0 {
		t.Fatalf("after a restart: %s, sessions %+v", got, sb.Sessions)
	}
	if st := c.State("box"); len(st.Stable.Runs) != 1 {
		t.Fatalf("the folded state has %d stable runs", len(st.Stable.Runs))
	}
	ids, err := c.StableSandboxes()
	if err != nil || len(ids) != 1 || ids[0] != "box" {
		t.Fatalf("stable sandboxes: %v %v", ids, err)
	}
	if _, err := sb.FindRun("2026"); err != nil {
		t.Fatalf("prefix: %v", err)
	}
	if _, err := sb.FindRun("x"); err != ErrNoRun {
		t.Fatalf("no run: %v", err)
	}
	rep, err := c.BuildReport(ReportOptions{Sandbox: "box", Entity: "2026"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Subject == nil || rep.Subject.State != "EXITED 4" || rep.Subject.Kind != "run" {
		t.Fatalf("report subject: %+v", rep.Subject)
	}
	md := string(rep.Markdown())
	if !strings.Contains(md, "run 20260101T000000Z-aaaaaaaa: EXITED 4") || !strings.Contains(md, "argv make test") {
		t.Fatalf("report timeline:\n%s", md)
	}
}

// An old stable-book.json is imported once per bridge with its times, never twice, and is kept
// with a note beside it.
func TestImportStableBook(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "stable-book.json")
	code := 7
	started := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	book := stableBookFile{Bridges: map[string]map[string]*StableSandbox{
		"http://bridge": {"box": {Told: true, Incarnation: "m1", MarkerSeen: started,
			Runs: []StableRun{{ID: "20261130T100000Z-11111111", Argv: []string{"sh", "-c", "exit 7"}, Started: started,
				State: "EXITED", Code: &code, Evidence: "the recorder's status file in the sandbox", Updated: started.Add(time.Second)}},
			Sessions: []StableSession{{ID: "dev", Created: true, Seen: started}}}},
		"http://other": {"elsewhere": {Told: true}},
	}}
	data, _ := json.Marshal(book)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	note, err := r.ImportStableBook(path, "http://bridge")
	if err != nil || !strings.Contains(note, "imported 1 runs and 1 sessions") {
		t.Fatalf("import: %q %v", note, err)
	}
	sb, _ := r.Stable("box")
	if len(sb.Runs) != 1 || StableStateWord(sb.Runs[0]) != "EXITED 7" || !sb.Told || sb.Incarnation != "m1" || len(sb.Sessions) != 1 {
		t.Fatalf("imported: %+v", sb)
	}
	if ids, _ := r.StableSandboxes(); len(ids) != 1 {
		t.Fatalf("another bridge's part was imported: %v", ids)
	}
	evs, _ := r.Events("box", "20261130T100000Z-11111111")
	if len(evs) != 1 || !evs[0].Time.Equal(started.Add(time.Second)) {
		t.Fatalf("the run's event lost its time: %+v", evs)
	}
	// Once only, also after a restart.
	r.Close()
	r = open(t, dir)
	defer r.Close()
	if note, err := r.ImportStableBook(path, "http://bridge"); note != "" || err != nil {
		t.Fatalf("second import: %q %v", note, err)
	}
	if sb, _ := r.Stable("box"); len(sb.Runs) != 1 || len(sb.Sessions) != 1 {
		t.Fatalf("after the second import: %+v", sb)
	}
	if kept, err := os.ReadFile(path); err != nil || string(kept) != string(data) {
		t.Fatalf("the book file was not kept as it was: %v", err)
	}
	if n, err := os.ReadFile(path + ".imported.txt"); err != nil || !strings.Contains(string(n), "no longer writes") {
		t.Fatalf("note: %q %v", n, err)
	}
}

// A damaged book file is left alone and said, and nothing is marked imported.
func TestImportStableBookDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "stable-book.json")
	if err := os.WriteFile(path, []byte(`{"bridges": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	defer r.Close()
	if _, err := r.ImportStableBook(path, "x"); err == nil || !strings.Contains(err.Error(), "left as it is") {
		t.Fatalf("damaged: %v", err)
	}
	if _, err := r.ImportStableBook(filepath.Join(dir, "none.json"), "x"); err != nil {
		t.Fatalf("missing file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"bridges": {` {
		t.Fatal("the damaged file was changed")
	}
}

// Stable runs are ordinary history in the report: each run an entity with its ending, each ending
// (confirmed, LOST) an incident with the output sandscope kept before it, the containers the
// marker told apart the incarnations (inferred), and every list a JSON list.
func TestStableRunsInTheReport(t *testing.T) {
	r := open(t, t.TempDir())
	defer r.Close()
	now := time.Now()
	ok := StableRun{ID: "20260101T000000Z-aaaaaaaa", Argv: []string{"make"}, Started: now, Incarnation: "m1"}
	lost := StableRun{ID: "20260101T000001Z-bbbbbbbb", Argv: []string{"agent"}, Started: now, Incarnation: "m1"}
	step := func(f func(sb *StableSandbox)) {
		t.Helper()
		if err := r.UpdateStable("box", f); err != nil {
			t.Fatal(err)
		}
	}
	step(func(sb *StableSandbox) {
		sb.Incarnation, sb.MarkerSeen = "m1", now
		sb.SetRun(ok, client.RunResult{State: client.RunRunning, Evidence: "started here"}, now)
		sb.SetRun(lost, client.RunResult{State: client.RunRunning, Evidence: "started here"}, now)
	})
	r.CaptureBegin("box", lost.ID, false, "")
	r.CaptureData("box", lost.ID, client.LogEvent{Kind: client.Data, Data: []byte("thinking\n"), Time: now})
	step(func(sb *StableSandbox) {
		sb.SetRun(ok, client.RunResult{State: client.RunConfirmed, Code: 0, Evidence: "status file"}, now.Add(time.Second))
	})
	step(func(sb *StableSandbox) {
		sb.Incarnation, sb.MarkerSeen = "m2", now.Add(2*time.Second)
		sb.SetRun(lost, client.RunResult{State: client.RunLost, Inferred: true, Evidence: "the container marker changed"}, now.Add(2*time.Second))
	})
	rep, err := r.BuildReport(ReportOptions{Sandbox: "box", Dialect: "stable"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]ReportIncident{}
	for _, in := range rep.Incidents {
		kinds[in.Kind+" "+in.Entity] = in
	}
	if len(rep.Incidents) != 2 {
		t.Errorf("incidents %+v", rep.Incidents)
	}
	if _, found := kinds["ended run "+ok.ID]; !found {
		t.Errorf("no ending of %s in %+v", ok.ID, rep.Incidents)
	}
	if in, found := kinds["lost run "+lost.ID]; !found || len(in.LastLines) != 1 || in.LastLines[0] != "thinking" {
		t.Errorf("the LOST run's incident: %+v (all: %+v)", in, rep.Incidents)
	}
	states := map[string]ReportEntity{}
	for _, e := range rep.Entities {
		states[e.ID] = e
	}
	if e := states[ok.ID]; e.State != "EXITED 0" || e.Incarnation != 1 || !e.Stale {
		t.Errorf("the confirmed run: %+v", e)
	}
	if e := states[lost.ID]; e.State != "LOST (inferred)" || !e.Lost || e.Capture == nil || e.Capture.Bytes != 9 {
		t.Errorf("the LOST run: %+v", e)
	}
	if len(rep.Incarnations) != 2 || !rep.Incarnations[1].Inferred || rep.Incarnation != 2 {
		t.Errorf("incarnations %+v (current %d)", rep.Incarnations, rep.Incarnation)
	}
	if md := string(rep.Markdown()); !strings.Contains(md, "### ") || !strings.Contains(md, "LOST · run "+lost.ID) {
		t.Errorf("markdown:\n%s", md)
	}

	// A sandbox with runs and no ending yet: incidents is an empty list, not null.
	step(func(sb *StableSandbox) {
		sb.SetRun(StableRun{ID: "20260101T000002Z-cccccccc", Argv: []string{"true"}, Started: now}, client.RunResult{State: client.RunRunning}, now)
	})
	quiet := open(t, t.TempDir())
	defer quiet.Close()
	if err := quiet.UpdateStable("calm", func(sb *StableSandbox) {
		sb.SetRun(StableRun{ID: "20260101T000003Z-dddddddd", Argv: []string{"sleep", "9"}, Started: now}, client.RunResult{State: client.RunRunning}, now)
	}); err != nil {
		t.Fatal(err)
	}
	rep, err = quiet.BuildReport(ReportOptions{Sandbox: "calm", Dialect: "stable"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := rep.JSON()
	if !strings.Contains(string(data), `"incidents": []`) || !strings.Contains(string(data), `"incarnations": []`) {
		t.Errorf("JSON lists: %s", data)
	}
}
