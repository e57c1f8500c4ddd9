package record

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandscope/client"
)

// garble writes garbage over a quarter of the file's pages in the middle, then gives it back its
// size and modification time and a clean mark that matches them, so that Open does not check it.
func garble(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	from := fi.Size() * 3 / 8 / 4096 * 4096
	junk := []byte(strings.Repeat("\xff\x00garbage", (int(fi.Size())/4)/9))
	if _, err := f.WriteAt(junk, from); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Truncate(path, fi.Size()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".clean", []byte(statMark(path)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// besides lists the files beside the record (names relative to dir).
func besides(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Garbage in the middle of a record its clean mark vouches for: the statements that meet it are
// SQLite's verdict; the record is repaired live (the events waiting are kept), the notice says
// what was recovered and where the damaged copy went, and afterwards the record opens, records
// and reports normally, with nothing stray beside it.
func TestDamageMetByStatementsIsRepaired(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 1000)
	garble(t, path)
	r := open(t, dir)
	if len(r.Notices()) != 0 {
		t.Fatalf("damage met at Open, not by the statements after it: %v", r.Notices())
	}
	_ = r.State("demo")
	_, _ = r.Events("demo", "")
	for i := 0; i < 20; i++ {
		r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Cursor: fmt.Sprintf("after-%d", i), Action: &Action{Kind: "exec", Outcome: "ok"}})
	}
	if err := r.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	select {
	case <-r.NoticeC():
	default:
		t.Fatal("NoticeC not signalled")
	}
	notices := strings.Join(r.TakeNotices(), "\n")
	t.Logf("notices:\n%s", notices)
	if !strings.Contains(notices, "repaired the record") || !strings.Contains(notices, path+".damaged-") || !strings.Contains(notices, "recovered") {
		t.Fatalf("notices: %q", notices)
	}
	if err := r.Close(); err != nil || r.Unsaved() != 0 {
		t.Fatalf("close: %v, %d unsaved", err, r.Unsaved())
	}
	if _, err := os.Stat(path + ".clean"); err == nil {
		t.Fatal("a run that met damage left a clean mark")
	}
	aside := asideFiles(t, path)
	if len(aside) != 1 {
		t.Fatalf("aside: %v", aside)
	}
	for _, name := range besides(t, dir) {
		switch {
		case name == filepath.Base(path), name == filepath.Base(path)+".lock", name == filepath.Base(aside[0]), name == filepath.Base(aside[0])+"-wal":
		default:
			t.Errorf("stray file after repair: %s (all: %v)", name, besides(t, dir))
		}
	}
	got := cursors(t, dir)
	for i := 0; i < 20; i++ {
		if !got[fmt.Sprintf("after-%d", i)] {
			t.Fatalf("event after-%d, added before the repair, is missing", i)
		}
	}
	// the next open records normally
	r2 := open(t, dir)
	if n := strings.Join(r2.Notices(), "\n"); strings.Contains(n, "damaged") {
		t.Fatalf("damage again: %q", n)
	}
	st := r2.State("demo")
	if len(st.Processes) == 0 || len(st.Processes) >= 1000 {
		t.Fatalf("recovered %d of 1000 processes", len(st.Processes))
	}
	r2.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Action: &Action{Kind: "exec", Outcome: "ok"}})
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	if n := r2.TakeNotices(); len(n) != 0 {
		t.Fatalf("notices after repair: %v", n)
	}
	ro, err := Open(Options{Dir: dir, Bridge: bridgeID, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.BuildReport(ReportOptions{Sandbox: "demo"}); err != nil {
		t.Fatalf("report: %v", err)
	}
	ro.Close()
	for _, name := range besides(t, dir) {
		if strings.HasSuffix(name, "-shm") || strings.HasSuffix(name, ".db-wal") || strings.Contains(name, "salvage") {
			t.Errorf("stray file after close: %s", name)
		}
	}
}

// A report (read only) that meets damage repairs it and reads.
func TestReadOnlyOpenRepairs(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 1000)
	garble(t, path)
	_ = os.Remove(path + ".clean") // as after a crash: Open checks
	ro, err := Open(Options{Dir: dir, Bridge: bridgeID, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n := strings.Join(ro.Notices(), "\n"); !strings.Contains(n, "repaired the record") {
		t.Fatalf("notices: %q", n)
	}
	if _, err := ro.BuildReport(ReportOptions{Sandbox: "demo"}); err != nil {
		t.Fatalf("report: %v", err)
	}
}

// Two processes meet the damage at once: exactly one repairs it, the other goes on with the
// repaired record, and the events of both are kept.
func TestTwoProcessesOneRepair(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 1000)
	garble(t, path)
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for w := range outs {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			out, err := helper(t, "writer", dir, fmt.Sprintf("SANDSCOPE_NAME=w%d", w), "SANDSCOPE_N=40").CombinedOutput()
			outs[w] = string(out)
			if err != nil {
				outs[w] += "\nexit: " + err.Error()
			}
		}(w)
	}
	wg.Wait()
	all := strings.Join(outs, "\n----\n")
	t.Logf("helpers:\n%s", all)
	if n := strings.Count(all, "repaired the record "); n != 1 {
		t.Fatalf("%d repairs:\n%s", n, all)
	}
	if a := asideFiles(t, path); len(a) != 1 {
		t.Fatalf("aside: %v\n%s", a, all)
	}
	for w, out := range outs {
		if !strings.Contains(out, "DONE unsaved=0") {
			t.Fatalf("writer %d:\n%s", w, out)
		}
	}
	got := cursors(t, dir)
	for w := range outs {
		for i := 0; i < 40; i++ {
			if !got[fmt.Sprintf("w%d-%d", w, i)] {
				t.Fatalf("event w%d-%d missing\n%s", w, i, all)
			}
		}
	}
}

