package record

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

// smallSegments makes segments rotate every n bytes for the test.
func smallSegments(t *testing.T, n int64) {
	t.Helper()
	old := segmentMax
	segmentMax = n
	t.Cleanup(func() { segmentMax = old })
}

// capturedBytes is everything Captured returns for a process, failing on a lost chunk.
func capturedBytes(t *testing.T, r *Record, process string) []byte {
	t.Helper()
	c, err := r.Captured("demo", process)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, ch := range c.Chunks {
		if ch.Lost != nil {
			t.Fatalf("%s: chunk at %s lost: %v", process, ch.Cursor, ch.Lost)
		}
		all = append(all, ch.Data...)
	}
	return all
}

// segmentFiles lists a record's segment files by number.
func segmentFiles(path string) []int64 { return segmentIDs(outputDir(path)) }

// Output of several processes, flushed at random, goes to segments that rotate many times; every
// byte reads back in order through Captured and ChunksAfter, before and after a reopen, and the
// database holds none of it.
func TestOutputRoundTripAcrossSegments(t *testing.T) {
	smallSegments(t, 64<<10)
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Hour, Budget: Budget{CapturePerRun: 1 << 30, CaptureTotal: 1 << 32}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(7))
	want := map[string][]byte{}
	for i := 0; i < 600; i++ {
		p := fmt.Sprintf("p%d", rng.Intn(3))
		b := make([]byte, 1+rng.Intn(8<<10))
		rng.Read(b)
		r.CaptureData("demo", p, client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(i), Data: b})
		want[p] = append(want[p], b...)
		if rng.Intn(20) == 0 {
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	check := func(r *Record) {
		t.Helper()
		for p, w := range want {
			if got := capturedBytes(t, r, p); !bytes.Equal(got, w) {
				t.Fatalf("%s: %d bytes read back, %d written (equal prefix %v)", p, len(got), len(w), bytes.HasPrefix(w, got))
			}
		}
		var after int64
		got := map[string][]byte{}
		for {
			cs, err := r.ChunksAfter(after, 7)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) == 0 {
				break
			}
			for _, c := range cs {
				if c.Lost != nil {
					t.Fatalf("chunk %d lost: %v", c.ID, c.Lost)
				}
				got[c.Process] = append(got[c.Process], c.Data...)
				after = c.ID
			}
		}
		for p, w := range want {
			if !bytes.Equal(got[p], w) {
				t.Fatalf("ChunksAfter: %s differs", p)
			}
		}
		n, size, err := r.ChunkBacklog(0)
		if err != nil || n == 0 || size != int64(len(want["p0"])+len(want["p1"])+len(want["p2"])) {
			t.Fatalf("backlog %d chunks, %d bytes (%v)", n, size, err)
		}
	}
	check(r)
	if n := len(segmentFiles(r.Path())); n < 10 {
		t.Fatalf("%d segment files for %d KiB in segments of 64 KiB", n, len(want["p0"])>>10)
	}
	var inDB int64
	if err := r.db.QueryRow("SELECT COALESCE(SUM(length(data)), 0) FROM chunks").Scan(&inDB); err != nil || inDB != 0 {
		t.Fatalf("%d bytes of output in the database (%v)", inDB, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := open(t, dir)
	defer r2.Close()
	check(r2)
}

// copyRecord copies a record's file, WAL and segment files as they are now (a sandscope killed at
// this moment leaves them so).
func copyRecord(t testing.TB, from, to string) {
	t.Helper()
	for _, suf := range []string{"", "-wal"} {
		if err := copyFile(from+suf, to+suf); err != nil && suf == "" {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(outputDir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range segmentFiles(from) {
		if err := copyFile(segmentFile(outputDir(from), id), segmentFile(outputDir(to), id)); err != nil {
			t.Fatal(err)
		}
	}
}

// An unclean end leaves bytes in a segment past its last committed row (written for a commit that
// never happened): the next run reads only what rows name, cuts the rest off, and its own output
// reads back after the old.
func TestUncleanEndBytesPastLastRowAreIgnored(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	r := open(t, src)
	first := []byte(strings.Repeat("committed\n", 500))
	r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: "1", Data: first})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(r.Path())
	if len(segs) != 1 {
		t.Fatalf("segments: %v", segs)
	}
	path := FileFor(dst, bridgeID)
	copyRecord(t, r.Path(), path) // the copy's run never ended
	r.Close()
	seg := segmentFile(outputDir(path), segs[0])
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(strings.Repeat("NEVER COMMITTED", 1000))); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r2 := open(t, dst)
	if n := strings.Join(r2.Notices(), "\n"); !strings.Contains(n, "ended without closing") {
		t.Fatalf("no unclean-end notice: %q", n)
	}
	if got := capturedBytes(t, r2, "p"); !bytes.Equal(got, first) {
		t.Fatalf("read %d bytes after an unclean end, want the %d committed", len(got), len(first))
	}
	second := []byte(strings.Repeat("after\n", 300))
	r2.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: "2", Data: second})
	if err := r2.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := capturedBytes(t, r2, "p"); !bytes.Equal(got, append(append([]byte(nil), first...), second...)) {
		t.Fatalf("read %q…", got[:min(len(got), 64)])
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(seg); err != nil || fi.Size() != int64(len(first)) {
		t.Fatalf("the dead run's segment: %v, %v bytes; want its tail past the last row cut off (%d)", err, fi.Size(), len(first))
	}
}

