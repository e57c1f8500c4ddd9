package record

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"sandscope/internal/fileio"
)

// Captured output lives outside SQLite, in append-only segment files in a directory beside the
// record file (<record>.output/<n>.seg). A chunks row says where its bytes are (seg, off, len);
// rows of records written before schema version 2 hold their bytes in data (seg 0), and both
// shapes read the same. SQLite committing the bytes themselves (WAL frames, then the checkpoint
// into the file: each byte written twice through SQLite compiled to Go) was most of the writer's
// CPU in figure 11b.
//
// Each sandscope process appends to segments of its own (a segments row names the run that
// writes one; open = 1 while it does, 0 once closed, -1 once removed), so several processes sharing a record never append to one
// file. A commit's bytes are written to the segment, in one write, inside the transaction that
// inserts their rows and before it commits: a committed row never names bytes not yet handed to
// the kernel. Bytes a failed or interrupted commit left past the last committed row are
// overwritten by the next commit, or cut off when the segment is reclaimed after an unclean end.
// A row whose bytes are missing or short (a file deleted or truncated, power lost before the
// bytes reached the disk) reads back as an explicit loss (Chunk.Lost, ErrOutputLost), never as
// other bytes.
//
// Space: deleting rows (the per-process budget, pruning) leaves dead bytes in segments; reclaim
// deletes a closed segment no row refers to, and copies the live bytes of a closed segment
// mostly dead into the active one (its rows repointed in the same transaction, the old file
// removed after the commit).

// ErrOutputLost says a captured chunk's bytes are no longer where its row says (the segment file
// is missing or shorter than the row needs).
var ErrOutputLost = errors.New("captured output lost")

// OutputLostError is ErrOutputLost for one chunk.
type OutputLostError struct {
	Segment int64
	Offset  int64
	Length  int64
	Why     string
}

func (e *OutputLostError) Error() string {
	return fmt.Sprintf("captured output lost: %d bytes at %d in segment %d: %s", e.Length, e.Offset, e.Segment, e.Why)
}

func (e *OutputLostError) Is(target error) bool { return target == ErrOutputLost }

// segmentMax is the size at which a segment is closed and a new one begun (a commit's bytes are
// never split: a segment can be a commit larger). A variable for tests.
var segmentMax int64 = 32 << 20

// syncEvery is how many bytes written to a segment make the writer fsync it (about the WAL's
// checkpoint interval: rows become durable about that often, and their bytes should be too).
const syncEvery int64 = 4 << 20

// reclaimEvery bounds how often the writer reclaims space after the per-process budget trimmed
// output (pruning and Close reclaim whenever rows were removed). A variable for benchmarks.
var reclaimEvery = 30 * time.Second

// heldRuns are the runs of the Records this process has open, by record path. An unclean end is
// told by a run's PID, which this process shares with every Record it opens: a second Record of
// the same file must not close the first one's segments (reclaim would compact them under it).
var heldRuns struct {
	sync.Mutex
	m map[string]map[int64]bool
}

// holdRun notes (held) or forgets that a Record of this process has run open on path.
func holdRun(path string, run int64, held bool) {
	if run == 0 {
		return
	}
	heldRuns.Lock()
	defer heldRuns.Unlock()
	if held {
		if heldRuns.m == nil {
			heldRuns.m = map[string]map[int64]bool{}
		}
		if heldRuns.m[path] == nil {
			heldRuns.m[path] = map[int64]bool{}
		}
		heldRuns.m[path][run] = true
		return
	}
	delete(heldRuns.m[path], run)
	if len(heldRuns.m[path]) == 0 {
		delete(heldRuns.m, path)
	}
}

func runHeld(path string, run int64) bool {
	heldRuns.Lock()
	defer heldRuns.Unlock()
	return heldRuns.m[path][run]
}

// outputDir is the directory of a record's segments.
func outputDir(path string) string { return path + ".output" }

func segmentFile(dir string, id int64) string {
	return filepath.Join(dir, strconv.FormatInt(id, 10)+".seg")
}

// segmentIDs lists the segment files in dir by number.
func segmentIDs(dir string) []int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var ids []int64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".seg")
		if !ok {
			continue
		}
		if id, err := strconv.ParseInt(name, 10, 64); err == nil && id > 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// outSeg is the segment this process appends to.
type outSeg struct {
	id       int64 // 0: none yet
	f        *os.File
	end      int64 // where the next bytes go: the end of the last committed ones
	unsynced int64 // bytes written since the last fsync
}

