package fileio

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// WriteAtv puts the buffers one after another at the offset, however many there are (more than
// one system call takes) and whatever their sizes, and leaves the bytes around them alone.
func TestWriteAtvWritesBuffersInOrder(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	head := bytes.Repeat([]byte{'h'}, 100)
	if _, err := f.WriteAt(head, 0); err != nil {
		t.Fatal(err)
	}
	var bufs [][]byte
	var want []byte
	for i := range 2500 {
		b := make([]byte, rng.IntN(300))
		for j := range b {
			b[j] = byte(i + j)
		}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	if err := WriteAtv(f, bufs, int64(len(head))); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(head, want...)) {
		t.Fatalf("the file holds %d bytes, not the %d written after the %d before", len(got), len(want), len(head))
	}
}
