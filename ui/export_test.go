package ui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/otlpexport"
	"sandscope/record"
	"sandscope/ui/internal/uitest"
)

// With an OTLP endpoint configured, the TUI exports the record of the bridge on screen as
// `sandscope watch` does: what the watcher records reaches the collector, the bridge panel can say
// where the export stands, and closing the bridge stops it.
func TestTUIExportsTheRecord(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	otlp, err := otlpexport.Resolve(otlpexport.Settings{Endpoint: srv.URL}, func(string) (string, bool) { return "", false })
	if err != nil || !otlp.Enabled {
		t.Fatalf("resolve: %v %+v", err, otlp)
	}
	m := newRootWith(t, uitest.NewBridge(), Options{OTLP: otlp})
	if m.ctx.Export == nil {
		t.Fatal("no export started")
	}
	if !strings.Contains(m.ctx.Export.To, srv.URL[len("http://"):]) {
		t.Errorf("export to %q", m.ctx.Export.To)
	}
	// a process that ran and ended: a span to send
	now := time.Now()
	p := client.Process{ID: "p1", Command: []string{"make"}, State: "running", StartedAt: now, Incarnation: 1}
	m.ctx.Record.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "sandboxaaaa", Time: now, Process: &p, Incarnation: client.Incarnation{Number: 1}}))
	ended := p
	ended.State, ended.Exit = "exited", &client.Exit{Code: 2}
	m.ctx.Record.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "sandboxaaaa", Time: now.Add(time.Second), Process: &ended, Incarnation: client.Incarnation{Number: 1}}))
	_ = m.ctx.Record.Flush()
	deadline := time.Now().Add(20 * time.Second)
	for m.ctx.Export.Status().Spans == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if st := m.ctx.Export.Status(); st.Spans == 0 || hits.Load() == 0 {
		t.Fatalf("nothing exported: %+v, %d requests", st, hits.Load())
	}
	stopped := make(chan struct{})
	go func() { closeBridge(m.ctx); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("closing the bridge did not stop the export")
	}
	if m.ctx.Export != nil {
		t.Error("the export is still set after closing")
	}
}
