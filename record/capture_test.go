package record

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"sandscope/client"
)

// TestCaptureReusedBuffersKeepEveryByte feeds random output (tiny to larger than a chunk, several
// processes and streams interleaved, stream events between, flushes at random) through
// CaptureData, with the caller overwriting its buffer after each call as a follower does: what
// the record kept must be exactly what was given, in order, whichever buffers (new, grown,
// reused after a commit) it went through.
func TestCaptureReusedBuffersKeepEveryByte(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			r, err := Open(Options{Dir: t.TempDir(), Bridge: bridgeID, FlushEvery: time.Millisecond, Budget: Budget{CapturePerRun: 1 << 30, CaptureTotal: 1 << 32}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			type key struct {
				proc   string
				stream client.Stream
			}
			want := map[key][]byte{}
			last := map[string]string{}
			buf := make([]byte, 3*maxChunk)
			seq := 0
			for i := 0; i < 1500; i++ {
				proc := fmt.Sprintf("p%d", rng.Intn(4))
				var n int
				switch rng.Intn(10) {
				case 0:
					n = maxChunk + rng.Intn(2*maxChunk) // larger than a chunk
				case 1, 2, 3:
					n = maxChunk/16 + rng.Intn(maxChunk) // from a whole spare on
				default:
					n = 1 + rng.Intn(maxChunk/16)
				}
				rng.Read(buf[:n])
				seq++
				ev := client.LogEvent{Kind: client.Data, Cursor: "c-" + strconv.Itoa(seq), Stream: client.Stream(rng.Intn(2)), Data: buf[:n]}
				r.CaptureData("demo", proc, ev)
				k := key{proc, ev.Stream}
				want[k] = append(want[k], buf[:n]...)
				last[proc] = ev.Cursor
				for j := range buf[:n] {
					buf[j] ^= 0xff // the caller's buffer is its own again
				}
				switch rng.Intn(40) {
				case 0:
					if err := r.Flush(); err != nil {
						t.Fatal(err)
					}
				case 1:
					r.Add(FromLogEvent("demo", proc, client.LogEvent{Kind: client.Interrupted, Cursor: ev.Cursor, Reason: "connection reset"}))
				}
			}
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			for _, proc := range []string{"p0", "p1", "p2", "p3"} {
				c, err := r.Captured("demo", proc)
				if err != nil {
					t.Fatal(err)
				}
				got := map[client.Stream][]byte{}
				var total int64
				for _, ch := range c.Chunks {
					got[ch.Stream] = append(got[ch.Stream], ch.Data...)
					total += int64(len(ch.Data))
				}
				for _, s := range []client.Stream{0, 1} {
					if w := want[key{proc, s}]; !bytes.Equal(got[s], w) {
						t.Fatalf("%s stream %d: %d bytes kept, %d given, or different", proc, s, len(got[s]), len(w))
					}
				}
				if total != c.Bytes || c.LastCursor != last[proc] {
					t.Fatalf("%s: %d bytes in chunks, %d counted; last cursor %q, want %q", proc, total, c.Bytes, c.LastCursor, last[proc])
				}
			}
		})
	}
}

