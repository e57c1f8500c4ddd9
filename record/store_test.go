package record

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
)

const bridgeID = "local:/tmp/test-bridge"

// prunedByReopen closes r and opens its record again with o, which prunes it before its writer
// starts. Pruning runs on the writer's goroutine or before it: a test calling prune beside a
// running writer raced the writer's own reclaim.
func prunedByReopen(t *testing.T, r *Record, o Options) *Record {
	t.Helper()
	r = reopenedWith(t, r, o)
	waitPruned(t, r)
	return r
}

// waitPruned waits for the writer to take the steps of pruning Open left to it.
func waitPruned(t testing.TB, r *Record) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); r.pruneMore.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("pruning did not end")
		}
	}
}

func open(t *testing.T, dir string) *Record {
	t.Helper()
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, Version: "test", FlushEvery: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var t0 = time.Now().Add(-time.Hour).Truncate(time.Second)

func running(id string, pid, inc int) *client.Process {
	return &client.Process{ID: id, PID: pid, Command: []string{"agent", "--json"}, State: "running", Incarnation: inc}
}

// scene records a replacement: agent running in incarnation 1, then absent, incarnation 2.
func scene(r *Record) {
	inc1 := client.Incarnation{Number: 1}
	inc2 := client.Incarnation{Number: 2}
	add := func(sec int, ev client.SandboxEvent) {
		ev.Sandbox, ev.Time = "demo", t0.Add(time.Duration(sec)*time.Second)
		r.Add(FromSandboxEvent(ev))
	}
	add(0, client.SandboxEvent{Kind: client.SandboxStarted, Incarnation: inc1, Evidence: []string{"GET running: true (first poll)"}})
	add(0, client.SandboxEvent{Kind: client.ProcessAppeared, Incarnation: inc1, Process: running("agent1", 10, 1)})
	r.Add(FromLogEvent("demo", "agent1", client.LogEvent{Kind: client.Interrupted, Time: t0.Add(3 * time.Second), Cursor: "c-5", Reason: "connection reset"}))
	r.Add(FromLogEvent("demo", "agent1", client.LogEvent{Kind: client.Resumed, Time: t0.Add(4 * time.Second), Cursor: "c-5", Attempt: 1}))
	add(10, client.SandboxEvent{Kind: client.IncarnationChanged, Previous: inc1, Incarnation: inc2, Evidence: []string{"the bridge reports incarnation 2 (was 1)"}})
	add(10, client.SandboxEvent{Kind: client.ProcessVanished, Incarnation: inc2, Process: running("agent1", 10, 1), Evidence: []string{"absent from the process list", "it was running"}})
	add(10, client.SandboxEvent{Kind: client.ProcessAppeared, Incarnation: inc2, Process: running("agent2", 3, 2)})
}

func checkScene(t *testing.T, st *State, earlier bool) {
	t.Helper()
	if len(st.Incarnations) != 2 || st.Incarnations[0].Number != 1 || st.Incarnations[1].Number != 2 {
		t.Fatalf("incarnations: %+v", st.Incarnations)
	}
	if !strings.Contains(strings.Join(st.Incarnations[1].Evidence, ";"), "reports incarnation 2") {
		t.Fatalf("evidence: %v", st.Incarnations[1].Evidence)
	}
	a := st.Find(Process, "agent1")
	if a == nil || !a.Lost || a.Incarnation != 1 || !st.Stale(a.Incarnation) || a.Interruptions != 1 {
		t.Fatalf("agent1: %+v", a)
	}
	if a.Earlier != earlier {
		t.Fatalf("agent1 earlier = %v, want %v", a.Earlier, earlier)
	}
	if b := st.Find(Process, "agent2"); b == nil || b.Lost || b.Incarnation != 2 {
		t.Fatalf("agent2: %+v", b)
	}
}

func TestRecordSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	scene(r)
	checkScene(t, r.State("demo"), false)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := open(t, dir)
	defer r2.Close()
	if n := r2.Notices(); len(n) != 0 {
		t.Fatalf("clean restart gave notices: %v", n)
	}
	checkScene(t, r2.State("demo"), true)
	lost, err := r2.LostSince(t0)
	if err != nil || len(lost) != 1 || lost[0].EntityID != "agent1" {
		t.Fatalf("LostSince: %v %+v", err, lost)
	}
	sbs, _ := r2.Sandboxes()
	if len(sbs) != 1 || sbs[0] != "demo" {
		t.Fatalf("sandboxes: %v", sbs)
	}
	if fi, err := os.Stat(r2.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record file mode: %v %v", fi.Mode(), err)
	}
}

