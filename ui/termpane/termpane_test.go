package termpane

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/keymap"
)

var update = flag.Bool("update", false, "rewrite golden files")

type fakeConn struct {
	events chan client.TermEvent
	mu     sync.Mutex
	wrote  bytes.Buffer
	sizes  [][2]int
	closed bool
	sent   atomic.Int64 // output bytes put on events
}

// send puts an event on the connection, counting output bytes.
func (f *fakeConn) send(ev client.TermEvent) {
	if ev.Kind == client.TermOutput {
		f.sent.Add(int64(len(ev.Data)))
	}
	f.events <- ev
}

func newFake() *fakeConn { return &fakeConn{events: make(chan client.TermEvent, 64)} }

func (f *fakeConn) Events() <-chan client.TermEvent { return f.events }
func (f *fakeConn) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wrote.Write(p)
	return len(p), nil
}
func (f *fakeConn) Resize(c, r int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizes = append(f.sizes, [2]int{c, r})
	return nil
}
func (f *fakeConn) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
func (f *fakeConn) written() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wrote.String()
}

// waitWritten polls until the connection received want (the worker runs on its own goroutine).
func (f *fakeConn) waitWritten(t *testing.T, want string) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if strings.Contains(f.written(), want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("connection got %q, want it to contain %q", f.written(), want)
}

func output(s string, seq int) client.TermEvent {
	return client.TermEvent{Kind: client.TermOutput, Data: []byte(s), Cursor: client.FormatCursor("store", int64(seq))}
}

