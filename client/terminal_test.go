package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func fastOpts() ConnectOptions {
	return ConnectOptions{Cols: 100, Rows: 30, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, DialTimeout: 5 * time.Second, RetryBudget: 5}
}

// collect reads events until pred says stop or the channel closes; it fails the test after a
// generous deadline rather than hanging (a guard, not a performance limit).
func collect(t *testing.T, tc *TerminalConn, until func(TermEvent) bool) (out []byte, evs []TermEvent) {
	t.Helper()
	guard := time.NewTimer(60 * time.Second)
	defer guard.Stop()
	for {
		select {
		case ev, ok := <-tc.Events():
			if !ok {
				return out, evs
			}
			evs = append(evs, ev)
			if ev.Kind == TermOutput {
				out = append(out, ev.Data...)
			}
			if until != nil && until(ev) {
				return out, evs
			}
		case <-guard.C:
			t.Fatalf("no terminal event in time; so far %d bytes, events %v", len(out), kinds(evs))
		}
	}
}

func kinds(evs []TermEvent) string {
	var s []string
	for _, e := range evs {
		if e.Kind == TermOutput {
			continue
		}
		s = append(s, fmt.Sprintf("%s(%d)", e.Kind, e.CloseCode))
	}
	return strings.Join(s, " ")
}

func numbered(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "line %04d\n", i)
	}
	return b.Bytes()
}

