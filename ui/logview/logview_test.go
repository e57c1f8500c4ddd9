package logview

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

var update = flag.Bool("update", false, "rewrite golden files")

const wait = 50 * time.Millisecond

func at(ms int) time.Time { return uitest.T0.Add(time.Duration(ms) * time.Millisecond) }

func target(id string, argv ...string) common.LogTarget {
	return common.LogTarget{Sandbox: "sandboxaaaaaaaaaaaaaaaaa", Incarnation: 2,
		Process: client.Process{ID: id, Command: argv, State: "running", StartedAt: uitest.T0}}
}

func newView(t *testing.T, targets ...common.LogTarget) (*Model, *uitest.Bridge) {
	br := uitest.NewBridge()
	ctx := uitest.Context(t, br, 100, 27)
	m := New(ctx, targets, Options{})
	m.SetSize(100, 27)
	m.Init()
	t.Cleanup(m.Close)
	return m, br
}

func data(ms int, stream client.Stream, cursor, s string) client.LogEvent {
	return client.LogEvent{Kind: client.Data, Time: at(ms), Stream: stream, Cursor: cursor, Data: []byte(s)}
}

func feed(m *Model, src int, evs ...client.LogEvent) {
	m.Update(logBatchMsg{owner: m, src: src, gen: m.gen, events: evs})
}

func press(t *testing.T, m *Model, keys ...string) []tea.Msg {
	t.Helper()
	var up []tea.Msg
	for _, k := range keys {
		_, cmd := m.Update(uitest.Key(k))
		for _, msg := range uitest.Exec(cmd, wait) {
			switch msg.(type) {
			case searchMsg, filterMsg, savedMsg:
				_, c := m.Update(msg)
				up = append(up, uitest.Exec(c, wait)...)
			default:
				up = append(up, msg)
			}
		}
	}
	return up
}

func typeText(m *Model, s string) {
	for _, k := range uitest.Type(s) {
		m.Update(k)
	}
}

func statusLine(m *Model) string {
	lines := strings.Split(m.View(), "\n")
	return lines[len(lines)-2]
}

var running = &client.Process{ID: "p1", State: "running"}

// TestGoldenStreamStates walks one follow through every state and marker and checks the status
// line and the inline markers at each step.
func TestGoldenStreamStates(t *testing.T) {
	m, _ := newView(t, target("p1", "npm", "test"))
	if !strings.Contains(statusLine(m), "CONNECTING") {
		t.Fatalf("before any event: %q", statusLine(m))
	}
	feed(m, 0,
		data(0, client.Stdout, "c1", "building…\n"),
		data(10, client.Stderr, "c2", "warning: deprecated flag\n"),
		data(20, client.Stdout, "c3", "step 1 done\nstep 2 "),
	)
	if s := statusLine(m); !strings.Contains(s, "LIVE") || !strings.Contains(s, "cursor c3") {
		t.Fatalf("live: %q", s)
	}
	uitest.Golden(t, "state_live", m.View(), *update)

	feed(m, 0,
		client.LogEvent{Kind: client.Interrupted, Time: at(1000), Cursor: "c3", Reason: "connection reset by peer"},
		client.LogEvent{Kind: client.Reconnecting, Time: at(1500), Cursor: "c3", Attempt: 2},
	)
	if s := statusLine(m); !strings.Contains(s, "RECONNECTING 2") || !strings.Contains(s, "connection reset") {
		t.Fatalf("reconnecting: %q", s)
	}
	uitest.Golden(t, "state_reconnecting", m.View(), *update)

	feed(m, 0,
		client.LogEvent{Kind: client.Resumed, Time: at(2000), Cursor: "c3", Attempt: 2},
		data(2100, client.Stdout, "c4", "done\n"),
		client.LogEvent{Kind: client.Gap, Time: at(2200), Cursor: "c4", Gap: &client.GapInfo{Reason: client.GapTruncated, Bytes: 4096, Events: -1, FromCursor: "c4"}},
		data(2300, client.Stdout, "c9", "step 9\n"),
		client.LogEvent{Kind: client.Quiet, Time: at(7000), Cursor: "c9", Status: running},
	)
	if s := statusLine(m); !strings.Contains(s, "QUIET") || !strings.Contains(s, ": running") {
		t.Fatalf("quiet: %q", s)
	}
	uitest.Golden(t, "state_quiet", m.View(), *update)

	feed(m, 0, client.LogEvent{Kind: client.SuspectEnd, Time: at(8000), Cursor: "c9", Status: running, Reason: "stream sent exit 0"})
	if s := statusLine(m); !strings.Contains(s, "SUSPECT END") || strings.Contains(s, "ENDED") {
		t.Fatalf("suspect end: %q", s)
	}
	uitest.Golden(t, "state_suspect_end", m.View(), *update)

	end := at(9000)
	feed(m, 0,
		data(8500, client.Stdout, "c10", "still here\n"),
		client.LogEvent{Kind: client.Ended, Time: end, Cursor: "c10", Status: &client.Process{ID: "p1", State: "exited", EndedAt: &end, Exit: &client.Exit{Code: 2}}},
	)
	if s := statusLine(m); !strings.Contains(s, "ENDED (EXITED 2)") || !strings.Contains(s, "confirmed") {
		t.Fatalf("ended: %q", s)
	}
	uitest.Golden(t, "state_ended", m.View(), *update)
	if m.Attached() != 0 {
		t.Fatal("an ended follow still counts as attached")
	}
}

