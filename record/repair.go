package record

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Damage and its repair. Only SQLite's verdict makes a record damaged: a statement that returns
// SQLITE_CORRUPT / SQLITE_NOTADB ("malformed"), then a full integrity check that fails (or the
// quick check at an open after an unclean end). A repair moves the file aside and salvages what
// reads from it into a new one; it runs only under the exclusive lock of <db>.lock, which no other
// open Record holds then (each holds it shared for its life), so no sandscope process is left
// writing into a file that was moved away. A process that finds damage gives its connections and
// its shared lock up first; if others still hold theirs it records nothing new (keeping what it
// can in memory) and tries again about once a second, and whoever gets the exclusive lock first
// checks again before repairing (the others find a sound file, or a new one, and go on).

// NoticeC is signalled (never blocking; several notices may wait behind one signal) when something
// happened to the record that the user should be told now: a long wait for another process's
// lock, damage found, a repair and what it recovered, damage that cannot be repaired yet. Read
// them with TakeNotices.
func (r *Record) NoticeC() <-chan struct{} { return r.noticeC }

// TakeNotices returns the notices given since Open (or the last call), oldest first, and forgets
// them. What Open itself found is in Notices.
func (r *Record) TakeNotices() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.live
	r.live = nil
	return out
}

// maxLive bounds the notices kept for TakeNotices.
const maxLive = 64

// note tells the user something about the record: with Open's notices while it opens, later
// through NoticeC and TakeNotices.
func (r *Record) note(msg string) {
	r.mu.Lock()
	if r.opening {
		r.notices = append(r.notices, msg)
		r.mu.Unlock()
		return
	}
	r.live = append(r.live, msg)
	if len(r.live) > maxLive {
		r.live = r.live[len(r.live)-maxLive:]
	}
	r.mu.Unlock()
	select {
	case r.noticeC <- struct{}{}:
	default:
	}
}

// sawDamage is the gate's hook: a statement met SQLite's "damaged". It never blocks (it may run
// with r.mu held); the writer looks at the file.
func (r *Record) sawDamage(err error) {
	r.dmu.Lock()
	if r.damageErr == nil {
		r.damageErr = err
	}
	r.dmu.Unlock()
	r.damage.Store(true)
	r.kickWriter()
}

func (r *Record) takeDamage() error {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	err := r.damageErr
	r.damageErr = nil
	r.damage.Store(false)
	return err
}

// heal runs in the writer: it looks at damage a statement met (or another process left a check
// mark about), and while the record waits for a repair, tries it again now and then.
func (r *Record) heal() {
	if r.detached {
		if time.Since(r.lastTry) >= time.Second {
			r.retryRepair()
		}
		return
	}
	if !r.damage.Load() && !r.checkMarkNew() {
		return
	}
	why := r.takeDamage()
	r.sawCorrupt.Store(true)
	verdict := r.integrity()
	r.takeDamage() // the check's own errors are its verdict
	if verdict == nil {
		if why != nil {
			r.note(fmt.Sprintf("SQLite reported the record %s damaged (%v), but its integrity check finds it sound; recording goes on", r.path, why))
		}
		_ = os.Remove(r.checkMark())
		return
	}
	r.note(fmt.Sprintf("the record %s is damaged (SQLite: %v); repairing it", r.path, verdict))
	r.takeAway(verdict, false)
	if !r.detached {
		r.afterRepair()
	}
}

// How often the writer looks for another process's check mark: every markLookWriting while it
// commits, every markLookIdle while it has nothing to write. The look is a stat, and a system call
// made through the scheduler wakes the runtime's monitor thread into a millisecond of polling: at
// every 2 s it was a tenth of an idle TUI's CPU. A commit makes such calls anyway.
const (
	markLookWriting = 2 * time.Second
	markLookIdle    = 10 * time.Second
)

// checkMarkNew reports (at most every markLookWriting, or markLookIdle when nothing was written
// since the last look) whether another process left a check mark this one has not looked at: it
// met damage it could not repair while this process had the record open.
func (r *Record) checkMarkNew() bool {
	if time.Now().Before(r.nextMarkLook()) {
		return false
	}
	r.lastMarkLook = time.Now()
	fi, err := os.Stat(r.checkMark())
	if err != nil || fi.ModTime().Equal(r.markSeen) {
		return false
	}
	r.markSeen = fi.ModTime()
	return true
}

