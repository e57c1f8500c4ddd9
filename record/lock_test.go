package record

import (
	"bufio"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Helper processes (the test binary run again, SANDSCOPE_RECORD_HELPER=<kind>): another
// sandscope, or another program holding the record's SQLite lock.
func runHelper(kind string) int {
	dir := os.Getenv("SANDSCOPE_RECORD_DIR")
	switch kind {
	case "lock":
		// hold SQLite's write lock (BEGIN EXCLUSIVE and a write) for SANDSCOPE_HOLD
		hold, _ := time.ParseDuration(os.Getenv("SANDSCOPE_HOLD"))
		db, err := sql.Open("sqlite", "file:"+FileFor(dir, bridgeID)+"?_pragma=busy_timeout(20000)")
		if err != nil {
			fmt.Println("open:", err)
			return 1
		}
		db.SetMaxOpenConns(1)
		if _, err := db.Exec("BEGIN EXCLUSIVE"); err != nil {
			fmt.Println("begin:", err)
			return 1
		}
		if _, err := db.Exec("INSERT INTO meta (key, value) VALUES ('locker', 'x') ON CONFLICT (key) DO UPDATE SET value = excluded.value"); err != nil {
			fmt.Println("write:", err)
			return 1
		}
		fmt.Println("LOCKED")
		time.Sleep(hold)
		if _, err := db.Exec("COMMIT"); err != nil {
			fmt.Println("commit:", err)
			return 1
		}
		db.Close()
		fmt.Println("RELEASED")
		return 0
	case "writer":
		// another sandscope: Open, add SANDSCOPE_N events (flushing now and then), Close
		name := os.Getenv("SANDSCOPE_NAME")
		n, _ := strconv.Atoi(os.Getenv("SANDSCOPE_N"))
		r, err := Open(Options{Dir: dir, Bridge: bridgeID, Version: "helper", FlushEvery: 5 * time.Millisecond})
		if err != nil {
			fmt.Println("open:", err)
			return 1
		}
		for _, m := range r.Notices() {
			fmt.Println("NOTICE", m)
		}
		// read what is there (damage is met by reads too)
		_ = r.State("demo")
		for i := 0; i < n; i++ {
			r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Cursor: fmt.Sprintf("%s-%d", name, i), Action: &Action{Kind: "exec", Outcome: "ok"}})
			if i%10 == 9 {
				_ = r.Flush()
				time.Sleep(5 * time.Millisecond)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for r.Flush() != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		for _, m := range r.TakeNotices() {
			fmt.Println("NOTICE", m)
		}
		err = r.Close()
		fmt.Printf("DONE unsaved=%d err=%v\n", r.Unsaved(), err)
		return 0
	}
	fmt.Println("unknown helper", kind)
	return 2
}

func helper(t *testing.T, kind, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"SANDSCOPE_RECORD_HELPER=" + kind, "SANDSCOPE_RECORD_DIR=" + dir}, env...)...)
	return cmd
}

// startLock starts a helper that holds SQLite's write lock on the record for hold, and returns
// once it holds it; wait waits for it to end.
func startLock(t *testing.T, dir string, hold time.Duration) (wait func()) {
	t.Helper()
	cmd := helper(t, "lock", dir, "SANDSCOPE_HOLD="+hold.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "LOCKED" {
		_ = cmd.Process.Kill()
		t.Fatalf("lock helper: %q", sc.Text())
	}
	done := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		_ = cmd.Wait()
		close(done)
	}()
	return func() { <-done }
}

func asideFiles(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{".damaged-*", ".v*-*"} {
		m, _ := filepath.Glob(path + pat)
		out = append(out, m...)
	}
	return out
}

func cursors(t *testing.T, dir string) map[string]bool {
	t.Helper()
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	evs, err := r.Events("demo", "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, ev := range evs {
		got[ev.Cursor] = true
	}
	return got
}

