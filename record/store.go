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
	// Version is sandscope's version, stored with each run.
	Version string
	Budget  Budget
	// FlushEvery is how often queued entries are committed (default 50 ms).
	FlushEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ReadOnly opens the record to read it (a report): no run is started, nothing is pruned, and
	// "earlier run" means earlier than the newest run in the file.
	ReadOnly bool
}

// Record is what sandscope has observed on one bridge. It is safe for concurrent use. Add and
// Capture never block on the disk: entries are queued and committed by one writer every
// FlushEvery, each batch in one transaction, so a crash costs at most the last batch.
type Record struct {
	db      *sql.DB
	path    string
	bridge  string
	run     int64
	budget  Budget
	now     func() time.Time
	notices []string

	mu       sync.Mutex
	states   map[string]*State // folded sandboxes, loaded on first use
	pending  []Event
	chunks   []Chunk
	capture  map[capKey]*captureMeta
	subs     map[int]chan string
	nextSub  int
	closed   bool
	readOnly bool
	werr     error         // the last write error (reported once through Err)
	failed   chan struct{} // signalled (never blocking) when a write fails; see WriteFailed
	unsaved  int           // events and output chunks a failed write could not keep
	// alerts derived from the transitions Add folded (bounded), for readers that tell the user
	alerts    []Alert
	alertSeq  int64
	alertSeen map[string]bool
	opened    time.Time // when this run opened the record

	kick chan struct{}
	done chan struct{}
	quit chan struct{}
	ack  chan chan error
}

// Chunk is captured output.
type Chunk struct {
	Sandbox string
	Process string
	Time    time.Time
	Cursor  string
	Stream  client.Stream
	Data    []byte
	sealed  bool // a stream event followed: later output starts a new chunk, so the event's cursor stays findable
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

// Open opens (or creates) the record of a bridge. A damaged file is moved aside and what can be
// read from it is copied into a new one; Notices says so. Open fails only when no record can be
// kept at all (the directory is not writable).
func Open(o Options) (*Record, error) {
	if o.Dir == "" {
		return nil, errors.New("record: no directory")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	r := &Record{path: FileFor(o.Dir, o.Bridge), bridge: o.Bridge, budget: o.Budget.withDefaults(), now: o.Now, readOnly: o.ReadOnly,
		states: map[string]*State{}, capture: map[capKey]*captureMeta{}, subs: map[int]chan string{}, alertSeen: map[string]bool{},
		kick: make(chan struct{}, 1), failed: make(chan struct{}, 1), done: make(chan struct{}), quit: make(chan struct{}), ack: make(chan chan error)}
	if r.now == nil {
		r.now = time.Now
	}
	r.opened = r.now()
	db, err := r.openChecked()
	if err != nil {
		return nil, err
	}
	r.db = db
	if o.ReadOnly {
		_ = db.QueryRow("SELECT COALESCE(MAX(id), 0) FROM runs").Scan(&r.run)
	} else {
		if err := r.startRun(o.Version); err != nil {
			db.Close()
			return nil, err
		}
		r.prune()
	}
	every := o.FlushEvery
	if every <= 0 {
		every = 50 * time.Millisecond
	}
	go r.writer(every)
	return r, nil
}

func dsn(path string, readOnly bool) string {
	q := "?_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)"
	if readOnly {
		return "file:" + path + q + "&mode=ro"
	}
	return "file:" + path + q + "&_pragma=journal_mode(WAL)&_txlock=immediate"
}

// openChecked opens the file, checks it, and recovers from damage or a newer schema.
func (r *Record) openChecked() (*sql.DB, error) {
	db, problem := r.tryOpen(!r.closedCleanly())
	if problem == nil {
		return db, nil
	}
	if db != nil {
		db.Close()
	}
	aside := fmt.Sprintf("%s.damaged-%d", r.path, r.now().Unix())
	var newer *newerSchemaError
	if errors.As(problem, &newer) {
		aside = fmt.Sprintf("%s.v%d-%d", r.path, newer.version, r.now().Unix())
	}
	for _, suf := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(r.path+suf, aside+suf); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("record: move damaged %s aside: %w", r.path, err)
		}
	}
	db, err := r.tryOpen(false)
	if err != nil {
		return nil, fmt.Errorf("record: new file after moving %s aside: %w", aside, err)
	}
	if newer != nil {
		r.notices = append(r.notices, fmt.Sprintf("the record %s was written by a newer sandscope (schema %d); moved to %s and started a new one", r.path, newer.version, aside))
		return db, nil
	}
	events, chunks := salvage(aside, db)
	r.notices = append(r.notices, fmt.Sprintf("the record %s was damaged (%v); moved to %s; recovered %d events and %d output chunks from it", r.path, problem, aside, events, chunks))
	return db, nil
}