// nextMarkLook is when checkMarkNew looks again: markLookWriting after the last look if something
// was written since, else markLookIdle.
func (r *Record) nextMarkLook() time.Time {
	if r.lastWrite.After(r.lastMarkLook) {
		return r.lastMarkLook.Add(markLookWriting)
	}
	return r.lastMarkLook.Add(markLookIdle)
}

// integrity is SQLite's verdict on the whole file: nil when sound (or when it could not be asked
// for a reason other than damage).
func (r *Record) integrity() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return integrityOf(ctx, r.db)
}

func integrityOf(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check(10)")
	if err != nil {
		if isCorrupt(err) {
			return err
		}
		return nil
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			break
		}
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); line != "ok" && line != "" && !strings.HasPrefix(line, "***") {
				problems = append(problems, line)
			}
		}
	}
	if err := rows.Err(); err != nil && isCorrupt(err) {
		return err
	}
	if len(problems) == 0 {
		return nil
	}
	more := ""
	if len(problems) > 2 {
		more = fmt.Sprintf("; and %d more", len(problems)-2)
		problems = problems[:2]
	}
	return &dbError{err: fmt.Errorf("integrity check: %s%s", strings.Join(problems, "; "), more), kind: ErrDamaged}
}

// takeAway gives the damaged (or too new) file up, and repairs it if no other sandscope process
// has it open; it reports whether the record can be used (repaired, or found repaired).
func (r *Record) takeAway(problem error, atOpen bool) bool {
	var newer *newerSchemaError
	errors.As(problem, &newer)
	if newer == nil {
		_ = os.WriteFile(r.checkMark(), []byte(problem.Error()+"\n"), 0o600)
	}
	if r.stopCheck != nil {
		r.stopCheck() // its connection would hold the gate: the repair checks the file anyway
	}
	r.gate.close(r.db, repairWait)
	// the segment this process appended to is closed by the repair (or by another process's):
	// output goes to a new one afterwards
	r.closeOutput()
	r.damagedIno = r.fileIno
	if r.damagedIno == 0 {
		r.damagedIno = inode(r.path)
	}
	r.lock.unlock()
	// the exclusive lock: at once if no one else has the record open, else wait a little
	if _, ok := r.lock.wait(syscall.LOCK_EX, repairWait); !ok {
		r.stayAway(problem)
		return false
	}
	return r.repairLocked(problem, newer)
}

// stayAway leaves the record damaged for now: others have it open.
func (r *Record) stayAway(problem error) {
	r.detached, r.lastTry = true, time.Now()
	r.problem = problem
	r.gate.refuse(fmt.Errorf("record: %s waits for its repair: %w", r.path, ErrDamaged))
	who := "other sandscope processes"
	if names := r.lock.holders(); len(names) > 0 {
		who += " (" + strings.Join(names, ", ") + ")"
	}
	r.note(fmt.Sprintf("the record %s is damaged (SQLite: %v) and %s still have it open: it will be repaired when they close it; until then this process records nothing new (what it observes is held in memory, up to a bound, and written after the repair)", r.path, problem, who))
}

// retryRepair runs in the writer while the record waits for a repair.
func (r *Record) retryRepair() {
	r.lastTry = time.Now()
	if ino := inode(r.path); ino != 0 && ino != r.damagedIno {
		// another process repaired it: a new file is at the path
		if _, ok := r.lock.wait(syscall.LOCK_SH, repairWait); !ok {
			return
		}
		r.detached = false
		r.fileIno = ino
		r.takeDamage()
		r.gate.open(r.db)
		r.note(fmt.Sprintf("the record %s was repaired by another sandscope process; recording goes on", r.path))
		r.afterRepair()
		return
	}
	if !r.lock.try(syscall.LOCK_EX) {
		return
	}
	if r.repairLocked(r.problem, nil) {
		r.afterRepair()
	}
}