// TestHeldChunksKeepNoSpareCapacity: a batch held for a lock keeps its bytes, in order, without
// the unused capacity of reused buffers (maxHeldBytes counts bytes).
func TestHeldChunksKeepNoSpareCapacity(t *testing.T) {
	r, err := Open(Options{Dir: t.TempDir(), Bridge: bridgeID, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	waitPruned(t, r) // the writer's first step is done: the test acts as the writer below
	var want []byte
	for i := 0; i < 20; i++ {
		d := bytes.Repeat([]byte{byte('a' + i)}, maxChunk/16+i)
		want = append(want, d...)
		r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(i), Data: d})
		r.Add(FromLogEvent("demo", "p", client.LogEvent{Kind: client.Interrupted, Cursor: strconv.Itoa(i), Reason: "reset"})) // a chunk each
	}
	r.mu.Lock()
	chunks := r.chunks
	r.chunks = nil
	r.mu.Unlock()
	r.hold(nil, chunks, nil)
	r.mu.Lock()
	var got []byte
	for _, c := range r.chunks {
		if cap(c.Data) > 2*len(c.Data)+4<<10 {
			t.Errorf("held chunk of %d bytes keeps %d", len(c.Data), cap(c.Data))
		}
		got = append(got, c.Data...)
	}
	r.mu.Unlock()
	if !bytes.Equal(got, want) {
		t.Fatalf("held %d bytes, want %d", len(got), len(want))
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := r.Captured("demo", "p")
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, ch := range c.Chunks {
		got = append(got, ch.Data...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("kept %d bytes, want %d", len(got), len(want))
	}
}

// TestPreparedStatementsOutliveConnections: the writer's statements, prepared once, still write
// everything after the connections they were prepared on are gone (a repair closes them all).
func TestPreparedStatementsOutliveConnections(t *testing.T) {
	r := open(t, t.TempDir())
	defer r.Close()
	var want []byte
	for round := 0; round < 3; round++ {
		for i := 0; i < 5; i++ {
			d := []byte(fmt.Sprintf("round %d line %d\n", round, i))
			want = append(want, d...)
			r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: fmt.Sprintf("%d-%d", round, i), Data: d})
			r.Add(FromLogEvent("demo", "p", client.LogEvent{Kind: client.Interrupted, Cursor: "x", Reason: "reset"}))
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		// every idle connection closes, as when a repair takes the file away
		r.db.SetMaxIdleConns(0)
		r.db.SetMaxIdleConns(maxConns)
	}
	c, err := r.Captured("demo", "p")
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for _, ch := range c.Chunks {
		got = append(got, ch.Data...)
	}
	if !bytes.Equal(got, want) || c.LastCursor != "2-4" {
		t.Fatalf("kept %q (last cursor %q), want %q", got, c.LastCursor, want)
	}
	evs, err := r.Events("demo", "p")
	if err != nil || len(evs) != 15 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
}

// TestNewRecordPageSize: a new record has its larger pages, incremental auto-vacuum and WAL, and
// checkpoints about every 4 MiB; a record made with 4 KiB pages keeps them and is written as before.
func TestNewRecordPageSize(t *testing.T) {
	pragmas := func(r *Record) (ps, av, ac int, jm string) {
		t.Helper()
		conn, err := r.db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for q, dst := range map[string]any{"page_size": &ps, "auto_vacuum": &av, "wal_autocheckpoint": &ac, "journal_mode": &jm} {
			if err := conn.QueryRowContext(context.Background(), "PRAGMA "+q).Scan(dst); err != nil {
				t.Fatal(q, err)
			}
		}
		return
	}
	dir := t.TempDir()
	r := open(t, dir)
	r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: "1", Data: bytes.Repeat([]byte("x"), 100_000)})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if ps, av, ac, jm := pragmas(r); ps != newPageSize || av != 2 || ac != walCheckpointBytes/newPageSize || jm != "wal" {
		t.Fatalf("new record: page_size %d auto_vacuum %d wal_autocheckpoint %d journal_mode %s", ps, av, ac, jm)
	}
	r.Close()

	// a record made before: 4 KiB pages
	old := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+FileFor(old, bridgeID)+"?_pragma=auto_vacuum(INCREMENTAL)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if err := createSchema(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r = open(t, old)
	defer r.Close()
	want := bytes.Repeat([]byte("0123456789"), 20_000)
	r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: "1", Data: want})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if ps, av, ac, _ := pragmas(r); ps != 4096 || av != 2 || ac != walCheckpointBytes/4096 {
		t.Fatalf("old record: page_size %d auto_vacuum %d wal_autocheckpoint %d", ps, av, ac)
	}
	c, err := r.Captured("demo", "p")
	if err != nil || len(c.Chunks) == 0 {
		t.Fatal(err, len(c.Chunks))
	}
	var got []byte
	for _, ch := range c.Chunks {
		got = append(got, ch.Data...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("kept %d bytes of %d", len(got), len(want))
	}
}