// segTx appends bytes to this process's segments within one transaction. Its changes to r.out
// take effect with done(true); done(false) undoes what it created.
type segTx struct {
	r       *Record
	tx      *sql.Tx
	cur     outSeg
	created []outSeg // files made in this transaction
	retired []outSeg // segments this transaction closed (rotated away from)
}

func (r *Record) segTx(tx *sql.Tx) *segTx {
	return &segTx{r: r, tx: tx, cur: r.out}
}

// append writes bufs, one after another, at the end of the active segment (beginning one when there is none or it is
// full) and returns where it went.
func (s *segTx) append(bufs [][]byte) (seg, off int64, err error) {
	n := int64(0)
	for _, b := range bufs {
		n += int64(len(b))
	}
	if s.cur.id == 0 || (s.cur.end > 0 && s.cur.end+n > segmentMax) {
		if err := s.rotate(); err != nil {
			return 0, 0, err
		}
	}
	if err := fileio.WriteAtv(s.cur.f, bufs, s.cur.end); err != nil {
		return 0, 0, fmt.Errorf("record: write output: %w", err)
	}
	seg, off = s.cur.id, s.cur.end
	s.cur.end += n
	s.cur.unsynced += n
	return seg, off, nil
}

// rotate closes the active segment (in the transaction) and begins a new one: its number is
// above every segment the file or the directory knows, and its file is new.
func (s *segTx) rotate() error {
	if s.cur.id != 0 {
		if _, err := s.tx.Exec("UPDATE segments SET open = 0 WHERE id = ?", s.cur.id); err != nil {
			return fmt.Errorf("record: close output segment: %w", err)
		}
		s.retired = append(s.retired, s.cur)
		s.cur = outSeg{}
	}
	dir := outputDir(s.r.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("record: output directory: %w", err)
	}
	var inDB int64
	if err := s.tx.QueryRow("SELECT MAX(COALESCE((SELECT MAX(id) FROM segments), 0), COALESCE((SELECT MAX(seg) FROM chunks), 0))").Scan(&inDB); err != nil {
		return fmt.Errorf("record: new output segment: %w", err)
	}
	id := inDB + 1
	if ids := segmentIDs(dir); len(ids) > 0 && ids[len(ids)-1] >= id {
		id = ids[len(ids)-1] + 1
	}
	var f *os.File
	for tries := 0; ; tries++ {
		var err error
		f, err = os.OpenFile(segmentFile(dir, id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || tries > 100 {
			return fmt.Errorf("record: new output segment: %w", err)
		}
		id++
	}
	s.cur = outSeg{id: id, f: f}
	s.created = append(s.created, s.cur)
	s.r.madeSegments = true
	if _, err := s.tx.Exec("INSERT INTO segments (id, run, open) VALUES (?, ?, 1)", id, s.r.Run()); err != nil {
		return fmt.Errorf("record: new output segment: %w", err)
	}
	return nil
}

// done ends the transaction's changes: kept once it committed, undone otherwise (bytes written
// past the committed end are overwritten by the next commit; files it made are removed).
func (s *segTx) done(committed bool) {
	if !committed {
		for _, c := range s.created {
			c.f.Close()
			_ = os.Remove(segmentFile(outputDir(s.r.path), c.id))
		}
		return
	}
	for _, c := range s.retired {
		if c.f != nil {
			_ = c.f.Sync() // closed: whatever it holds is all it will
			c.f.Close()
		}
	}
	s.r.out = s.cur
	if s.r.out.unsynced >= syncEvery {
		s.r.syncOutput()
	}
}

// syncOutput makes the active segment's bytes durable. Run by the writer.
func (r *Record) syncOutput() {
	if r.out.f != nil && r.out.unsynced > 0 {
		_ = r.out.f.Sync()
		r.out.unsynced = 0
	}
}

// closeOutput makes the active segment durable and lets it go (its row is closed by Close).
func (r *Record) closeOutput() {
	if r.out.f != nil {
		_ = r.out.f.Sync()
		r.out.f.Close()
	}
	r.out = outSeg{}
}

// chunkLen is a chunks row's size in bytes, both shapes (len is 0 in a row holding data, data
// empty in a row naming a segment).
const chunkLen = "(len + length(data))"

// segReader reads chunk bytes, keeping the segment files it opened for one read.
type segReader struct {
	dir   string
	files map[int64]*os.File
}

func (r *Record) segReader() *segReader {
	return &segReader{dir: outputDir(r.path)}
}

func (sr *segReader) close() {
	for _, f := range sr.files {
		f.Close()
	}
}

// read returns a row's bytes: data itself in a row of the old shape (seg 0), else len bytes at
// off in the segment, or an *OutputLostError.
func (sr *segReader) read(seg, off, n int64, data []byte) ([]byte, error) {
	if seg <= 0 {
		return data, nil
	}
	f, ok := sr.files[seg]
	if !ok {
		var err error
		f, err = os.Open(segmentFile(sr.dir, seg))
		if err != nil {
			why := "its segment file is missing"
			if !errors.Is(err, os.ErrNotExist) {
				why = "its segment file does not open: " + err.Error()
			}
			return nil, &OutputLostError{Segment: seg, Offset: off, Length: n, Why: why}
		}
		if sr.files == nil {
			sr.files = map[int64]*os.File{}
		}
		sr.files[seg] = f
	}
	if n < 0 || off < 0 || n > 1<<30 {
		return nil, &OutputLostError{Segment: seg, Offset: off, Length: n, Why: "its row is malformed"}
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	if got < len(buf) {
		why := "its segment file is shorter than the row says (truncated)"
		if err != nil && !errors.Is(err, io.EOF) {
			why = "its segment file does not read: " + err.Error()
		}
		return nil, &OutputLostError{Segment: seg, Offset: off, Length: n, Why: why}
	}
	return buf, nil
}

// chunkBytes is every reader's way to a chunk's bytes: data for a row of the old shape, the
// segment's bytes otherwise. A row whose bytes are gone returns an *OutputLostError; before
// saying so it looks at the row again (another process may have moved its bytes to another
// segment meanwhile, or removed it).
func (r *Record) chunkBytes(sr *segReader, id, seg, off, n int64, data []byte) ([]byte, error) {
	b, err := sr.read(seg, off, n, data)
	if err == nil {
		return b, nil
	}
	var s2, o2, n2 int64
	if qerr := r.db.QueryRow("SELECT seg, off, len FROM chunks WHERE id = ?", id).Scan(&s2, &o2, &n2); qerr == nil && (s2 != seg || o2 != off) {
		if b, err2 := sr.read(s2, o2, n2, nil); err2 == nil {
			return b, nil
		}
	}
	return nil, err
}

// chunkPlace is where a chunks row says its bytes are (seg 0: in the data it was read with).
type chunkPlace struct{ id, seg, off, n int64 }

// readChunks gives each chunk its bytes, chunk(i) being the one places[i] describes, once the rows
// are read (chunkBytes may query the file again). A chunk whose bytes are gone gets no Data and
// Lost says why; lost is how many bytes that is, all chunks together.
func (r *Record) readChunks(places []chunkPlace, chunk func(i int) *Chunk) (lost int64) {
	sr := r.segReader()
	defer sr.close()
	for i, p := range places {
		c := chunk(i)
		b, err := r.chunkBytes(sr, p.id, p.seg, p.off, p.n, c.Data)
		if err == nil {
			c.Data = b
			continue
		}
		c.Data, c.Lost = nil, err
		var le *OutputLostError
		if errors.As(err, &le) {
			c.LostBytes = le.Length
		}
		lost += c.LostBytes
	}
	return lost
}

// reclaim gives back the space of deleted output: closed segments no row refers to are deleted,
// closed segments mostly dead are compacted into the active one, and the tail a closed segment
// has past its last row (left by an unclean end) is cut off. It runs in one write transaction
// (so no other process is between making a segment and committing its rows), by the writer, or
// by Open before the writer starts. Best effort: a failure leaves the space for the next time.
//
// With spareTrimmed (the writer while capturing), a mostly dead segment that per-process trims
// deleted from since the last reclaim is left to empty: trims delete each process's output
// oldest first, so its live bytes are the next to go, and compacting it copied them only to see
// them trimmed soon after (a third of a MB copied per MB captured once captures reached their
// budget, BenchmarkCaptureWriterAtCap). Such segments are compacted all the same when the
// closed segments' dead bytes pass two segments' worth, and at the next reclaim once no trim
// deletes from them (the process ended, or its capture did).
func (r *Record) reclaim(spareTrimmed bool) {
	if r.readOnly || r.detached {
		return
	}
	trimming := r.trimming
	r.trimming = nil
	r.reclaimDue.Store(false)
	r.lastReclaim.Store(time.Now().UnixNano())
	dir := outputDir(r.path)
	files := segmentIDs(dir)
	if len(files) == 0 {
		return
	}
	tx, err := r.db.Begin()
	if err != nil {
		r.reclaimDue.Store(true)
		return
	}
	defer tx.Rollback()
	open := map[int64]bool{}
	known := map[int64]bool{}
	removed := map[int64]bool{}
	rows, err := tx.Query("SELECT id, open FROM segments")
	if err != nil {
		return
	}
	for rows.Next() {
		var id int64
		var o int
		if rows.Scan(&id, &o) == nil {
			known[id], open[id], removed[id] = true, o > 0, o < 0
		}
	}
	rows.Close()
	type liveSeg struct{ bytes, end int64 }
	live := map[int64]liveSeg{}
	rows, err = tx.Query("SELECT seg, SUM(len), MAX(off + len) FROM chunks WHERE seg > 0 GROUP BY seg")
	if err != nil {
		return
	}
	for rows.Next() {
		var id int64
		var l liveSeg
		if rows.Scan(&id, &l.bytes, &l.end) == nil {
			live[id] = l
		}
	}
	rows.Close()
	// this process's active segment, another process's, or one this record does not know
	// (another record's moved aside, a segment being made): left alone
	leftAlone := func(id int64) bool { return id == r.out.id || open[id] || !known[id] }
	if spareTrimmed {
		var dead int64 // in the closed segments that still hold live bytes
		for _, id := range files {
			if l, ok := live[id]; ok && !leftAlone(id) && !removed[id] {
				dead += l.end - l.bytes
			}
		}
		spareTrimmed = dead <= 2*segmentMax
	}
	spared := false
	st := r.segTx(tx)
	var remove []int64
	for _, id := range files {
		if leftAlone(id) {
			continue
		}
		l := live[id]
		if removed[id] {
			remove = append(remove, id) // its removal after the commit failed
			continue
		}
		if l.bytes == 0 {
			if _, err := tx.Exec(removeSegment, id); err != nil {
				return
			}
			remove = append(remove, id)
			continue
		}
		fi, err := os.Stat(segmentFile(dir, id))
		if err != nil {
			continue
		}
		if fi.Size() > l.end {
			_ = os.Truncate(segmentFile(dir, id), l.end) // bytes past the last row: never committed
		}
		if l.bytes*2 >= l.end {
			continue
		}
		if spareTrimmed && trimming[id] {
			spared = true
			continue
		}
		if err := r.compact(tx, st, id); err != nil {
			st.done(false)
			return
		}
		if _, err := tx.Exec(removeSegment, id); err != nil {
			st.done(false)
			return
		}
		remove = append(remove, id)
	}
	if err := tx.Commit(); err != nil {
		st.done(false)
		r.reclaimDue.Store(true)
		return
	}
	st.done(true)
	if spared {
		r.reclaimDue.Store(true) // looked at again: once no trim deletes from it, it is compacted
	}
	if len(st.created) > 0 || r.out.unsynced > 0 {
		r.syncOutput() // the copies are durable before their old file goes
	}
	for _, id := range remove {
		_ = os.Remove(segmentFile(dir, id))
	}
}

// removeSegment marks a segment removed. Its row stays, so that its number is never given to a
// new segment: a reader holding an older row's place must find the bytes gone, not others.
const removeSegment = "UPDATE segments SET open = -1 WHERE id = ?"

// compact copies the live bytes of segment id to the active segment and points their rows there.
func (r *Record) compact(tx *sql.Tx, st *segTx, id int64) error {
	rows, err := tx.Query("SELECT id, off, len FROM chunks WHERE seg = ? ORDER BY off", id)
	if err != nil {
		return err
	}
	type loc struct{ row, off, n int64 }
	var locs []loc
	for rows.Next() {
		var l loc
		if err := rows.Scan(&l.row, &l.off, &l.n); err != nil {
			rows.Close()
			return err
		}
		locs = append(locs, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(locs) == 0 {
		return nil
	}
	move, err := tx.Prepare("UPDATE chunks SET seg = ?, off = ? WHERE id = ?")
	if err != nil {
		return err
	}
	defer move.Close()
	sr := r.segReader()
	defer sr.close()
	for _, l := range locs {
		b, err := sr.read(id, l.off, l.n, nil)
		if err != nil {
			continue // lost already: the row keeps saying where its bytes were, and reads as lost
		}
		seg, off, err := st.append([][]byte{b})
		if err != nil {
			return err
		}
		r.compacted.Add(int64(len(b)))
		if _, err := move.Exec(seg, off, l.row); err != nil {
			return err
		}
	}
	return nil
}

// outputBytes is what the segment files of a record take on disk.
func outputBytes(path string) int64 {
	var n int64
	dir := outputDir(path)
	for _, id := range segmentIDs(dir) {
		if fi, err := os.Stat(segmentFile(dir, id)); err == nil {
			n += fi.Size()
		}
	}
	return n
}
