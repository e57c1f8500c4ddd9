package logs

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// growPipe asks the kernel for a pipe of size bytes when w is a pipe (best effort: the limit is
// /proc/sys/fs/pipe-max-size, 1 MiB by default). logs --all writes batches of prefixed lines
// under one lock; in a 64 KiB pipe every batch waited for the reader to drain it, a context
// switch for both sides each time.
func growPipe(w io.Writer, size int) {
	f, ok := w.(*os.File)
	if !ok {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return
	}
	if cur, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0); err == nil && cur < size {
		_, _ = unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, size)
	}
}
