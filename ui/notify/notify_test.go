package notify

import (
	"strings"
	"testing"
	"time"

	"sandscope/record"
	"sandscope/ui/internal/uitest"
)

func TestCleanLeavesNothingThatEndsASequence(t *testing.T) {
	in := "a\x1b]2;x\x07b\x9c\xc2\x9bc;d\x7f\x00e\xff\u202eé" + strings.Repeat("z", 300)
	got := Clean(in, 200)
	for _, r := range got {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == ';' || r == '\u202e' {
			t.Fatalf("Clean left %U in %q", r, got)
		}
	}
	if !strings.HasPrefix(got, "a ]2,x b\uFFFD c,d e\uFFFD é") || !strings.HasSuffix(got, "…") {
		t.Fatalf("Clean: %q", got)
	}
	if n := len([]rune(got)); n != 201 {
		t.Fatalf("Clean kept %d runes", n)
	}
}

func TestSequence(t *testing.T) {
	if b := Sequence(Signals{}, "t", "b"); b != nil {
		t.Fatalf("no signals wrote %q", b)
	}
	if b := string(Sequence(Signals{Bell: true}, "t", "b")); b != "\a" {
		t.Fatalf("bell: %q", b)
	}
	b := string(Sequence(Signals{OSC9: true, OSC777: true}, "LOST sb/p;1", "gone\x07\x1b\\"))
	want := "\x1b]9;sandscope: LOST sb/p,1 — gone \\\a\x1b]777;notify;sandscope: LOST sb/p,1;gone \\\a"
	if b != want {
		t.Fatalf("got %q\nwant %q", b, want)
	}
}

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings(map[string][]string{"ended": {"bell", "osc777"}, "gap": {}})
	if err != nil || !s[record.AlertEnded].Bell || !s[record.AlertEnded].OSC777 || s[record.AlertEnded].OSC9 || s[record.AlertGap].Any() {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := ParseSettings(map[string][]string{"ended": {"beep"}}); err == nil || !strings.Contains(err.Error(), `"beep" is not one of`) {
		t.Fatalf("err %v", err)
	}
	if _, err := ParseSettings(map[string][]string{"done": {"bell"}}); err == nil || !strings.Contains(err.Error(), `no kind "done"`) {
		t.Fatalf("err %v", err)
	}
}

func TestListViewAndKeys(t *testing.T) {
	ctx := uitest.Context(t, uitest.NewBridge(), 100, 20)
	m := New(ctx)
	m.SetSize(90, 12)
	if v := m.View(); !strings.Contains(v, "Notifications (0)") || !strings.Contains(v, "Nothing yet") {
		t.Fatalf("empty view:\n%s", v)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var as []record.Alert
	for i := 0; i < 12; i++ {
		as = append(as, record.Alert{Seq: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), Kind: record.AlertGap, Sandbox: "sb",
			Entity: record.Process, ID: "p" + string(rune('a'+i)), Command: []string{"x\x1b[31m"}, Text: "GAP: 5 bytes missing\x07"})
	}
	added := m.Add(as, 2)
	if len(added) != 12 || m.Unread() != 12 || m.Len() != 12 {
		t.Fatalf("added %d unread %d len %d", len(added), m.Unread(), m.Len())
	}
	v := m.View()
	if !strings.Contains(v, "03:04:16") || strings.Contains(v, "03:04:05") || !strings.Contains(v, "2 older notifications were dropped") {
		t.Fatalf("view (newest first, cut to the box):\n%s", v)
	}
	if strings.ContainsAny(v, "\x07\x1b") {
		t.Fatalf("raw controls: %q", v)
	}
	for i := 0; i < 11; i++ {
		m, _ = m.Update(uitest.Key("j"))
	}
	if it, _ := m.selected(); it.ID != "pa" {
		t.Fatalf("cursor on %s", it.ID)
	}
	if v := m.View(); !strings.Contains(v, "03:04:05") {
		t.Fatalf("the oldest is not in view at the bottom:\n%s", v)
	}
	m.Opened()
	if m.Unread() != 0 {
		t.Fatal("unread after opening")
	}
	if lines := strings.Split(m.View(), "\n"); len(lines) > 12 {
		t.Fatalf("the box is %d lines, more than its size 12", len(lines))
	}
}