// settle pumps status batches and frames until the pane shows every byte sent so far.
func settle(t *testing.T, m *Model, statuses int) {
	t.Helper()
	for got := 0; got < statuses; {
		msg := waitForStatus(m.id, m.w.status)()
		sm := msg.(statusMsg)
		got += len(sm.events)
		m.Update(sm)
		if sm.closed {
			break
		}
	}
	// Every output event sent so far must be received before "rendered everything" means anything.
	for i := 0; i < 2000; i++ {
		m.Update(frameMsg{id: m.id})
		if s := m.Snapshot(); s.Received == m.w.conn.(*fakeConn).sent.Load() && s.Rendered == s.Received {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("pane never caught up: %+v", m.Snapshot())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs:\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func TestGoldenStates(t *testing.T) {
	f := newFake()
	m := New(f, 110, 7, Options{TerminalID: "0f9d2c1e-aaaa", Command: []string{"bash", "-l"}, Plain: true})
	defer m.Close()
	var views []string
	snap := func(label string) { views = append(views, "== "+label+" ==\n"+m.View()) }
	snap("connecting")

	f.send(client.TermEvent{Kind: client.TermReady})
	f.send(output("\x1b]0;build \x1b\\$ make\r\nok \x1b[31mred\x1b[m\r\n\x1b]2;agent: step 3\a$ ", 1))
	settle(t, m, 1)
	snap("live, titled")

	f.send(client.TermEvent{Kind: client.TermInterrupted, CloseCode: 1006, Reason: "connection lost"})
	f.send(client.TermEvent{Kind: client.TermReconnecting, Attempt: 2})
	settle(t, m, 2)
	snap("reconnecting")

	f.send(client.TermEvent{Kind: client.TermResumed, Attempt: 2})
	f.send(client.TermEvent{Kind: client.TermGap})
	f.send(output("after gap", 9))
	settle(t, m, 2)
	snap("resumed with gap")

	running := true
	f.send(client.TermEvent{Kind: client.TermLost, Reason: "terminal gone: sandbox now runs incarnation 3 (was 2)",
		Loss: &client.LossEvidence{Lookup: "GET terminal: 404 not_found", SandboxRunning: &running, Incarnation: 3, Previous: 2}})
	close(f.events)
	settle(t, m, 1)
	snap("lost")
	golden(t, "states", strings.Join(views, "\n")+"\n")
	if m.Attached() != 0 {
		t.Fatal("a lost pane still counts as attached")
	}
}

func TestGoldenEndings(t *testing.T) {
	cases := []struct {
		name string
		ev   client.TermEvent
	}{
		{"exited", client.TermEvent{Kind: client.TermExited, Exit: &client.Exit{Code: 5}}},
		{"error", client.TermEvent{Kind: client.TermError, CloseCode: 1011, Reason: "terminal error PTY_EXIT_FAILED: boom"}},
		{"failed", client.TermEvent{Kind: client.TermFailed, Reason: "gave up after 10 reconnect attempts"}},
	}
	var views []string
	for _, c := range cases {
		f := newFake()
		m := New(f, 50, 3, Options{TerminalID: "t1", Plain: true})
		f.send(client.TermEvent{Kind: client.TermReady})
		f.send(output("bye\r\n", 4))
		f.send(c.ev)
		close(f.events)
		settle(t, m, 2)
		views = append(views, "== "+c.name+" ==\n"+m.View())
		m.Close()
	}
	golden(t, "endings", strings.Join(views, "\n")+"\n")
}

func TestHeaderIsSanitised(t *testing.T) {
	f := newFake()
	m := New(f, 120, 4, Options{TerminalID: "t\x1b[2Jx", Command: []string{"sh", "-c", "echo \x07\x1b]52;c;AAAA\x07"}, Plain: true})
	defer m.Close()
	f.send(client.TermEvent{Kind: client.TermReady})
	f.send(output("\x1b]0;ti\u009btle\x1b\\", 1))
	settle(t, m, 1)
	h := strings.SplitN(m.View(), "\n", 2)[0]
	for _, r := range h {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			t.Fatalf("control %U in header %q", r, h)
		}
	}
}

func TestQueryRepliesGoToTheConnection(t *testing.T) {
	f := newFake()
	m := New(f, 40, 6, Options{Plain: true})
	defer m.Close()
	f.send(output("ab\x1b[6n", 1)) // cursor position report request
	f.waitWritten(t, "\x1b[1;3R")
	f.send(output("\x1b[c", 2)) // primary device attributes
	f.waitWritten(t, "\x1b[?")
}

func kt(t tea.KeyType) tea.KeyMsg { return tea.KeyMsg{Type: t} }

func TestFocusedKeysAreEncoded(t *testing.T) {
	f := newFake()
	m := New(f, 40, 6, Options{Plain: true, LeaveKey: "ctrl-g"})
	defer m.Close()
	m.Update(kt(tea.KeyUp)) // not focused: ignored
	m.Focus()
	for _, k := range []tea.KeyMsg{
		{Type: tea.KeyRunes, Runes: []rune("hé")},
		{Type: tea.KeyRunes, Runes: []rune("x"), Alt: true},
		kt(tea.KeyCtrlC), kt(tea.KeyEnter), kt(tea.KeyTab), kt(tea.KeyBackspace), kt(tea.KeySpace),
		kt(tea.KeyUp), kt(tea.KeyF5), kt(tea.KeyCtrlLeft), kt(tea.KeyDelete), kt(tea.KeyShiftTab),
		kt(tea.KeyCtrlCloseBracket), // not the leave key here: sent through
	} {
		m.Update(k)
	}
	want := "hé\x1bx\x03\r\t\x7f \x1b[A\x1b[15~\x1b[1;5D\x1b[3~\x1b[Z\x1d"
	f.waitWritten(t, want)
	if f.written() != want {
		t.Fatalf("wrote %q", f.written())
	}

	// Application cursor mode (set by the remote program) changes the arrows' encoding.
	f.send(output("\x1b[?1h", 1))
	settle(t, m, 0)
	m.Update(kt(tea.KeyUp))
	f.waitWritten(t, want+"\x1bOA")

	// Bracketed paste is honoured when the program asked for it.
	f.send(output("\x1b[?2004h", 2))
	settle(t, m, 0)
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("pasted"), Paste: true})
	f.waitWritten(t, "\x1b[200~pasted\x1b[201~")

	// The leave key is never sent; it hands focus back.
	before := f.written()
	_, cmd := m.Update(kt(tea.KeyCtrlG))
	if m.Focused() || cmd == nil {
		t.Fatal("leave key did not leave focus")
	}
	if msg, ok := cmd().(FocusLeftMsg); !ok || msg.ID != m.ID() {
		t.Fatalf("leave produced %#v", cmd())
	}
	time.Sleep(20 * time.Millisecond)
	if f.written() != before {
		t.Fatalf("leave key was sent: %q", strings.TrimPrefix(f.written(), before))
	}
}

func TestMouseForwardedOnlyWhenRequested(t *testing.T) {
	f := newFake()
	m := New(f, 40, 6, Options{Plain: true})
	defer m.Close()
	m.SetOrigin(2, 1)
	m.Focus()
	click := tea.MouseMsg{X: 5, Y: 4, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress}
	m.Update(click)
	time.Sleep(20 * time.Millisecond)
	if f.written() != "" {
		t.Fatalf("mouse sent without a mouse mode: %q", f.written())
	}
	f.send(output("\x1b[?1000h\x1b[?1006h", 1))
	settle(t, m, 0)
	m.Update(click)
	// pane cell (3, 2) → SGR report 1-based: 4;3
	f.waitWritten(t, "\x1b[<0;4;3M")
}

func TestResizeFollowsThePane(t *testing.T) {
	f := newFake()
	m := New(f, 40, 6, Options{Plain: true})
	defer m.Close()
	m.SetSize(100, 31)
	for i := 0; i < 500; i++ {
		f.mu.Lock()
		n := len(f.sizes)
		f.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sizes) != 1 || f.sizes[0] != [2]int{100, 30} {
		t.Fatalf("remote sizes %v", f.sizes)
	}
	if v := m.View(); strings.Count(v, "\n") != 30 {
		t.Fatalf("view has %d lines", strings.Count(v, "\n")+1)
	}
}

