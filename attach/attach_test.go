package attach

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
)

type fakeConn struct {
	mu     sync.Mutex
	events chan client.TermEvent
	input  bytes.Buffer
	wrote  chan struct{}
}

func newFakeConn() *fakeConn {
	return &fakeConn{events: make(chan client.TermEvent, 16), wrote: make(chan struct{}, 64)}
}
func (f *fakeConn) Events() <-chan client.TermEvent { return f.events }
func (f *fakeConn) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.input.Write(p)
	f.mu.Unlock()
	f.wrote <- struct{}{}
	return len(p), nil
}
func (f *fakeConn) Resize(int, int) error { return nil }
func (f *fakeConn) Close() error          { return nil }
func (f *fakeConn) got() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.input.String()
}

func TestParseDetachKey(t *testing.T) {
	for spec, want := range map[string]DetachKey{
		"ctrl-]":   {Prefix: 0x1d},
		"ctrl-a d": {Prefix: 0x01, Second: 'd'},
		"C-b C-d":  {Prefix: 0x02, Second: 0x04},
		"^\\":      {Prefix: 0x1c},
	} {
		k, err := ParseDetachKey(spec)
		if err != nil || k.Prefix != want.Prefix || k.Second != want.Second {
			t.Errorf("%q → %+v, %v", spec, k, err)
		}
	}
	for _, bad := range []string{"", "a", "ctrl-", "ctrl-ab", "ctrl-a ctrl-a", "ctrl-a b c", "ctrl-1", "shift-x"} {
		if _, err := ParseDetachKey(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDetectorPrefix(t *testing.T) {
	k, _ := ParseDetachKey("ctrl-a d")
	d := &detector{key: k}
	out, det := d.feed([]byte("x\x01\x01y\x01zq"))
	if det || string(out) != "x\x01y\x01zq" {
		t.Fatalf("%q %v", out, det)
	}
	out, det = d.feed([]byte("ab\x01"))
	if det || string(out) != "ab" {
		t.Fatalf("%q %v", out, det)
	}
	out, det = d.feed([]byte("d rest"))
	if !det || len(out) != 0 {
		t.Fatalf("split prefix: %q %v", out, det)
	}
}

func run(t *testing.T, conn *fakeConn, stdin io.Reader, key string) (Result, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	res, err := Run(context.Background(), conn, Options{Stdin: stdin, Stdout: &out, Stderr: &errb, DetachKey: key, ReattachHint: "sandscope attach abc t1"})
	if err != nil {
		t.Fatal(err)
	}
	return res, out.String(), errb.String()
}

func TestRunDetachPassesInputAndOutput(t *testing.T) {
	conn := newFakeConn()
	pr, pw := io.Pipe()
	defer pw.Close()
	conn.events <- client.TermEvent{Kind: client.TermReady}
	conn.events <- client.TermEvent{Kind: client.TermOutput, Data: []byte("\x1b[?1049hhello")}
	go func() {
		pw.Write([]byte("ls\r"))
		<-conn.wrote
		pw.Write([]byte("\x1d"))
	}()
	res, out, errs := run(t, conn, pr, "")
	if res.Ending != Detached || res.ExitStatus() != 0 {
		t.Fatalf("%+v", res)
	}
	if conn.got() != "ls\r" {
		t.Fatalf("input %q", conn.got())
	}
	if !strings.HasPrefix(out, "\x1b[?1049hhello") {
		t.Fatalf("output %q", out)
	}
	if !strings.Contains(errs, "sandscope: detached; reattach with: sandscope attach abc t1") {
		t.Fatalf("stderr %q", errs)
	}
}

func TestRunExitCodesAndNotices(t *testing.T) {
	cases := []struct {
		evs    []client.TermEvent
		status int
		notice string
	}{
		{[]client.TermEvent{{Kind: client.TermExited, Exit: &client.Exit{Code: 5}}}, 5, ""},
		{[]client.TermEvent{
			{Kind: client.TermInterrupted, CloseCode: 1012, Reason: "Runtime replaced"},
			{Kind: client.TermReconnecting, Attempt: 1},
			{Kind: client.TermLost, Reason: "terminal gone: sandbox now runs incarnation 2 (was 1)", Loss: &client.LossEvidence{Lookup: "GET terminal: 404 not_found"}},
		}, 3, "sandscope: LOST: terminal gone: sandbox now runs incarnation 2 (was 1) [GET terminal: 404 not_found]"},
		{[]client.TermEvent{{Kind: client.TermFailed, Reason: "gave up"}}, 4, "sandscope: FAILED: gave up"},
		{[]client.TermEvent{{Kind: client.TermGap}, {Kind: client.TermExited, Exit: &client.Exit{Code: 0}}}, 0, "sandscope: GAP"},
	}
	for _, c := range cases {
		conn := newFakeConn()
		for _, e := range c.evs {
			conn.events <- e
		}
		pr, pw := io.Pipe()
		res, _, errs := run(t, conn, pr, "ctrl-a d")
		pw.Close()
		if res.ExitStatus() != c.status || !strings.Contains(errs, c.notice) {
			t.Errorf("%v: status %d notices %q", c.evs[len(c.evs)-1].Kind, res.ExitStatus(), errs)
		}
	}
}

func TestCommandFitsTeaExec(t *testing.T) {
	conn := newFakeConn()
	conn.events <- client.TermEvent{Kind: client.TermExited, Exit: &client.Exit{Code: 2}}
	cmd := NewCommand(context.Background(), conn, Options{})
	var out bytes.Buffer
	pr, pw := io.Pipe()
	defer pw.Close()
	cmd.SetStdin(pr)
	cmd.SetStdout(&out)
	cmd.SetStderr(&out)
	if err := cmd.Run(); err != nil || cmd.Result.ExitStatus() != 2 {
		t.Fatalf("%v %+v", err, cmd.Result)
	}
}

// The TUI hands the screen over with tea.Exec.
var _ tea.ExecCommand = (*Command)(nil)
