package client

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// quietReads makes a TCP connection's reads plain read(2) calls on its non-blocking socket, made
// without telling the Go scheduler a system call is under way, and waiting in the network poller
// as before when there is nothing to read.
//
// Why: a Go program idle between events parks its monitor thread (sysmon) in a deep sleep, and the
// first system call made through the scheduler wakes it, after which it polls every 20 µs while
// anything runs. A follower woken by each event of a process's output made two to three of those
// wake-ups per event: more than half of all the TUI's thread wake-ups while capturing eight
// processes in the background (figure 11b). A read of a non-blocking socket never blocks, so the
// scheduler has nothing to take back from it.
func quietReads(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &quietReadConn{TCPConn: tc, rc: rc}
}

type quietReadConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

func (c *quietReadConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == syscall.EINTR {
				continue
			}
			n, errno = int(r), e
			return e != syscall.EAGAIN // not ready: wait in the poller, then try again
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p the same way (a request to the bridge is written from a goroutine that
// was idle: through the scheduler, its write woke the monitor thread as a read did).
func (c *quietReadConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		var n int
		var errno syscall.Errno
		rest := p[written:]
		err := c.rc.Write(func(fd uintptr) bool {
			for {
				r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
				if e == syscall.EINTR {
					continue
				}
				n, errno = int(r), e
				return e != syscall.EAGAIN // no room: wait in the poller, then try again
			}
		})
		switch {
		case err != nil:
			return written, c.opError("write", err)
		case errno != 0:
			return written, c.opError("write", os.NewSyscallError("write", errno))
		}
		written += n
	}
	return written, nil
}

// opError is what net.Conn's Read or Write returns for err (net.ErrClosed, os.ErrDeadlineExceeded, an
// errno), so that callers telling them apart see no difference.
func (c *quietReadConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err // the raw read's own wrapping
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
