package record

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the cgo-free SQLite driver

	"sandscope/client"
	"sandscope/internal/buildinfo"
)

// Budget bounds what the record keeps.
type Budget struct {
	MaxAge        time.Duration // events and output older than this are removed (default 14 days)
	MaxEvents     int           // at most this many events per bridge (default 200,000)
	CapturePerRun int64         // captured output kept per process: the newest bytes (default 8 MiB)
	CaptureTotal  int64         // captured output kept per bridge (default 512 MiB)
}

// DefaultBudget is what the record keeps when nothing is configured.
var DefaultBudget = Budget{MaxAge: 14 * 24 * time.Hour, MaxEvents: 200_000, CapturePerRun: 8 << 20, CaptureTotal: 512 << 20}

func (b Budget) withDefaults() Budget {
	if b.MaxAge <= 0 {
		b.MaxAge = DefaultBudget.MaxAge
	}
	if b.MaxEvents <= 0 {
		b.MaxEvents = DefaultBudget.MaxEvents
	}
	if b.CapturePerRun <= 0 {
		b.CapturePerRun = DefaultBudget.CapturePerRun
	}
	if b.CaptureTotal <= 0 {
		b.CaptureTotal = DefaultBudget.CaptureTotal
	}
	return b
}

// Options opens a record.
type Options struct {
	// Dir holds the record files, one per bridge (usually $XDG_STATE_HOME/sandscope/record).
	Dir string
	// Bridge is the bridge's stable identity: its URL, or "local:<root>" for the embedded bridge.
	// Only a hash of it names the file; the file stores it for `report`.
	Bridge string
	// Legacy names the same bridge had in earlier versions (its URL as typed, "local:<root>"): a
	// record kept under one of them becomes this identity's when it has none yet.
	Legacy []string
	// Version is sandscope's version, stored with each run.
	Version string
	Budget  Budget
	// FlushEvery is how often queued entries are committed (default 50 ms; captured output alone
	// waits for every fortieth round, or 4 MiB of it).
	FlushEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ReadOnly opens the record to read it (a report): no run is started, nothing is pruned, and
	// "earlier run" means earlier than the newest run in the file.
	ReadOnly bool
	// NoFold is for a writer that never reads a sandbox's state (a command recording what its
	// stream saw): Add queues each event without folding it into its sandbox's state, so the
	// sandbox's history is not read from the file at its first event (a read that grew with
	// every command recorded), Add returns no notice and derives no alerts. A state read anyway
	// (State) holds what was committed when it was first read, and what Add queued after.
	NoFold bool

	// beforeCheck, when set (tests), runs at the start of the check Open left for after it (on a
	// goroutine beside the writer), with the check's context.
	beforeCheck func(context.Context)
	// beforeRead, when set (tests), runs when State, WithState or Memo starts reading a
	// sandbox's history from the file outside the lock (load).
	beforeRead func(sandbox string)
}

// Record is what sandscope has observed on one bridge. It is safe for concurrent use. Add and
// Capture never block on the disk: entries are queued and committed by one writer every
// FlushEvery (captured output alone every 40 × FlushEvery or 4 MiB; an event takes the
// queued output with it), each batch in one transaction, so a crash costs at most the last batch.
type Record struct {
	db      *sql.DB
	path    string
	bridge  string
	version string
	run     int64 // atomic: a record opened damaged starts its run once repaired
	budget  Budget
	now     func() time.Time
	notices []string // Open's (guarded by mu after Open)
	lock    *fileLock
	gate    *gate

	outputWaiting atomic.Bool  // CaptureData queued output since the last commit
	rounds        atomic.Int64 // the writer's timer rounds (TestWriterCommitsWithoutFlush)

	// damage met by a statement, for the writer to look at (dmu: the hook runs under mu too)
	damage     atomic.Bool
	dmu        sync.Mutex
	damageErr  error
	sawCorrupt atomic.Bool // this run met damage: no clean mark at Close

	// the writer's own
	detached     bool      // damaged, waiting for its repair: no connection is made
	problem      error     // what made it damaged
	fileIno      uint64    // the file this record opened
	damagedIno   uint64    // the damaged file (another process's repair puts a new one at the path)
	lastTry      time.Time // last repair attempt while detached
	lastMarkLook time.Time
	lastWrite    time.Time // the last commit that had something to write
	markSeen     time.Time // the check mark last looked at
	busySince    time.Time // a batch has waited for a lock since then
	toldBusy     bool
	held         atomic.Bool // a batch failed for a lock or damage waits in pending (the writer's; atomic: tests act as the writer)
	pruning      pruneState  // where pruning stands between the writer's steps
	pruneMore    atomic.Bool // a step of pruning is still to come (the writer takes it)
	checkPending atomic.Bool // Open left a large record's check for later and it has not finished (no clean mark at Close)
	firstID      int64       // the largest event ID as this run began (atomic): its own events come after
	beforeCheck  func(context.Context)
	beforeRead   func(sandbox string)
	stopCheck    func()         // cancels that check and waits for its end (nil: none began)
	checking     sync.WaitGroup // the check's goroutine
	beginWait    time.Duration  // how long the last write waited for the write lock
	outputEvery  time.Duration  // captured output alone is committed this often (40 × FlushEvery)
	queued       int            // bytes of output queued since the last commit (mu)
	lastOutput   time.Time      // when output was last committed
	spared       bool           // recycle kept buffers in spare since dropSpare last let them go
	prepared     map[string]*sql.Stmt
	out          outSeg         // the segment captured output is appended to (segments.go)
	madeSegments bool           // this run made a segment (Close closes its rows)
	reclaimDue   atomic.Bool    // rows were removed since reclaim last ran
	lastReclaim  atomic.Int64   // when reclaim last ran (Unix ns)
	compacted    atomic.Int64   // bytes compaction copied, in all (benchmarks report it)
	trimming     map[int64]bool // segments per-process trims deleted from since reclaim last ran
	outBufs      [][]byte       // a commit's output buffers, written with one system call

	// subMu guards the subscriptions apart from mu: a change is sent with it held, so a cancel
	// cannot close a channel between the choice of subscribers and the send.
	subMu      sync.Mutex
	subs       map[int]chan string
	nextSub    int
	subsClosed bool

	mu     sync.Mutex
	states map[string]*State // folded sandboxes, loaded on first use
	// reading are the sandboxes whose states load is reading from the file outside the lock; a
	// second caller waits for that read rather than reading them again
	reading map[string]chan struct{}
	// snapshots are folds worth keeping (snapshot.go), queued for the writer
	snapshots []snapshot
	memos     map[memoKey]memo // what Memo computed of states
	pending   []Event
	chunks    []Chunk
	spare     [][]byte // emptied chunk buffers (see recycle)
	capture   map[capKey]*captureMeta
	closed    bool
	readOnly  bool
	noFold    bool
	werr      error         // the last write error (reported once through Err)
	failed    chan struct{} // signalled (never blocking) when a write fails; see WriteFailed
	unsaved   int           // events and output chunks a failed write could not keep
	// alerts derived from the transitions Add folded (bounded), for readers that tell the user
	alerts    []Alert
	alertSeq  int64
	alertSeen map[string]bool
	// known is KnownSandboxes' answer, kept up to date by Add (nil: read it from the file next)
	known     map[string]bool
	knownAdds int64     // events added, for a read of the file to tell whether it raced with one
	opened    time.Time // when this run opened the record
	opening   bool      // Open is running: notices go to Notices
	live      []string  // notices since Open, for TakeNotices
	noticeC   chan struct{}

	kick       chan struct{}
	outputKick chan struct{} // the first output queued since a commit: the writer plans its round
	done       chan struct{}
	quit       chan struct{}
	ack        chan chan error
}