type newerSchemaError struct{ version int }

func (e *newerSchemaError) Error() string {
	return fmt.Sprintf("schema version %d is newer than %d", e.version, SchemaVersion)
}

// tryOpen opens the file and checks its integrity and schema version; it returns the problem (the
// database may be non-nil with a problem).
func (r *Record) tryOpen(check bool) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(r.path, false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if check {
		var res string
		if err := db.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res); err != nil {
			return db, err
		}
		if res != "ok" {
			return db, fmt.Errorf("integrity check: %s", res)
		}
	}
	var v string
	err = db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v)
	if err == nil {
		n, _ := strconv.Atoi(v)
		if n > SchemaVersion {
			return db, &newerSchemaError{n}
		}
	}
	for _, s := range schema {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return db, fmt.Errorf("schema: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('bridge', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, strconv.Itoa(SchemaVersion), r.bridge); err != nil {
		return db, fmt.Errorf("schema: %w", err)
	}
	_ = os.Chmod(r.path, 0o600)
	return db, nil
}

// The clean mark is a file beside the record saying the size and modification time the record had
// when the last sandscope closed it. When the record still has them, the integrity check (which
// reads the whole file) is skipped; after a crash, or when something else wrote the file, it runs.
func (r *Record) cleanMark() string { return r.path + ".clean" }

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
	return string(mark) == statMark(r.path)
}

