package quietio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quietPair is a connected TCP pair: the dialled end as the bridge's connections are made, and
// the accepted end.
func quietPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := Conn(raw)
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	if _, ok := c.(*quietConn); !ok {
		t.Fatalf("Conn gave %T", c)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c, peer
}

// A quiet connection moves bytes both ways exactly, several megabytes at a time (partial writes
// and reads that would block wait in the poller), and reports the peer's close as io.EOF.
func TestQuietConnMovesBytesExactly(t *testing.T) {
	c, peer := quietPair(t)
	want := make([]byte, 8<<20)
	for i := range want {
		want[i] = byte(i*7 + i>>13)
	}
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(peer); got <- b }()
	if n, err := c.Write(want); n != len(want) || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	c.(*quietConn).CloseWrite()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the peer read %d bytes, not the %d written", len(b), len(want))
	}

	go func() { peer.Write(want); peer.Close() }()
	b, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("read %d bytes of %d: %v", len(b), len(want), err)
	}
	if n, err := c.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("after the peer's close: %d %v, want io.EOF", n, err)
	}
}

// Deadlines, a close and a reset give the errors net.Conn gives: callers tell them apart.
func TestQuietConnErrorsAreNetConnErrors(t *testing.T) {
	c, peer := quietPair(t)
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(make([]byte, 10))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("past the deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})

	// a read waiting in the poller ends when the connection is closed
	done := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 10)); done <- err }()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read across close: %v", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}

	c2, peer2 := quietPair(t)
	_ = peer
	peer2.(*net.TCPConn).SetLinger(0)
	peer2.Write([]byte("last"))
	peer2.Close() // RST
	var err2 error
	for deadline := time.Now().Add(5 * time.Second); err2 == nil && time.Now().Before(deadline); {
		_, err2 = c2.Read(make([]byte, 64))
	}
	if !errors.Is(err2, syscall.ECONNRESET) || !strings.Contains(err2.Error(), "reset") {
		t.Fatalf("after a reset: %v", err2)
	}
	var oe *net.OpError
	if !errors.As(err2, &oe) || oe.Op != "read" {
		t.Fatalf("after a reset: %#v, want a read *net.OpError", err2)
	}
}

// What one end did before writing is ordered before what the other end does after reading it, for
// the race detector too (go test -race reports this test otherwise): the client's tests share
// variables with their bridges' handlers through requests and answers alone.
func TestQuietConnOrdersForTheRaceDetector(t *testing.T) {
	c, peer := quietPair(t)
	var shared int
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 1)
		if _, err := io.ReadFull(peer, b); err != nil {
			t.Error(err)
			return
		}
		if shared != 1 {
			t.Errorf("the peer saw %d, not what was set before the quiet write", shared)
		}
		shared = 2
		_, _ = peer.Write([]byte("y"))
	}()
	shared = 1
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	if shared != 2 {
		t.Fatalf("the quiet end saw %d, not what the peer set before its write", shared)
	}
	<-done
}