// A clean close leaves the record, its lock file and its clean mark: no -wal, no -shm.
func TestNoStrayFilesAfterClose(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 50)
	want := []string{filepath.Base(path), filepath.Base(path) + ".clean", filepath.Base(path) + ".lock"}
	if got := besides(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("files: %v, want %v", got, want)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// liveSize is the size of a compact copy of the record (VACUUM INTO).
func liveSize(t *testing.T, path string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cp := filepath.Join(t.TempDir(), "compact.db")
	if _, err := db.Exec("VACUUM INTO ?", cp); err != nil {
		t.Fatal(err)
	}
	return fileSize(t, cp)
}

func grow(r *Record, n int, at time.Time) {
	big := strings.Repeat("e", 4000)
	for i := 0; i < n; i++ {
		r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Time: at, Cursor: fmt.Sprint(i), Reason: big, Action: &Action{Kind: "exec", Outcome: "ok"}})
	}
}

// A record grown and then pruned gives the space back: on disk it is at most 1.25× its live data.
func TestPrunedRecordShrinks(t *testing.T) {
	dir := t.TempDir()
	now := t0
	clock := func() time.Time { return now }
	o := Options{Dir: dir, Bridge: bridgeID, Now: clock, FlushEvery: time.Millisecond}
	r, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	grow(r, 4000, now)
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(15 * 24 * time.Hour)
	grow(r, 200, now)
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	big := fileSize(t, r.Path())
	r = prunedByReopen(t, r, o)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	size, live := fileSize(t, r.Path()), liveSize(t, r.Path())
	t.Logf("grown %d, pruned %d bytes, live %d", big, size, live)
	if size*4 > live*5 {
		t.Fatalf("pruned record is %d bytes for %d of live data", size, live)
	}
}

// A file made before incremental auto-vacuum, with much of it free, is converted once by the
// writer, and shrinks.
func TestOldFileIsConvertedToIncrementalVacuum(t *testing.T) {
	dir := t.TempDir()
	path := FileFor(dir, bridgeID)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, s := range schema {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("x", 4000)
	tx, _ := db.Begin()
	for i := 0; i < 5000; i++ {
		if _, err := tx.Exec("INSERT INTO events (run, time, sandbox, source, kind, body) VALUES (1, ?, 'demo', 'action', 'exec', ?)", i, big); err != nil {
			t.Fatal(err)
		}
	}
	tx.Commit()
	if _, err := db.Exec("DELETE FROM events WHERE id > 200"); err != nil {
		t.Fatal(err)
	}
	var mode int
	db.QueryRow("PRAGMA auto_vacuum").Scan(&mode)
	db.Close()
	if mode != 0 {
		t.Fatalf("auto_vacuum %d in an old-style file", mode)
	}
	before := fileSize(t, path)
	r := open(t, dir)
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := r.db.QueryRow("PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum %d (%v) after the writer started", mode, err)
	}
	r.Close()
	after := fileSize(t, path)
	if after*4 > before {
		t.Fatalf("%d bytes before, %d after", before, after)
	}
}

