package logview

import (
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// lines is the buffer's text, one entry per line as "source text".
func lines(m *Model) []string {
	var out []string
	for i := 0; i < m.buf.Len(); i++ {
		l, _ := m.buf.Line(i)
		out = append(out, l.Source+" "+l.Text)
	}
	return out
}

// With timestamps on, the lines of several processes are placed by the bridge's timestamp within
// the reorder window, not by arrival; the order of one process never changes; with timestamps off
// they go in on arrival.
func TestMultiFollowPlacesLinesByTimestamp(t *testing.T) {
	now := uitest.T0.Add(time.Hour)
	m, _ := newView(t, target("aaaaaaaa1"), target("bbbbbbbb2"))
	m.ctx.Now = func() time.Time { return now }
	press(t, m, "t")
	if !m.stamps {
		t.Fatal("timestamps are not on")
	}
	// b's line was written first but arrives second; a's two lines keep their order even though
	// the bridge stamped them out of order
	feed(m, 0, data(30, client.Stdout, "a1", "a-first\n"), data(20, client.Stdout, "a2", "a-second\n"))
	feed(m, 1, data(10, client.Stdout, "b1", "b-written-first\n"))
	if m.buf.Len() != 0 {
		t.Fatalf("released before the window: %q", lines(m))
	}
	now = now.Add(reorderWindow)
	m.Update(reorderMsg{owner: m, gen: m.gen})
	got := strings.Join(lines(m), "|")
	if want := "bbbbbbbb b-written-first|aaaaaaaa a-first|aaaaaaaa a-second"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	// a note follows the output it comes after, and a line arriving past the window is placed on
	// arrival
	feed(m, 0, data(40, client.Stdout, "a3", "a-third\n"), client.LogEvent{Kind: client.Interrupted, Time: now, Reason: "cut"})
	now = now.Add(2 * reorderWindow)
	m.Update(reorderMsg{owner: m, gen: m.gen})
	feed(m, 1, data(35, client.Stdout, "b2", "b-late\n"))
	// timestamps off: arrival order, nothing held
	press(t, m, "t")
	feed(m, 1, data(50, client.Stdout, "b3", "b-on-arrival\n"))
	got = strings.Join(lines(m), "|")
	for _, want := range []string{"aaaaaaaa a-second|aaaaaaaa a-third|aaaaaaaa interrupted", "b-late|bbbbbbbb b-on-arrival"} {
		if !strings.Contains(strings.ToLower(got), strings.ToLower(want)) {
			t.Fatalf("order %q lacks %q", got, want)
		}
	}
	if len(m.held) != 0 {
		t.Fatalf("%d entries still held", len(m.held))
	}
}

// In a view of several processes, copy cursor and report act on the process of the line the view
// points at (the newest line while following) and the message names it.
func TestCopyCursorNamesTheLinesProcess(t *testing.T) {
	m, _ := newView(t, target("aaaaaaaa1"), target("bbbbbbbb2"))
	var copied string
	m.ctx.Clipboard = func(s string) error { copied = s; return nil }
	feed(m, 0, data(1, client.Stdout, "a1", "from a\n"))
	feed(m, 1, data(2, client.Stdout, "b1", "from b\n"))
	msgs := press(t, m, "y")
	if copied != "b1" || len(msgs) != 1 || !strings.Contains(msgs[0].(common.StatusMsg).Text, "cursor of bbbbbbbb (the newest line): b1") {
		t.Fatalf("copied %q, messages %+v", copied, msgs)
	}
	press(t, m, "g") // top: not following
	msgs = press(t, m, "y")
	if copied != "a1" || !strings.Contains(msgs[0].(common.StatusMsg).Text, "cursor of aaaaaaaa (the top line)") {
		t.Fatalf("copied %q, messages %+v", copied, msgs)
	}
	msgs = press(t, m, "P")
	if len(msgs) != 1 || !strings.HasPrefix(msgs[0].(common.StatusMsg).Text, "report of aaaaaaaa (the top line): ") {
		t.Fatalf("report messages %+v", msgs)
	}
}
