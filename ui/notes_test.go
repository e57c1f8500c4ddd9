package ui

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
	"sandscope/ui/logview"
	"sandscope/ui/notify"
	"sandscope/ui/sandbox"
)

// A process of another sandbox ends while a sandbox screen is open: the status area and the
// notification list tell of it once (the watcher and the stream both saw the ending), the bell and
// both desktop notifications are written with the hostile command cleaned, and Enter on the entry
// opens its log.
func TestNotificationWhileAnotherScreenIsOpen(t *testing.T) {
	br := uitest.NewBridge()
	var mu sync.Mutex
	var written []byte
	m := newRootWith(t, br, Options{
		Notify: notify.Settings{record.AlertEnded: {Bell: true, OSC9: true, OSC777: true}, record.AlertLost: {Bell: true}},
		Terminal: func(p []byte) error {
			mu.Lock()
			defer mu.Unlock()
			written = append(written, p...)
			return nil
		},
	})
	step(m, common.OpenSandboxMsg{ID: "sandboxaaaa"}, 0)
	if _, ok := m.top().(*sandbox.Model); !ok {
		t.Fatal("no sandbox screen")
	}
	rec := m.ctx.Record
	if rec == nil {
		t.Fatal("no record")
	}
	inc := client.Incarnation{Number: 1}
	hostile := []string{"agent", "\x1b]2;PWNED\x07\x07;rm\x1b[2J"}
	p := client.Process{ID: "p1", Command: hostile, State: "running"}
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "other", Time: uitest.T0, Incarnation: inc, Process: &p}))
	ended := p
	ended.State, ended.Exit = "exited", &client.Exit{Code: 5}
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "other", Time: uitest.T0, Incarnation: inc, Process: &ended}))
	rec.Add(record.FromLogEvent("other", "p1", client.LogEvent{Kind: client.Ended, Time: uitest.T0, Cursor: "c1", Status: &ended}))
	step(m, alertsMsg{ch: m.alertCh}, 1)

	// the outcome first, then the short name follow-all uses, then the rest
	if !strings.HasPrefix(m.status, "EXITED 5 agent-p1 · other/p1 · ") || strings.ContainsAny(m.status, "\x1b\x07") {
		t.Fatalf("status: %q", m.status)
	}
	if !strings.Contains(m.View(), "other/p1") {
		t.Fatalf("the status area does not show it:\n%s", m.View())
	}
	items := m.Notifications()
	if len(items) != 1 || items[0].Kind != record.AlertEnded {
		t.Fatalf("notifications: %+v", items)
	}
	mu.Lock()
	got := append([]byte(nil), written...)
	mu.Unlock()
	want := "\x1b]9;sandscope: EXITED 5 agent-p1 — EXITED 5 · other/p1 · agent ]2,PWNED ,rm [2J\a" +
		"\x1b]777;notify;sandscope: EXITED 5 agent-p1;EXITED 5 · other/p1 · agent ]2,PWNED ,rm [2J\a" + "\a"
	if string(got) != want {
		t.Fatalf("written %q\nwant    %q", got, want)
	}

	// the list opens from the sandbox screen, and Enter opens the log of the process
	step(m, uitest.Key("M"), 0)
	v := m.View()
	for _, w := range []string{"Notifications (1)", "EXITED 5 agent-p1 · other/p1"} {
		if !strings.Contains(v, w) {
			t.Fatalf("the list lacks %q:\n%s", w, v)
		}
	}
	if strings.ContainsAny(v, "\x07") || strings.Contains(v, "\x1b]") {
		t.Fatalf("raw control bytes on screen: %q", v)
	}
	step(m, uitest.Key("enter"), 1)
	if _, ok := m.top().(*logview.Model); !ok || m.notesOpen {
		t.Fatalf("enter did not open the log (top %T, list open %v)", m.top(), m.notesOpen)
	}
}

// Without signals configured nothing is written to the terminal; the list still fills.
func TestNotificationWithoutSignals(t *testing.T) {
	var written []byte
	m := newRootWith(t, uitest.NewBridge(), Options{Terminal: func(p []byte) error { written = append(written, p...); return nil }})
	inc := client.Incarnation{Number: 1}
	p := client.Process{ID: "p2", Command: []string{"sleep"}, State: "running"}
	m.ctx.Record.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: uitest.T0, Incarnation: inc, Process: &p}))
	m.ctx.Record.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessVanished, Sandbox: "sb", Time: uitest.T0, Incarnation: inc, Process: &p, Evidence: []string{"absent from the list"}}))
	step(m, alertsMsg{ch: m.alertCh}, 1)
	if items := m.Notifications(); len(items) != 1 || items[0].Kind != record.AlertLost || !strings.Contains(items[0].Text, "absent from the list") {
		t.Fatalf("notifications: %+v", items)
	}
	if len(written) != 0 {
		t.Fatalf("written %q", written)
	}
}