// A large record whose last run was killed is checked by the writer after Open, not by Open:
// damage it holds (here a broken overflow chain in captured output, which no statement of Open
// or of recording reads) is still found and repaired, and told as a live notice.
func TestLargeUncleanRecordCheckedAfterOpen(t *testing.T) {
	dir, path := largeRecord(t, 4, 1<<20)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// the header of a page in the middle, one neither Open nor recording reads (today a leaf of
	// events_lost), at a page boundary: inside a page the bytes could fall in its unused space
	hdr := make([]byte, 100)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	pageSize := int64(hdr[16])<<8 | int64(hdr[17])
	if pageSize == 1 {
		pageSize = 64 << 10
	}
	if _, err := f.WriteAt([]byte{0x7f, 0xff, 0xff, 0xf0}, fi.Size()/2/pageSize*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_ = os.Remove(path + ".clean") // as after a crash
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, Budget: Budget{CaptureTotal: 1 << 40}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := strings.Join(r.Notices(), "\n"); strings.Contains(n, "repaired the record") {
		t.Fatalf("Open checked the record itself: %q", n)
	}
	var told []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		told = append(told, r.TakeNotices()...)
		if strings.Contains(strings.Join(told, "\n"), "repaired the record") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(strings.Join(told, "\n"), "repaired the record") {
		t.Fatalf("the damage was not repaired after Open: %q", told)
	}
	r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "launch", Entity: Process, EntityID: "after"})
	if err := r.Flush(); err != nil {
		t.Fatalf("recording after the repair: %v", err)
	}
}

// A check mark another process leaves while this one commits is looked at within
// markLookWriting (not markLookIdle): the integrity check finds the record sound and the mark goes.
func TestCheckMarkSeenWhileCommitting(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, FlushEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	time.Sleep(1500 * time.Millisecond) // the writer's first look, at its first round, is done
	mark := r.checkMark()
	if err := os.WriteFile(mark, []byte("damage met by another process\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(markLookWriting + 3*time.Second)
	for i := 0; ; i++ {
		r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "demo", Time: time.Now(),
			Process: running(fmt.Sprintf("proc-%d", i), 10, 1), Incarnation: client.Incarnation{Number: 1}}))
		if _, err := os.Stat(mark); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the check mark is still there %v after it was left, while the record committed", markLookWriting+3*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// After an unclean end, a large record's check runs beside the writer: commits do not wait for it
// (it reads the whole file: seconds), and neither does quitting, which stops it. A check that did
// not finish leaves no clean mark, so the next open checks the file, and a close after a finished
// check leaves the mark again.
func TestCheckLeftByOpenDelaysNothing(t *testing.T) {
	dir, path := largeRecord(t, 2, 64<<10)
	clean := path + ".clean"
	_ = os.Remove(clean) // as after a crash

	// the check waits for its context, as a long one would
	began := make(chan struct{})
	var stopped atomic.Bool
	longCheck := func(ctx context.Context) {
		close(began)
		select {
		case <-ctx.Done():
			stopped.Store(true)
		case <-time.After(time.Minute): // a commit or a Close that waits for the check fails below
		}
	}
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, Budget: Budget{CaptureTotal: 1 << 40}, beforeCheck: longCheck})
	if err != nil {
		t.Fatal(err)
	}
	<-began
	r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "launch", Entity: Process, EntityID: "during-the-check"})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if stopped.Load() || !r.checkPending.Load() {
		t.Fatal("the commit waited for the check to end")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !stopped.Load() {
		t.Fatal("Close waited for the check instead of stopping it")
	}
	if _, err := os.Stat(clean); err == nil {
		t.Fatal("a close during the check left a clean mark: the next open would not check the file")
	}

	var checked atomic.Bool
	r, err = Open(Options{Dir: dir, Bridge: bridgeID, Budget: Budget{CaptureTotal: 1 << 40}, beforeCheck: func(context.Context) { checked.Store(true) }})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); r.checkPending.Load() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !checked.Load() {
		t.Fatal("the open after a stopped check did not check the file")
	}
	if _, err := os.Stat(clean); err != nil {
		t.Fatalf("a close after a finished check left no clean mark: %v", err)
	}
	if ev := eventsOf(t, dir, "during-the-check"); ev != 1 {
		t.Fatalf("the event committed during the check: %d in the file, want 1", ev)
	}
}

// largeRecord makes a record of procs processes' output of each bytes in a test's directory, and
// makes every record count as large (checked by the writer after an unclean end) for the test.
func largeRecord(t *testing.T, procs int, each int64) (dir, path string) {
	t.Helper()
	was := checkAtOpenMax
	t.Cleanup(func() { checkAtOpenMax = was })
	checkAtOpenMax = 0
	dir = t.TempDir()
	fillCaptures(t, dir, Budget{CaptureTotal: 1 << 40}, procs, each)
	return dir, FileFor(dir, bridgeID)
}

// eventsOf counts the events of entity id in the record of dir, read without the Record.
func eventsOf(t *testing.T, dir, id string) int {
	return countIn(t, dir, "SELECT COUNT(*) FROM events WHERE entity_id = ?", id)
}

// countIn answers a COUNT query q on the record of dir, read without the Record.
func countIn(t *testing.T, dir, q string, args ...any) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+FileFor(dir, bridgeID)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