func TestCaptureBudgetKeepsNewest(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, Budget: Budget{CapturePerRun: 10_000}, FlushEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.CaptureBegin("demo", "p1", true, "the bridge had evicted the first 5 bytes")
	for i := 0; i < 300; i++ {
		line := fmt.Sprintf("{\"n\":%05d}\n", i) // 12 bytes
		r.CaptureData("demo", "p1", client.LogEvent{Kind: client.Data, Cursor: "c-" + strconv.Itoa(i), Data: []byte(line)})
		if i%50 == 0 {
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.CaptureEnd("demo", "p1", "lost")
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := r.Captured("demo", "p1")
	if err != nil || !c.Found {
		t.Fatal(err, c.Found)
	}
	var all []byte
	for _, ch := range c.Chunks {
		all = append(all, ch.Data...)
	}
	if int64(len(all)) != c.Bytes || c.Bytes > 10_000 || c.Dropped+c.Bytes != 3600 {
		t.Fatalf("bytes %d kept %d dropped %d", len(all), c.Bytes, c.Dropped)
	}
	if !strings.HasSuffix(string(all), "{\"n\":00299}\n") || !c.EarlierGone || c.Ended != "lost" || c.LastCursor != "c-299" || c.BeganCursor != "c-0" {
		t.Fatalf("capture: %+v tail %q", c, all[len(all)-20:])
	}
}

func TestTotalCaptureBudget(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, Bridge: bridgeID, Budget: Budget{CapturePerRun: 1 << 20, CaptureTotal: 50_000}, FlushEvery: time.Millisecond}
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	blob := []byte(strings.Repeat("x", 1000) + "\n")
	for p := 0; p < 5; p++ {
		for i := 0; i < 20; i++ {
			r.CaptureData("demo", fmt.Sprintf("p%d", p), client.LogEvent{Kind: client.Data, Data: blob})
		}
		r.Flush()
	}
	r = prunedByReopen(t, r, o)
	defer r.Close()
	var total int64
	for p := 0; p < 5; p++ {
		c, _ := r.Captured("demo", fmt.Sprintf("p%d", p))
		total += c.Bytes
		if p == 0 && (c.Bytes != 0 || !strings.Contains(c.Ended, "total output budget")) {
			t.Fatalf("oldest capture kept: %+v", c)
		}
		if p == 4 && c.Bytes == 0 {
			t.Fatal("newest capture removed")
		}
	}
	if total > 50_000 {
		t.Fatalf("total %d over budget", total)
	}
}

// The captures' total that pruning reads at every open (capture_total) is the sum of the
// captures' bytes through every change of them: captured output, a per-run trim, the total
// budget's removals, a deleted capture; and a file made before the table gets it from its
// captures at its next open.
func TestCaptureTotalFollowsCaptures(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, Bridge: bridgeID, Budget: Budget{CapturePerRun: 30_000, CaptureTotal: 80_000}, FlushEvery: time.Millisecond}
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		var total, sum, rows int64
		if err := r.db.QueryRow("SELECT bytes FROM capture_total WHERE id = 1").Scan(&total); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		r.db.QueryRow("SELECT COALESCE(SUM(bytes), 0), COUNT(*) FROM captures").Scan(&sum, &rows)
		if total != sum || rows == 0 {
			t.Fatalf("%s: capture_total %d, captures sum to %d (%d rows)", when, total, sum, rows)
		}
	}
	blob := []byte(strings.Repeat("y", 999) + "\n")
	for p := 0; p < 5; p++ {
		for round := 0; round < 4; round++ { // 40,000 bytes in rows of 10,000: one past the per-run budget
			for i := 0; i < 10; i++ {
				r.CaptureData("demo", fmt.Sprintf("p%d", p), client.LogEvent{Kind: client.Data, Data: blob})
			}
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c, _ := r.Captured("demo", "p4"); c.Bytes != 30_000 || c.Dropped != 10_000 {
		t.Fatalf("the per-run budget: %+v", c)
	}
	check("captured and trimmed")
	r = prunedByReopen(t, r, o) // the total budget removes the oldest captures
	if c, _ := r.Captured("demo", "p0"); c.Bytes != 0 {
		t.Fatalf("the total budget kept the oldest capture: %+v", c)
	}
	check("after the total budget")
	if _, err := r.db.Exec("DELETE FROM captures WHERE process = 'p4'"); err != nil {
		t.Fatal(err)
	}
	check("a capture deleted")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// as an earlier version left it: no table, no triggers, its statements' stamp
	db, err := sql.Open("sqlite", "file:"+FileFor(dir, bridgeID))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"DROP TRIGGER capture_total_insert", "DROP TRIGGER capture_total_update", "DROP TRIGGER capture_total_delete",
		"DROP TABLE capture_total", "PRAGMA user_version = 1"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	db.Close()
	if r, err = Open(o); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check("the table added to an earlier file")
}

func TestPruneByAgeAndCount(t *testing.T) {
	dir := t.TempDir()
	now := t0.Add(30 * 24 * time.Hour)
	o := Options{Dir: dir, Bridge: bridgeID, Budget: Budget{MaxEvents: 100}, Now: func() time.Time { return now }}
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	scene(r) // 14+ days old
	for i := 0; i < 150; i++ {
		r.Add(Event{Sandbox: "other", Source: FromAction, Kind: "exec", Time: now, Action: &Action{Kind: "exec", Outcome: "ok"}})
	}
	r = prunedByReopen(t, r, o)
	defer r.Close()
	if evs, _ := r.Events("demo", ""); len(evs) != 0 {
		t.Fatalf("old events kept: %d", len(evs))
	}
	if evs, _ := r.Events("other", ""); len(evs) > 100 || len(evs) < 80 {
		t.Fatalf("count prune kept %d", len(evs))
	}
}

// The child writes numbered events, printing each number once it is committed, until killed.
func TestMain(m *testing.M) {
	if kind := os.Getenv("SANDSCOPE_RECORD_HELPER"); kind != "" {
		os.Exit(runHelper(kind))
	}
	if dir := os.Getenv("SANDSCOPE_RECORD_CHILD"); dir != "" {
		r, err := Open(Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Millisecond})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		for i := 0; ; i++ {
			r.Add(Event{Sandbox: "demo", Source: FromStream, Kind: "interrupted", Entity: Process, EntityID: "p", Cursor: strconv.Itoa(i), Reason: strings.Repeat("r", i%500)})
			r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(i), Data: []byte(strings.Repeat("o", 1+i%300) + "\n")})
			if i%3 == 0 {
				if err := r.Flush(); err != nil {
					fmt.Println("flush:", err)
					os.Exit(1)
				}
				fmt.Println(i)
			}
		}
	}
	os.Exit(m.Run())
}