// afterRepair starts this run in a record that opened damaged, and writes what waited.
func (r *Record) afterRepair() {
	r.takeDamage()
	if r.readOnly || atomic.LoadInt64(&r.run) != 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), openWait)
	defer cancel()
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return
	}
	defer tx.Rollback()
	notes, run, err := r.startRun(ctx, tx)
	if err != nil || tx.Commit() != nil {
		return
	}
	atomic.StoreInt64(&r.run, run)
	holdRun(r.path, run, true)
	for _, n := range notes {
		r.note(n)
	}
}

// repairLocked runs under the exclusive lock: it checks the file again (another process may have
// repaired it), moves it aside and salvages what reads into a new file, then takes the shared lock
// back and lets connections be made to the new file. It reports whether the record can be used.
func (r *Record) repairLocked(problem error, newer *newerSchemaError) bool {
	defer func() {
		if _, ok := r.lock.wait(syscall.LOCK_SH, openWait); !ok {
			r.lock.unlock()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if newer == nil {
		if sound(ctx, r.path) {
			_ = os.Remove(r.checkMark())
			r.detached = false
			r.fileIno = inode(r.path)
			r.gate.open(r.db)
			r.note(fmt.Sprintf("the record %s was damaged (%v) and another sandscope process has repaired it; recording goes on", r.path, problem))
			return true
		}
	}
	tag := "damaged"
	if newer != nil {
		tag = fmt.Sprintf("v%d", newer.version)
	}
	aside := fmt.Sprintf("%s.%s-%d", r.path, tag, r.now().Unix())
	if err := os.Rename(r.path, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.stayAway(fmt.Errorf("%v; moving it aside failed: %w", problem, err))
		return false
	}
	if err := os.Rename(r.path+"-wal", aside+"-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(r.path + "-wal")
	}
	_ = os.Remove(r.path + "-shm")
	_ = os.Remove(r.cleanMark())
	if newer != nil {
		// its captured output goes with it (its rows name segments under its own path)
		if err := os.Rename(outputDir(r.path), outputDir(aside)); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.note(fmt.Sprintf("the captured output of the record moved to %s stays in %s: %v", aside, outputDir(r.path), err))
		}
		r.detached = false
		r.fileIno = 0 // the next open makes it
		r.gate.open(r.db)
		r.note(fmt.Sprintf("the record %s was written by a newer sandscope (schema %d); moved to %s and started a new one", r.path, newer.version, aside))
		return true
	}
	events, chunks, err := salvageInto(ctx, aside, r.path, r.bridge)
	_ = os.Remove(aside + "-shm")
	_ = os.Remove(r.checkMark())
	r.detached = false
	r.fileIno = inode(r.path)
	r.gate.open(r.db)
	if err != nil {
		r.note(fmt.Sprintf("the record %s was damaged (SQLite: %v); moved it to %s and started a new one, but nothing could be recovered (%v)", r.path, problem, aside, err))
		return true
	}
	r.note(fmt.Sprintf("repaired the record %s (SQLite: %v): moved the damaged file to %s and recovered %d events and %d output chunks from it into a new record (the captured output's bytes stay in %s, where the new record's rows find them)", r.path, problem, aside, events, chunks, outputDir(r.path)))
	return true
}

// sound reports whether the file at path passes SQLite's integrity check (a new connection, so
// another process's repair is seen).
func sound(ctx context.Context, path string) bool {
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return false
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var v string
	if err := db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v); err != nil {
		return false
	}
	return integrityOf(ctx, db) == nil
}

// salvageInto creates a new record file at path and copies what reads from the damaged one into it.
func salvageInto(ctx context.Context, damaged, path, bridge string) (events, chunks int, err error) {
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := createSchema(ctx, db); err != nil {
		return 0, 0, err
	}
	events, chunks = salvage(damaged, db)
	if _, err := db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('bridge', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, strconv.Itoa(SchemaVersion), bridge); err != nil {
		return events, chunks, fmt.Errorf("schema: %w", err)
	}
	return events, chunks, nil
}

// createSchema creates the tables of a new file (auto_vacuum first: it binds only before them).
func createSchema(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return err
	}
	for _, s := range schema {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	return nil
}

func inode(path string) uint64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