// A notification takes the status area at once, even from the message of the user's own action
// or a warning (a LOST must not wait behind it); the message comes back when the notification
// fades, and the header counts the notification at once.
func TestNotificationTakesTheStatusAtOnce(t *testing.T) {
	m := newRootWith(t, uitest.NewBridge(), Options{})
	step(m, common.StatusMsg{Level: common.Warn, Text: "refresh failed: the bridge is slow"}, 0)
	inc := client.Incarnation{Number: 1}
	p := client.Process{ID: "p3", Command: []string{"agent"}, State: "running"}
	m.ctx.Record.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sb", Time: uitest.T0, Incarnation: inc, Process: &p}))
	m.ctx.Record.Add(record.FromLogEvent("sb", "p3", client.LogEvent{Kind: client.Lost, Time: uitest.T0}))
	step(m, alertsMsg{ch: m.alertCh}, 0)
	v := m.View()
	if !strings.HasPrefix(m.status, "LOST agent-p3 · sb/p3") || !strings.Contains(v, "LOST agent-p3") || strings.Contains(v, "refresh failed") || !strings.Contains(v, "M 1 new") {
		t.Fatalf("the notification waited, or the header lacks the count (status %q):\n%s", m.status, v)
	}
	step(m, statusExpiredMsg{gen: m.statusGen}, 0)
	if m.status != "refresh failed: the bridge is slow" || m.statusLevel != common.Warn {
		t.Fatalf("the pushed-aside message did not come back: %q", m.status)
	}
	step(m, statusExpiredMsg{gen: m.statusGen}, 0)
	if m.status != "" {
		t.Fatalf("status after both faded: %q", m.status)
	}
	step(m, uitest.Key("M"), 0)
	if strings.Contains(m.View(), "M 1 new") {
		t.Fatal("the unread count stays after the list was opened")
	}
}

// In the list at 80×24 a failing and a passing run differ at a glance: each row leads with the
// outcome, then the short name.
func TestNotificationListLeadsWithTheOutcome(t *testing.T) {
	m := newRootWith(t, uitest.NewBridge(), Options{})
	step(m, tea.WindowSizeMsg{Width: 80, Height: 24}, 0)
	inc := client.Incarnation{Number: 1}
	script := []string{"sh", "-c", strings.Repeat("echo a long test script line; ", 20), "npm-test"}
	for i, code := range []int{2, 0} {
		p := client.Process{ID: fmt.Sprintf("run%d-0123456789", i), Command: script, State: "running"}
		m.ctx.Record.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "demo", Time: uitest.T0, Incarnation: inc, Process: &p}))
		ended := p
		ended.State, ended.Exit = "exited", &client.Exit{Code: code}
		m.ctx.Record.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "demo", Time: uitest.T0, Incarnation: inc, Process: &ended}))
	}
	step(m, alertsMsg{ch: m.alertCh}, 0)
	step(m, uitest.Key("M"), 0)
	v := m.View()
	for _, w := range []string{"EXITED 2 npm-test-run0-012 · demo/run0", "EXITED 0 npm-test-run1-012 · demo/run1"} {
		if !strings.Contains(v, w) {
			t.Fatalf("the list lacks %q:\n%s", w, v)
		}
	}
}

// B opens the bridge panel over any screen: pool numbers on a bridge with a pool, the not-supported
// line on the local bridge; B or esc closes it.
func TestBridgePanelKey(t *testing.T) {
	br := uitest.NewBridge()
	m := newRootWith(t, br, Options{})
	step(m, common.OpenSandboxMsg{ID: "sandboxaaaa"}, 0)
	step(m, uitest.Key("B"), 1)
	v := m.View()
	if !m.panelOpen || !strings.Contains(v, "Bridge · capacity") || !strings.Contains(v, "Pool routes are not supported on this bridge") {
		t.Fatalf("panel on the local bridge:\n%s", v)
	}
	step(m, uitest.Key("esc"), 0)
	if m.panelOpen || len(m.stack) != 2 {
		t.Fatalf("esc: panel open %v, stack %d", m.panelOpen, len(m.stack))
	}
	limit := 3
	br.Pool = &client.PoolStats{Warm: 0, Assigned: 3, Total: 3, MaxInstances: &limit}
	step(m, uitest.Key("B"), 1)
	if v := m.View(); !strings.Contains(v, "assigned  3") || !strings.Contains(v, "limit     3") || !strings.Contains(v, "The pool is full") {
		t.Fatalf("panel with a pool:\n%s", v)
	}
	step(m, uitest.Key("B"), 0)
	if m.panelOpen {
		t.Fatal("B did not close the panel")
	}
}