func TestSIGKILLKeepsEverythingCommitted(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SANDSCOPE_RECORD_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	acked := -1
	for sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("child: %s", sc.Text())
		}
		acked = n
		if n >= 1500 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if acked < 1500 {
		t.Fatalf("child acknowledged only %d", acked)
	}
	r := open(t, dir)
	defer r.Close()
	notices := strings.Join(r.Notices(), "\n")
	if !strings.Contains(notices, "ended without closing the record") {
		t.Fatalf("no unclean-end notice: %q", notices)
	}
	evs, err := r.Events("demo", "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) <= acked {
		t.Fatalf("read %d events, %d were committed", len(evs), acked+1)
	}
	for i, ev := range evs {
		if ev.Cursor != strconv.Itoa(i) || len(ev.Reason) != i%500 {
			t.Fatalf("event %d: cursor %q reason %d bytes", i, ev.Cursor, len(ev.Reason))
		}
	}
	c, err := r.Captured("demo", "p")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(c.LastCursor)
	if n < acked {
		t.Fatalf("capture ends at %d, %d were committed", n, acked)
	}
	// every committed byte reads back, and nothing past the last committed row (the killed
	// process may have written a commit's bytes it never committed)
	var got, want []byte
	for _, ch := range c.Chunks {
		if ch.Lost != nil {
			t.Fatalf("chunk at %s lost: %v", ch.Cursor, ch.Lost)
		}
		got = append(got, ch.Data...)
	}
	for i := 0; i <= n; i++ {
		want = append(want, strings.Repeat("o", 1+i%300)+"\n"...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("captured %d bytes up to cursor %d, want %d", len(got), n, len(want))
	}
	// a second start reports nothing: the unclean end was told once
	r.Close()
	r3 := open(t, dir)
	defer r3.Close()
	if n := r3.Notices(); len(n) != 0 {
		t.Fatalf("notice repeated: %v", n)
	}
}

