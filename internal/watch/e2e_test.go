package watch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/buildinfo"
	"sandscope/internal/otlptest"
	"sandscope/internal/watch"
	"sandscope/localbridge/bridgetest"
	"sandscope/otlpexport"
	"sandscope/record"
)

// syncBuffer is stderr shared by the watch's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines decodes the --json lines written so far.
func (s *syncBuffer) lines(t *testing.T) []watch.Line {
	var out []watch.Line
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	for sc.Scan() {
		var l watch.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a --json line that is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

type fixture struct {
	bridge   *bridgetest.Bridge
	c        *client.Client
	rec      *record.Record
	d        driver.Driver
	recv     *otlptest.Receiver
	export   *otlpexport.Exporter
	identity string
	sandbox  string
}

func newFixture(t *testing.T, output bool) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{bridge: bridgetest.Start(t), recv: otlptest.Start(t)}
	var err error
	if f.c, err = client.New(f.bridge.URL, client.WithToken(f.bridge.Token)); err != nil {
		t.Fatal(err)
	}
	caps, err := f.c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.identity = record.Identity(caps, f.bridge.URL)
	if f.rec, err = record.Open(record.Options{Dir: t.TempDir(), Bridge: f.identity}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.rec.Close() })
	if f.d, err = driver.Open(ctx, f.c, driver.Options{Record: f.rec}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.d.Close() })
	if f.sandbox, err = f.c.CreateSandbox(ctx); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": f.recv.URL()}
	res, err := otlpexport.Resolve(otlpexport.Settings{Output: output}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || !res.Enabled {
		t.Fatalf("resolve: %v (enabled %v)", err, res.Enabled)
	}
	traces, logs, err := res.Exporters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resource, err := res.Resource(ctx, buildinfo.Version())
	if err != nil {
		t.Fatal(err)
	}
	f.export, err = otlpexport.New(otlpexport.Options{Record: f.rec, Bridge: otlpexport.Bridge{URL: f.d.BaseURL(), Dialect: string(caps.Dialect)},
		Name: res.PositionName(), Traces: traces, Logs: logs, Resource: resource, Output: res.Output,
		Poll: 100 * time.Millisecond, MinBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) start(t *testing.T, argv ...string) client.Process {
	t.Helper()
	p, err := f.c.StartProcess(context.Background(), f.sandbox, client.ExecRequest{Argv: argv, Env: map[string]string{"API_SECRET": "env-value-never-sent"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) spanOf(id string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range f.recv.Spans() {
		if v, ok := s.Attributes().Get("sandscope.run.id"); ok && v.Str() == id {
			out = append(out, s)
		}
	}
	return out
}

func attr(m pcommon.Map, k string) any {
	v, ok := m.Get(k)
	if !ok {
		return nil
	}
	return v.AsRaw()
}

// TestWatchExportsRunsEndToEnd runs watch against a local bridge over HTTP with an OTLP receiver
// decoding what arrives with the Collector's pdata: a process that exits 3, one LOST in a
// replacement, one that ends while the receiver is down and arrives once it is back; spans,
// span events and log records checked field by field, and the bridge token in no payload.
func TestWatchExportsRunsEndToEnd(t *testing.T) {
	f := newFixture(t, true)
	var stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- watch.Run(ctx, []watch.Target{{Driver: f.d, Record: f.rec, Export: f.export}},
			watch.Options{JSON: true, Relist: 300 * time.Millisecond, Budget: record.WatchBudget{Fast: 150 * time.Millisecond, Slow: 200 * time.Millisecond, Background: 100}}, &stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if err := otlptest.WaitFor(10*time.Second, func() bool { return strings.Contains(stderr.String(), `"kind":"start"`) }); err != nil {
		t.Fatalf("watch did not start: %s", stderr.String())
	}

	// 1. a process that exits 3, with a line on each stream
	a := f.start(t, "sh", "-c", "echo line-on-stdout; echo line-on-stderr >&2; sleep 1; exit 3", "exit3")
	// 2. a process LOST in a replacement
	b := f.start(t, "sleep", "60")
	if err := otlptest.WaitFor(20*time.Second, func() bool { return len(f.spanOf(a.ID)) > 0 }); err != nil {
		t.Fatalf("no span for the process that exits 3: %s", stderr.String())
	}
	if err := otlptest.WaitFor(10*time.Second, func() bool {
		e := f.rec.State(f.sandbox).Find(record.Process, b.ID)
		return e != nil && e.Process.State == "running"
	}); err != nil {
		t.Fatal("the watcher never saw the sleeping process")
	}
	if err := f.c.ReplaceSandbox(context.Background(), f.sandbox); err != nil {
		t.Fatal(err)
	}
	if err := otlptest.WaitFor(20*time.Second, func() bool { return len(f.spanOf(b.ID)) > 0 }); err != nil {
		t.Fatalf("no span for the LOST process: %s", stderr.String())
	}

	// 3. a process that ends while the collector is down
	f.recv.Stop()
	c := f.start(t, "sh", "-c", "echo during-the-outage; sleep 0.5", "outage")
	if err := otlptest.WaitFor(20*time.Second, func() bool {
		e := f.rec.State(f.sandbox).Find(record.Process, c.ID)
		return e != nil && e.Process.State == "exited" && f.export.Status().Failing
	}); err != nil {
		t.Fatalf("the outage process did not end with the export failing: %+v\n%s", f.export.Status(), stderr.String())
	}
	if len(f.spanOf(c.ID)) != 0 {
		t.Fatal("a span arrived while the receiver was stopped")
	}
	f.recv.Restart(t)
	if err := otlptest.WaitFor(20*time.Second, func() bool { return len(f.spanOf(c.ID)) > 0 }); err != nil {
		t.Fatalf("the span of the run that ended during the outage never arrived: %+v", f.export.Status())
	}
	if err := otlptest.WaitFor(10*time.Second, func() bool { st := f.export.Status(); return st.Backlog == 0 && !st.Failing }); err != nil {
		t.Fatalf("backlog after the outage: %+v", f.export.Status())
	}

	// watch stops within 5 s of its context ending
	cancel()
	began := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("watch did not stop within 5 s")
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("watch took %s to stop", took)
	}
	done <- nil // for the deferred receive

	bridgeURL := record.NormalizeURL(f.bridge.URL)
	checkSpan := func(sp otlptest.Span, id, incarnation, state string, failed bool, code any) {
		t.Helper()
		tid, sid := otlpexport.RunIDs(f.identity, f.sandbox, incarnation, "process", id)
		if sp.TraceID() != pcommon.TraceID(tid) || sp.SpanID() != pcommon.SpanID(sid) {
			t.Errorf("%s: IDs %s/%s, want the run's derived %s/%s", id, sp.TraceID(), sp.SpanID(), tid, sid)
		}
		if !sp.ParentSpanID().IsEmpty() {
			t.Errorf("%s: a run's span has no parent, got %s", id, sp.ParentSpanID())
		}
		want := map[string]any{
			"sandscope.bridge.url": bridgeURL, "sandscope.bridge.dialect": string(f.d.Capabilities().Dialect),
			"sandscope.sandbox.id": f.sandbox, "sandscope.incarnation": incarnation, "sandscope.run.kind": "process",
			"sandscope.run.id": id, "sandscope.state": state, "process.exit.code": code,
		}
		for k, v := range want {
			if got := attr(sp.Attributes(), k); got != v {
				t.Errorf("%s: %s = %v (%T), want %v (%T)", id, k, got, got, v, v)
			}
		}
		if got := attr(sp.Attributes(), "sandscope.command"); got == nil || got == "" {
			t.Errorf("%s: no command summary", id)
		}
		wantCode := ptrace.StatusCodeOk
		if failed {
			wantCode = ptrace.StatusCodeError
		}
		if sp.Status().Code() != wantCode || (failed && sp.Status().Message() != state) {
			t.Errorf("%s: status %v %q, want %v %q", id, sp.Status().Code(), sp.Status().Message(), wantCode, state)
		}
		if !sp.EndTimestamp().AsTime().After(sp.StartTimestamp().AsTime()) && state != "LOST" {
			t.Errorf("%s: span from %s to %s", id, sp.StartTimestamp(), sp.EndTimestamp())
		}
		if sp.Kind() != ptrace.SpanKindInternal {
			t.Errorf("%s: kind %v", id, sp.Kind())
		}
		res := sp.Resource
		if res["service.name"] != "sandscope" || res["service.version"] != buildinfo.Version() || res["host.name"] == nil {
			t.Errorf("%s: resource %v", id, res)
		}
	}

	// the process that exited 3: one span (no re-send), Error, EXITED 3
	sa := f.spanOf(a.ID)
	if len(sa) != 1 {
		t.Fatalf("process exiting 3: %d spans, want exactly 1", len(sa))
	}
	checkSpan(sa[0], a.ID, "1", "EXITED 3", true, int64(3))
	if sa[0].Name() != "process exit3" {
		t.Errorf("span name %q, want \"process exit3\" (kind and program)", sa[0].Name())
	}
	if !sa[0].StartTimestamp().AsTime().Equal(a.StartedAt) {
		t.Errorf("start %s, want the process's own start %s", sa[0].StartTimestamp().AsTime(), a.StartedAt)
	}

	// the LOST process: Error, LOST, in incarnation 1, with the loss and the new container as events
	sb := f.spanOf(b.ID)
	if len(sb) != 1 {
		t.Fatalf("LOST process: %d spans, want exactly 1", len(sb))
	}
	checkSpan(sb[0], b.ID, "1", "LOST", true, nil)
	var evNames []string
	for i := 0; i < sb[0].Events().Len(); i++ {
		ev := sb[0].Events().At(i)
		evNames = append(evNames, ev.Name())
		t.Logf("LOST span event %q at +%s: %v", ev.Name(), ev.Timestamp().AsTime().Sub(sb[0].StartTimestamp().AsTime()), ev.Attributes().AsRaw())
		if ev.Name() == "incarnation changed" {
			if attr(ev.Attributes(), "sandscope.incarnation") != "2" || attr(ev.Attributes(), "sandscope.incarnation.previous") != "1" {
				t.Errorf("incarnation event attributes %v", ev.Attributes().AsRaw())
			}
		}
		if ev.Name() == "lost" && attr(ev.Attributes(), "sandscope.evidence") == nil && attr(ev.Attributes(), "sandscope.reason") == nil {
			t.Errorf("the loss event has no evidence: %v", ev.Attributes().AsRaw())
		}
	}
	if !contains(evNames, "lost") || !contains(evNames, "incarnation changed") {
		t.Errorf("LOST span events %v, want lost and incarnation changed", evNames)
	}

	// the run that ended during the outage: Ok, EXITED 0
	sc := f.spanOf(c.ID)
	if len(sc) != 1 {
		t.Fatalf("outage process: %d spans, want exactly 1", len(sc))
	}
	checkSpan(sc[0], c.ID, "2", "EXITED 0", false, int64(0))

	// log records: the loss marker, linked to B's span; output lines linked to their run, with
	// the stream as log.iostream
	_, bSpan := otlpexport.RunIDs(f.identity, f.sandbox, "1", "process", b.ID)
	aTrace, aSpan := otlpexport.RunIDs(f.identity, f.sandbox, "1", "process", a.ID)
	var lostLog, outLog, errLog, outageLog bool
	for _, lr := range f.recv.LogRecords() {
		at := lr.Attributes()
		switch {
		case attr(at, "sandscope.marker") == "lost" && attr(at, "sandscope.run.id") == b.ID:
			lostLog = true
			if lr.SpanID() != pcommon.SpanID(bSpan) || lr.SeverityNumber() != 17 || !strings.HasPrefix(lr.Body().Str(), "LOST") ||
				lr.EventName() != "sandscope.lost" || attr(at, "sandscope.sandbox.id") != f.sandbox || attr(at, "sandscope.bridge.url") != bridgeURL {
				t.Errorf("loss log record: span %s severity %v body %q event %q attrs %v", lr.SpanID(), lr.SeverityNumber(), lr.Body().Str(), lr.EventName(), at.AsRaw())
			}
		case lr.Body().Str() == "line-on-stdout":
			outLog = true
			if lr.TraceID() != pcommon.TraceID(aTrace) || lr.SpanID() != pcommon.SpanID(aSpan) || attr(at, "log.iostream") != "stdout" ||
				attr(at, "sandscope.run.id") != a.ID || lr.SeverityNumber() != 9 {
				t.Errorf("stdout line: trace %s span %s attrs %v severity %v", lr.TraceID(), lr.SpanID(), at.AsRaw(), lr.SeverityNumber())
			}
		case lr.Body().Str() == "line-on-stderr":
			errLog = true
			if lr.SpanID() != pcommon.SpanID(aSpan) || attr(at, "log.iostream") != "stderr" {
				t.Errorf("stderr line: span %s attrs %v", lr.SpanID(), at.AsRaw())
			}
		case lr.Body().Str() == "during-the-outage":
			outageLog = true
		}
		if lr.Timestamp() == 0 {
			t.Errorf("log record without a time: %q", lr.Body().Str())
		}
	}
	if !lostLog || !outLog || !errLog || !outageLog {
		t.Errorf("log records: loss %v, stdout %v, stderr %v, output during the outage %v", lostLog, outLog, errLog, outageLog)
	}

	// nothing secret in any payload
	if f.recv.Contains([]byte(f.bridge.Token)) {
		t.Error("the bridge token is in a payload")
	}
	if f.recv.Contains([]byte("env-value-never-sent")) {
		t.Error("an environment value is in a payload")
	}

	// the watch's own lines: the same words as notifications, and the outage told
	var ended3, lost, outage bool
	for _, l := range stderr.lines(t) {
		switch {
		case l.Kind == "ended" && l.Head == "EXITED 3" && l.ID == a.ID && l.Sandbox == f.sandbox:
			ended3 = true
		case l.Kind == "lost" && l.Head == "LOST" && l.ID == b.ID:
			lost = true
		case l.Kind == "export" && strings.Contains(l.Text, "collector"):
			outage = true
		}
	}
	if !ended3 || !lost || !outage {
		t.Errorf("watch lines: EXITED 3 %v, LOST %v, outage told %v:\n%s", ended3, lost, outage, stderr.String())
	}
	if strings.Contains(stderr.String(), f.bridge.Token) {
		t.Error("the token is in watch's output")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
