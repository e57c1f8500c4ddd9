//go:build race

package quietio

import "syscall"

// once reads or writes through syscall.Read and syscall.Write in a build with the race detector,
// again when a signal interrupts it. Only they tell the detector that a write to a socket comes
// before the peer's read of it and that a read fills b: made raw, a bridge's answer would order
// nothing before what the client does with it (a client test sharing a variable with its handler
// is reported racing), and a read into a buffer still in use would go unseen. Such a build wakes
// the monitor thread as an ordinary connection does.
func once(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		var n int
		var err error
		if trap == syscall.SYS_READ {
			n, err = syscall.Read(int(fd), b)
		} else {
			n, err = syscall.Write(int(fd), b)
		}
		if err == nil {
			return n, 0
		}
		e, ok := err.(syscall.Errno)
		if !ok {
			e = syscall.EIO // syscall.Read and syscall.Write return only an Errno
		}
		if e != syscall.EINTR {
			return n, e
		}
	}
}
