package logbuf

import (
	"os"

	"golang.org/x/sys/unix"
)

// reserveSpace asks the file system to allocate [off, off+n) of f without changing its size: writes
// into allocated space skip the per-write block reservation of a delayed-allocation file system
// (ext4), which is a good part of what a buffered write of new bytes costs.
func reserveSpace(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = unix.Fallocate(int(fd), unix.FALLOC_FL_KEEP_SIZE, off, n)
	}); err != nil {
		return err
	}
	return ferr
}
