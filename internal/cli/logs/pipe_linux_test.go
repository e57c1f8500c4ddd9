package logs

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(w, 256<<10)
	n, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil || n < 256<<10 {
		t.Fatalf("pipe size %d (%v)", n, err)
	}
	// a file that is not a pipe is left alone
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f, 1<<20)
}
