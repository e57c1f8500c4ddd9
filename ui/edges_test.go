package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
	"sandscope/ui/sandbox"
)

// TestDialogClearsTheStatus: a message about what came before does not stay under a dialog opened
// later (the sandboxes screen's add form, the root's quit confirmation); a message arriving while
// the dialog is open is news and shows.
func TestDialogClearsTheStatus(t *testing.T) {
	m := newRoot(t, uitest.NewBridge())
	step(m, common.StatusMsg{Level: common.Info, Text: "copied 12 lines to the clipboard"}, 0)
	if !strings.Contains(m.View(), "copied 12 lines") {
		t.Fatalf("no message:\n%s", m.View())
	}
	step(m, uitest.Key("a"), 0)
	if v := m.View(); !strings.Contains(v, "Add sandboxes by ID") || strings.Contains(v, "copied 12 lines") {
		t.Fatalf("the message stays under the dialog:\n%s", v)
	}
	step(m, common.StatusMsg{Level: common.Warn, Text: "a notification while the form is open"}, 0)
	if !strings.Contains(m.View(), "a notification while the form is open") {
		t.Fatalf("news during the dialog is hidden:\n%s", m.View())
	}
	step(m, uitest.Key("esc"), 0)
	step(m, common.StatusMsg{Level: common.Info, Text: "before quitting"}, 0)
	m.confirm = common.NewConfirm("quit", "Quit sandscope?", "x")
	step(m, uitest.Key("j"), 0) // any message after the confirmation opened
	if strings.Contains(m.View(), "before quitting") {
		t.Fatalf("the message stays under the quit confirmation:\n%s", m.View())
	}
}

// TestQuitCountsStreamsInWords: "1 live stream is attached", never "stream(s)".
func TestQuitCountsStreamsInWords(t *testing.T) {
	for n, want := range map[int]string{1: "1 live stream is attached", 3: "3 live streams are attached"} {
		if got := attachedStreams(n) + " attached"; got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

// TestTerminalNotificationOpensTheTerminalsTab: enter on a terminal's notification opens its
// sandbox on the Terminals tab with that terminal selected.
func TestTerminalNotificationOpensTheTerminalsTab(t *testing.T) {
	m := newRoot(t, uitest.NewBridge())
	rec := m.ctx.Record
	inc := client.Incarnation{Number: 1}
	for _, id := range []string{"t1", "t2", "t3"} {
		tm := client.Terminal{ID: id, Status: "running", Command: []string{"bash", "-l"}}
		rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.TerminalAppeared, Sandbox: "boxaaaa", Time: uitest.T0, Incarnation: inc, Terminal: &tm}))
	}
	ended := client.Terminal{ID: "t2", Status: "exited", Exit: &client.Exit{Code: 0}, Command: []string{"bash", "-l"}}
	rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.TerminalChanged, Sandbox: "boxaaaa", Time: uitest.T0, Incarnation: inc, Terminal: &ended}))
	step(m, alertsMsg{ch: m.alertCh}, 1)
	if len(m.Notifications()) == 0 {
		t.Fatal("no notification")
	}
	step(m, uitest.Key("M"), 0)
	step(m, uitest.Key("enter"), 1)
	s, ok := m.top().(*sandbox.Model)
	if !ok {
		t.Fatalf("enter did not open the sandbox:\n%s", m.View())
	}
	v := s.View()
	if !strings.Contains(v, "[Terminals (3)]") {
		t.Fatalf("not on the Terminals tab:\n%s", v)
	}
	for _, l := range strings.Split(v, "\n") {
		if strings.HasPrefix(l, ">") && !strings.Contains(l, "t2") {
			t.Fatalf("the cursor is not on t2: %q\n%s", l, v)
		}
	}
}

// TestRefusedConnectionReadsAlikeOnEveryScreen: the sandbox screen's watcher failure, read back
// from the record, is classified like the sandboxes screen's (UNREACHABLE), not a bare BRIDGE
// ERROR.
func TestRefusedConnectionReadsAlikeOnEveryScreen(t *testing.T) {
	refused := fmt.Errorf("list processes: %w", &client.TransportError{Op: "GET /v1/sandbox/x/processes", Err: errors.New("connect: connection refused")})
	if common.Classify(refused) != common.ErrUnreachable {
		t.Skip("the client's transport error is not what this test assumes")
	}
	m := newRoot(t, uitest.NewBridge())
	step(m, common.ConnMsg{Err: common.WatchFailure("boxaaaa", refused.Error(), refused)}, 0)
	if v := m.View(); !strings.Contains(v, "UNREACHABLE: watch boxaaaa") {
		t.Fatalf("status:\n%s", v)
	}
}
