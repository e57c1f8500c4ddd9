//go:build linux

package logbuf

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"sandscope/client"
)

// A growing raw file has space reserved ahead of its writes in bounded steps, its size stays what
// was written, and every byte reads back.
func TestRawFileReservesAhead(t *testing.T) {
	b := newBuf(t, Options{})
	var want bytes.Buffer
	for i := 0; want.Len() < 40<<20; i++ {
		var ev bytes.Buffer
		for ev.Len() < 10000+i%7*3000 { // events of 10–28 KB: small ones are gathered, as a replay's
			fmt.Fprintf(&ev, "line %d of a growing log\n", i)
		}
		if i%50 == 0 {
			ev.Write(bytes.Repeat([]byte("x"), 300<<10)) // now and then one written as it is
			ev.WriteByte('\n')
		}
		want.Write(ev.Bytes())
		b.AddData("p", client.Stdout, ev.Bytes(), "", t0)
	}
	b.mu.Lock()
	rf := b.raws[0]
	disk, reserved, failed := rf.disk, rf.reserved, rf.noReserve
	f := rf.f
	b.mu.Unlock()
	if failed {
		t.Skip("the file system here does not reserve space")
	}
	if reserved < disk || reserved-disk > reserveMax+2*int64(rawBlock)+300<<10 {
		t.Fatalf("reserved %d with %d on disk: want a bounded step ahead", reserved, disk)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != disk {
		t.Fatalf("file size %d, %d bytes written: reserving must not change the size", st.Size(), disk)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Blocks*512 < reserved {
		t.Fatalf("%d bytes allocated, %d reserved", sys.Blocks*512, reserved)
	}
	got := make([]byte, disk)
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()[:disk]) {
		t.Fatal("raw file bytes differ from what was added")
	}
	var saved bytes.Buffer
	if err := b.SaveRaw(&saved); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(saved.Bytes(), want.Bytes()) {
		t.Fatalf("saved %d bytes, want the %d added", saved.Len(), want.Len())
	}
}

// Whatever mix of chunk sizes, saves (which write what whole blocks memory holds) and block size,
// every byte of a raw file reads back as written, from memory or from the file, and the file grows
// by whole blocks only.
func TestRawFileReadsBackAcrossFlushes(t *testing.T) {
	for _, block := range []int{512, 64 << 10, rawBlock} {
		t.Run(fmt.Sprintf("block=%d", block), func(t *testing.T) {
			old := rawBlock
			rawBlock = block
			t.Cleanup(func() { rawBlock = old })
			b := newBuf(t, Options{})
			r := rand.New(rand.NewPCG(uint64(block), 9))
			var want []byte
			for i := 0; i < 400; i++ {
				n := 1 + r.IntN(3*block/2)
				if r.IntN(10) == 0 {
					n = 1 + r.IntN(300<<10)
				}
				chunk := make([]byte, n)
				for j := range chunk {
					chunk[j] = 'a' + byte(r.IntN(26))
				}
				if r.IntN(3) == 0 {
					chunk[len(chunk)-1] = '\n'
				}
				want = append(want, chunk...)
				b.AddData("p", client.Stdout, chunk, "", t0)
				if r.IntN(20) == 0 {
					b.mu.Lock()
					b.rawViews() // a save writes the whole blocks cur holds
					b.mu.Unlock()
				}
				b.mu.Lock()
				rf := b.raws[0]
				if rf.disk%int64(block) != 0 {
					b.mu.Unlock()
					t.Fatalf("the file ends at %d, not on a block of %d", rf.disk, block)
				}
				for k := 0; k < 4; k++ {
					off := r.Int64N(int64(len(want)))
					end := off + 1 + r.Int64N(min(int64(len(want))-off, 200<<10))
					if k == 0 {
						off = max(0, int64(len(want))-1-r.Int64N(100<<10)) // near the end, as a frame reads
						end = int64(len(want))
					}
					got := make([]byte, end-off)
					if err := rf.readAt(got, off); err != nil {
						b.mu.Unlock()
						t.Fatalf("read [%d, %d): %v", off, end, err)
					}
					if !bytes.Equal(got, want[off:end]) {
						b.mu.Unlock()
						t.Fatalf("bytes [%d, %d) differ (disk %d, prev %d, cur %d)", off, end, rf.disk, len(rf.prev), len(rf.cur))
					}
				}
				b.mu.Unlock()
			}
		})
	}
}
