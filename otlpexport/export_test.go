package otlpexport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"sandscope/client"
	"sandscope/record"
)

// memExporter keeps what it is sent, and fails while down is set.
type memExporter struct {
	mu    sync.Mutex
	down  bool
	tries int
	spans []sdktrace.ReadOnlySpan
	logs  []sdklog.Record
}

var errDown = errors.New("connection refused")

func (m *memExporter) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tries++
	if m.down {
		return errDown
	}
	m.spans = append(m.spans, s...)
	return nil
}

func (m *memExporter) Export(_ context.Context, r []sdklog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errDown
	}
	for _, x := range r {
		m.logs = append(m.logs, x.Clone())
	}
	return nil
}
func (m *memExporter) Shutdown(context.Context) error   { return nil }
func (m *memExporter) ForceFlush(context.Context) error { return nil }

func (m *memExporter) setDown(d bool) {
	m.mu.Lock()
	m.down = d
	m.mu.Unlock()
}

// attempts is how many times spans were offered, sent or refused.
func (m *memExporter) attempts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tries
}

func (m *memExporter) spanNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.spans {
		for _, a := range s.Attributes() {
			if a.Key == keyRunID {
				out = append(out, a.Value.AsString())
			}
		}
	}
	return out
}

func (m *memExporter) logBodies() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, r := range m.logs {
		out = append(out, r.Body().AsString())
	}
	return out
}