// Chunk is captured output.
type Chunk struct {
	Sandbox string
	Process string
	Time    time.Time
	Cursor  string
	Stream  client.Stream
	Data    []byte
	// Lost says the chunk's bytes are gone (an *OutputLostError: its segment file was deleted or
	// cut short); Data is nil then and LostBytes is how many there were.
	Lost      error
	LostBytes int64
	sealed    bool // a stream event followed: later output starts a new chunk, so the event's cursor stays findable
}

type capKey struct{ sandbox, process string }

// captureMeta mirrors a captures row.
type captureMeta struct {
	began       time.Time
	beganCursor string
	earlierGone bool
	goneReason  string
	dropped     int64
	bytes       int64
	lastCursor  string
	lastData    time.Time // when the last byte captured arrived (the row's update time when loaded)
	ended       string
	dirty       bool
	loaded      bool
}

// FileFor is the record file of a bridge under dir.
func FileFor(dir, bridge string) string {
	sum := sha256.Sum256([]byte(bridge))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".db")
}

// Open opens (or creates) the record of a bridge. A record another process holds locked is waited
// for (at most about 30 s; then the error is ErrBusy): a lock is never taken for damage. A file
// SQLite itself finds damaged is moved aside and what can be read from it is copied into a new
// one, unless other sandscope processes have it open: then the record opens without writing
// (ErrDamaged on reads) and is repaired once they close it. Notices says what happened. Open
// fails only when no record can be kept at all (the directory is not writable, a lock outlasted
// the wait).
func Open(o Options) (*Record, error) {
	if o.Dir == "" {
		return nil, errors.New("record: no directory")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	var adopted string
	if !o.ReadOnly {
		adopted = adoptLegacy(o.Dir, o.Bridge, o.Legacy)
	}
	r := &Record{path: FileFor(o.Dir, o.Bridge), bridge: o.Bridge, budget: o.Budget.withDefaults(), now: o.Now, readOnly: o.ReadOnly, noFold: o.NoFold, beforeCheck: o.beforeCheck, beforeRead: o.beforeRead,
		version: o.Version, states: map[string]*State{}, capture: map[capKey]*captureMeta{}, subs: map[int]chan string{}, alertSeen: map[string]bool{},
		kick: make(chan struct{}, 1), outputKick: make(chan struct{}, 1), failed: make(chan struct{}, 1), noticeC: make(chan struct{}, 1),
		done: make(chan struct{}), quit: make(chan struct{}), ack: make(chan chan error)}
	if r.now == nil {
		r.now = time.Now
	}
	if r.version == "" {
		r.version = buildinfo.Version()
	}
	r.opened = r.now()
	if adopted != "" {
		r.notices = append(r.notices, adopted)
	}
	if o.ReadOnly {
		r.path = readablePath(o.Dir, o.Bridge, o.Legacy)
	}
	r.opening = true
	start := time.Now()
	lk, err := openLock(r.path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	r.lock = lk
	// a shared lock for the record's life; only a repair (exclusive) keeps it from us
	if waited, ok := lk.wait(syscall.LOCK_SH, openWait); !ok {
		lk.close()
		return nil, fmt.Errorf("record: %s: waited %.0f s for another sandscope process to finish repairing it: %w", r.path, waited.Seconds(), ErrBusy)
	}
	r.gate = newGate(r.path, r.sawDamage)
	r.db = sql.OpenDB(r.gate)
	r.db.SetMaxOpenConns(maxConns)
	r.db.SetMaxIdleConns(maxConns)
	if err := r.openChecked(start); err != nil {
		r.db.Close()
		lk.close()
		return nil, err
	}
	if !o.ReadOnly && !r.detached {
		// pruning, if the record has any to do, is the writer's from its start: the first
		// frame never waits for it (one step of a record far over its budget, which looks for
		// the event to trim to, took 115 ms)
		r.pruneMore.Store(true)
	}
	r.mu.Lock()
	r.opening = false
	r.mu.Unlock()
	every := o.FlushEvery
	if every <= 0 {
		every = 50 * time.Millisecond
	}
	// Captured output is committed every 40 rounds (2 s by default) unless an event, Flush or
	// outputBatch of it commits it sooner. Each commit costs the same few SQLite pages whatever
	// it holds: committing every 500 ms, the writer was a fifth of the TUI's CPU while capturing
	// 8 chatty processes (figure 11b), and the commit itself most of that. What a crash loses of
	// the last 2 s is what the bridge still has: capture resumes from the last committed cursor.
	r.outputEvery = 40 * every
	go r.writer(every)
	return r, nil
}

func dsn(path string, readOnly bool) string {
	q := "?_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)"
	if readOnly {
		return "file:" + path + q + "&mode=ro"
	}
	// journal_size_limit: the WAL is cut back to 8 MiB each time it restarts after a checkpoint,
	// instead of keeping the size of the largest transaction (a prune's vacuum, which moves pages
	// through it, had it as large as the record itself while it stayed open)
	q += "&_pragma=journal_size_limit(8388608)"
	// auto_vacuum binds only a new file, and only before it turns to WAL (an existing one ignores
	// it until a VACUUM: see vacuum). It is asked for only then: on an existing file the pragma
	// costs a checkpoint of the WAL at every connection (240 ms opening a 160 MiB record whose
	// sandscope was killed, BenchmarkOpenUnclean)
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		createFile(path)
		q += "&_pragma=auto_vacuum(INCREMENTAL)" // createFile could not: as before
	}
	// checkpoint about every 4 MiB of WAL whatever the page size (SQLite counts pages), so that
	// the WAL an unclean end leaves to the next open stays as small as with 4 KiB pages
	q += "&_pragma=wal_autocheckpoint(" + strconv.Itoa(walCheckpointBytes/pageSizeOf(path)) + ")"
	return "file:" + path + q + "&_pragma=journal_mode(WAL)&_txlock=immediate"
}

// newPageSize is the page size of a new record. Captured output is stored in rows of up to
// 64 KiB, that is chains of overflow pages, and each page costs two writes to the WAL and a read
// and a write at its checkpoint: with 4 KiB pages those system calls were most of the writer's
// CPU in figure 11b. 16 KiB pages make them four times fewer (BenchmarkCaptureWriter: 5.9 → 4.1
// ms per MB, 64 KiB pages 3.8), while an event (well under 1 KiB) still costs one page to read.
// An existing record keeps its page size.
const newPageSize = 16 << 10

// walCheckpointBytes is about how much WAL a checkpoint waits for (SQLite's default: 1000 pages
// of 4 KiB).
const walCheckpointBytes = 4 << 20

// createFile makes a new, empty record file with what binds only before the first table and the
// switch to WAL: the page size and incremental auto-vacuum (the driver runs a DSN's pragmas in
// alphabetical order, auto_vacuum and journal_mode before page_size, which then does nothing).
// Best effort: a file it could not make is made by the first connection, with 4 KiB pages.
func createFile(path string) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA page_size = " + strconv.Itoa(newPageSize), "PRAGMA auto_vacuum = INCREMENTAL", "PRAGMA journal_mode = WAL"} {
		if _, err := db.Exec(p); err != nil {
			return
		}
	}
}

// pageSizeOf reads the page size from a record file's header (4096 when it cannot).
func pageSizeOf(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 4096
	}
	defer f.Close()
	var h [18]byte
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:15]) != "SQLite format 3" {
		return 4096
	}
	switch n := int(binary.BigEndian.Uint16(h[16:])); {
	case n == 1:
		return 65536
	case n >= 512 && n&(n-1) == 0:
		return n
	}
	return 4096
}

