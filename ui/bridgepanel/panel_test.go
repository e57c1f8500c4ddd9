package bridgepanel

import (
	"errors"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/otlpexport"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

func load(t *testing.T, m *Model) {
	t.Helper()
	msgs := uitest.Exec(m.Load(), 300*time.Millisecond)
	if len(msgs) != 1 {
		t.Fatalf("load gave %d messages", len(msgs))
	}
	m.Update(msgs[0])
}

func TestPanelShowsThePool(t *testing.T) {
	br := uitest.NewBridge()
	ten := 10
	br.Pool = &client.PoolStats{Warm: 1, Assigned: 9, Total: 10, MaxInstances: &ten, Config: client.PoolConfig{WarmTarget: 1, RefreshInterval: 10000}}
	ctx := uitest.Context(t, br, 100, 30)
	m := New(ctx)
	m.SetSize(96, 26)
	if !strings.Contains(m.View(), "reading the pool statistics") {
		t.Fatalf("before the answer:\n%s", m.View())
	}
	load(t, m)
	v := m.View()
	for _, w := range []string{"warm      1", "assigned  9", "total     10", "limit     10", "warm target 1 · refresh every 10s", "The pool is full", "raise max_instances"} {
		if !strings.Contains(v, w) {
			t.Errorf("panel lacks %q:\n%s", w, v)
		}
	}
	// not full, limit unknown
	br.Pool = &client.PoolStats{Warm: 0, Assigned: 1, Total: 1}
	load(t, m)
	v = m.View()
	if !strings.Contains(v, "not known yet") || strings.Contains(v, "The pool is full") {
		t.Errorf("limit unknown:\n%s", v)
	}
	if !br.Called("pool stats") {
		t.Fatal("no call")
	}
}

func TestPanelOnABridgeWithoutPoolRoutes(t *testing.T) {
	br := uitest.NewBridge() // answers 501 not_supported, as the local bridge
	ctx := uitest.Context(t, br, 100, 30)
	ctx.Local = true
	m := New(ctx)
	m.SetSize(96, 26)
	load(t, m)
	v := m.View()
	if !strings.Contains(v, "Pool routes are not supported on this bridge") || !strings.Contains(v, "501 not_supported") || !strings.Contains(v, "no container pool") {
		t.Fatalf("local bridge:\n%s", v)
	}
	// another failure is described, sanitised
	br.PoolErr = errors.New("boom\x1b]2;x\x07")
	m.Update(uitest.Key("ctrl+r"))
	load(t, m)
	v = m.View()
	if !strings.Contains(v, "pool stats: boom") || strings.ContainsAny(v, "\x07") {
		t.Fatalf("error:\n%q", v)
	}
}

func TestCapacityErrorNamesTheNumbers(t *testing.T) {
	err := &client.APIError{Status: 503, Code: "capacity_exceeded", Message: "Cannot start container: instance limit reached (4/4). All container slots are in use."}
	got := common.Describe("start process", err)
	for _, w := range []string{"4 of 4 containers in use", "503 capacity_exceeded", "stop or delete sandboxes", "raise max_instances", "try again later"} {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %q", got, w)
		}
	}
}

// TestPanelSaysWhatToDoAboutAFailure: a failed pool call shows the error, sanitised and
// classified, and what to do.
func TestPanelSaysWhatToDoAboutAFailure(t *testing.T) {
	br := uitest.NewBridge()
	ctx := uitest.Context(t, br, 100, 30)
	m := New(ctx)
	m.SetSize(96, 26)
	br.PoolErr = &client.APIError{Status: 500, Message: "pool \x1b]2;x\x07broke"}
	load(t, m)
	v := strings.Join(strings.Fields(m.View()), " ")
	for _, w := range []string{"pool stats:", "pool", "broke", "What to do:", "ctrl+r tries again"} {
		if !strings.Contains(v, w) {
			t.Fatalf("panel lacks %q:\n%s", w, m.View())
		}
	}
	if strings.ContainsAny(v, "\x07") {
		t.Fatalf("unsanitised: %q", v)
	}
	br.PoolErr = &client.TransportError{Op: "GET /v1/pool/stats", Err: errors.New("connection refused")}
	load(t, m)
	if v := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(v, "bridge unreachable") || !strings.Contains(v, "check that the bridge is running") {
		t.Fatalf("unreachable:\n%s", m.View())
	}
}

func TestPanelShowsTheExport(t *testing.T) {
	br := uitest.NewBridge()
	ctx := uitest.Context(t, br, 100, 40)
	st := otlpexport.Status{Position: 41, Backlog: 3, Spans: 7, Logs: 12, LastSent: uitest.T0}
	ctx.Export = &common.Export{To: "http://collector:4318/v1/traces and http://collector:4318/v1/logs", Status: func() otlpexport.Status { return st }}
	m := New(ctx)
	m.SetSize(96, 36)
	load(t, m)
	v := m.View()
	for _, w := range []string{"OpenTelemetry export to http://collector:4318", "position: event 41 · backlog 3 events", "sent 7 spans and 12 log records"} {
		if !strings.Contains(v, w) {
			t.Errorf("panel lacks %q:\n%s", w, v)
		}
	}
	if strings.Contains(v, "FAILING") {
		t.Errorf("a healthy export shown failing:\n%s", v)
	}
	st.Failing, st.FailingSince, st.LastError = true, uitest.T0, "connection refused\x1b[31m"
	v = m.View()
	if !strings.Contains(v, "FAILING since") || !strings.Contains(v, "connection refused") || strings.Contains(v, "\x1b[31m") {
		t.Errorf("an outage is not shown plainly:\n%q", v)
	}
	ctx.Export = nil
	if strings.Contains(m.View(), "OpenTelemetry") {
		t.Error("no export, but the panel mentions one")
	}
}