func openRecord(t *testing.T, dir string) *record.Record {
	t.Helper()
	rec, err := record.Open(record.Options{Dir: dir, Bridge: "sandscope-bridge:test"})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// ran adds a process that ran and ended with code in incarnation 1.
func ran(rec *record.Record, sandbox, id string, code int) {
	ranAt(rec, sandbox, id, code, time.Now().Add(-time.Minute))
}

func ranAt(rec *record.Record, sandbox, id string, code int, start time.Time) {
	p := client.Process{ID: id, Command: []string{"make", "test"}, State: "running", StartedAt: start, Incarnation: 1}
	inc := client.Incarnation{Number: 1}
	rec.Add(record.Event{Time: start, Sandbox: sandbox, Source: record.FromWatch, Kind: client.ProcessAppeared.String(), Entity: record.Process, EntityID: id, Process: &p, Incarnation: inc})
	end := start.Add(2 * time.Second)
	q := p
	q.State, q.EndedAt, q.Exit = "exited", &end, &client.Exit{Code: code}
	rec.Add(record.Event{Time: end, Sandbox: sandbox, Source: record.FromWatch, Kind: client.ProcessChanged.String(), Entity: record.Process, EntityID: id, Process: &q, Incarnation: inc})
}

// run runs an exporter on rec until cond holds (or fails the test), then stops it.
func run(t *testing.T, rec *record.Record, exp *memExporter, cond func(*Exporter) bool) *Exporter {
	t.Helper()
	x, err := New(Options{Record: rec, Bridge: Bridge{URL: "http://user:pw@127.0.0.1:1/?t=x", Dialect: "v1-preview"}, Name: "test",
		Traces: exp, Logs: exp, Poll: 20 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, DrainTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = x.Run(ctx)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(x) {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("condition not met; status %+v", x.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	return x
}

func TestSpanFieldsAndNoSecondSendAfterRestart(t *testing.T) {
	dir := t.TempDir()
	rec := openRecord(t, dir)
	ran(rec, "sb1", "p1", 3)
	_ = rec.Flush()
	exp := &memExporter{}
	run(t, rec, exp, func(*Exporter) bool { return len(exp.spanNames()) == 1 })
	sp := exp.spans[0]
	if sp.Name() != "process make" || sp.Status().Code != codes.Error || sp.Status().Description != "EXITED 3" {
		t.Errorf("span %q status %v %q", sp.Name(), sp.Status().Code, sp.Status().Description)
	}
	tid, sid := RunIDs("sandscope-bridge:test", "sb1", "1", "process", "p1")
	if sp.SpanContext().TraceID() != tid || sp.SpanContext().SpanID() != sid {
		t.Errorf("IDs %s/%s, want %s/%s", sp.SpanContext().TraceID(), sp.SpanContext().SpanID(), tid, sid)
	}
	if got := sp.EndTime().Sub(sp.StartTime()); got != 2*time.Second {
		t.Errorf("span lasts %s, want the process's 2s", got)
	}
	for _, a := range sp.Attributes() {
		if a.Key == keyBridgeURL && a.Value.AsString() != "http://127.0.0.1:1" {
			t.Errorf("bridge URL %q: credentials or query sent", a.Value.AsString())
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	// a restart: what was confirmed is not sent again, what is new is
	rec = openRecord(t, dir)
	defer rec.Close()
	ranAt(rec, "sb1", "p2", 0, time.Now())
	_ = rec.Flush()
	exp2 := &memExporter{}
	run(t, rec, exp2, func(x *Exporter) bool {
		st := x.Status()
		return st.Backlog == 0 && st.Position > 0 && len(exp2.spanNames()) > 0
	})
	if got := exp2.spanNames(); len(got) != 1 || got[0] != "p2" {
		t.Fatalf("after the restart sent %v, want only p2", got)
	}
	if exp2.spans[0].Status().Code != codes.Ok {
		t.Errorf("exit 0: status %v", exp2.spans[0].Status().Code)
	}
}

func TestOutageKeepsThePositionAndSendsOldestFirst(t *testing.T) {
	rec := openRecord(t, t.TempDir())
	defer rec.Close()
	exp := &memExporter{down: true}
	ran(rec, "sb1", "first", 1)
	ran(rec, "sb1", "second", 2)
	_ = rec.Flush()
	x := run(t, rec, exp, func(x *Exporter) bool { st := x.Status(); return st.Failing && exp.attempts() >= 3 })
	st := x.Status()
	if st.Position != 0 || st.Backlog != 4 || st.LastError == "" {
		t.Fatalf("while down: %+v", st)
	}
	if got, _, _ := rec.ExportPosition("test"); got.ID != 0 {
		t.Fatalf("position moved to %d while the collector was down", got)
	}
	exp.setDown(false)
	ran(rec, "sb1", "third", 0)
	_ = rec.Flush()
	run(t, rec, exp, func(x *Exporter) bool { return x.Status().Backlog == 0 && len(exp.spanNames()) == 3 })
	got := exp.spanNames()
	if got[0] != "first" || got[1] != "second" || got[2] != "third" {
		t.Fatalf("order %v, want oldest first", got)
	}
}

func TestStableRunsAndMarkers(t *testing.T) {
	rec := openRecord(t, t.TempDir())
	defer rec.Close()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	add := func(r record.StableRun) {
		rec.Add(record.Event{Time: r.Updated, Sandbox: "sb", Source: record.FromStable, Kind: record.KindStableRun, Entity: record.StableRunEntity, EntityID: r.ID, Stable: &record.StableEntry{Run: &r}})
	}
	mark := func(m string, at time.Time) {
		rec.Add(record.Event{Time: at, Sandbox: "sb", Source: record.FromStable, Kind: record.KindStableMarker, Stable: &record.StableEntry{Marker: m}})
	}
	mark("c1", start)
	add(record.StableRun{ID: "r1", Argv: []string{"npm", "test"}, Started: start, Incarnation: "c1", State: string(client.RunRunning), Updated: start})
	mark("c2", start.Add(time.Minute))
	add(record.StableRun{ID: "r1", Argv: []string{"npm", "test"}, Started: start, Incarnation: "c1", State: string(client.RunLost), Evidence: "the container changed", Updated: start.Add(time.Minute)})
	code := 7
	add(record.StableRun{ID: "r2", Argv: []string{"sh", "-c", "exit 7", "seven"}, Started: start, Incarnation: "c2", State: string(client.RunUnconfirmed), Reported: &code, Updated: start.Add(2 * time.Minute)})
	_ = rec.Flush()
	exp := &memExporter{}
	run(t, rec, exp, func(x *Exporter) bool { return x.Status().Backlog == 0 && len(exp.spanNames()) == 2 })
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range exp.spans {
		for _, a := range s.Attributes() {
			if a.Key == keyRunID {
				byID[a.Value.AsString()] = s
			}
		}
	}
	r1, r2 := byID["r1"], byID["r2"]
	if r1 == nil || r1.Status().Code != codes.Error || r1.Status().Description != "LOST (inferred)" || r1.Name() != "run npm" {
		t.Fatalf("r1: %+v", r1)
	}
	var names []string
	for _, e := range r1.Events() {
		names = append(names, e.Name)
	}
	if len(names) != 2 || names[0] != markLost || names[1] != markIncarnation {
		t.Errorf("r1 events %v, want lost and incarnation changed", names)
	}
	if r2 == nil || r2.Status().Code != codes.Error || r2.Status().Description != "REPORTED 7 (unconfirmed)" || r2.Name() != "run seven" {
		t.Fatalf("r2: %+v", r2)
	}
	tid, _ := RunIDs("sandscope-bridge:test", "sb", "c1", "run", "r1")
	var lost bool
	for _, l := range exp.logs {
		if l.Body().AsString() == "LOST (the container changed)" && l.TraceID() == tid {
			lost = true
		}
	}
	if !lost {
		t.Errorf("no loss log record linked to r1: %v", exp.logBodies())
	}
}

// TestNumberingBeginningAgain: pruning that removes every event makes the IDs begin again at 1; a
// saved position past them must not hide the new events.
func TestNumberingBeginningAgain(t *testing.T) {
	dir := t.TempDir()
	rec := openRecord(t, dir)
	old := time.Now().Add(-30 * 24 * time.Hour) // older than the record keeps
	ranAt(rec, "sb1", "old1", 0, old)
	ranAt(rec, "sb1", "old2", 0, old.Add(time.Minute))
	_ = rec.Flush()
	exp := &memExporter{}
	run(t, rec, exp, func(*Exporter) bool { return len(exp.spanNames()) == 2 })
	_ = rec.Close()
	rec = openRecord(t, dir) // opening prunes every event: the next ones are 1, 2, 3, 4 again
	defer rec.Close()
	ranAt(rec, "sb1", "new1", 0, time.Now().Add(-time.Minute))
	ranAt(rec, "sb1", "new2", 0, time.Now())
	_ = rec.Flush()
	if last, _ := rec.LastEventID(); last != 4 {
		t.Fatalf("newest event %d: the test expects the numbering to begin again", last)
	}
	exp2 := &memExporter{}
	run(t, rec, exp2, func(*Exporter) bool { return len(exp2.spanNames()) == 2 })
	if got := exp2.spanNames(); got[0] != "new1" || got[1] != "new2" {
		t.Fatalf("sent %v", got)
	}
}

// TestStableRunReportedAsProcessIsOneSpan: the stable driver's watcher reports the runs it keeps as
// processes too; the run is exported once, as the stable run.
func TestStableRunReportedAsProcessIsOneSpan(t *testing.T) {
	rec := openRecord(t, t.TempDir())
	defer rec.Close()
	start := time.Now().Add(-time.Minute)
	code := 0
	r := record.StableRun{ID: "r1", Argv: []string{"make"}, Started: start, Incarnation: "c1", State: string(client.RunConfirmed), Code: &code, Updated: start.Add(time.Second)}
	rec.Add(record.Event{Time: r.Updated, Sandbox: "sb", Source: record.FromStable, Kind: record.KindStableRun, Entity: record.StableRunEntity, EntityID: "r1", Stable: &record.StableEntry{Run: &r}})
	ranAt(rec, "sb", "r1", 0, start)
	_ = rec.Flush()
	exp := &memExporter{}
	run(t, rec, exp, func(x *Exporter) bool { return x.Status().Backlog == 0 && len(exp.spanNames()) > 0 })
	if got := exp.spanNames(); len(got) != 1 || exp.spans[0].Name() != "run make" {
		t.Fatalf("spans %v (first %q), want the stable run once", got, exp.spans[0].Name())
	}
}