func fill(t *testing.T, dir string, n int) string {
	r := open(t, dir)
	for i := 0; i < n; i++ {
		r.Add(Event{Sandbox: "demo", Source: FromWatch, Kind: client.ProcessAppeared.String(), Entity: Process, EntityID: fmt.Sprintf("p%04d", i),
			Process: running(fmt.Sprintf("p%04d", i), i, 1), Incarnation: client.Incarnation{Number: 1}, Evidence: []string{strings.Repeat("e", 200)}})
	}
	path := r.Path()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCorruptRecordGivesNoticeAndTheRest(t *testing.T) {
	for _, c := range []struct {
		name    string
		damage  func(path string) error
		atLeast int
	}{
		{"page overwritten", func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			fi, _ := f.Stat()
			_, err = f.WriteAt([]byte(strings.Repeat("\xff garbage ", 400)), fi.Size()/2/4096*4096)
			return err
		}, 100},
		{"tail torn off", func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, fi.Size()*6/10)
		}, 100},
		{"not a database", func(p string) error { return os.WriteFile(p, []byte("this is not a record\n"), 0o600) }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := fill(t, dir, 1000)
			if err := c.damage(path); err != nil {
				t.Fatal(err)
			}
			r := open(t, dir)
			defer r.Close()
			notices := strings.Join(r.Notices(), "\n")
			if !strings.Contains(notices, "damaged") {
				t.Fatalf("no notice: %q", notices)
			}
			st := r.State("demo")
			if len(st.Processes) < c.atLeast || len(st.Processes) > 1000 {
				t.Fatalf("recovered %d of 1000 processes", len(st.Processes))
			}
			matches, _ := filepath.Glob(path + ".damaged-*")
			if len(matches) == 0 {
				t.Fatal("damaged file not kept aside")
			}
			// the new record works
			r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Action: &Action{Kind: "exec", Outcome: "ok"}})
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewerSchemaIsMovedAside(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 3)
	r := open(t, dir)
	if _, err := r.db.Exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'"); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r2 := open(t, dir)
	defer r2.Close()
	if n := strings.Join(r2.Notices(), ""); !strings.Contains(n, "newer sandscope") {
		t.Fatalf("notice: %q", n)
	}
	if m, _ := filepath.Glob(path + ".v99-*"); len(m) == 0 {
		t.Fatal("not moved aside")
	}
}

// A record far over its budget (the budget lowered, weeks away) opens without waiting for its
// pruning: the writer prunes it a step at a time between its commits (an event recorded
// meanwhile is committed at once), and the record ends within the budget, with the newest 90 % of
// the events it began with and the events recorded since.
func TestPruningFarOverBudgetAfterOpen(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Millisecond}
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4*pruneBatch + 123
	for i := 0; i < n; i++ {
		r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", EntityID: strconv.Itoa(i), Time: t0, Action: &Action{Kind: "exec", Outcome: "ok"}})
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	o.Budget = Budget{MaxEvents: 100}
	o.FlushEvery = time.Hour // the writer takes its first step as it starts, and no round before the close
	r, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if left := eventCount(t, dir); left != n-pruneBatch {
		t.Fatalf("%d events removed by Open and the writer's start, want one step of %d: one statement of a record far over its budget takes minutes", n-left, pruneBatch)
	}
	o.FlushEvery = time.Millisecond
	r, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", EntityID: "while-pruning", Time: t0, Action: &Action{Kind: "exec", Outcome: "ok"}})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	waitPruned(t, r)
	if left := eventCount(t, dir); left != 91 {
		t.Fatalf("%d events left after pruning, want the newest 90 it began with and the one added since", left)
	}
	if eventsOf(t, dir, "while-pruning") != 1 || eventsOf(t, dir, strconv.Itoa(n-1)) != 1 {
		t.Fatal("pruning removed the newest events")
	}
}

// eventCount counts the events in the record of dir, read without the Record.
func eventCount(t *testing.T, dir string) int {
	return countIn(t, dir, "SELECT COUNT(*) FROM events")
}