func TestTerminalEchoResizeAndExit(t *testing.T) {
	f := newFakeTermServer(t)
	tc := f.open(t)
	_, evs := collect(t, tc, func(e TermEvent) bool { return e.Kind == TermReady })
	if evs[len(evs)-1].Kind != TermReady {
		t.Fatalf("first event %v", kinds(evs))
	}
	if _, err := tc.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	out, _ := collect(t, tc, func(e TermEvent) bool { return e.Kind == TermOutput })
	if string(out) != "hello" {
		t.Fatalf("echo = %q", out)
	}
	if err := tc.Resize(120, 40); err != nil {
		t.Fatal(err)
	}
	if err := tc.Interrupt(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ { // let the server read both control frames before the terminal ends
		f.mu.Lock()
		n := len(f.controls)
		f.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.exit(5)
	_, evs = collect(t, tc, nil)
	last := evs[len(evs)-1]
	if last.Kind != TermExited || last.Exit == nil || last.Exit.Code != 5 {
		t.Fatalf("last event %v %+v", last.Kind, last.Exit)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queries[0] != "cols=100&rows=30" {
		t.Fatalf("first connect query %q", f.queries[0])
	}
	want := []string{`{"type":"resize","cols":120,"rows":40}`, `{"type":"interrupt"}`}
	if strings.Join(f.controls, "|") != strings.Join(want, "|") {
		t.Fatalf("controls %q", f.controls)
	}
	if _, err := tc.Write([]byte("x")); !errors.Is(err, ErrTerminalDisconnected) {
		t.Fatalf("write after exit: %v", err)
	}
}

// Each drop kind mid-stream: the bytes delivered are exactly the terminal's output, once each.
func TestTerminalResumesAfterEachCloseCode(t *testing.T) {
	cases := []struct {
		name string
		code int
		text string
	}{
		{"abnormal-1006", 0, ""},
		{"internal-1011", 1011, "Terminal send failed"},
		{"replaced-1012", 1012, "Runtime replaced"},
		{"backpressure-1013", 1013, "Terminal client backpressure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeTermServer(t)
			want := numbered(300)
			for i := 0; i < len(want); i += 100 {
				f.output(want[i:min(i+100, len(want))])
			}
			f.setFault(1, connFault{dropAfterChunks: 7, closeCode: tc.code, closeText: tc.text})
			f.setFault(2, connFault{dropAfterChunks: 3, closeCode: tc.code, closeText: tc.text})
			f.exit(0)
			conn := f.open(t)
			out, evs := collect(t, conn, nil)
			if !bytes.Equal(out, want) {
				t.Fatalf("output differs: got %d bytes, want %d; events %s", len(out), len(want), kinds(evs))
			}
			var interrupted, resumed int
			for _, e := range evs {
				switch e.Kind {
				case TermInterrupted:
					interrupted++
					wantCode := tc.code
					if wantCode == 0 {
						wantCode = 1006
					}
					if e.CloseCode != wantCode {
						t.Errorf("interrupted with code %d, want %d", e.CloseCode, wantCode)
					}
				case TermResumed:
					resumed++
				}
			}
			if interrupted != 2 || resumed != 2 || evs[len(evs)-1].Kind != TermExited {
				t.Fatalf("events %s", kinds(evs))
			}
			// The resumes asked for the cursor of the last chunk consumed; the terminal had exited
			// by then, so no size was sent (it would fail with "PTY is closed").
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.queries) != 3 || f.queries[1] != "cursor=c7" || f.queries[2] != "cursor=c10" {
				t.Fatalf("connect queries %q", f.queries)
			}
		})
	}
}

func TestTerminalWrongByteLengthIsAnErrorNotCorruption(t *testing.T) {
	f := newFakeTermServer(t)
	f.output([]byte("first "))
	f.output([]byte("second "))
	f.setFault(1, connFault{badLength: true})
	f.exit(0)
	conn := f.open(t)
	out, evs := collect(t, conn, nil)
	var protoErr bool
	for _, e := range evs {
		if e.Kind == TermError && errors.Is(e.Err, ErrTerminalProtocol) {
			protoErr = true
		}
	}
	if !protoErr {
		t.Fatalf("no protocol error event: %s", kinds(evs))
	}
	// Nothing from the bad frame was delivered; the resume from the last good cursor replays it.
	if string(out) != "first second " {
		t.Fatalf("output %q", out)
	}
}

func TestTerminalPersistentCorruptionFails(t *testing.T) {
	f := newFakeTermServer(t)
	f.output([]byte("x"))
	for i := 1; i <= 10; i++ {
		f.setFault(i, connFault{badLength: true})
	}
	opts := fastOpts()
	opts.RetryBudget = 3
	conn, err := f.client().ConnectTerminal(context.Background(), "abc", "t1", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out, evs := collect(t, conn, nil)
	if len(out) != 0 || evs[len(evs)-1].Kind != TermFailed {
		t.Fatalf("out %q events %s", out, kinds(evs))
	}
	// The same violation at the same cursor twice is the bridge's doing: named, and no more
	// reconnects than the second connection (not the whole budget).
	last := evs[len(evs)-1]
	if !strings.Contains(last.Reason, "twice at the same cursor") || !errors.Is(last.Err, ErrTerminalProtocol) {
		t.Fatalf("failure not named as a protocol violation: %q (%v)", last.Reason, last.Err)
	}
	reconnects := 0
	for _, e := range evs {
		if e.Kind == TermReconnecting {
			reconnects++
		}
	}
	if reconnects != 1 {
		t.Fatalf("%d reconnects before giving up, want 1: %s", reconnects, kinds(evs))
	}
}

func TestTerminalLostAfterReplace(t *testing.T) {
	f := newFakeTermServer(t)
	conn := f.open(t)
	collect(t, conn, func(e TermEvent) bool { return e.Kind == TermReady })
	f.output([]byte("before"))
	collect(t, conn, func(e TermEvent) bool { return e.Kind == TermOutput })
	f.replace()
	_, evs := collect(t, conn, nil)
	last := evs[len(evs)-1]
	if last.Kind != TermLost || last.Loss == nil {
		t.Fatalf("events %s", kinds(evs))
	}
	if last.Loss.Previous != 1 || last.Loss.Incarnation != 2 || last.Loss.Inferred ||
		last.Loss.SandboxRunning == nil || !*last.Loss.SandboxRunning || !strings.Contains(last.Loss.Lookup, "404") {
		t.Fatalf("loss evidence %+v", last.Loss)
	}
	if last.Cursor != "c1" {
		t.Fatalf("lost at cursor %q", last.Cursor)
	}
}

// open connects to terminal t1 of sandbox abc with fastOpts; it is closed when the test ends.
func (f *fakeTermServer) open(t *testing.T) *TerminalConn {
	t.Helper()
	conn, err := f.client().ConnectTerminal(context.Background(), "abc", "t1", fastOpts())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestTerminalBudgetExhausted(t *testing.T) {
	f := newFakeTermServer(t)
	conn := f.open(t)
	collect(t, conn, func(e TermEvent) bool { return e.Kind == TermReady })
	f.mu.Lock()
	f.refuse = true
	f.mu.Unlock()
	f.dropAll()
	_, evs := collect(t, conn, nil)
	last := evs[len(evs)-1]
	if last.Kind != TermFailed || last.Err == nil {
		t.Fatalf("events %s", kinds(evs))
	}
	n := 0
	for _, e := range evs {
		if e.Kind == TermReconnecting {
			n++
		}
	}
	if n != 5 {
		t.Fatalf("%d reconnect attempts, want the budget 5", n)
	}
	if strings.Contains(last.Err.Error(), f.token) {
		t.Fatal("token in error")
	}
}

func TestTerminalConnectErrors(t *testing.T) {
	f := newFakeTermServer(t)
	c, _ := New(f.srv.URL, WithToken("wrong"))
	if _, err := c.ConnectTerminal(context.Background(), "abc", "t1", fastOpts()); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("bad token: %v", err)
	}
	if _, err := f.client().ConnectTerminal(context.Background(), "abc", "../x", fastOpts()); err == nil {
		t.Fatal("bad terminal ID accepted")
	}
	f.replace()
	if _, err := f.client().ConnectTerminal(context.Background(), "abc", "t1", fastOpts()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("gone terminal: %v", err)
	}
}

func TestTerminalCloseLeavesNoGoroutines(t *testing.T) {
	f := newFakeTermServer(t)
	for i := 0; i < 5; i++ {
		conn, err := f.client().ConnectTerminal(context.Background(), "abc", "t1", fastOpts())
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = conn.Write([]byte("x")) }()
		conn.Close()
		if _, ok := <-conn.Events(); ok {
			// buffered events may remain; drain them
			for range conn.Events() {
			}
		}
	}
	// Only the connection's own goroutines count: idle HTTP keep-alives belong to net/http.
	var stacks string
	for i := 0; i < 100; i++ {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "(*TerminalConn)") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("terminal connection goroutines still running:\n%s", stacks)
}

func TestDecodeTermControlNeverPanics(t *testing.T) {
	for _, in := range []string{"", "{", "null", `{"type":"chunk"}`, `{"type":"chunk","cursor":"c","byteLength":-1}`,
		`{"type":"exit"}`, `{"type":"nope"}`, `{"type":"chunk","cursor":"c","byteLength":1e30}`} {
		if _, _, _, _, _, _, err := DecodeTermControl([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	typ, c, n, _, _, _, err := DecodeTermControl([]byte(`{"type":"chunk","cursor":"abc","byteLength":5}`))
	if err != nil || typ != "chunk" || c != "abc" || n != 5 {
		t.Fatalf("%v %v %v %v", typ, c, n, err)
	}
}

func FuzzDecodeTermControl(f *testing.F) {
	f.Add([]byte(`{"type":"chunk","cursor":"abc","byteLength":5}`))
	f.Add([]byte(`{"type":"exit","cursor":"x","exit":{"code":1,"timedOut":false}}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		typ, _, n, exit, _, _, err := DecodeTermControl(p)
		if err == nil && typ == "chunk" && (n < 0 || n > maxTerminalFrame) {
			t.Fatalf("bad length accepted: %d", n)
		}
		if err == nil && typ == "exit" && exit == nil {
			t.Fatal("exit without status accepted")
		}
	})
}

func TestTerminalInputHeldWhileReconnecting(t *testing.T) {
	f := newFakeTermServer(t)
	conn := f.open(t)
	collect(t, conn, func(e TermEvent) bool { return e.Kind == TermReady })
	f.mu.Lock()
	f.refuse = true
	f.mu.Unlock()
	f.dropAll()
	collect(t, conn, func(e TermEvent) bool { return e.Kind == TermInterrupted })
	for _, s := range []string{"held ", "input"} {
		if n, err := conn.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("write while reconnecting: %d %v", n, err)
		}
	}
	f.mu.Lock()
	f.refuse = false
	f.mu.Unlock()
	out, evs := collect(t, conn, func(e TermEvent) bool { return e.Kind == TermOutput })
	if string(out) != "held input" {
		t.Fatalf("after resume got %q; events %s", out, kinds(evs))
	}
	if _, err := conn.Write(make([]byte, maxPendingInput+1)); err != nil {
		t.Fatalf("a large write on a live connection: %v", err)
	}
}

// A link that stays open but answers nothing (not even pongs) is treated as a drop.
func TestTerminalSilentDeadLinkIsADrop(t *testing.T) {
	f := newFakeTermServer(t)
	f.setFault(1, connFault{noPong: true})
	opts := fastOpts()
	opts.KeepAlive = 20 * time.Millisecond
	conn, err := f.client().ConnectTerminal(context.Background(), "abc", "t1", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, evs := collect(t, conn, func(e TermEvent) bool { return e.Kind == TermResumed })
	var timedOut bool
	for _, e := range evs {
		timedOut = timedOut || e.Kind == TermInterrupted && e.Reason == "connection timed out"
	}
	if !timedOut {
		t.Fatalf("events %s", kinds(evs))
	}
	// The healthy second connection answers pings: it stays up through several intervals.
	f.output([]byte("still here"))
	out, evs := collect(t, conn, func(e TermEvent) bool { return e.Kind == TermOutput })
	time.Sleep(150 * time.Millisecond)
	if string(out) != "still here" || len(conn.Events()) != 0 {
		t.Fatalf("out %q events %s, then %d more", out, kinds(evs), len(conn.Events()))
	}
}

// A socket that stays open, answers pings and relays nothing: while the bridge says the terminal
// runs the silence is legitimate (the connection stays), once it says exited the link counts as
// stalled and the resume from the cursor delivers the rest and the exit.
func TestTerminalStalledLinkNoticedByStatus(t *testing.T) {
	f := newFakeTermServer(t)
	want := numbered(5)
	for i := 0; i < 5; i++ {
		f.output(want[i*10 : (i+1)*10])
	}
	f.setFault(1, connFault{stallAfterChunks: 2})
	opts := fastOpts()
	// Pings are answered: they must not end the connection. The read deadline is three intervals,
	// wide enough that a busy machine's scheduling does not pass for a dead link.
	opts.KeepAlive = 50 * time.Millisecond
	opts.QuietCheck = 20 * time.Millisecond
	conn, err := f.client().ConnectTerminal(context.Background(), "abc", "t1", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := 0
	out, evs := collect(t, conn, func(e TermEvent) bool {
		if e.Kind == TermOutput {
			n++
		}
		return n == 2
	})
	// Wait until the silent link was checked several times while running, and outlived its first
	// read deadline by the pongs alone.
	silentSince := time.Now()
	for {
		f.mu.Lock()
		lookups := f.lookups
		f.mu.Unlock()
		// the connect's own lookup + three quiet checks
		if lookups >= 4 && time.Since(silentSince) > 4*opts.KeepAlive {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for len(conn.Events()) > 0 {
		ev := <-conn.Events()
		evs = append(evs, ev)
	}
	for _, e := range evs {
		if e.Kind != TermReady && e.Kind != TermOutput {
			t.Fatalf("a silent running terminal was treated as broken: %s", kinds(evs))
		}
	}
	f.exit(0)
	more, evs2 := collect(t, conn, nil)
	out = append(out, more...)
	evs = append(evs, evs2...)
	if !bytes.Equal(out, want) {
		t.Fatalf("output %q, want %q (events %s)", out, want, kinds(evs))
	}
	last := evs[len(evs)-1]
	if last.Kind != TermExited || last.Exit == nil || last.Exit.Code != 0 {
		t.Fatalf("events %s", kinds(evs))
	}
	var stalled bool
	for _, e := range evs {
		stalled = stalled || e.Kind == TermInterrupted && errors.Is(e.Err, ErrTerminalStalled) && strings.Contains(e.Reason, "stalled")
	}
	if !stalled {
		for _, e := range evs {
			t.Logf("%s %s %s %v", e.Time.Format("15:04:05.000"), e.Kind, e.Reason, e.Err)
		}
		t.Fatalf("no stalled interruption: %s", kinds(evs))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) != 2 || !strings.Contains(f.queries[1], "cursor=c2") || strings.Contains(f.queries[1], "cols=") {
		t.Fatalf("connect queries %q", f.queries)
	}
}

// A bridge answer that no retry can change ends the connection at the first reconnect attempt,
// with the typed error; the token never shows.
func TestTerminalRefusedReconnectFailsAtOnce(t *testing.T) {
	cases := []struct {
		name   string
		refuse func(f *fakeTermServer)
		is     error
	}{
		{"401 token rotated (lookup)", func(f *fakeTermServer) { f.token = "rotated-token" }, ErrUnauthorized},
		{"400 on the handshake", func(f *fakeTermServer) { f.refuseWith = 400 }, ErrInvalidRequest},
		{"403 on the handshake", func(f *fakeTermServer) { f.refuseWith = 403 }, ErrInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeTermServer(t)
			token := f.token
			conn := f.open(t)
			collect(t, conn, func(e TermEvent) bool { return e.Kind == TermReady })
			f.mu.Lock()
			tc.refuse(f)
			f.mu.Unlock()
			f.dropAll()
			_, evs := collect(t, conn, nil)
			last := evs[len(evs)-1]
			if last.Kind != TermFailed || !errors.Is(last.Err, tc.is) || last.Attempt != 1 {
				t.Fatalf("last %+v; events %s", last, kinds(evs))
			}
			attempts := 0
			for _, e := range evs {
				if e.Kind == TermReconnecting {
					attempts++
				}
			}
			if attempts != 1 {
				t.Fatalf("%d reconnect attempts: %s", attempts, kinds(evs))
			}
			if strings.Contains(last.Err.Error()+last.Reason, token) {
				t.Fatal("token in error")
			}
		})
	}
}

func TestTermRetryable(t *testing.T) {
	for status, want := range map[int]bool{400: false, 401: false, 403: false, 404: false, 405: false, 413: false,
		408: true, 409: true, 425: true, 429: true, 500: true, 502: true, 503: true} {
		if got := termRetryable(&APIError{Status: status}); got != want {
			t.Errorf("%d: retryable %v, want %v", status, got, want)
		}
	}
	if !termRetryable(&TransportError{Op: "dial", Err: errors.New("reset")}) {
		t.Error("transport failure not retryable")
	}
}
