package fileio

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// WriteAtv writes bufs one after another at off in f with pwritev (IOV_MAX buffers a call). It
// may change bufs' elements (a short write leaves the rest of a buffer for the next call), never
// the bytes they hold.
func WriteAtv(f *os.File, bufs [][]byte, off int64) error {
	const maxIov = 1024 // IOV_MAX
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	for len(bufs) > 0 {
		batch := bufs[:min(len(bufs), maxIov)]
		var n int
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			n, werr = unix.Pwritev(int(fd), batch, off)
			return werr != unix.EINTR
		}); err != nil {
			return err
		}
		if werr != nil {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: werr}
		}
		if n == 0 {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: io.ErrShortWrite}
		}
		off += int64(n)
		// drop what was written; a short write leaves the rest of a buffer for the next call
		for n > 0 && len(bufs) > 0 {
			if n >= len(bufs[0]) {
				n -= len(bufs[0])
				bufs = bufs[1:]
				continue
			}
			bufs[0] = bufs[0][n:]
			n = 0
		}
	}
	return nil
}