// A segment file deleted or cut short (by hand, a full disk, power lost before the bytes reached
// the disk) makes the chunks it held read as lost, with how many bytes and why; the others read
// as written, nothing panics and no chunk reads another's bytes.
func TestMissingOrTruncatedSegmentReadsAsLoss(t *testing.T) {
	smallSegments(t, 16<<10)
	dir := t.TempDir()
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for i := 0; i < 12; i++ {
		b := bytes.Repeat([]byte{'a' + byte(i)}, 10<<10)
		r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(i), Data: b})
		want = append(want, b)
		if err := r.Flush(); err != nil { // a row per event, a segment per event
			t.Fatal(err)
		}
	}
	path := r.Path()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(path)
	if len(segs) < 12 {
		t.Fatalf("segments: %v", segs)
	}
	if err := os.Remove(segmentFile(outputDir(path), segs[3])); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segmentFile(outputDir(path), segs[7]), 5<<10); err != nil {
		t.Fatal(err)
	}
	r2 := open(t, dir)
	defer r2.Close()
	c, err := r2.Captured("demo", "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Chunks) != 12 || c.Lost != 20<<10 {
		t.Fatalf("%d chunks, %d bytes lost", len(c.Chunks), c.Lost)
	}
	for i, ch := range c.Chunks {
		switch i {
		case 3, 7:
			var le *OutputLostError
			if !errors.Is(ch.Lost, ErrOutputLost) || !errors.As(ch.Lost, &le) || ch.Data != nil || ch.LostBytes != 10<<10 {
				t.Fatalf("chunk %d: lost %v, %d bytes, data %d", i, ch.Lost, ch.LostBytes, len(ch.Data))
			}
			if why := map[int]string{3: "missing", 7: "shorter"}[i]; !strings.Contains(le.Why, why) {
				t.Fatalf("chunk %d: %q", i, le.Why)
			}
		default:
			if ch.Lost != nil || !bytes.Equal(ch.Data, want[i]) {
				t.Fatalf("chunk %d: %v, %q…", i, ch.Lost, ch.Data[:min(8, len(ch.Data))])
			}
		}
	}
	cs, err := r2.ChunksAfter(0, 100)
	if err != nil || len(cs) != 12 || !errors.Is(cs[3].Lost, ErrOutputLost) || !errors.Is(cs[7].Lost, ErrOutputLost) || cs[5].Lost != nil {
		t.Fatalf("ChunksAfter: %d chunks, %v", len(cs), err)
	}
}

