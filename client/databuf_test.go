package client

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"
)

// With ReuseData, a Data event's bytes must stay intact until the next receive (checked after a
// pause, while the follower runs ahead), output must stay byte-exact across cuts, and buffers must
// actually be recycled.
func TestFollowReuseDataValidUntilNextReceive(t *testing.T) {
	c, want := cutProcess(t, rand.New(rand.NewPCG(3, 4)), 120, 80<<10)
	opts := followFastOpts()
	opts.ReuseData = true
	opts.Buffer = 2
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := c.Follow(ctx, "sbx", "p1", opts)
	var got bytes.Buffer
	seen := map[unsafe.Pointer]int{}
	var last LogEvent
	for ev := range f.Events() {
		last = ev
		if ev.Kind != Data {
			continue
		}
		if cap(ev.Data) > 0 {
			seen[unsafe.Pointer(unsafe.SliceData(ev.Data))]++
		}
		held := bytes.Clone(ev.Data)
		time.Sleep(200 * time.Microsecond) // let the follower run ahead
		// Still ours until the next receive.
		if !bytes.Equal(ev.Data, held) {
			t.Fatalf("a Data buffer was reused before the next receive")
		}
		got.Write(ev.Data)
	}
	checkRecycledFollow(t, got.Bytes(), want, last, seen)
}

// With a Pool, a Data event's bytes stay intact for as long as the consumer keeps them, across any
// number of receives, and are recycled once handed back; slices the pool did not give out are
// ignored by Put.
func TestFollowPoolKeepsDataUntilPut(t *testing.T) {
	c, want := cutProcess(t, rand.New(rand.NewPCG(5, 6)), 200, 40<<10)
	opts := followFastOpts()
	opts.Pool = NewDataPool(8)
	opts.Buffer = 2
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := c.Follow(ctx, "sbx", "p1", opts)
	pick := rand.New(rand.NewPCG(7, 8)) // the fake bridge's goroutines use rng
	type kept struct{ ev, copy []byte }
	var window []kept // events not handed back yet, oldest first
	var got bytes.Buffer
	seen := map[unsafe.Pointer]int{}
	var last LogEvent
	for ev := range f.Events() {
		last = ev
		if ev.Kind != Data {
			continue
		}
		if cap(ev.Data) > 0 {
			seen[unsafe.Pointer(unsafe.SliceData(ev.Data))]++
		}
		got.Write(ev.Data)
		window = append(window, kept{ev.Data, bytes.Clone(ev.Data)})
		time.Sleep(100 * time.Microsecond) // let the follower run ahead
		for _, k := range window {
			if !bytes.Equal(k.ev, k.copy) {
				t.Fatalf("a kept Data buffer was reused before it was handed back")
			}
		}
		opts.Pool.Put(bytes.Clone(ev.Data)) // not the pool's: ignored
		if len(window) > 1+pick.IntN(12) {
			opts.Pool.Put(window[0].ev)
			window = window[1:]
		}
	}
	checkRecycledFollow(t, got.Bytes(), want, last, seen)
}

// Put takes back only what the pool gave out and has not had back; a pool that lost track of
// buffers (dropped without being handed back) forgets them rather than pinning them.
func TestDataPoolPut(t *testing.T) {
	p := NewDataPool(4)
	a := p.Get(100)
	p.Put(a)
	b := p.Get(100)
	if unsafe.SliceData(a) != unsafe.SliceData(b) {
		t.Fatal("a buffer handed back was not given out again")
	}
	foreign := make([]byte, 100, minRingBuf)
	p.Put(foreign)
	p.Put(b[10:]) // not the slice given out
	c := p.Get(100)
	if unsafe.SliceData(c) == unsafe.SliceData(foreign) || unsafe.SliceData(c) == unsafe.SliceData(b) {
		t.Fatal("the pool gave out a buffer it never had back")
	}
	var nilPool *DataPool
	nilPool.Put(c) // a consumer without a pool
	for i := 0; i < 10*maxOutstanding*4; i++ {
		p.Get(10) // dropped
	}
	if n := len(p.out); n > maxOutstanding*4 {
		t.Fatalf("the pool tracks %d buffers given out", n)
	}
	p.Drop()
	if len(p.ring.free) != 0 {
		t.Fatal("Drop kept free buffers")
	}
}

// checkRecycledFollow checks a follow that decoded into recycled buffers: its output is what was
// written, it ended, and some buffer (seen counts each by its first byte) carried more than one
// event.
func checkRecycledFollow(t *testing.T, got, want []byte, last LogEvent, seen map[unsafe.Pointer]int) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs: got %d bytes, want %d", len(got), len(want))
	}
	if last.Kind != Ended {
		t.Fatalf("last event %v (%s)", last.Kind, last.Reason)
	}
	reused := 0
	for _, n := range seen {
		if n > 1 {
			reused++
		}
	}
	if reused == 0 {
		t.Fatalf("no buffer was recycled across %d distinct buffers", len(seen))
	}
}

// cutProcess is a fake bridge whose process p1 wrote n random chunks of up to maxChunk bytes and
// exited, and whose first five streams are cut at random offsets; it returns a client of it and
// what p1 wrote.
func cutProcess(t *testing.T, rng *rand.Rand, n, maxChunk int) (*Client, []byte) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	want := fb.writeRandom("p1", rng, n, maxChunk)
	fb.exit("p1", 0)
	fb.cutAfter = func(conn int) int {
		if conn > 5 {
			return 0
		}
		return 1 + rng.IntN(3<<20)
	}
	return fb.client(t), want
}

// A follow with a Sink hands every event to it in the follower's goroutine, in order (byte-exact
// across cut streams, the interruptions and the confirmed ending), recycling buffers with
// ReuseData, and its Events channel sends nothing and closes when the follower ends.
func TestFollowSinkTakesEveryEvent(t *testing.T) {
	c, want := cutProcess(t, rand.New(rand.NewPCG(9, 10)), 200, 40<<10)
	opts := followFastOpts()
	opts.ReuseData, opts.Buffer = true, 2
	var got bytes.Buffer
	var kinds []LogEventKind
	var last LogEvent
	seen := map[unsafe.Pointer]int{}
	opts.Sink = func(ev LogEvent) {
		// the follower's goroutine: no locking needed until the channel closes
		last = ev
		kinds = append(kinds, ev.Kind)
		if ev.Kind == Data {
			if cap(ev.Data) > 0 {
				seen[unsafe.Pointer(unsafe.SliceData(ev.Data))]++
			}
			got.Write(ev.Data)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := c.Follow(ctx, "sbx", "p1", opts)
	for ev := range f.Events() {
		t.Fatalf("an event came on the channel of a follow with a sink: %v", ev.Kind)
	}
	checkRecycledFollow(t, got.Bytes(), want, last, seen)
	if !slices.Contains(kinds, Interrupted) || !slices.Contains(kinds, Resumed) {
		t.Fatalf("the cuts were not told to the sink: %v", kinds)
	}
}