// Another process holds the record's write lock for 3 s: Open waits, says so, and moves nothing
// aside; everything written is there afterwards.
func TestLockedRecordIsWaitedFor(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 20)
	wait := startLock(t, dir, 3*time.Second)
	start := time.Now()
	r := open(t, dir)
	if d := time.Since(start); d < 2*time.Second {
		t.Fatalf("Open took %v under a 3 s lock", d)
	}
	notices := strings.Join(r.Notices(), "\n")
	if !strings.Contains(notices, "for another process's lock on the record") || strings.Contains(notices, "damaged") {
		t.Fatalf("notices: %q", notices)
	}
	for i := 0; i < 50; i++ {
		r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Cursor: fmt.Sprintf("w-%d", i), Action: &Action{Kind: "exec", Outcome: "ok"}})
	}
	if err := r.Close(); err != nil || r.Unsaved() != 0 {
		t.Fatalf("close: %v, %d unsaved", err, r.Unsaved())
	}
	wait()
	if a := asideFiles(t, path); len(a) != 0 {
		t.Fatalf("moved aside for a lock: %v", a)
	}
	got := cursors(t, dir)
	for i := 0; i < 50; i++ {
		if !got[fmt.Sprintf("w-%d", i)] {
			t.Fatalf("event w-%d missing", i)
		}
	}
}

// A lock taken while the record is open, held past SQLite's own busy timeout: the batch that met
// it is kept and written once the lock is gone, and the wait is told live.
func TestWriterKeepsBatchThroughLongLock(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 5)
	r := open(t, dir)
	wait := startLock(t, dir, 7*time.Second)
	for i := 0; i < 30; i++ {
		r.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Cursor: fmt.Sprintf("w-%d", i), Action: &Action{Kind: "exec", Outcome: "ok"}})
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-r.NoticeC():
	case <-time.After(15 * time.Second):
		t.Fatal("no notice while waiting")
	}
	if err := r.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	wait()
	notices := strings.Join(r.TakeNotices(), "\n")
	if !strings.Contains(notices, "waited") || !strings.Contains(notices, "another process's lock") {
		t.Fatalf("notices: %q", notices)
	}
	if err := r.Close(); err != nil || r.Unsaved() != 0 {
		t.Fatalf("close: %v, %d unsaved", err, r.Unsaved())
	}
	if a := asideFiles(t, path); len(a) != 0 {
		t.Fatalf("moved aside for a lock: %v", a)
	}
	got := cursors(t, dir)
	for i := 0; i < 30; i++ {
		if !got[fmt.Sprintf("w-%d", i)] {
			t.Fatalf("event w-%d missing", i)
		}
	}
}

// A lock that outlasts the wait: Open fails with ErrBusy, naming the file and the wait, and the
// file stays where it is.
func TestOpenGivesUpWithErrBusy(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 5)
	defer func(w time.Duration) { openWait = w }(openWait)
	openWait = time.Second
	wait := startLock(t, dir, 8*time.Second)
	defer wait()
	_, err := Open(Options{Dir: dir, Bridge: bridgeID})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "waited") {
		t.Fatalf("Open under a long lock: %v", err)
	}
	if a := asideFiles(t, path); len(a) != 0 {
		t.Fatalf("moved aside for a lock: %v", a)
	}
}

// Four sandscope processes write one record while a fifth program holds its lock for 3 s in the
// middle: every event of every process is there, nothing was moved aside.
func TestConcurrentWritersThroughALock(t *testing.T) {
	dir := t.TempDir()
	path := fill(t, dir, 5)
	const writers, n = 4, 150
	var wg sync.WaitGroup
	outs := make([]string, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			out, err := helper(t, "writer", dir, fmt.Sprintf("SANDSCOPE_NAME=w%d", w), fmt.Sprintf("SANDSCOPE_N=%d", n)).CombinedOutput()
			outs[w] = string(out)
			if err != nil {
				outs[w] += "\nexit: " + err.Error()
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond)
	wait := startLock(t, dir, 3*time.Second)
	wg.Wait()
	wait()
	for w, out := range outs {
		if !strings.Contains(out, "DONE unsaved=0 err=<nil>") {
			t.Fatalf("writer %d:\n%s", w, out)
		}
	}
	if a := asideFiles(t, path); len(a) != 0 {
		t.Fatalf("moved aside for a lock: %v", a)
	}
	got := cursors(t, dir)
	for w := 0; w < writers; w++ {
		for i := 0; i < n; i++ {
			if !got[fmt.Sprintf("w%d-%d", w, i)] {
				t.Fatalf("event w%d-%d missing (%d events in all)", w, i, len(got))
			}
		}
	}
}