func TestCatchingUpIsShown(t *testing.T) {
	f := newFake()
	m := New(f, 60, 4, Options{Plain: true})
	defer m.Close()
	m.snap = Snapshot{Received: 3 << 20, Digested: 1 << 20, Lines: m.snap.Lines}
	if h := strings.SplitN(m.View(), "\n", 2)[0]; !strings.Contains(h, "catching up: 2.0 MiB behind") {
		t.Fatalf("header %q", h)
	}
}

func TestCloseEndsWorker(t *testing.T) {
	for i := 0; i < 3; i++ {
		f := newFake()
		m := New(f, 40, 6, Options{})
		f.send(output("x\x1b[6n", 1))
		m.Focus()
		m.Update(kt(tea.KeyEnter))
		m.Close()
		if !f.closed {
			t.Fatal("connection not closed")
		}
	}
	for i := 0; i < 100; i++ {
		buf := make([]byte, 1<<20)
		s := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(s, "termpane.(*worker)") {
			return
		}
		if i == 99 {
			t.Fatalf("worker goroutines remain:\n%s", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With the user's key map, the leave key comes from it (config overrides included), and the
// unfocused pane's keys ask the root for actions instead of reaching the terminal.
func TestKeyMapLeaveAndActions(t *testing.T) {
	f := newFake()
	km := keymap.New()
	if err := km.ApplyOverrides(map[string][]string{"leave_terminal": {"ctrl+g"}}); err != nil {
		t.Fatal(err)
	}
	m := New(f, 40, 6, Options{Plain: true, Keys: km})
	defer m.Close()
	for key, want := range map[string]Action{"A": AttachAction, "i": InterruptAction, "T": TerminateAction} {
		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(key)})
		if cmd == nil {
			t.Fatalf("%s: no action", key)
		}
		if msg, ok := cmd().(ActionMsg); !ok || msg.Action != want || msg.ID != m.ID() {
			t.Fatalf("%s: got %#v", key, cmd())
		}
	}
	if m.ShortHelp()[0].Help().Desc != km.FocusPane.Help().Desc {
		t.Fatalf("unfocused help: %+v", m.ShortHelp())
	}
	m.Update(kt(tea.KeyEnter))
	if !m.Focused() {
		t.Fatal("enter did not focus the pane")
	}
	if got := m.ShortHelp(); len(got) != 1 || got[0].Help().Key != "ctrl+g" {
		t.Fatalf("focused help: %+v", got)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("A")}) // focused: typed into the terminal
	f.waitWritten(t, "A")
	_, cmd := m.Update(kt(tea.KeyCtrlG))
	if m.Focused() || cmd == nil {
		t.Fatal("the overridden leave key did not leave")
	}
	time.Sleep(20 * time.Millisecond)
	if f.written() != "A" {
		t.Fatalf("wrote %q", f.written())
	}
}

// A stable PTY replays its whole buffer on every connect: the pane clears and repaints (the
// screen holds the text once) and says it replayed; its end is detected with the code unknown.
func TestStableReplayAndUnknownEnd(t *testing.T) {
	f := newFake()
	m := New(f, 160, 4, Options{TerminalID: "dev", Plain: true, Replays: true})
	replay := func(s string, attempt int) {
		f.sent.Add(int64(len("\x1b[H\x1b[2J\x1b[3J") + len(s)))
		f.send(client.TermEvent{Kind: client.TermReplayed, Data: []byte(s), Attempt: attempt})
	}
	replay("$ echo a\r\na\r\n", 0)
	f.send(output("$ ", 0))
	f.send(client.TermEvent{Kind: client.TermInterrupted, CloseCode: 1006, Reason: "dropped"})
	f.send(client.TermEvent{Kind: client.TermReconnecting, Attempt: 1})
	settle(t, m, 3)
	if v := m.View(); !strings.Contains(v, "no cursors: the bridge will replay its whole buffer") {
		t.Errorf("reconnecting header:\n%s", v)
	}
	replay("$ echo a\r\na\r\n$ ", 1)
	settle(t, m, 1)
	v := m.View()
	if !strings.Contains(v, "REPLAYED") || strings.Count(v, "echo a") != 1 {
		t.Errorf("after the replay the screen must hold the text once and say it replayed:\n%s", v)
	}
	f.send(client.TermEvent{Kind: client.TermEnded, Reason: "the shell ended"})
	close(f.events)
	settle(t, m, 1)
	if v := m.View(); !strings.Contains(v, "ENDED · exit code unknown") || strings.Contains(v, "EXITED") {
		t.Errorf("the end:\n%s", v)
	}
	m.Close()
}
