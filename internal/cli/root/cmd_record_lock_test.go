package root

// The record as commands meet it: a lock another program holds is waited for (nothing renamed,
// nothing lost, the command says it waited), and damage SQLite finds is repaired and told on stderr.

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// lockerEnv makes the test binary, run again, hold SQLite's write lock on a record file for a
// while (as a backup tool or the sqlite3 shell would): see holdRecordLock.
const lockerEnv = "SANDSCOPE_TEST_HOLD_LOCK"

// holdRecordLock is the locker process: BEGIN EXCLUSIVE and a write on the file named by
// lockerEnv, "LOCKED" on stdout, SANDSCOPE_TEST_HOLD later COMMIT.
func holdRecordLock(path string) int {
	hold, _ := time.ParseDuration(os.Getenv("SANDSCOPE_TEST_HOLD"))
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)")
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{"BEGIN EXCLUSIVE", "INSERT INTO meta (key, value) VALUES ('locker', 'x') ON CONFLICT (key) DO UPDATE SET value = excluded.value"} {
		if _, err := db.Exec(q); err != nil {
			fmt.Println(q+":", err)
			return 1
		}
	}
	fmt.Println("LOCKED")
	time.Sleep(hold)
	if _, err := db.Exec("COMMIT"); err != nil {
		fmt.Println("commit:", err)
		return 1
	}
	db.Close()
	return 0
}

// commandRecordFile is the record the commands of these tests write: the only one in state.
func commandRecordFile(t *testing.T, state string) string {
	t.Helper()
	files := recordFiles(t, state)
	if len(files) != 1 {
		t.Fatalf("record files %v, want one", files)
	}
	return files[0]
}

func reportEntities(t *testing.T, env []string, args ...string) map[string]bool {
	t.Helper()
	out, code := runIn(t, env, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	var rep record.Report
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, e := range rep.Entities {
		got[strings.Join(e.Command, " ")] = true
	}
	return got
}

func TestCommandsWaitForALockedRecord(t *testing.T) {
	sandscopeBinary(t) // built before the parallel tests start
	t.Parallel()
	_, args := bridgeArgs(t)
	dir := t.TempDir()
	env := identityEnv(t, dir)
	state := filepath.Join(dir, "state")
	exec1 := func(word string) (string, int) {
		return runIn(t, env, append(append([]string{}, args...), "exec", "locked", "--", "echo", word)...)
	}
	if out, code := exec1("first"); code != 0 {
		t.Fatalf("exec: exit %d\n%s", code, out)
	}
	path := commandRecordFile(t, state)

	// another program holds the record's write lock for 6 s while 8 execs run
	locker := exec.Command(os.Args[0], "-test.run=^$")
	locker.Env = append(os.Environ(), lockerEnv+"="+path, "SANDSCOPE_TEST_HOLD=6s")
	stdout, err := locker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := locker.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "LOCKED" {
		_ = locker.Process.Kill()
		t.Fatalf("locker: %q", sc.Text())
	}
	var wg sync.WaitGroup
	outs := make([]string, 8)
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, code := exec1(fmt.Sprintf("under-lock-%d", i))
			outs[i] = fmt.Sprintf("exit %d\n%s", code, out)
		}(i)
	}
	wg.Wait()
	for sc.Scan() {
	}
	if err := locker.Wait(); err != nil {
		t.Fatalf("locker: %v", err)
	}
	all := strings.Join(outs, "\n----\n")
	if strings.Count(all, "exit 0\n") != len(outs) {
		t.Fatalf("execs under a lock:\n%s", all)
	}
	if !strings.Contains(all, "waiting for another sandscope process's lock") && !strings.Contains(all, "waited") {
		t.Errorf("no exec said it waited for the lock:\n%s", all)
	}
	if aside, _ := filepath.Glob(path + ".*-*"); len(aside) != 0 {
		t.Fatalf("files moved aside for a lock: %v\n%s", aside, all)
	}
	got := reportEntities(t, env, append(append([]string{}, args...), "report", "locked")...)
	for i := range outs {
		if !got[fmt.Sprintf("echo under-lock-%d", i)] {
			t.Errorf("exec %d is missing from the record: %v\n%s", i, got, outs[i])
		}
	}
}

func TestCommandRepairsADamagedRecord(t *testing.T) {
	sandscopeBinary(t) // built before the parallel tests start
	t.Parallel()
	b, args := bridgeArgs(t)
	dir := t.TempDir()
	env := identityEnv(t, dir)
	state := filepath.Join(dir, "state")
	if out, code := runIn(t, env, append(append([]string{}, args...), "exec", "hurt", "--", "echo", "before")...); code != 0 {
		t.Fatalf("exec: exit %d\n%s", code, out)
	}
	path := commandRecordFile(t, state)
	id, ok := record.LookupIdentity(filepath.Dir(path), b.URL)
	if !ok {
		t.Fatal("no identity learned for the bridge")
	}
	// enough history that damage in the middle of the file hits live pages
	rec, err := record.Open(record.Options{Dir: filepath.Dir(path), Bridge: id, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		p := client.Process{ID: fmt.Sprintf("p%04d", i), State: "exited", Command: []string{"true", strings.Repeat("x", 200)}}
		rec.Add(record.Event{Sandbox: "filler", Source: record.FromWatch, Kind: client.ProcessAppeared.String(), Entity: record.Process, EntityID: p.ID, Process: &p})
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	// garbage over a quarter of the pages in the middle; size, time and the clean mark as they were
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xff\x00garbage", int(fi.Size())/4/9)), fi.Size()*3/8/4096*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	mark, err := os.ReadFile(path + ".clean")
	if err != nil || !strings.Contains(string(mark), fmt.Sprint(fi.Size())) {
		t.Fatalf("clean mark %q (%v)", mark, err)
	}

	out, code := runIn(t, env, append(append([]string{}, args...), "report", "filler")...)
	if code != 0 || !strings.Contains(out, "repaired the record") || !strings.Contains(out, ".damaged-") {
		t.Fatalf("report over a damaged record: exit %d, want 0 and the repair told on stderr\n%s", code, out)
	}
	out, code = runIn(t, env, append(append([]string{}, args...), "exec", "hurt", "--", "echo", "after")...)
	if code != 0 || strings.Contains(out, "damaged") || strings.Contains(out, "could not be written") {
		t.Fatalf("exec after the repair: exit %d\n%s", code, out)
	}
	if got := reportEntities(t, env, append(append([]string{}, args...), "report", "hurt")...); !got["echo after"] {
		t.Errorf("the exec after the repair is missing from the record: %v", got)
	}
	for _, suf := range []string{"-shm", "-wal"} {
		if _, err := os.Stat(path + suf); err == nil {
			t.Errorf("stray %s beside the record", suf)
		}
	}
	if s, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*salvage*")); len(s) != 0 {
		t.Errorf("salvage files left: %v", s)
	}
}