// openChecked opens the file, checks it, and starts this run (unless read only). A lock is
// waited for; damage or a newer schema moves the file aside, under the exclusive lock.
func (r *Record) openChecked(start time.Time) error {
	check := !r.closedCleanly()
	if check && recordBytes(r.path) > checkAtOpenMax {
		// reading the whole file before the first frame costs about 2.5 ms per MiB here: a large
		// record is checked beside the writer right after Open instead (damage found then is
		// repaired the way damage a statement meets is)
		check = false
		r.checkPending.Store(true)
	}
	pause := 50 * time.Millisecond
	busy := false
	for {
		lockWait, problem := r.prepare(check)
		switch {
		case problem == nil:
			r.fileIno = inode(r.path)
			if waited := time.Since(start); busy || lockWait > time.Second {
				if busy {
					lockWait = waited
				}
				r.notices = append(r.notices, fmt.Sprintf("waited %.1f s for another process's lock on the record", lockWait.Seconds()))
			}
			return nil
		case isBusy(problem):
			busy = true
			if time.Since(start) >= openWait {
				return fmt.Errorf("record: %s: waited %.0f s for another process's lock on it (%v): %w", r.path, time.Since(start).Seconds(), problem, ErrBusy)
			}
			time.Sleep(pause)
			pause = min(pause*2, time.Second)
		default:
			var newer *newerSchemaError
			if !errors.As(problem, &newer) && !isCorrupt(problem) {
				return fmt.Errorf("record: open %s: %w", r.path, problem)
			}
			r.sawCorrupt.Store(newer == nil)
			if !r.takeAway(problem, true) {
				return nil // damaged, and others have it open: nothing is written until it is repaired
			}
			check = false
		}
	}
}

// checkAtOpenMax is the largest record (file and WAL) Open checks itself after an unclean end.
var checkAtOpenMax int64 = 32 << 20

func recordBytes(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// startCheck begins, beside the writer, the quick check Open left for later: on a large record it
// reads the whole file (about 6 s for 2.3 GB here), and commits must not wait for it. A file that
// fails it is taken for damaged (sawDamage), which the writer's next heal looks at with the full
// integrity check and repairs. Close, and the writer before it takes the file away, stop it (see
// stopCheck). A check that did not finish leaves no clean mark, so the next open checks again.
func (r *Record) startCheck() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	r.stopCheck = func() {
		cancel()
		r.checking.Wait()
	}
	r.checking.Add(1)
	go func() {
		defer r.checking.Done()
		defer cancel()
		if r.beforeCheck != nil {
			r.beforeCheck(ctx)
		}
		var res string
		err := r.db.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res)
		switch {
		case err != nil:
			// a damaged file already told the gate (sawDamage); a lock, a timeout or a stop: the
			// check stays pending, so this run leaves no clean mark and the next open checks again
			return
		case res != "ok":
			r.sawDamage(&dbError{err: fmt.Errorf("integrity check: %s", res), kind: ErrDamaged})
		}
		r.checkPending.Store(false)
	}()
}

type newerSchemaError struct{ version int }

func (e *newerSchemaError) Error() string {
	return fmt.Sprintf("schema version %d is newer than %d", e.version, SchemaVersion)
}

