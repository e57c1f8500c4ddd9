//go:build linux

package logbuf

import (
	"bytes"
	"fmt"
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
