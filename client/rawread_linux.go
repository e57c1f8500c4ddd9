package client

import (
	"io"
	"net"
	"os"
	"sync"
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
	q := &quietReadConn{TCPConn: tc, rc: rc}
	q.readFn, q.writeFn = q.tryRead, q.tryWrite
	return q
}

// quietReadConn keeps each direction's buffer and result in fields, under that direction's lock,
// so that the functions handed to the raw connection are made once, not allocated per call.
type quietReadConn struct {
	*net.TCPConn
	rc syscall.RawConn

	rmu    sync.Mutex
	readFn func(fd uintptr) bool
	rbuf   []byte
	rn     int
	rerrno syscall.Errno

	wmu     sync.Mutex
	writeFn func(fd uintptr) bool
	wbuf    []byte
	wn      int
	werrno  syscall.Errno
}

// tryRead reads once into rbuf; false (not ready) makes the raw connection wait in the poller
// and call it again.
func (c *quietReadConn) tryRead(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		if e == syscall.EINTR {
			continue
		}
		c.rn, c.rerrno = int(r), e
		return e != syscall.EAGAIN
	}
}

func (c *quietReadConn) tryWrite(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&c.wbuf[0])), uintptr(len(c.wbuf)))
		if e == syscall.EINTR {
			continue
		}
		c.wn, c.werrno = int(r), e
		return e != syscall.EAGAIN
	}
}

func (c *quietReadConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rbuf = p
	err := c.rc.Read(c.readFn)
	c.rbuf = nil
	n, errno := c.rn, c.rerrno
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
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for written < len(p) {
		c.wbuf = p[written:]
		err := c.rc.Write(c.writeFn)
		c.wbuf = nil
		switch {
		case err != nil:
			return written, c.opError("write", err)
		case c.werrno != 0:
			return written, c.opError("write", os.NewSyscallError("write", c.werrno))
		}
		written += c.wn
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