// TestWriterCommitsWithoutFlush: with nobody calling Flush, an event is committed after about
// FlushEvery and output alone after about forty of them, however the writer sleeps meanwhile; an
// idle writer wakes only for what falls due, not at every round nor every second.
func TestWriterCommitsWithoutFlush(t *testing.T) {
	r, err := Open(Options{Dir: t.TempDir(), Bridge: bridgeID, FlushEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	committed := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never committed", what)
			}
		}
	}
	kept := func(n int64) func() bool {
		return func() bool { c, err := r.Captured("demo", "p"); return err == nil && c.Bytes == n }
	}
	r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: "1", Data: []byte("first\n")})
	committed("the first output", kept(6))
	r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: "2", Data: []byte("second\n")})
	committed("output alone", kept(13))
	r.Add(FromLogEvent("demo", "p", client.LogEvent{Kind: client.Interrupted, Cursor: "2", Reason: "reset"}))
	committed("an event", func() bool { evs, err := r.Events("demo", "p"); return err == nil && len(evs) == 1 })

	// whatever the writer still had to do falls due within 2 s (the spare chunks let go, the
	// look for another process's check mark after writing); then nothing does for 10 s
	time.Sleep(2500 * time.Millisecond)
	before := r.rounds.Load()
	time.Sleep(3 * time.Second)
	if n := r.rounds.Load() - before; n > 1 {
		t.Fatalf("an idle writer woke %d times in 3 s (once a second would be 3, every 20 ms 150)", n)
	}
}

// TestIdleDue: a writer with nothing queued sleeps until the earliest of what falls due, and never
// less than a round.
func TestIdleDue(t *testing.T) {
	now := time.Now()
	every := 50 * time.Millisecond
	outputEvery := 40 * every // the default output round
	for _, c := range []struct {
		name  string
		setup func(r *Record)
		want  time.Time
	}{
		{"nothing written since the last look", func(r *Record) {
			r.lastMarkLook, r.lastWrite = now.Add(-time.Second), now.Add(-time.Minute)
		}, now.Add(-time.Second).Add(markLookIdle)},
		{"written since the last look", func(r *Record) {
			r.lastMarkLook, r.lastWrite = now.Add(-time.Second), now.Add(-time.Second/2)
		}, now.Add(-time.Second).Add(markLookWriting)},
		{"spare chunks held after output", func(r *Record) {
			r.lastMarkLook, r.spared, r.lastOutput = now, true, now.Add(-time.Second)
		}, now.Add(-time.Second).Add(2 * outputEvery)},
		{"a trim left segments to compact", func(r *Record) {
			r.lastMarkLook = now
			r.reclaimDue.Store(true)
			r.lastReclaim.Store(now.Add(-reclaimEvery + 3*time.Second).UnixNano())
		}, now.Add(3 * time.Second)},
		{"due already", func(r *Record) {
			r.lastMarkLook = now.Add(-time.Hour)
		}, now.Add(every)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Record{outputEvery: outputEvery}
			c.setup(r)
			if got := r.idleDue(now, every); !got.Equal(c.want) {
				t.Fatalf("due in %v, want %v", got.Sub(now), c.want.Sub(now))
			}
		})
	}
}

// TestQueuedOutputCommitsAtTheBatchSize: output queued past 4 MiB is committed at the writer's
// next round, not held for the output round (40 rounds: 40 s here).
func TestQueuedOutputCommitsAtTheBatchSize(t *testing.T) {
	r, err := Open(Options{Dir: t.TempDir(), Bridge: bridgeID, FlushEvery: time.Second, Budget: Budget{CapturePerRun: 1 << 30, CaptureTotal: 1 << 32}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	committed := func(n int64) bool { c, err := r.Captured("demo", "p"); return err == nil && c.Bytes == n }
	// the first output of a record commits at once; the output round starts from it
	r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: "0", Data: []byte("first\n")})
	for deadline := time.Now().Add(20 * time.Second); !committed(6); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first output was not committed")
		}
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	n := 0
	for i := 0; n <= outputBatch; i++ {
		r.CaptureData("demo", "p", client.LogEvent{Kind: client.Data, Cursor: fmt.Sprint(i + 1), Data: chunk})
		n += len(chunk)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if committed(int64(6 + n)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes queued were not committed within 20 s (the output round is 40 s)", n)
		}
	}
}