// salvage copies what can be read from a damaged file into db, in ranges of row IDs so that one
// bad page costs the rows on it, not the rest. It reads a padded copy: SQLite refuses a file
// shorter than its header says (a torn tail), but reads the pages that are there once the missing
// ones read as zeros.
func salvage(path string, db *sql.DB) (events, chunks int) {
	tmp := path + ".salvage"
	defer os.Remove(tmp)
	if err := padCopy(path, tmp); err != nil {
		return 0, 0
	}
	old, err := sql.Open("sqlite", dsn(tmp, true))
	if err != nil {
		return 0, 0
	}
	defer old.Close()
	copyRange := func(table, cols string, n int) int {
		copied, empty := 0, 0
		const step = 128
		marks := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
		for lo := int64(0); empty < 64; lo += step {
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
				if _, err := db.Exec("INSERT OR IGNORE INTO "+table+" ("+cols+") VALUES ("+marks+")", vals...); err == nil {
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
	_ = copyRange("runs", "id, started, ended, version, pid", 5)
	events = copyRange("events", "id, run, time, sandbox, source, kind, entity, entity_id, incarnation, lost, cursor, body", 12)
	chunks = copyRange("chunks", "id, sandbox, process, time, cursor, stream, data", 7)
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

// padCopy copies a database file, extended with zeros to the size its header states.
func padCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	n, err := io.Copy(out, in)
	if err != nil {
		return err
	}
	head := make([]byte, 100)
	if _, err := in.ReadAt(head, 0); err == nil && string(head[:16]) == "SQLite format 3\x00" {
		pageSize := int64(binary.BigEndian.Uint16(head[16:18]))
		if pageSize == 1 {
			pageSize = 65536
		}
		if want := pageSize * int64(binary.BigEndian.Uint32(head[28:32])); want > n && want < 1<<40 {
			return out.Truncate(want)
		}
	}
	return nil
}

func (r *Record) startRun(version string) error {
	if version == "" {
		version = buildinfo.Version()
	}
	rows, err := r.db.Query("SELECT id, started, pid FROM runs WHERE ended IS NULL ORDER BY id")
	if err != nil {
		return fmt.Errorf("record: runs: %w", err)
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
	rows.Close()
	if len(unclean) > 0 {
		r.notices = append(r.notices, fmt.Sprintf("the run of sandscope started %s ended without closing the record (killed or crashed); its history is kept up to its last complete entry", unclean[len(unclean)-1]))
		// reported once: ended = 0 marks an unclean end
		for _, id := range ids {
			if _, err := r.db.Exec("UPDATE runs SET ended = 0 WHERE id = ?", id); err != nil {
				return fmt.Errorf("record: runs: %w", err)
			}
		}
	}
	res, err := r.db.Exec("INSERT INTO runs (started, version, pid) VALUES (?, ?, ?)", r.now().UnixNano(), version, os.Getpid())
	if err != nil {
		return fmt.Errorf("record: start run: %w", err)
	}
	r.run, err = res.LastInsertId()
	return err
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
func (r *Record) Run() int64 { return r.run }

// Budget is the budget in force.
func (r *Record) Budget() Budget { return r.budget }

// Notices are things the user should be told about the record itself (a damaged file, an unclean
// end of the previous run).
func (r *Record) Notices() []string { return append([]string(nil), r.notices...) }

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
	ev.Run = r.run
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ""
	}
	st := r.stateLocked(ev.Sandbox)
	var before entrySnap
	if ev.Entity != "" && ev.EntityID != "" {
		before = snapOf(st.Find(ev.Entity, ev.EntityID))
	}
	notice := st.Apply(ev)
	r.addAlertsLocked(alertsFor(st, ev, before, r.opened, r.alertSeen))
	r.pending = append(r.pending, ev)
	if ev.Source == FromStream {
		for i := len(r.chunks) - 1; i >= 0; i-- {
			if c := &r.chunks[i]; c.Sandbox == ev.Sandbox && c.Process == ev.EntityID {
				c.sealed = true
				break
			}
		}
	}
	subs := r.subscribersLocked()
	r.mu.Unlock()
	r.kickWriter()
	notify(subs, ev.Sandbox)
	return notice
}

// SetRequest keeps the full launch request of an entry launched by this run (for relaunch); it
// is never written to disk.
func (r *Record) SetRequest(sandbox, process string, req client.ExecRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.stateLocked(sandbox).Find(Process, process); e != nil {
		e.Request = &req
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
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateLocked(sandbox).Clone()
}

// stateLocked returns the folded state of a sandbox, loading it from disk on first use.
func (r *Record) stateLocked(sandbox string) *State {
	if st, ok := r.states[sandbox]; ok {
		return st
	}
	st := NewState(sandbox)
	if evs, err := r.query("sandbox = ?", sandbox); err == nil {
		for _, ev := range evs {
			st.Apply(ev)
		}
	} else {
		r.notices = append(r.notices, fmt.Sprintf("reading the record of %s: %v", sandbox, err))
	}
	r.states[sandbox] = st
	return st
}

// Sandboxes lists the sandboxes the record knows, sorted.
func (r *Record) Sandboxes() ([]string, error) {
	r.mu.Lock()
	known := map[string]bool{}
	for s := range r.states {
		known[s] = true
	}
	r.mu.Unlock()
	rows, err := r.db.Query("SELECT DISTINCT sandbox FROM events")
	if err != nil {
		return nil, fmt.Errorf("record: sandboxes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if rows.Scan(&s) == nil {
			known[s] = true
		}
	}
	out := make([]string, 0, len(known))
	for s := range known {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, rows.Err()
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
		ev.ID, ev.Run, ev.Earlier = id, run, run != r.run
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
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.nextSub
	r.nextSub++
	ch := make(chan string, 64)
	r.subs[id] = ch
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if c, ok := r.subs[id]; ok {
			delete(r.subs, id)
			close(c)
		}
	}
}

func (r *Record) subscribersLocked() []chan string {
	if len(r.subs) == 0 {
		return nil
	}
	out := make([]chan string, 0, len(r.subs))
	for _, c := range r.subs {
		out = append(out, c)
	}
	return out
}

func notify(subs []chan string, sandbox string) {
	for _, c := range subs {
		func() {
			defer func() { _ = recover() }() // closed by a concurrent cancel
			select {
			case c <- sandbox:
			default:
			}
		}()
	}
}

// Flush commits everything queued so far.
func (r *Record) Flush() error {
	ch := make(chan error, 1)
	select {
	case r.ack <- ch:
		return <-ch
	case <-r.done:
		return errors.New("record: closed")
	}
}

// Close commits what is queued, marks the run as ended cleanly and closes the file.
func (r *Record) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for id, c := range r.subs {
		delete(r.subs, id)
		close(c)
	}
	r.mu.Unlock()
	close(r.quit)
	<-r.done
	var err error
	if !r.readOnly {
		_, err = r.db.Exec("UPDATE runs SET ended = ? WHERE id = ?", r.now().UnixNano(), r.run)
	}
	cerr := r.db.Close()
	if err == nil {
		err = cerr
	}
	if err == nil && !r.readOnly {
		if m := statMark(r.path); m != "" {
			_ = os.WriteFile(r.cleanMark(), []byte(m), 0o600)
		}
	}
	if err != nil {
		return fmt.Errorf("record: close: %w", err)
	}
	return nil
}

func (r *Record) writer(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	prune := time.NewTicker(5 * time.Minute)
	defer prune.Stop()
	dirty := false
	for {
		select {
		case <-r.quit:
			r.setErr(r.commit())
			return
		case ch := <-r.ack:
			ch <- r.commit()
			dirty = false
		case <-r.kick:
			dirty = true
		case <-t.C:
			if dirty {
				r.setErr(r.commit())
				dirty = false
			}
		case <-prune.C:
			r.prune()
		}
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

// commit writes the queued events and output in one transaction.
func (r *Record) commit() error {
	r.mu.Lock()
	evs, chunks := r.pending, r.chunks
	r.pending, r.chunks = nil, nil
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
	if len(evs) == 0 && len(chunks) == 0 && len(metas) == 0 {
		return nil
	}
	err := r.write(evs, chunks, metas)
	if err != nil {
		r.mu.Lock()
		r.unsaved += len(evs) + len(chunks)
		r.mu.Unlock()
	}
	return err
}

// write writes events, output chunks and capture metadata in one transaction.
func (r *Record) write(evs []Event, chunks []Chunk, metas map[capKey]captureMeta) error {
	tx, err := r.db.Begin()
	if err != nil {
		return fmt.Errorf("record: write: %w", err)
	}
	defer tx.Rollback()
	if len(evs) > 0 {
		st, err := tx.Prepare(`INSERT INTO events (run, time, sandbox, source, kind, entity, entity_id, incarnation, lost, cursor, body)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return fmt.Errorf("record: write: %w", err)
		}
		for i := range evs {
			ev := &evs[i]
			body, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			lost := 0
			if ev.Lost() {
				lost = 1
			}
			if _, err := st.Exec(ev.Run, ev.Time.UnixNano(), ev.Sandbox, string(ev.Source), ev.Kind, string(ev.Entity), ev.EntityID,
				ev.Incarnation.Number, lost, ev.Cursor, string(body)); err != nil {
				st.Close()
				return fmt.Errorf("record: write: %w", err)
			}
		}
		st.Close()
	}
	if err := r.writeChunks(tx, chunks, metas); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record: commit: %w", err)
	}
	return nil
}

// prune removes what is older than the budget's age and trims events and output to its sizes.
func (r *Record) prune() {
	cutoff := r.now().Add(-r.budget.MaxAge).UnixNano()
	_, _ = r.db.Exec("DELETE FROM events WHERE time < ?", cutoff)
	_, _ = r.db.Exec("DELETE FROM chunks WHERE time < ?", cutoff)
	_, _ = r.db.Exec("DELETE FROM captures WHERE updated < ?", cutoff)
	_, _ = r.db.Exec("DELETE FROM runs WHERE started < ? AND id <> ?", cutoff, r.run)
	var n int
	if r.db.QueryRow("SELECT COUNT(*) FROM events").Scan(&n) == nil && n > r.budget.MaxEvents {
		// keep the newest 90% so that pruning is not needed again at the next event
		keep := r.budget.MaxEvents * 9 / 10
		_, _ = r.db.Exec("DELETE FROM events WHERE id <= (SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?)", keep)
	}
	r.pruneCaptures()
}