// prepare checks the file's integrity (when check) and schema version, creates what is missing
// and, unless read only, starts this run: all in one transaction on one connection, so that a
// lock makes it fail whole and it can be tried again. It returns how long the write lock took.
func (r *Record) prepare(check bool) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if check {
		checked := time.Now()
		var res string
		if err := conn.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res); err != nil {
			return 0, err
		}
		if res != "ok" {
			return 0, &dbError{err: fmt.Errorf("integrity check: %s", res), kind: ErrDamaged}
		}
		began = began.Add(time.Since(checked)) // reading the file is not waiting for a lock
	}
	// one read says whether the file has this schema and its meta already: the schema's
	// statements (each parsed, even when it creates nothing) and the meta write are skipped then
	var v, bridge sql.NullString
	var stamp int64
	current := false
	if err := conn.QueryRowContext(ctx, schemaStateQuery).Scan(&v, &bridge, &stamp); err == nil {
		if n, _ := strconv.Atoi(v.String); n > SchemaVersion {
			return 0, &newerSchemaError{n}
		}
		current = stamp == schemaStamp && v.String == strconv.Itoa(SchemaVersion) && bridge.Valid && bridge.String == r.bridge
	} else if isBusy(err) || isCorrupt(err) {
		return 0, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	lockWait := time.Since(began) // a prepare without a lock in the way takes milliseconds
	if err != nil {
		return lockWait, err
	}
	defer tx.Rollback()
	if !current {
		if err := migrate(ctx, tx); err != nil {
			return lockWait, err
		}
		for _, s := range schema {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return lockWait, fmt.Errorf("schema: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('bridge', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, strconv.Itoa(SchemaVersion), r.bridge); err != nil {
			return lockWait, fmt.Errorf("schema: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.FormatInt(schemaStamp, 10)); err != nil {
			return lockWait, fmt.Errorf("schema: %w", err)
		}
	}
	var notes []string
	var run int64
	if r.readOnly {
		_ = tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM runs").Scan(&run)
	} else if notes, run, err = r.startRun(ctx, tx); err != nil {
		return lockWait, err
	} else {
		atomic.StoreInt64(&r.firstID, readFirstID(ctx, tx))
	}
	if err := tx.Commit(); err != nil {
		return lockWait, err
	}
	atomic.StoreInt64(&r.run, run)
	if !r.readOnly {
		holdRun(r.path, run, true)
	}
	r.notices = append(r.notices, notes...)
	_ = os.Chmod(r.path, 0o600)
	return lockWait, nil
}

// The clean mark is a file beside the record saying the size and modification time the record had
// when the last sandscope closed it. When the record still has them, the integrity check (which
// reads the whole file) is skipped; after a crash, or when something else wrote the file, it runs.
// A run that met damage never writes it, and a check mark (<db>.check, left by a process that met
// damage it could not repair) makes the next open check whatever the clean mark says.
func (r *Record) cleanMark() string { return r.path + ".clean" }
func (r *Record) checkMark() string { return r.path + ".check" }

func statMark(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d %d\n", fi.Size(), fi.ModTime().UnixNano())
}

// closedCleanly reports whether the file is as the last clean close left it, and (unless read
// only) removes the mark: from now on the file is being written.
func (r *Record) closedCleanly() bool {
	mark, err := os.ReadFile(r.cleanMark())
	if err != nil {
		return false
	}
	if !r.readOnly {
		_ = os.Remove(r.cleanMark())
	}
	if _, err := os.Stat(r.checkMark()); err == nil {
		return false
	}
	return string(mark) == statMark(r.path)
}

// salvage copies what can be read from a damaged file (and its WAL, when it has one) into db, in
// ranges of row IDs so that one bad page costs the rows on it, not the rest. It reads a padded
// copy: SQLite refuses a file shorter than its header says (a torn tail), but reads the pages that
// are there once the missing ones read as zeros. The copy and its WAL are removed after.
func salvage(path string, db *sql.DB) (events, chunks int) {
	tmp := path + ".salvage"
	defer removeDB(tmp)
	if err := padCopy(path, tmp); err != nil {
		return 0, 0
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		_ = copyFile(path+"-wal", tmp+"-wal")
	}
	old, err := sql.Open("sqlite", "file:"+tmp+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return 0, 0
	}
	defer old.Close()
	old.SetMaxOpenConns(1)
	// values is the INSERT's VALUES list ("" for n placeholders)
	copyRange := func(table, cols string, n int, values string) int {
		tx, err := db.Begin()
		if err != nil {
			return 0
		}
		defer tx.Commit()
		if values == "" {
			values = strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
		}
		ins, err := tx.Prepare("INSERT OR IGNORE INTO " + table + " (" + cols + ") VALUES (" + values + ")")
		if err != nil {
			return 0
		}
		defer ins.Close()
		// where the IDs begin and end, when the table's root still reads (pruning leaves no low IDs)
		var lo, hi int64 = 0, -1
		var mn, mx sql.NullInt64
		if old.QueryRow("SELECT MIN(id), MAX(id) FROM "+table).Scan(&mn, &mx) == nil && mn.Valid {
			lo, hi = mn.Int64, mx.Int64
		}
		copied, empty := 0, 0
		const step = 128
		for ; (hi >= 0 && lo <= hi) || (hi < 0 && empty < 64); lo += step {
			rows, err := old.Query("SELECT "+cols+" FROM "+table+" WHERE id >= ? AND id < ? ORDER BY id", lo, lo+step)
			if err != nil {
				empty++
				continue
			}
			got := 0
			for rows.Next() {
				vals := make([]any, n)
				ptrs := make([]any, n)
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if rows.Scan(ptrs...) != nil {
					break
				}
				got++
				if _, err := ins.Exec(vals...); err == nil {
					copied++
				}
			}
			rows.Close()
			if got == 0 {
				empty++
			} else {
				empty = 0
			}
		}
		return copied
	}
	_ = copyRange("runs", "id, started, ended, version, pid", 5, "")
	if rows, err := old.Query("SELECT key, value FROM meta"); err == nil {
		for rows.Next() {
			var k, v string
			if rows.Scan(&k, &v) == nil {
				_, _ = db.Exec("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", k, v)
			}
		}
		rows.Close()
	}
	events = copyRange("events", "id, run, time, sandbox, source, kind, entity, entity_id, incarnation, lost, cursor, body", 12, "")
	if _, err := old.Exec("SELECT seg, off, len FROM chunks LIMIT 0"); err == nil {
		// their bytes stay where they are: the segment files belong to the record's path
		// (an empty data reads back as nil: NOT NULL would skip the row)
		chunks = copyRange("chunks", "id, sandbox, process, time, cursor, stream, data, seg, off, len", 10, "?, ?, ?, ?, ?, ?, COALESCE(?, x''), ?, ?, ?")
		_ = copyRange("segments", "id, run, open", 3, "")
	} else {
		chunks = copyRange("chunks", "id, sandbox, process, time, cursor, stream, data", 7, "")
	}
	// every segment a row names is known (and closed: the damaged file's writers are gone), so
	// that reclaim looks after its space
	_, _ = db.Exec("INSERT OR IGNORE INTO segments (id, run, open) SELECT DISTINCT seg, 0, 0 FROM chunks WHERE seg > 0")
	_, _ = db.Exec("UPDATE segments SET open = 0 WHERE open = 1")
	rows, err := old.Query("SELECT sandbox, process, began, began_cursor, earlier_gone, gone_reason, dropped, bytes, last_cursor, updated, ended FROM captures")
	if err == nil {
		for rows.Next() {
			v := make([]any, 11)
			p := make([]any, 11)
			for i := range v {
				p[i] = &v[i]
			}
			if rows.Scan(p...) != nil {
				break
			}
			_, _ = db.Exec("INSERT OR IGNORE INTO captures VALUES (?,?,?,?,?,?,?,?,?,?,?)", v...)
		}
		rows.Close()
	}
	return events, chunks
}

// removeDB removes a database file and the files SQLite keeps beside it.
func removeDB(path string) {
	for _, suf := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(path + suf)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// padCopy copies a database file, extended with zeros to the size its header states.
func padCopy(src, dst string) error {
	if err := copyFile(src, dst); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	head := make([]byte, 100)
	if _, err := f.ReadAt(head, 0); err == nil && string(head[:16]) == "SQLite format 3\x00" {
		pageSize := int64(binary.BigEndian.Uint16(head[16:18]))
		if pageSize == 1 {
			pageSize = 65536
		}
		if want := pageSize * int64(binary.BigEndian.Uint32(head[28:32])); want > fi.Size() && want < 1<<40 {
			return f.Truncate(want)
		}
	}
	return nil
}

// startRun adds this run to the runs table in tx and marks the runs that ended without closing
// the record; it returns the notices to give once tx commits, and the run's number.
func (r *Record) startRun(ctx context.Context, tx *sql.Tx) ([]string, int64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, started, pid FROM runs WHERE ended IS NULL ORDER BY id")
	if err != nil {
		return nil, 0, fmt.Errorf("runs: %w", err)
	}
	var unclean []string
	var ids []int64
	for rows.Next() {
		var id, started, pid int64
		if rows.Scan(&id, &started, &pid) == nil && !processAlive(int(pid)) {
			unclean = append(unclean, time.Unix(0, started).Local().Format("2006-01-02 15:04:05"))
			ids = append(ids, id)
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("runs: %w", err)
	}
	var notes []string
	if len(unclean) > 0 {
		notes = append(notes, fmt.Sprintf("the run of sandscope started %s ended without closing the record (killed or crashed); its history is kept up to its last complete entry", unclean[len(unclean)-1]))
		// reported once: ended = 0 marks an unclean end
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, "UPDATE runs SET ended = 0 WHERE id = ?", id); err != nil {
				return nil, 0, fmt.Errorf("runs: %w", err)
			}
			// its output segments take no more bytes: reclaim cuts off what it wrote past its
			// last committed row (unless another Record of this process has that run open)
			if runHeld(r.path, id) {
				continue
			}
			res, err := tx.ExecContext(ctx, "UPDATE segments SET open = 0 WHERE run = ? AND open = 1", id)
			if err != nil {
				return nil, 0, fmt.Errorf("runs: %w", err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				r.reclaimDue.Store(true)
			}
		}
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO runs (started, version, pid) VALUES (?, ?, ?)", r.now().UnixNano(), r.version, os.Getpid())
	if err != nil {
		return nil, 0, fmt.Errorf("start run: %w", err)
	}
	run, err := res.LastInsertId()
	return notes, run, err
}

// processAlive reports whether a process with that ID runs (another sandscope using the record
// now is not an unclean end).
func processAlive(pid int) bool {
	if pid <= 0 || pid == os.Getpid() {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// Path is the record file.
func (r *Record) Path() string { return r.path }

// Bridge is the bridge identity the record belongs to.
func (r *Record) Bridge() string { return r.bridge }

// Run is this run's number; events of other runs are marked Earlier.
func (r *Record) Run() int64 { return atomic.LoadInt64(&r.run) }

// Budget is the budget in force.
func (r *Record) Budget() Budget { return r.budget }

// Notices are things the user should be told about the record itself that Open found (a lock it
// waited for, a damaged file and its repair, an unclean end of the previous run). Later ones come
// through NoticeC and TakeNotices.
func (r *Record) Notices() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notices...)
}

// Err returns the last error the writer met (nil when all writes succeeded), once.
func (r *Record) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.werr
	r.werr = nil
	return err
}

// WriteFailed is signalled when a background write fails (the disk is full, the file became read
// only…): read Err and Unsaved then. Followers and screens go on either way; only what the
// failed writes held is missing from the record.
func (r *Record) WriteFailed() <-chan struct{} { return r.failed }

// Closed is closed once the record is closed.
func (r *Record) Closed() <-chan struct{} { return r.done }

// Unsaved is how many events and output chunks failed writes could not keep, since Open.
func (r *Record) Unsaved() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unsaved
}

// Add records an event and folds it into its sandbox's state. It returns a notice worth telling
// the user now (a new container), or "".
func (r *Record) Add(ev Event) string {
	if ev.Time.IsZero() {
		ev.Time = r.now()
	}
	ev.Run = atomic.LoadInt64(&r.run)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ""
	}
	notice := ""
	if st, ok := r.states[ev.Sandbox]; ok || !r.noFold {
		if !ok {
			st = r.stateLocked(ev.Sandbox)
		}
		var before entrySnap
		if ev.Entity != "" && ev.EntityID != "" {
			before = snapOf(st.Find(ev.Entity, ev.EntityID))
		}
		notice = st.Apply(ev)
		r.addAlertsLocked(alertsFor(st, ev, before, r.opened, r.alertSeen))
	}
	r.pending = append(r.pending, ev)
	r.noteKnownLocked(ev)
	if ev.Source == FromStream {
		for i := len(r.chunks) - 1; i >= 0; i-- {
			if c := &r.chunks[i]; c.Sandbox == ev.Sandbox && c.Process == ev.EntityID {
				c.sealed = true
				break
			}
		}
	}
	r.mu.Unlock()
	r.kickWriter()
	r.notify(ev.Sandbox)
	return notice
}

// SetRequest keeps the full launch request of an entry launched by this run (for relaunch); it
// is never written to disk.
func (r *Record) SetRequest(sandbox, process string, req client.ExecRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stateLocked(sandbox)
	if e := st.Find(Process, process); e != nil {
		e.Request = &req
		st.changes++
	}
}

func (r *Record) kickWriter() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// State returns a copy of what is known of a sandbox.
func (r *Record) State(sandbox string) *State {
	r.load(sandbox)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateLocked(sandbox).Clone()
}

// Loaded reports whether a sandbox's state is in memory: whether State, WithState or Memo answer
// from memory rather than by reading its history from the file first.
func (r *Record) Loaded(sandbox string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.states[sandbox]
	return ok
}

// load puts a sandbox's state in memory, read from the file outside the record's lock: a long
// history takes tens of milliseconds to fold (25,000 events: about 60 ms), and at a start with
// 200 sandboxes to read, the screens' calls (Memo, Add, a state in memory) waited behind every
// one of those reads. A state that Add loaded meanwhile (under the lock, as it must: it applies
// its event at once) is the one kept; a record that does not fold (NoFold) reads under the lock,
// as its Add keeps no states to tell whether an event came in meanwhile.
func (r *Record) load(sandbox string) {
	r.mu.Lock()
	for {
		if _, ok := r.states[sandbox]; ok || r.closed || r.noFold {
			r.mu.Unlock()
			return
		}
		wait, ok := r.reading[sandbox]
		if !ok {
			break
		}
		r.mu.Unlock()
		<-wait
		r.mu.Lock()
	}
	done := make(chan struct{})
	if r.reading == nil {
		r.reading = map[string]chan struct{}{}
	}
	r.reading[sandbox] = done
	r.mu.Unlock()

	if r.beforeRead != nil {
		r.beforeRead(sandbox)
	}
	st := NewState(sandbox)
	snap, err := r.fold(st, sandbox)

	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reading, sandbox)
	close(done)
	if _, ok := r.states[sandbox]; ok || r.closed {
		r.keepSnapshotLocked(snap) // the fold's, though another state is kept: it checks out on its own
		return
	}
	r.keepReadLocked(sandbox, st, snap, err)
}

