package client_test

// The terminal connection against the real local bridge on loopback: real PTYs, the real
// WebSocket protocol, a real container replacement. A small TCP relay in between cuts the
// connection abruptly (the 1006 case) to check resume against real cursors.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/faultproxy"
	"sandscope/localbridge/bridgetest"
)

// relay forwards TCP to target and can cut every open connection at once.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newRelay(t *testing.T, target string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); r.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, u)
			r.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return r
}

func (r *relay) url() string { return "http://" + r.ln.Addr().String() }

func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

func waitOutput(t *testing.T, conn *client.TerminalConn, buf *bytes.Buffer, want string) []client.TermEvent {
	t.Helper()
	var evs []client.TermEvent
	guard := time.After(60 * time.Second)
	for !strings.Contains(buf.String(), want) {
		select {
		case ev, ok := <-conn.Events():
			if !ok {
				t.Fatalf("events closed before %q; output %q", want, buf.String())
			}
			evs = append(evs, ev)
			if ev.Kind == client.TermOutput {
				buf.Write(ev.Data)
			}
		case <-guard:
			t.Fatalf("no %q in output %q", want, buf.String())
		}
	}
	return evs
}

func TestTerminalAgainstLocalBridge(t *testing.T) {
	b := bridgetest.Start(t)
	rl := newRelay(t, strings.TrimPrefix(b.URL, "http://"))
	c, err := client.New(rl.url(), client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := c.CreateTerminal(ctx, sb, client.TerminalRequest{Argv: []string{"/bin/sh"}, Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.ConnectTerminal(ctx, sb, tm.ID, client.ConnectOptions{Cols: 80, Rows: 24,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	var out bytes.Buffer
	fmt.Fprint(conn, "stty -echo; echo ready-$((6*7))\n")
	waitOutput(t, conn, &out, "ready-42")

	// Numbered lines, cut mid-stream: every line arrives exactly once. The script waits for a
	// line of input after L1000, so the cut always falls before the end (on a fast machine the
	// whole output could otherwise arrive before the cut).
	fmt.Fprint(conn, "i=0; while [ $i -lt 3000 ]; do echo L$i; [ $i -eq 1000 ] && read x; i=$((i+1)); done; echo DONE\n")
	waitOutput(t, conn, &out, "L1000\r\n")
	rl.cut()
	var evs []client.TermEvent
	guard := time.After(60 * time.Second)
	for resumed := false; !resumed; {
		select {
		case ev, ok := <-conn.Events():
			if !ok {
				t.Fatal("events closed before the connection resumed")
			}
			evs = append(evs, ev)
			if ev.Kind == client.TermOutput {
				out.Write(ev.Data)
			}
			resumed = ev.Kind == client.TermResumed
		case <-guard:
			t.Fatal("the connection did not resume after the cut")
		}
	}
	fmt.Fprint(conn, "go\n")
	evs = append(evs, waitOutput(t, conn, &out, "DONE")...)
	var interrupted, resumed bool
	for _, e := range evs {
		interrupted = interrupted || e.Kind == client.TermInterrupted
		resumed = resumed || e.Kind == client.TermResumed
	}
	if !interrupted || !resumed {
		t.Fatalf("no interruption/resume seen")
	}
	text := out.String()
	for i := 0; i < 3000; i++ {
		if n := strings.Count(text, fmt.Sprintf("L%d\r\n", i)); n != 1 {
			t.Fatalf("line L%d seen %d times", i, n)
		}
	}

	// The container is replaced under the same sandbox ID: the terminal is lost, with evidence.
	if err := b.Server.ReplaceSandbox(sb); err != nil {
		t.Fatal(err)
	}
	var last client.TermEvent
	guard = time.After(60 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-conn.Events():
			if !ok {
				done = true
				break
			}
			last = ev
		case <-guard:
			t.Fatal("no final event after replace")
		}
	}
	if last.Kind != client.TermLost || last.Loss == nil {
		t.Fatalf("after replace: %v %+v", last.Kind, last)
	}
	t.Logf("loss: %s; evidence %+v", last.Reason, *last.Loss)
}

func TestTerminalExitThroughLocalBridge(t *testing.T) {
	b := bridgetest.Start(t)
	c, _ := client.New(b.URL, client.WithToken(b.Token))
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := c.CreateTerminal(ctx, sb, client.TerminalRequest{Argv: []string{"/bin/sh", "-c", "echo bye; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until it exited, then connect with a size: the connection must leave the size out.
	for i := 0; i < 500; i++ {
		st, err := c.GetTerminal(ctx, sb, tm.ID)
		if err == nil && st.Status != "running" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn, err := c.ConnectTerminal(ctx, sb, tm.ID, client.ConnectOptions{Cols: 100, Rows: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out bytes.Buffer
	var last client.TermEvent
	for ev := range conn.Events() {
		if ev.Kind == client.TermOutput {
			out.Write(ev.Data)
		}
		last = ev
	}
	if last.Kind != client.TermExited || last.Exit == nil || last.Exit.Code != 7 || !strings.Contains(out.String(), "bye") {
		t.Fatalf("last %v %+v output %q", last.Kind, last.Exit, out.String())
	}
}

// Through faultproxy: a drop with each close code and a rewritten byteLength, one per connection;
// the output still arrives exactly once, in order, and the exit is reported.
func TestTerminalThroughFaultProxy(t *testing.T) {
	b := bridgetest.Start(t)
	p := faultproxy.New(b.URL)
	t.Cleanup(p.Close)
	ctx := context.Background()
	direct, _ := client.New(b.URL, client.WithToken(b.Token))
	c, _ := client.New(p.URL(), client.WithToken(b.Token))
	sb, err := direct.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := direct.CreateTerminal(ctx, sb, client.TerminalRequest{Argv: []string{"sh", "-c",
		"stty -echo; i=0; while [ $i -lt 150 ]; do i=$((i+1)); echo term-$i; done; while read l; do [ \"$l\" = end ] && exit 3; echo got-$l; done"}})
	if err != nil {
		t.Fatal(err)
	}
	faults := []faultproxy.Fault{
		faultproxy.WSDrop(3, 1006, ""),
		faultproxy.WSDrop(4, 1011, "Terminal send failed"),
		faultproxy.WSBadByteLength(2, 1),
		faultproxy.WSDrop(5, 1012, "Runtime replaced"),
		faultproxy.WSDrop(3, 1013, "Terminal client backpressure"),
	}
	var rules []*faultproxy.Rule
	for _, f := range faults {
		rules = append(rules, p.Add(faultproxy.Rule{Path: "/connect", Times: 1, Fault: f}))
	}
	allApplied := func() bool {
		for _, r := range rules {
			if r.Hits() == 0 {
				return false
			}
		}
		return true
	}
	conn, err := c.ConnectTerminal(ctx, sb, tm.ID, client.ConnectOptions{Cols: 80, Rows: 24,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var got bytes.Buffer
	var last client.TermEvent
	codes := map[int]bool{}
	protocol := false
	var appliedAt time.Time
	guard := time.After(60 * time.Second)
	// Each connection needs server messages for its fault to strike: keep asking for output, one
	// line at a time, and end the terminal once every fault was met. (A write can meet a dropped
	// connection; the next tick tries again.)
	tick := time.NewTicker(15 * time.Millisecond)
	defer tick.Stop()
	for done, n := false, 0; !done; {
		select {
		case <-tick.C:
			n++
			msg := fmt.Sprintf("p%d\n", n)
			// Once every fault struck (and its interruption arrived), end the terminal; the close
			// codes are checked below.
			if allApplied() {
				if appliedAt.IsZero() {
					appliedAt = time.Now()
				}
				if len(codes) == len(faults) || time.Since(appliedAt) > 3*time.Second {
					msg = "end\n"
				}
			}
			_, _ = conn.Write([]byte(msg))
		case ev, ok := <-conn.Events():
			if !ok {
				done = true
				break
			}
			last = ev
			if ev.Kind != client.TermOutput {
				t.Logf("%s %v code=%d %s", time.Now().Format("05.000"), ev.Kind, ev.CloseCode, ev.Reason)
			}
			switch ev.Kind {
			case client.TermOutput:
				got.Write(ev.Data)
			case client.TermInterrupted:
				codes[ev.CloseCode] = true
			case client.TermError:
				protocol = protocol || errors.Is(ev.Err, client.ErrTerminalProtocol)
			}
		case <-guard:
			t.Fatalf("no end; got %d bytes", got.Len())
		}
	}
	if last.Kind != client.TermExited || last.Exit == nil || last.Exit.Code != 3 {
		t.Fatalf("last event %v %+v", last.Kind, last.Exit)
	}
	for _, code := range []int{1006, 1011, 1012, 1013, 1002} {
		if !codes[code] {
			t.Errorf("no interruption with code %d (saw %v)", code, codes)
		}
	}
	if !protocol {
		t.Error("the rewritten byteLength was not reported as a protocol error")
	}
	// Reference: the whole retained output over a clean connection.
	ref, err := direct.ConnectTerminal(ctx, sb, tm.ID, client.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	var want bytes.Buffer
	for ev := range ref.Events() {
		if ev.Kind == client.TermOutput {
			want.Write(ev.Data)
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) || !bytes.Contains(want.Bytes(), []byte("term-150")) {
		t.Fatalf("through faults got %d bytes, clean read %d bytes", got.Len(), want.Len())
	}
}
