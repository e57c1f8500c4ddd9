package client

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// With ReuseData, a Data event's bytes must stay intact until the next receive (checked after a
// pause, while the follower runs ahead), output must stay byte-exact across cuts, and buffers must
// actually be recycled.
func TestFollowReuseDataValidUntilNextReceive(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	rng := rand.New(rand.NewPCG(3, 4))
	var want bytes.Buffer
	for i := 0; i < 120; i++ {
		chunk := make([]byte, 1+rng.IntN(80<<10))
		for j := range chunk {
			chunk[j] = byte(rng.IntN(256))
		}
		want.Write(chunk)
		fb.write("p1", "stdout", chunk)
	}
	fb.exit("p1", 0)
	fb.cutAfter = func(conn int) int {
		if conn > 5 {
			return 0
		}
		return 1 + rng.IntN(3<<20)
	}
	c := fb.client(t)
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
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("output differs: got %d bytes, want %d", got.Len(), want.Len())
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