func TestGoldenLostAndFailed(t *testing.T) {
	m, _ := newView(t, target("p1", "agent"))
	no := false
	feed(m, 0,
		data(0, client.Stdout, "c1", "thinking\n"),
		client.LogEvent{Kind: client.Lost, Time: at(100), Cursor: "c1", Loss: &client.LossEvidence{Lookup: "GET process: 404 not_found", SandboxRunning: &no, Previous: 1}},
	)
	if s := statusLine(m); !strings.Contains(s, "LOST") || !strings.Contains(s, "sandbox now stopped") {
		t.Fatalf("lost: %q", s)
	}
	uitest.Golden(t, "state_lost", m.View(), *update)

	m2, _ := newView(t, target("p2", "agent"))
	feed(m2, 0, client.LogEvent{Kind: client.Failed, Time: at(100), Reason: "bridge unreachable after 10 attempts", Err: errors.New("dial tcp: connection refused")})
	if s := statusLine(m2); !strings.Contains(s, "FAILED") || !strings.Contains(s, "10 attempts") {
		t.Fatalf("failed: %q", s)
	}
	uitest.Golden(t, "state_failed", m2.View(), *update)
}

func TestClosedWithoutEndingIsNotSuccess(t *testing.T) {
	m, _ := newView(t, target("p1", "x"))
	m.Update(logBatchMsg{owner: m, src: 0, gen: m.gen, events: []client.LogEvent{data(0, client.Stdout, "c1", "out\n")}, closed: true})
	s := statusLine(m)
	if !strings.Contains(s, "FAILED") || strings.Contains(s, "ENDED") || strings.Contains(s, "EXITED") {
		t.Fatalf("a closed stream without Ended must not look like an ending: %q", s)
	}
	if !strings.Contains(m.View(), "without a confirmed ending") {
		t.Fatal("no marker for the unconfirmed close")
	}
}

func TestUntrustedBytesAreSanitised(t *testing.T) {
	m, _ := newView(t, target("p1", "x"))
	feed(m, 0, data(0, client.Stdout, "c1", "a\x1b]52;c;ZXZpbA==\x07b\x1b[2J\x1b[31mred\x1b[0m\x07\n"))
	v := m.View()
	if strings.Contains(v, "]52") || strings.Contains(v, "\x07") || strings.Contains(v, "[2J") {
		t.Fatalf("escape reached the screen: %q", v)
	}
	if !strings.Contains(v, "abred^G") {
		t.Fatalf("text lost: %q", v)
	}
}

func TestSearchFilterMarkers(t *testing.T) {
	m, _ := newView(t, target("p1", "x"))
	var evs []client.LogEvent
	for i := 0; i < 60; i++ {
		evs = append(evs, data(i, client.Stdout, "c", "line "+string(rune('a'+i%26))+"\n"))
		if i == 40 {
			evs = append(evs, client.LogEvent{Kind: client.Interrupted, Time: at(i), Cursor: "c", Reason: "reset"})
		}
	}
	evs = append(evs, data(100, client.Stderr, "c", "NEEDLE here\n"))
	feed(m, 0, evs...)

	press(t, m, "g")
	press(t, m, "/")
	typeText(m, "needle")
	press(t, m, "enter")
	if m.match != 61 {
		t.Fatalf("search found %d, want 61", m.match)
	}
	if m.follow {
		t.Fatal("a search hit should stop following")
	}
	uitest.Golden(t, "search", m.View(), *update)

	press(t, m, "g", "]")
	if l, _ := m.buf.Line(m.match); !l.IsMarker() {
		t.Fatalf("] did not land on a marker: %+v", l)
	}
	press(t, m, "&")
	typeText(m, "line b")
	press(t, m, "enter")
	if m.total() != 3+1 { // b at 1, 27, 53, plus the marker
		t.Fatalf("filter kept %d entries", m.total())
	}
	uitest.Golden(t, "filter", m.View(), *update)
	press(t, m, "&")
	m.input.SetValue("")
	press(t, m, "enter")
	if m.filter != nil {
		t.Fatal("empty filter did not clear")
	}
}