// Deleted output gives its disk space back: the per-process budget's trims, pruning by age and
// the total budget delete segments no row refers to and compact those mostly dead, and what is
// kept still reads back whole.
func TestDeletedOutputGivesSpaceBack(t *testing.T) {
	t.Run("trim", func(t *testing.T) {
		smallSegments(t, 64<<10)
		dir := t.TempDir()
		r, err := Open(Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Hour, Budget: Budget{CapturePerRun: 256 << 10}})
		if err != nil {
			t.Fatal(err)
		}
		var all []byte
		for i := 0; i < 256; i++ {
			b := []byte(fmt.Sprintf("%08d%s\n", i, strings.Repeat("x", 8<<10-9)))
			r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(i), Data: b})
			all = append(all, b...)
			if i%4 == 3 {
				if err := r.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := r.Close(); err != nil { // reclaims what the trims left
			t.Fatal(err)
		}
		r2 := open(t, dir)
		defer r2.Close()
		got := capturedBytes(t, r2, "p")
		if len(got) == 0 || len(got) > 256<<10 || !bytes.HasSuffix(all, got) {
			t.Fatalf("kept %d bytes, not the newest", len(got))
		}
		if disk := outputBytes(r2.Path()); disk > int64(len(got))+2*segmentMax {
			t.Fatalf("segments take %d bytes for %d kept (2 MiB written)", disk, len(got))
		}
	})
	t.Run("age", func(t *testing.T) {
		dir := t.TempDir()
		now := t0
		o := Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Hour, Now: func() time.Time { return now }}
		r, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		r.CaptureData("demo", "old", client.LogEvent{Kind: client.Data, Cursor: "1", Time: now, Data: bytes.Repeat([]byte("o"), 1<<20)})
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		oldSegs := segmentFiles(r.Path())
		now = now.Add(15 * 24 * time.Hour)
		r, err = Open(o)
		if err != nil {
			t.Fatal(err)
		}
		r.CaptureData("demo", "new", client.LogEvent{Kind: client.Data, Cursor: "2", Time: now, Data: []byte("new\n")})
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
		r, err = Open(o) // the writer prunes as it starts
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		waitPruned(t, r)
		for _, id := range oldSegs {
			if _, err := os.Stat(segmentFile(outputDir(r.Path()), id)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("segment %d of pruned output is still there (%v)", id, err)
			}
		}
		if got := capturedBytes(t, r, "new"); string(got) != "new\n" {
			t.Fatalf("new: %q", got)
		}
	})
	t.Run("total budget compacts", func(t *testing.T) {
		smallSegments(t, 256<<10)
		dir := t.TempDir()
		clock := t0
		o := Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Hour, Now: func() time.Time { return clock }, Budget: Budget{CapturePerRun: 1 << 30, CaptureTotal: 1 << 30}}
		r, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		// "big" (older) and "small" share every segment, big three quarters of each
		var small []byte
		for i := 0; i < 64; i++ {
			b := bytes.Repeat([]byte{'B'}, 24<<10)
			r.CaptureData("demo", "big", client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(i), Time: clock, Data: b})
			s := []byte(fmt.Sprintf("%04d%s\n", i, strings.Repeat("s", 8<<10-5)))
			small = append(small, s...)
			r.Add(FromLogEvent("demo", "big", client.LogEvent{Kind: client.Interrupted, Time: clock, Cursor: strconv.Itoa(i), Reason: "cut"}))
			r.CaptureData("demo", "small", client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(i), Time: clock.Add(time.Minute), Data: s})
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.db.Exec("UPDATE captures SET updated = ? + (process = 'small') * 3600000000000", t0.UnixNano()); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		before := len(segmentFiles(r.Path()))
		o.Budget.CaptureTotal = 1 << 20 // big goes, small stays
		r, err = Open(o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		waitPruned(t, r)
		if c, err := r.Captured("demo", "big"); err != nil || len(c.Chunks) != 0 {
			t.Fatalf("big: %d chunks (%v)", len(c.Chunks), err)
		}
		if got := capturedBytes(t, r, "small"); !bytes.Equal(got, small) {
			t.Fatalf("small: %d bytes read back, %d written", len(got), len(small))
		}
		after := segmentFiles(r.Path())
		disk := outputBytes(r.Path())
		t.Logf("segments %d → %d, %d bytes on disk for %d live", before, len(after), disk, len(small))
		if len(after) >= before || disk > int64(len(small))*5/4+segmentMax {
			t.Fatalf("segments %d → %d, %d bytes on disk for %d live", before, len(after), disk, len(small))
		}
		var dead int
		if err := r.db.QueryRow("SELECT COUNT(*) FROM segments WHERE open >= 0 AND id NOT IN (SELECT seg FROM chunks)").Scan(&dead); err != nil || dead > 1 {
			t.Fatalf("%d segments without rows kept (%v)", dead, err)
		}
	})
}