// keepReadLocked keeps a state read from the file (load, stateLocked): its fold's snapshot is
// queued, an error told, the state kept.
func (r *Record) keepReadLocked(sandbox string, st *State, snap *snapshot, err error) {
	r.keepSnapshotLocked(snap)
	if err != nil {
		r.notices = append(r.notices, fmt.Sprintf("reading the record of %s: %v", sandbox, err))
	}
	r.states[sandbox] = st
}

// stateLocked returns the folded state of a sandbox, loading it from disk on first use.
func (r *Record) stateLocked(sandbox string) *State {
	if st, ok := r.states[sandbox]; ok {
		return st
	}
	st := NewState(sandbox)
	snap, err := r.fold(st, sandbox)
	r.keepReadLocked(sandbox, st, snap, err)
	return st
}

// stateOf is State for a caller that has just read all of the sandbox's committed events: a state
// not loaded yet is folded from them instead of being read and decoded a second time (a report
// of a sandbox with 25,000 events spent half its time on that).
func (r *Record) stateOf(sandbox string, events []Event) *State {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.states[sandbox]
	if !ok {
		st = NewState(sandbox)
		for _, ev := range events {
			st.Apply(ev)
		}
		r.states[sandbox] = st
	}
	return st.Clone()
}

// Sandboxes lists the sandboxes the record knows, sorted.
func (r *Record) Sandboxes() ([]string, error) {
	r.mu.Lock()
	known := map[string]bool{}
	for s := range r.states {
		known[s] = true
	}
	r.mu.Unlock()
	inFile, err := r.sandboxesInFile()
	if err != nil {
		return nil, fmt.Errorf("record: sandboxes: %w", err)
	}
	for _, s := range inFile {
		known[s] = true
	}
	out := make([]string, 0, len(known))
	for s := range known {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

// Events returns the committed events of a sandbox (entityID "" for all), oldest first. Call
// Flush first to include what was just added.
func (r *Record) Events(sandbox, entityID string) ([]Event, error) {
	if entityID == "" {
		return r.query("sandbox = ?", sandbox)
	}
	return r.query("sandbox = ? AND entity_id = ?", sandbox, entityID)
}

// LostSince lists the events that say a process or terminal was lost since t, across sandboxes.
func (r *Record) LostSince(t time.Time) ([]Event, error) {
	return r.query("lost = 1 AND time >= ?", t.UnixNano())
}

func (r *Record) query(where string, args ...any) ([]Event, error) {
	rows, err := r.db.Query("SELECT id, run, body FROM events WHERE "+where+" ORDER BY id", args...)
	if err != nil {
		return nil, fmt.Errorf("record: read: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var id, run int64
		var body string
		if err := rows.Scan(&id, &run, &body); err != nil {
			return out, fmt.Errorf("record: read: %w", err)
		}
		var ev Event
		if json.Unmarshal([]byte(body), &ev) != nil {
			continue // an entry that does not decode is skipped, not fatal
		}
		ev.ID, ev.Run, ev.Earlier = id, run, run != atomic.LoadInt64(&r.run)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("record: read: %w", err)
	}
	return out, nil
}

// Subscribe returns a channel that receives the name of each sandbox whose record changed
// (coalesced: a slow reader misses repeats, not sandboxes it has not been told about yet is not
// guaranteed — re-read the state on every receive). cancel ends the subscription.
func (r *Record) Subscribe() (<-chan string, func()) {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	ch := make(chan string, 64)
	if r.subsClosed {
		close(ch) // a closed record changes no more
		return ch, func() {}
	}
	id := r.nextSub
	r.nextSub++
	r.subs[id] = ch
	return ch, func() {
		r.subMu.Lock()
		defer r.subMu.Unlock()
		if c, ok := r.subs[id]; ok {
			delete(r.subs, id)
			close(c)
		}
	}
}

// notify tells each subscriber that sandbox changed, never waiting for one: a full channel
// already holds a change to re-read.
func (r *Record) notify(sandbox string) {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	for _, c := range r.subs {
		select {
		case c <- sandbox:
		default:
		}
	}
}

// closeSubscriptions ends every subscription (the record is closing).
func (r *Record) closeSubscriptions() {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	r.subsClosed = true
	for id, c := range r.subs {
		delete(r.subs, id)
		close(c)
	}
}

// Flush commits everything queued so far. A lock is waited for (about 30 s at most; then the
// error is ErrBusy and what was queued stays queued); damage met on the way is repaired first.
func (r *Record) Flush() error {
	ch := make(chan error, 1)
	select {
	case r.ack <- ch:
		return <-ch
	case <-r.done:
		return errors.New("record: closed")
	}
}

// Close commits what is queued (waiting for a lock about 30 s at most), marks the run as ended
// cleanly and closes the file. Unless this run met damage it leaves a clean mark, so that the next
// open need not check the whole file.
func (r *Record) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.closeSubscriptions()
	close(r.quit)
	<-r.done
	if r.stopCheck != nil { // set by the writer, which has ended
		r.stopCheck()
	}
	var err error
	// the output's bytes are durable before the rows naming them (the close checkpoints the WAL)
	r.closeOutput()
	if run := atomic.LoadInt64(&r.run); !r.readOnly && !r.detached && run != 0 {
		err = r.retryBusy(func() error {
			tx, err := r.db.Begin()
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.Exec("UPDATE runs SET ended = ? WHERE id = ?", r.now().UnixNano(), run); err != nil {
				return err
			}
			if r.madeSegments {
				if _, err := tx.Exec("UPDATE segments SET open = 0 WHERE run = ?", run); err != nil {
					return err
				}
			}
			return tx.Commit()
		})
	}
	cerr := r.db.Close()
	if err == nil {
		err = cerr
	}
	if !r.detached {
		r.sweepWAL()
	}
	if err == nil && !r.readOnly && !r.detached && !r.sawCorrupt.Load() && !r.checkPending.Load() {
		if _, cerr := os.Stat(r.checkMark()); cerr != nil {
			if m := statMark(r.path); m != "" {
				_ = os.WriteFile(r.cleanMark(), []byte(m), 0o600)
			}
		}
	}
	if !r.readOnly {
		holdRun(r.path, atomic.LoadInt64(&r.run), false)
	}
	r.lock.close()
	if err != nil {
		return fmt.Errorf("record: close: %w", err)
	}
	return nil
}

// sweepWAL makes sure a record no other process has open is left without its -wal and -shm
// (SQLite removes them when the last connection closes, unless something kept it from
// checkpointing then). It runs after this process closed its connections.
func (r *Record) sweepWAL() {
	if _, err := os.Stat(r.path + "-wal"); err != nil {
		if _, err := os.Stat(r.path + "-shm"); err != nil {
			return
		}
	}
	if !r.lock.try(syscall.LOCK_EX) {
		return // others have it open: the last of them cleans up
	}
	db, err := sql.Open("sqlite", dsn(r.path, false))
	if err != nil {
		return
	}
	db.SetMaxOpenConns(1)
	_, _ = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	_ = db.Close()
}

// retryBusy runs f until it succeeds, fails for something other than a lock, or about 30 s
// have gone.
func (r *Record) retryBusy(f func() error) error {
	start := time.Now()
	pause := 50 * time.Millisecond
	for {
		err := f()
		if !isBusy(err) || time.Since(start) >= openWait {
			return err
		}
		time.Sleep(pause)
		pause = min(pause*2, time.Second)
	}
}

func (r *Record) writer(every time.Duration) {
	defer close(r.done)
	defer r.closePrepared()
	// The writer wakes when there is something to do, not at every round: an event (kick) is
	// committed within every, queued output within outputEvery of the last output commit, and
	// with nothing queued it wakes only for what falls due (idleDue). Waking every 50 ms whatever
	// the queue held was 20 wake-ups a second of an idle TUI, and once a second still one.
	due := time.Now().Add(every)
	t := time.NewTimer(every)
	defer t.Stop()
	prune := time.NewTicker(5 * time.Minute)
	defer prune.Stop()
	if r.checkPending.Load() && !r.detached {
		r.startCheck()
	}
	if r.pruneMore.Load() && !r.readOnly && !r.detached {
		// the usual pruning is done in this step, right after Open; the pruning's end converts
		// an earlier file (vacuum), now or after the last step
		r.stepPruning()
	}
	dirty := false
	// next is when the writer has something to look at, given what is queued
	next := func(now time.Time) time.Time {
		switch {
		case dirty || r.held.Load() || r.detached || r.damage.Load() || r.pruneMore.Load():
			return now.Add(every)
		case r.outputWaiting.Load():
			if at := r.lastOutput.Add(r.outputEvery); at.After(now) {
				return at
			}
			return now.Add(every)
		}
		return r.idleDue(now, every)
	}
	for {
		fired := false
		select {
		case <-r.quit:
			err := r.flushAll()
			if err == nil && r.reclaimDue.Load() && !r.readOnly && !r.detached {
				r.reclaim(false) // nothing is trimmed after the close: what the trims left goes now
			}
			if err != nil {
				// what still waits cannot be kept
				r.mu.Lock()
				r.unsaved += len(r.pending) + len(r.chunks)
				r.pending, r.chunks = nil, nil
				r.mu.Unlock()
			}
			r.setErr(err)
			return
		case ch := <-r.ack:
			ch <- r.flushAll()
			dirty = r.held.Load()
		case <-r.kick:
			dirty = true
		case <-r.outputKick:
		case <-t.C:
			fired = true
			r.rounds.Add(1)
			r.heal()
			r.dropSpare()
			if r.outputWaiting.Load() && time.Since(r.lastOutput) >= r.outputEvery {
				dirty = true
			}
			if dirty || r.held.Load() {
				if err := r.commit(); err != nil && !r.held.Load() {
					r.setErr(err)
				}
				dirty = false
			}
			if r.reclaimDue.Load() && !r.readOnly && !r.detached && !time.Now().Before(r.reclaimAt()) {
				r.reclaim(true)
			}
			if r.pruneMore.Load() && !r.readOnly && !r.detached {
				r.stepPruning()
			}
		case <-prune.C:
			if !r.readOnly && !r.detached && !r.pruneMore.Load() {
				r.stepPruning()
			}
		}
		// a fired timer is set again; an armed one only ever sooner (kicks in a row must not
		// put a commit off)
		now := time.Now()
		if at := next(now); fired || at.Before(due) {
			due = at
			t.Reset(at.Sub(now))
		}
	}
}

// idleDue is when a writer with nothing queued has something to look at: another process's
// check mark (heal's look), the spare chunks to let go once output stopped (dropSpare), the
// segments to compact after a trim (reclaim); never sooner than a round from now. Damage and new
// work kick the writer, so nothing else waits for this.
func (r *Record) idleDue(now time.Time, every time.Duration) time.Time {
	at := r.nextMarkLook()
	if t := r.spareDropAt(); r.spared && t.Before(at) {
		at = t
	}
	if t := r.reclaimAt(); r.reclaimDue.Load() && !r.readOnly && !r.detached && t.Before(at) {
		at = t
	}
	if soonest := now.Add(every); at.Before(soonest) {
		return soonest
	}
	return at
}

// reclaimAt is when the writer may reclaim again: reclaimEvery after the last reclaim.
func (r *Record) reclaimAt() time.Time {
	return time.Unix(0, r.lastReclaim.Load()).Add(reclaimEvery)
}

// flushAll commits what is queued, repairing damage first and waiting for a lock (about 30 s at
// most). An error leaves what failed for a lock or damage queued.
func (r *Record) flushAll() error {
	start := time.Now()
	pause := 20 * time.Millisecond
	for {
		r.heal()
		err := r.commit()
		if err == nil {
			return nil
		}
		if r.damage.Load() && !r.detached {
			continue // looked at (and repaired) by heal before the next try
		}
		if !isBusy(err) || time.Since(start) >= openWait {
			return err
		}
		time.Sleep(pause)
		pause = min(pause*2, time.Second)
	}
}

func (r *Record) setErr(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	r.werr = err
	r.mu.Unlock()
	select {
	case r.failed <- struct{}{}:
	default:
	}
}

// A batch that fails for a lock or for damage stays queued for the next try, within these bounds
// (past them the oldest entries are dropped and counted in Unsaved).
const (
	maxHeldEvents = 100_000
	maxHeldBytes  = 64 << 20
)

// commit writes the queued events and output in one transaction. A batch that failed because
// another process held a lock, or because the file is damaged, is kept (bounded) and tried again;
// any other failure loses it, counted in Unsaved.
func (r *Record) commit() error {
	r.outputWaiting.Store(false) // before taking the queue: output queued after it waits again
	r.mu.Lock()
	evs, chunks, snaps := r.pending, r.chunks, r.snapshots
	r.pending, r.chunks, r.queued, r.snapshots = nil, nil, 0, nil
	var metas map[capKey]captureMeta
	for k, m := range r.capture {
		if m.dirty {
			if metas == nil {
				metas = map[capKey]captureMeta{}
			}
			metas[k] = *m
			m.dirty = false
		}
	}
	r.mu.Unlock()
	r.writeSnapshots(snaps) // before held is cleared: not while the last batch is held
	r.held.Store(false)
	if len(evs) == 0 && len(chunks) == 0 && len(metas) == 0 {
		return nil
	}
	if len(chunks) > 0 {
		r.lastOutput = time.Now()
	}
	began := time.Now()
	r.lastWrite = began
	err := r.write(evs, chunks, metas)
	if err == nil {
		r.recycle(chunks)
		wait := r.beginWait
		if !r.busySince.IsZero() {
			wait = time.Since(r.busySince)
			r.busySince, r.toldBusy = time.Time{}, false
		}
		if wait > time.Second {
			r.note(fmt.Sprintf("waited %.1f s for another process's lock on the record", wait.Seconds()))
		}
		return nil
	}
	if !isBusy(err) && !isCorrupt(err) {
		r.mu.Lock()
		r.unsaved += len(evs) + len(chunks)
		r.mu.Unlock()
		return err
	}
	r.hold(evs, chunks, metas)
	if isBusy(err) {
		if r.busySince.IsZero() {
			r.busySince = began
		}
		if waited := time.Since(r.busySince); !r.toldBusy && waited > 3*time.Second {
			r.toldBusy = true
			r.note(fmt.Sprintf("waiting for another process's lock on the record (%.0f s so far); what is observed meanwhile is kept and written once it is free", waited.Seconds()))
		}
	}
	return err
}

// hold puts a batch that could not be written back in front of the queue, within the bounds.
func (r *Record) hold(evs []Event, chunks []Chunk, metas map[capKey]captureMeta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held.Store(true)
	r.pending = append(evs, r.pending...)
	r.chunks = append(chunks, r.chunks...)
	for i := range r.chunks {
		// a held chunk keeps no more memory than its bytes (maxHeldBytes counts bytes): a
		// reused buffer can be 16 times larger
		if c := &r.chunks[i]; cap(c.Data) > 2*len(c.Data)+4<<10 {
			c.Data = append([]byte(nil), c.Data...)
		}
	}
	for k := range metas {
		if m := r.capture[k]; m != nil {
			m.dirty = true
		}
	}
	if over := len(r.pending) - maxHeldEvents; over > 0 {
		r.pending = append([]Event(nil), r.pending[over:]...)
		r.unsaved += over
	}
	var size int
	for _, c := range r.chunks {
		size += len(c.Data)
	}
	drop := 0
	for drop < len(r.chunks) && size > maxHeldBytes {
		size -= len(r.chunks[drop].Data)
		drop++
	}
	if drop > 0 {
		r.chunks = append([]Chunk(nil), r.chunks[drop:]...)
		r.unsaved += drop
	}
}

// write writes events, output chunks and capture metadata in one transaction.
func (r *Record) write(evs []Event, chunks []Chunk, metas map[capKey]captureMeta) error {
	if len(evs) > 0 {
		r.stmt(insertEvent)
	}
	if len(chunks) > 0 {
		r.stmt(insertChunk)
	}
	if len(metas) > 0 {
		r.stmt(upsertCapture)
	}
	began := time.Now()
	tx, err := r.db.Begin()
	r.beginWait = time.Since(began)
	if err != nil {
		return fmt.Errorf("record: write: %w", err)
	}
	defer tx.Rollback()
	var seg *segTx
	if len(chunks) > 0 {
		seg = r.segTx(tx)
	}
	if len(evs) > 0 {
		st, err := r.txStmt(tx, insertEvent)
		if err != nil {
			return fmt.Errorf("record: write: %w", err)
		}
		run := atomic.LoadInt64(&r.run)
		for i := range evs {
			ev := &evs[i]
			if ev.Run == 0 {
				ev.Run = run // added before a record that opened damaged was repaired
			}
			if err := execInsertEvent(st, ev); err != nil {
				st.Close()
				return fmt.Errorf("record: write: %w", err)
			}
		}
		st.Close()
	}
	if err := r.writeChunks(tx, seg, chunks, metas); err != nil {
		if seg != nil {
			seg.done(false)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		if seg != nil {
			seg.done(false)
		}
		return fmt.Errorf("record: commit: %w", err)
	}
	if seg != nil {
		seg.done(true)
	}
	return nil
}

const insertEvent = `INSERT INTO events (run, time, sandbox, source, kind, entity, entity_id, incarnation, lost, cursor, body)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// execInsertEvent writes one event with st (prepared from insertEvent). An event that does not
// encode is skipped.
func execInsertEvent(st *sql.Stmt, ev *Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil
	}
	lost := 0
	if ev.Lost() {
		lost = 1
	}
	_, err = st.Exec(ev.Run, ev.Time.UnixNano(), ev.Sandbox, string(ev.Source), ev.Kind, string(ev.Entity), ev.EntityID,
		ev.Incarnation.Number, lost, ev.Cursor, string(body))
	return err
}

// pruneBatch bounds the rows one step of pruning removes from each table, and freeBatch the
// freed pages it gives back to the file system. A record far over its budget (the budget lowered,
// weeks away) is pruned a step at a time by the writer, the first as it starts, then one per
// round between its commits. In one statement, 4.8 million events over a budget of 200,000 held Open
// (and so the first frame) for about two minutes, and left a 1.1 GB WAL that a kill made the next
// open read again.
const (
	pruneBatch = 5_000
	freeBatch  = 512
)

// pruneStep takes one step of pruning: it removes at most pruneBatch rows of each kind that is
// older than the budget's age or over its sizes, or, once nothing is left to remove, gives back
// at most freeBatch freed pages (incremental auto-vacuum). It reports whether more remains.
func (r *Record) pruneStep() (more bool) {
	p := &r.pruning
	if !p.freeing {
		run := atomic.LoadInt64(&r.run)
		cutoff := r.now().Add(-r.budget.MaxAge).UnixNano()
		if !p.removed && p.trimTo == 0 && !r.pruneDue(run, cutoff) {
			return false // the usual step: nothing is old enough or over budget
		}
		n, full := r.removeStep(run, cutoff)
		if n > 0 {
			p.removed = true
			// a sandbox whose history is all pruned is no longer known: read the set again
			r.mu.Lock()
			r.known = nil
			r.mu.Unlock()
		}
		if full {
			return true
		}
		touched := p.touched
		p.touched = pruned{}
		if !p.removed {
			return false // nothing freed: no vacuum, and no checkpoint (an fsync) at every open
		}
		r.forgetPruned(touched)
		p.freeing = true
		r.reclaim(false)
	}
	if r.freeStep() {
		return true
	}
	r.truncateWAL()
	*p = pruneState{}
	return false
}

// stepPruning takes the writer's next step of pruning; at its end, an earlier file much of which
// is free is converted (vacuum).
func (r *Record) stepPruning() {
	more := r.pruneStep()
	r.pruneMore.Store(more)
	if !more {
		r.vacuum()
	}
}

// pruneState is where a pruning stands between the writer's steps.
type pruneState struct {
	removed bool  // this pruning removed rows
	trimTo  int64 // it trims the events up to this ID (90 % of the budget left), a batch at a time
	freeing bool  // removing is done: freed pages are given back
	// touched are the runs and sandboxes that lost events, for forgetPruned once removing is done
	touched pruned
}

// removeStep removes at most pruneBatch rows of each kind to prune; full says a kind had more.
func (r *Record) removeStep(run, cutoff int64) (removed int64, full bool) {
	p := &r.pruning
	counted := func(n int64) int64 {
		removed += n
		full = full || n >= pruneBatch
		return n
	}
	del := func(q string, args ...any) int64 {
		res, err := r.db.Exec(q, args...)
		if err != nil {
			return 0
		}
		n, _ := res.RowsAffected()
		return counted(n)
	}
	// events go with what they were of noted (forgetPruned): ids selects them
	delEvents := func(ids string, args ...any) int64 {
		n, _ := r.deletePrunedEvents(&p.touched, ids, args...)
		return counted(n)
	}
	delEvents("SELECT id FROM events WHERE time < ? ORDER BY time LIMIT ?", cutoff, pruneBatch)
	del("DELETE FROM chunks WHERE id IN (SELECT id FROM chunks WHERE time < ? ORDER BY time LIMIT ?)", cutoff, pruneBatch)
	del("DELETE FROM captures WHERE updated < ?", cutoff) // a row per process
	del("DELETE FROM runs WHERE started < ? AND id <> ?", cutoff, run)
	if full {
		return removed, true
	}
	if p.trimTo == 0 && r.overEvents() {
		// keep the newest 90% so that pruning is not needed again at the next event; looked for
		// once (an offset reads that many index entries): IDs only grow, so later events stay
		var id int64
		if r.db.QueryRow("SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?", r.budget.MaxEvents*9/10).Scan(&id) == nil {
			p.trimTo = id
		}
	}
	if p.trimTo > 0 {
		if n := delEvents("SELECT id FROM events WHERE id <= ? ORDER BY id LIMIT ?", p.trimTo, pruneBatch); n < pruneBatch {
			p.trimTo = 0
		}
		if full {
			return removed, true
		}
	}
	if r.pruneCaptures() {
		removed++
	}
	if removed > 0 {
		// a snapshot none of whose events is left is dropped (one that lost some no longer
		// checks out, and the next fold replaces it)
		// (not counted as pruned rows: a cache, not the record's content)
		_, _ = r.db.Exec("DELETE FROM states WHERE NOT EXISTS (SELECT 1 FROM events WHERE events.sandbox = states.sandbox AND events.id <= states.upto)")
	}
	return removed, false
}

// freeStep gives back at most freeBatch free pages of a file with incremental auto-vacuum, and
// reports whether free pages remain.
func (r *Record) freeStep() bool {
	var mode int64
	if r.db.QueryRow("PRAGMA auto_vacuum").Scan(&mode) != nil || mode != 2 {
		return false // an earlier file: vacuum converts it once pruning left much of it free
	}
	rows, err := r.db.Query(fmt.Sprintf("PRAGMA incremental_vacuum(%d)", freeBatch))
	if err != nil {
		return false
	}
	for rows.Next() { // each step frees pages: read it to the end
	}
	rows.Close()
	var free int64
	return r.db.QueryRow("PRAGMA freelist_count").Scan(&free) == nil && free > 0
}

// pruneDueQuery says in one statement whether prune has anything to do: a row older than the
// cutoff (?1, each test an index's first entry but runs', a small table), an event ID range wider
// than the budget (?3: overEvents decides), captured output over its total (?4, pruneCaptures).
// Its seven statements, each a write transaction or a read parsed anew, ran at every open.
const pruneDueQuery = `SELECT EXISTS (SELECT 1 FROM events WHERE time < ?1)
	OR EXISTS (SELECT 1 FROM chunks WHERE time < ?1)
	OR EXISTS (SELECT 1 FROM captures WHERE updated < ?1)
	OR EXISTS (SELECT 1 FROM runs WHERE started < ?1 AND id <> ?2)
	OR COALESCE((SELECT MAX(id) FROM events) - (SELECT MIN(id) FROM events), 0) >= ?3
	OR COALESCE((SELECT bytes FROM capture_total WHERE id = 1), ?4 + 1) > ?4`

// pruneDue reports whether prune may remove something (true when it cannot tell).
func (r *Record) pruneDue(run, cutoff int64) bool {
	var due bool
	err := r.db.QueryRow(pruneDueQuery, cutoff, run, r.budget.MaxEvents, r.budget.CaptureTotal).Scan(&due)
	return err != nil || due
}

// overEvents reports whether the record holds more events than its budget, without counting them
// all (a COUNT(*) read every event's index entry, at every open): row IDs only grow, so an ID
// range no wider than the budget settles it; otherwise the budget-th newest event is looked for.
func (r *Record) overEvents() bool {
	// one aggregate per statement: SQLite answers MIN or MAX alone from the rowid's b-tree, but
	// both in one SELECT by reading every row
	var lo, hi sql.NullInt64
	if r.db.QueryRow("SELECT MIN(id) FROM events").Scan(&lo) != nil || !lo.Valid ||
		r.db.QueryRow("SELECT MAX(id) FROM events").Scan(&hi) != nil {
		return false
	}
	if hi.Int64-lo.Int64 < int64(r.budget.MaxEvents) {
		return false
	}
	var id int64
	return r.db.QueryRow("SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?", r.budget.MaxEvents).Scan(&id) == nil
}

// truncateWAL checkpoints the WAL and cuts it to nothing, so that the pages a prune or a VACUUM
// moved through it stop taking disk space. Best effort: a reader in the way (another process)
// leaves it to journal_size_limit at the next checkpoint.
func (r *Record) truncateWAL() {
	_, _ = r.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
}

// vacuum converts a file made before incremental auto-vacuum once pruning has left much of it
// free (over a quarter of its pages and 8 MiB): VACUUM rewrites it whole, and from then on each
// prune gives freed pages back. It runs in the writer, bounded in time; a lock makes it wait for
// the next prune.
func (r *Record) vacuum() {
	var mode, pages, free, size int64
	if r.db.QueryRow("PRAGMA auto_vacuum").Scan(&mode) != nil || mode != 0 ||
		r.db.QueryRow("PRAGMA page_count").Scan(&pages) != nil ||
		r.db.QueryRow("PRAGMA freelist_count").Scan(&free) != nil ||
		r.db.QueryRow("PRAGMA page_size").Scan(&size) != nil {
		return
	}
	if free*4 <= pages || free*size <= 8<<20 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return
	}
	if _, err := conn.ExecContext(ctx, "VACUUM"); err == nil {
		_, _ = conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
}