func TestSaveRawAndCopyCursor(t *testing.T) {
	m, _ := newView(t, target("p1", "x"))
	var copied string
	m.ctx.Clipboard = func(s string) error { copied = s; return nil }
	raw := "out 1\n\x1b[31mred\x1b[0m\nno newline"
	feed(m, 0,
		data(0, client.Stdout, "cur-1", "out 1\n"),
		data(1, client.Stderr, "cur-2", "\x1b[31mred\x1b[0m\n"),
		data(2, client.Stdout, "verylongcursorvalue-0123456789abcdef", "no newline"),
	)
	path := filepath.Join(t.TempDir(), "out.log")
	press(t, m, "s")
	m.dialog.Fields[0].SetValue(path)
	up := press(t, m, "enter")
	got, err := os.ReadFile(path)
	if err != nil || string(got) != raw {
		t.Fatalf("saved %q (%v), want %q; msgs %+v", got, err, raw, up)
	}
	shown := ""
	for _, msg := range press(t, m, "y") {
		if s, ok := msg.(common.StatusMsg); ok {
			shown += s.Text
		}
	}
	if copied != "verylongcursorvalue-0123456789abcdef" {
		t.Fatalf("copied %q", copied)
	}
	if !strings.Contains(shown, "verylongcursorvalue-0123456789abcdef") {
		t.Fatalf("the full cursor is not shown after copying: %q", shown)
	}
	if strings.Contains(m.View(), "copied") {
		t.Fatal("the message is in the view too (the status area shows it once)")
	}
	// saving never overwrites
	press(t, m, "s")
	m.dialog.Fields[0].SetValue(path)
	up = press(t, m, "enter")
	failed := false
	for _, msg := range up {
		if s, ok := msg.(common.StatusMsg); ok && s.Level == common.Error {
			failed = true
		}
	}
	if !failed {
		t.Fatal("save over an existing file did not fail")
	}
}