// A record of schema version 1 (output bytes in its rows) opens, reads as it did, takes new output
// into segments after the old, and trims across both shapes.
func TestVersion1RecordStillReads(t *testing.T) {
	dir := t.TempDir()
	path := FileFor(dir, bridgeID)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE captures (sandbox TEXT NOT NULL, process TEXT NOT NULL, began INTEGER NOT NULL, began_cursor TEXT NOT NULL DEFAULT '',
			earlier_gone INTEGER NOT NULL DEFAULT 0, gone_reason TEXT NOT NULL DEFAULT '', dropped INTEGER NOT NULL DEFAULT 0,
			bytes INTEGER NOT NULL DEFAULT 0, last_cursor TEXT NOT NULL DEFAULT '', updated INTEGER NOT NULL, ended TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (sandbox, process))`,
		`CREATE TABLE chunks (id INTEGER PRIMARY KEY, sandbox TEXT NOT NULL, process TEXT NOT NULL, time INTEGER NOT NULL,
			cursor TEXT NOT NULL DEFAULT '', stream INTEGER NOT NULL DEFAULT 0, data BLOB NOT NULL)`,
		`INSERT INTO meta VALUES ('schema_version', '1'), ('bridge', '` + bridgeID + `')`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	var old []byte
	for i := 0; i < 4; i++ {
		b := []byte(fmt.Sprintf("old line %d %s\n", i, strings.Repeat("v1", 1000)))
		old = append(old, b...)
		if _, err := db.Exec("INSERT INTO chunks (sandbox, process, time, cursor, data) VALUES ('demo', 'p', ?, ?, ?)", t0.UnixNano(), strconv.Itoa(i), b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("INSERT INTO captures (sandbox, process, began, bytes, last_cursor, updated) VALUES ('demo', 'p', ?, ?, '3', ?)", t0.UnixNano(), len(old), t0.UnixNano()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	newer := []byte(strings.Repeat("v2 line\n", 300)) // 2400 bytes: 1000 too many, the oldest row goes
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, FlushEvery: time.Hour, Budget: Budget{CapturePerRun: int64(len(old) + len(newer) - 1000)}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := capturedBytes(t, r, "p"); !bytes.Equal(got, old) {
		t.Fatalf("version 1 output read back as %d bytes, want %d", len(got), len(old))
	}
	var v string
	if err := r.db.QueryRow("SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v); err != nil || v != strconv.Itoa(SchemaVersion) {
		t.Fatalf("schema version %q (%v)", v, err)
	}
	if _, size, err := r.ChunkBacklog(0); err != nil || size != int64(len(old)) {
		t.Fatalf("backlog %d bytes (%v), want %d", size, err, len(old))
	}
	r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: "4", Data: newer})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := r.Captured("demo", "p")
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for _, ch := range c.Chunks {
		got = append(got, ch.Data...)
	}
	want := append(append([]byte(nil), old[len(old)/4:]...), newer...)
	if !bytes.Equal(got, want) || c.Dropped != int64(len(old)/4) {
		t.Fatalf("after new output: %d bytes (want %d), dropped %d", len(got), len(want), c.Dropped)
	}
}

// A damaged database is repaired with its output: the rows salvaged still find their bytes in
// the segments, none reads another's, and output after the repair reads too.
func TestRepairKeepsOutputReadable(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	want := map[string][]byte{}
	for i := 0; i < 200; i++ {
		p := fmt.Sprintf("p%03d", i)
		b := []byte(fmt.Sprintf("%s: %s\n", p, strings.Repeat(p, 500)))
		r.CaptureData("demo", p, client.LogEvent{Kind: client.Data, Cursor: "1", Data: b})
		want[p] = b
	}
	path := r.Path()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	fill(t, dir, 1000) // events after the output rows
	garble(t, path)
	r = open(t, dir)
	defer r.Close()
	_, _ = r.Sandboxes()
	_ = r.State("demo")
	_, _ = r.Events("demo", "")
	for i := 0; i < 200; i++ {
		_, _ = r.Captured("demo", fmt.Sprintf("p%03d", i))
	}
	r.CaptureData("demo", "after", client.LogEvent{Kind: client.Data, Cursor: "1", Data: []byte("after the repair\n")})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	notices := strings.Join(r.TakeNotices(), "\n")
	if !strings.Contains(notices, "repaired the record") {
		t.Fatalf("not repaired: %q", notices)
	}
	kept := 0
	for p, w := range want {
		c, err := r.Captured("demo", p)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		for _, ch := range c.Chunks {
			if ch.Lost != nil {
				t.Fatalf("%s: lost after the repair: %v", p, ch.Lost)
			}
			got = append(got, ch.Data...)
		}
		if len(c.Chunks) > 0 {
			kept++
			if !bytes.Equal(got, w) {
				t.Fatalf("%s reads %q…", p, got[:min(len(got), 40)])
			}
		}
	}
	if kept < 100 {
		t.Fatalf("only %d of 200 captures readable after the repair", kept)
	}
	if got := capturedBytes(t, r, "after"); string(got) != "after the repair\n" {
		t.Fatalf("output after the repair: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outputDir(path))); err != nil {
		t.Fatal(err)
	}
}

// Two Records of one file in one process (they share a PID, which is how an unclean end is
// told): the second does not close the first one's segment, and both keep every byte.
func TestSecondRecordInProcessLeavesFirstSegmentOpen(t *testing.T) {
	dir := t.TempDir()
	r1 := open(t, dir)
	r1.CaptureData("demo", "one", client.LogEvent{Kind: client.Data, Cursor: "1", Data: []byte("first\n")})
	if err := r1.Flush(); err != nil {
		t.Fatal(err)
	}
	r2 := open(t, dir)
	var open1 int
	if err := r2.db.QueryRow("SELECT open FROM segments WHERE run = ?", r1.Run()).Scan(&open1); err != nil || open1 != 1 {
		t.Fatalf("the first Record's segment: open %d (%v)", open1, err)
	}
	r1.CaptureData("demo", "one", client.LogEvent{Kind: client.Data, Cursor: "2", Data: []byte("second\n")})
	r2.CaptureData("demo", "two", client.LogEvent{Kind: client.Data, Cursor: "1", Data: []byte("other\n")})
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	r3 := open(t, dir)
	defer r3.Close()
	if got := string(capturedBytes(t, r3, "one")); got != "first\nsecond\n" {
		t.Fatalf("one: %q", got)
	}
	if got := string(capturedBytes(t, r3, "two")); got != "other\n" {
		t.Fatalf("two: %q", got)
	}
}

// A segment the per-process budget's trims are emptying is left to empty while they do (its live
// bytes are the next to go: copying them was wasted), and compacted once they stop.
func TestTrimmedSegmentsEmptyWithoutCopies(t *testing.T) {
	smallSegments(t, 64<<10)
	r, err := Open(Options{Dir: t.TempDir(), Bridge: bridgeID, FlushEvery: time.Hour, Budget: Budget{CapturePerRun: 128 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var all []byte
	n := 0
	commit := func(process string, size int) {
		t.Helper()
		b := []byte(fmt.Sprintf("%08d%s\n", n, strings.Repeat("x", size-9)))
		r.CaptureData("demo", process, client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(n), Data: b})
		n++
		if process == "p" {
			all = append(all, b...)
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// 43 commits of 16 KiB: segments of four commits each, the newest 8 commits kept, so the
	// oldest kept segment is a quarter live when the output stops
	for i := 0; i < 43; i++ {
		commit("p", 16<<10)
		r.reclaim(true) // as the writer does while capturing (here after every commit)
		if c := r.compacted.Load(); c > 0 {
			t.Fatalf("commit %d: compaction copied %d bytes of a segment the trims were emptying", i, c)
		}
		if disk := outputBytes(r.Path()); disk > 128<<10+3*segmentMax {
			t.Fatalf("commit %d: segments take %d bytes for 128 KiB kept", i, disk)
		}
	}
	if !r.reclaimDue.Load() {
		t.Fatal("a spared segment is not looked at again")
	}
	r.reclaim(true) // no trim since the last: the quarter-live segment is compacted now
	if r.compacted.Load() == 0 {
		t.Fatal("the quarter-live segment was not compacted once the trims stopped")
	}
	if disk := outputBytes(r.Path()); disk > 128<<10+2*segmentMax {
		t.Fatalf("segments take %d bytes for 128 KiB kept", disk)
	}
	got := capturedBytes(t, r, "p")
	if len(got) != 128<<10 || !bytes.HasSuffix(all, got) {
		t.Fatalf("kept %d bytes, not the newest 128 KiB", len(got))
	}

	// Segments trims emptied of one process's output but another's small output keeps: when
	// their dead bytes pass two segments' worth they are compacted, trimmed or not.
	r.compacted.Store(0)
	for i := 0; i < 40; i++ {
		commit("slow", 1<<10)
		commit("p", 15<<10)
	}
	r.reclaim(true)
	if r.compacted.Load() == 0 {
		t.Fatal("mostly dead segments were spared past the bound")
	}
	if disk := outputBytes(r.Path()); disk > 128<<10+40<<10+3*segmentMax {
		t.Fatalf("segments take %d bytes for 168 KiB kept", disk)
	}
}
