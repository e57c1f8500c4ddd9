package quietio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Conn makes a TCP connection's reads and writes plain read(2) and write(2) calls on its
// non-blocking socket, waiting in the network poller as before when there is nothing to read or
// no room to write. A connection it cannot make quiet is returned as it is.
func Conn(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil || !nonBlocking(rc) {
		return c
	}
	q := &quietConn{TCPConn: tc, rc: rc}
	q.readFn, q.writeFn = q.tryRead, q.tryWrite
	return q
}

// quietConn keeps each direction's buffer and result in fields, under that direction's lock,
// so that the functions handed to the raw connection are made once, not allocated per call.
type quietConn struct {
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

// tryRead reads once into rbuf, tryWrite writes once from wbuf; false (not ready) makes the raw
// connection wait in the poller and call it again.
func (c *quietConn) tryRead(fd uintptr) bool {
	c.rn, c.rerrno = once(syscall.SYS_READ, fd, c.rbuf)
	return c.rerrno != syscall.EAGAIN
}

func (c *quietConn) tryWrite(fd uintptr) bool {
	c.wn, c.werrno = once(syscall.SYS_WRITE, fd, c.wbuf)
	return c.werrno != syscall.EAGAIN
}

func (c *quietConn) Read(p []byte) (int, error) {
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
func (c *quietConn) Write(p []byte) (int, error) {
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

// opError is what net.Conn's Read or Write returns for err (net.ErrClosed,
// os.ErrDeadlineExceeded, an errno), so that callers telling them apart see no difference.
func (c *quietConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err // the raw read's own wrapping
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// nonBlocking reports whether the descriptor is in non-blocking mode: only then can a raw read or
// write not block.
func nonBlocking(rc syscall.RawConn) bool {
	nb := false
	_ = rc.Control(func(fd uintptr) {
		flags, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nb = e == 0 && flags&syscall.O_NONBLOCK != 0
	})
	return nb
}
