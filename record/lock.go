package record

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// ErrBusy says another process held the record's lock longer than sandscope waits for it. The
// record is not damaged: open it again later.
var ErrBusy = errors.New("the record is locked by another process")

// ErrDamaged says SQLite found the record damaged and it could not be repaired yet (other
// sandscope processes still have it open). It is repaired when they close it.
var ErrDamaged = errors.New("the record is damaged")

// How long sandscope waits: for SQLite's locks while opening, for another process's repair, and
// for the exclusive lock a repair needs.
var (
	openWait   = 30 * time.Second
	repairWait = 5 * time.Second
)

// isBusy reports whether err is SQLite's "locked" (SQLITE_BUSY, SQLITE_LOCKED): someone else
// holds the file, nothing is wrong with it.
func isBusy(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrBusy) {
		return true
	}
	var c interface{ Code() int }
	if errors.As(err, &c) {
		switch c.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	s := err.Error()
	return strings.Contains(s, "database is locked") || strings.Contains(s, "database table is locked")
}

// isCorrupt reports whether err is SQLite's verdict that the file is damaged (SQLITE_CORRUPT,
// SQLITE_NOTADB, "malformed"). Nothing else makes a record damaged.
func isCorrupt(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrDamaged) {
		return true
	}
	var c interface{ Code() int }
	if errors.As(err, &c) {
		switch c.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	s := err.Error()
	return strings.Contains(s, "malformed") || strings.Contains(s, "file is not a database")
}

// fileLock is the lock file beside a record (<db>.lock). Every open Record holds it shared for its
// life; a repair holds it exclusively, so a file is never moved aside under another sandscope
// process's feet. flock locks belong to the open file, so they vanish with a killed process.
type fileLock struct {
	f *os.File
}

func openLock(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &fileLock{f: f}, nil
}

// try takes the lock (syscall.LOCK_SH or LOCK_EX) without waiting. Changing a held lock is not
// atomic: a failed try leaves none held.
func (l *fileLock) try(how int) bool {
	for {
		err := syscall.Flock(int(l.f.Fd()), how|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err == nil
		}
	}
}

// wait takes the lock, trying for at most bound; it returns how long it waited.
func (l *fileLock) wait(how int, bound time.Duration) (time.Duration, bool) {
	start := time.Now()
	pause := 5 * time.Millisecond
	for {
		if l.try(how) {
			return time.Since(start), true
		}
		if time.Since(start) >= bound {
			return time.Since(start), false
		}
		time.Sleep(pause)
		pause = min(pause*2, 200*time.Millisecond)
	}
}

func (l *fileLock) unlock() { _ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }

func (l *fileLock) close() {
	if l != nil && l.f != nil {
		l.unlock()
		_ = l.f.Close()
		l.f = nil
	}
}

// holders names the other processes that hold the lock (from /proc/locks; nil where there is none).
func (l *fileLock) holders() []string {
	fi, err := l.f.Stat()
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	seen := map[int]bool{os.Getpid(): true}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  READ 1234 00:2f:5678 0 EOF"; waiters have "->" after the number
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[1] != "FLOCK" || !strings.HasSuffix(fs[5], ino) {
			continue
		}
		pid, err := strconv.Atoi(fs[4])
		if err != nil || seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, describePID(pid))
	}
	return out
}

// describePID is "pid 1234 (sandscope logs -f …)".
func describePID(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "pid " + strconv.Itoa(pid)
	}
	args := strings.Fields(strings.ReplaceAll(string(b), "\x00", " "))
	if len(args) > 0 {
		if i := strings.LastIndexByte(args[0], '/'); i >= 0 {
			args[0] = args[0][i+1:]
		}
	}
	cmd := strings.Join(args, " ")
	if len(cmd) > 60 {
		cmd = cmd[:57] + "…"
	}
	return fmt.Sprintf("pid %d (%s)", pid, cmd)
}