func TestTogglesAndJSONL(t *testing.T) {
	m, _ := newView(t, target("p1", "claude", "-p"))
	feed(m, 0,
		data(0, client.Stdout, "c1", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Reading the repo"}]}}`+"\n"),
		data(5, client.Stdout, "c2", `{"type":"result","subtype":"success","is_error":false,"result":"done"}`+"\n"),
		data(9, client.Stdout, "c3", "plain text line that is quite long and goes on and on past the edge of a narrow view for sure, really\n"),
	)
	press(t, m, "J", "t", "w")
	if !m.jsonl || !m.stamps || !m.wrap {
		t.Fatal("toggles did not switch")
	}
	uitest.Golden(t, "jsonl_time_wrap", m.View(), *update)
	press(t, m, "f")
	if m.follow {
		t.Fatal("f did not stop following")
	}
}

func TestMultiFollowPrefixes(t *testing.T) {
	m, br := newView(t, target("p1", "api"), target("p2", "worker"))
	if !br.Called("follow p1") || !br.Called("follow p2") {
		t.Fatal("not both followed")
	}
	feed(m, 0, data(0, client.Stdout, "a1", "api up\n"))
	feed(m, 1, data(1, client.Stderr, "b1", "worker crashed\n"))
	end := at(5)
	feed(m, 1, client.LogEvent{Kind: client.Ended, Time: end, Cursor: "b1", Status: &client.Process{State: "exited", Exit: &client.Exit{Code: 1}}})
	feed(m, 0, data(2, client.Stdout, "a2", "api still up\n"))
	v := m.View()
	if !strings.Contains(v, "p2 ENDED (EXITED 1)") || !strings.Contains(v, "p1 LIVE") {
		t.Fatalf("status line per source missing:\n%s", v)
	}
	uitest.Golden(t, "multi", v, *update)
	if m.Attached() != 1 {
		t.Fatalf("attached %d, want 1", m.Attached())
	}
}

func TestStaleTargetNoted(t *testing.T) {
	tg := target("p1", "x")
	tg.Stale, tg.Incarnation = true, 1
	m, _ := newView(t, tg)
	if strings.Contains(m.View(), "belongs to incarnation #1") {
		t.Fatal("the capture was read on the UI goroutine (Init), not in a command")
	}
	m.Update(m.loadCapture(0)()) // what Init's command reads from the record
	if !strings.Contains(m.View(), "belongs to incarnation #1") {
		t.Fatalf("stale follow not explained:\n%s", m.View())
	}
}

func TestViewsIgnoreEachOthersMessages(t *testing.T) {
	a, _ := newView(t, target("p1", "x"))
	b, _ := newView(t, target("p1", "x"))
	if _, cmd := b.Update(tickMsg{owner: a, gen: a.gen}); cmd != nil {
		t.Fatal("a view re-armed another view's tick")
	}
	b.Update(logBatchMsg{owner: a, src: 0, gen: a.gen, events: []client.LogEvent{data(0, client.Stdout, "c", "for a\n")}})
	if b.buf.Len() != 0 {
		t.Fatal("a view took another view's output")
	}
}

// TestJSONLWraps: in the JSONL view a long summary is cut with wrap off and folded onto several
// rows, whole, with wrap on.
func TestJSONLWraps(t *testing.T) {
	m, _ := newView(t, target("p1", "claude", "-p"))
	long := strings.Repeat("word ", 40) + "THEEND"
	feed(m, 0, data(0, client.Stdout, "c1", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"`+long+`"}]}}`+"\n"))
	press(t, m, "J")
	if strings.Contains(m.View(), "THEEND") {
		t.Fatalf("wrap off shows the end of a line wider than the view:\n%s", m.View())
	}
	press(t, m, "w")
	v := m.View()
	if !strings.Contains(v, "THEEND") {
		t.Fatalf("wrap on does not show the whole summary:\n%s", v)
	}
}

// TestNextMatchKeysTypedTogether: n pressed three times before the first search answers (keys
// typed together arrive in one update) moves three matches, as three separate presses do; N
// steps back the same way.
func TestNextMatchKeysTypedTogether(t *testing.T) {
	m, _ := newView(t, target("p1", "x"))
	var evs []client.LogEvent
	for i := 0; i < 50; i++ {
		text := "filler\n"
		if i%10 == 0 {
			text = "hit\n"
		}
		evs = append(evs, data(i, client.Stdout, "c", text))
	}
	feed(m, 0, evs...)
	press(t, m, "g", "/")
	typeText(m, "hit")
	press(t, m, "enter")
	if m.match != 0 {
		t.Fatalf("first match %d, want 0", m.match)
	}
	// three n in one go: each asks before any search answered
	var cmds []tea.Cmd
	for range 3 {
		_, cmd := m.Update(uitest.Key("n"))
		cmds = append(cmds, cmd)
	}
	for i := 0; i < 5 && m.searching; i++ {
		var next []tea.Cmd
		for _, msg := range uitest.Exec(tea.Batch(cmds...), wait) {
			_, c := m.Update(msg)
			next = append(next, c)
		}
		cmds = next
	}
	if m.match != 30 {
		t.Fatalf("nnn together moved to %d, want 30 (three matches on)", m.match)
	}
	_, c1 := m.Update(uitest.Key("N"))
	_, c2 := m.Update(uitest.Key("N"))
	cmds = []tea.Cmd{c1, c2}
	for i := 0; i < 5 && m.searching; i++ {
		var next []tea.Cmd
		for _, msg := range uitest.Exec(tea.Batch(cmds...), wait) {
			_, c := m.Update(msg)
			next = append(next, c)
		}
		cmds = next
	}
	if m.match != 10 {
		t.Fatalf("NN together moved to %d, want 10", m.match)
	}
}

// TestLostCaptureBytesAreTheRecordsGap: captured bytes whose file is gone show as a gap of the
// record's, where they were, never as output the bridge evicted.
func TestLostCaptureBytesAreTheRecordsGap(t *testing.T) {
	tg := target("p1", "agent")
	tg.Lost, tg.Incarnation = true, 1
	m, _ := newView(t, tg)
	lost := &record.OutputLostError{Segment: 1, Offset: 1080, Length: 803, Why: "its segment file is missing"}
	c := record.Capture{Found: true, Began: at(0), Bytes: 806, Chunks: []record.Chunk{
		{Time: at(1), Cursor: "c1", Stream: client.Stdout, Data: []byte("kept\n")},
		{Time: at(2), Cursor: "c2", Lost: lost, LostBytes: 803},
		{Time: at(3), Cursor: "c3", Stream: client.Stdout, Data: []byte("after\n")},
	}}
	m.Update(captureMsg{owner: m, gen: m.gen, i: 0, c: c, st: record.NewState(tg.Sandbox)})
	v := m.View()
	if !strings.Contains(v, "output the record no longer holds (803 bytes missing)") || strings.Contains(v, "evicted by the bridge") {
		t.Fatalf("the lost bytes are not the record's gap:\n%s", v)
	}
	if strings.Index(v, "kept") > strings.Index(v, "no longer holds") || strings.Index(v, "no longer holds") > strings.Index(v, "after") {
		t.Fatalf("the gap is not where the bytes were:\n%s", v)
	}
}
