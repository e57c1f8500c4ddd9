package sandbox

import (
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/record"
)

// TestLostDetailIsOneSentence: the detail of a LOST process says how it was first found gone, the
// incarnation it belonged to and what the sandbox runs now, once.
func TestLostDetailIsOneSentence(t *testing.T) {
	m, _ := newModel(t)
	history(m)
	yes := true
	m.st.Apply(record.FromLogEvent(m.id, "old-run", client.LogEvent{Kind: client.Lost, Time: at(-299),
		Loss: &client.LossEvidence{Lookup: "GET process: 404 not_found", Previous: 1, Incarnation: 2, SandboxRunning: &yes}}))
	selectProc(m, "old-run")
	v := strings.Join(strings.Fields(m.View()), " ")
	want := "old-run was running and vanished with its container (absent from process list); it belonged to incarnation #1, the sandbox now runs #2"
	if !strings.Contains(v, want) {
		t.Fatalf("detail lacks %q:\n%s", want, m.View())
	}
	if n := strings.Count(v, "now runs"); n != 1 {
		t.Fatalf("the sandbox's incarnation is said %d times:\n%s", n, m.View())
	}
}

// TestListErrorShownOnTheTab: when the bridge fails the list (a 500 on the terminal list), the tab
// shows the error, sanitised, and what to do, instead of an empty "no terminals".
func TestListErrorShownOnTheTab(t *testing.T) {
	m, _ := newModel(t)
	failed := &client.APIError{Status: 500, Message: "terminal registry \x1b]2;pwned\x07down"}
	apply(m, client.SandboxEvent{Kind: client.WatchError, Time: at(0), Err: failed})
	press(t, m, "tab")
	v := m.View()
	flat := strings.Join(strings.Fields(v), " ")
	for _, w := range []string{"cannot list terminals:", "terminal registry", "what to do:", "retries on its own"} {
		if !strings.Contains(flat, w) {
			t.Fatalf("the tab lacks %q:\n%s", w, v)
		}
	}
	if strings.Contains(v, "no terminals") || strings.ContainsAny(v, "\x07") || strings.Contains(v, "\x1b]") {
		t.Fatalf("empty or unsanitised:\n%q", v)
	}
}
