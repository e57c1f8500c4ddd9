package otlpexport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"sandscope/internal/buildinfo"
	"sandscope/record"
)

// Options configure an Exporter.
type Options struct {
	Record *record.Record
	Bridge Bridge
	// Name keys the position kept in the record (one per collector: two collectors each get
	// everything). Settings.PositionName gives it.
	Name   string
	Traces sdktrace.SpanExporter // required
	Logs   sdklog.Exporter       // required
	// Resource describes sandscope to the collector (Settings.Resource).
	Resource *resource.Resource
	// Output sends captured output lines as log records (--otlp-output).
	Output bool
	// BatchEvents is how many events are read and sent at once (default 512); BatchChunks the
	// output chunks (default 128).
	BatchEvents, BatchChunks int
	// Poll is how often the record is read when nothing wakes the exporter (default 1 s: another
	// sandscope process may write the same record).
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts while the collector fails
	// (defaults 500 ms and 30 s).
	MinBackoff, MaxBackoff time.Duration
	// DrainTimeout bounds the last send when Run's context ends (default 3 s).
	DrainTimeout time.Duration
	// Notices receives one line per change worth telling (an outage begins, the collector is
	// back with what it missed); nil discards them.
	Notices func(string)
}

// Status is where the export stands, for `watch` and the TUI's bridge panel.
type Status struct {
	Position       int64 // the last event the collector confirmed
	Backlog        int64 // events committed after it
	OutputPosition int64 // the last output chunk confirmed (with Output)
	OutputBacklog  int64 // bytes of output waiting
	Spans, Logs    int64 // sent by this process
	LastSent       time.Time
	Failing        bool // the last attempt failed
	FailingSince   time.Time
	LastError      string
}

// Exporter sends a record's runs to an OTLP collector. See the package comment for the mapping.
type Exporter struct {
	o      Options
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	spans  *spanSink
	lp     *sdklog.LoggerProvider
	logger otellog.Logger
	logs   *logSink
	m      *mapper

	mu sync.Mutex
	st Status

	// the batch built and not yet confirmed (kept as built across retries)
	pend *pending
	// where the collector's confirmed position is (guarded by mu; Status shows their IDs)
	evMark, chMark record.Mark
}

type pending struct {
	spans          []sdktrace.ReadOnlySpan
	logs           []sdklog.Record
	spansSent      bool
	logsSent       int
	events, chunks record.Mark // the position once it is confirmed
	nEvents        int
}

// New prepares an exporter; Run sends.
func New(o Options) (*Exporter, error) {
	if o.Record == nil || o.Traces == nil || o.Logs == nil {
		return nil, errors.New("otlp export: a record and both exporters are required")
	}
	if o.Name == "" {
		o.Name = "otlp"
	}
	if o.BatchEvents <= 0 {
		o.BatchEvents = 512
	}
	if o.BatchChunks <= 0 {
		o.BatchChunks = 128
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 3 * time.Second
	}
	if o.Resource == nil {
		o.Resource = resource.Empty()
	}
	x := &Exporter{o: o, spans: &spanSink{}, logs: &logSink{}, m: newMapper(o.Record.Bridge(), o.Bridge)}
	limits := sdktrace.NewSpanLimits()
	limits.EventCountLimit = maxMarkersPerRun + 16
	x.tp = sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(derivedIDs{}), sdktrace.WithResource(o.Resource),
		sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(x.spans), sdktrace.WithRawSpanLimits(limits))
	x.tracer = x.tp.Tracer("sandscope", trace.WithInstrumentationVersion(buildinfo.Version()))
	x.lp = sdklog.NewLoggerProvider(sdklog.WithResource(o.Resource), sdklog.WithProcessor(x.logs))
	x.logger = x.lp.Logger("sandscope", otellog.WithInstrumentationVersion(buildinfo.Version()))
	return x, nil
}

// Status is a copy of where the export stands.
func (x *Exporter) Status() Status {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.st
}

func (x *Exporter) notice(format string, args ...any) {
	x.mu.Lock()
	f := x.o.Notices
	x.mu.Unlock()
	if f != nil {
		f(fmt.Sprintf(format, args...))
	}
}

// SetNotices routes the export's notices (an outage begins, the collector is back) to f.
func (x *Exporter) SetNotices(f func(string)) {
	x.mu.Lock()
	x.o.Notices = f
	x.mu.Unlock()
}

// Run sends what the record holds after the saved position, then what is added, until ctx ends;
// then it sends what is left for at most DrainTimeout and shuts the exporters down. A failed
// send is retried with backoff from the same position: nothing is skipped, and after an outage
// the backlog goes oldest first.
func (x *Exporter) Run(ctx context.Context) error {
	defer x.shutdown()
	rec := x.o.Record
	evPos, chPos, err := rec.ExportPosition(x.o.Name)
	if err != nil {
		return fmt.Errorf("otlp export: %w", err)
	}
	if ok, err := rec.MarkStands(false, evPos); err == nil && !ok {
		x.notice("export: the record was emptied and its numbering began again since the last export: starting from its first event")
		evPos = record.Mark{}
	}
	if ok, err := rec.MarkStands(true, chPos); err == nil && !ok {
		chPos = record.Mark{}
	}
	if err := x.replay(ctx, evPos.ID); err != nil {
		return err
	}
	x.mu.Lock()
	x.evMark, x.chMark = evPos, chPos
	x.st.Position, x.st.OutputPosition = evPos.ID, chPos.ID
	x.mu.Unlock()
	x.refreshBacklog()

	wake, cancel := rec.Subscribe()
	defer cancel()
	tick := time.NewTicker(x.o.Poll)
	defer tick.Stop()
	backoff := x.o.MinBackoff
	for {
		more, err := x.step(ctx)
		if ctx.Err() != nil {
			return x.drain()
		}
		if err != nil {
			if !sleep(ctx, backoff) {
				return x.drain()
			}
			backoff = min(backoff*2, x.o.MaxBackoff)
			continue
		}
		backoff = x.o.MinBackoff
		if more {
			continue
		}
		select {
		case <-ctx.Done():
			return x.drain()
		case _, ok := <-wake:
			if !ok {
				wake = nil // the record closed: the ticker and ctx remain
			}
			// what was just added is committed within the record's flush interval
			sleep(ctx, 100*time.Millisecond)
		case <-tick.C:
		}
	}
}

// sleep waits d unless ctx ends first (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// drain sends what is left once the run's context ended, within DrainTimeout.
func (x *Exporter) drain() error {
	ctx, cancel := context.WithTimeout(context.Background(), x.o.DrainTimeout)
	defer cancel()
	_ = x.o.Record.Flush()
	for ctx.Err() == nil {
		more, err := x.step(ctx)
		if err != nil {
			st := x.Status()
			return fmt.Errorf("otlp export: %d events not sent before exit (kept in the record; sent at the next start): %s", st.Backlog, st.LastError)
		}
		if !more {
			return nil
		}
	}
	return nil
}

func (x *Exporter) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = x.tp.Shutdown(ctx)
	_ = x.lp.Shutdown(ctx)
	_ = x.o.Traces.Shutdown(ctx)
	_ = x.o.Logs.Shutdown(ctx)
}

// replay folds what was sent before (up to pos) without sending it, so that runs in progress at
// the position keep their markers and ended runs are not sent again.
func (x *Exporter) replay(ctx context.Context, pos int64) error {
	var at int64
	for at < pos && ctx.Err() == nil {
		evs, upto, err := x.o.Record.EventsAfter(at, 4096)
		if err != nil {
			return fmt.Errorf("otlp export: replay: %w", err)
		}
		if upto == at {
			break
		}
		for _, ev := range evs {
			if ev.ID > pos {
				return nil
			}
			x.m.apply(ev, false)
		}
		at = upto
	}
	return nil
}

// step builds (or takes up again) one batch and sends it. more says another batch may be ready.
func (x *Exporter) step(ctx context.Context) (more bool, err error) {
	if x.pend == nil {
		p, err := x.build(ctx)
		if err != nil {
			return false, x.failed(err)
		}
		if p == nil {
			x.refreshBacklog()
			return false, nil
		}
		x.pend = p
	}
	p := x.pend
	if !p.spansSent && len(p.spans) > 0 {
		if err := x.o.Traces.ExportSpans(ctx, p.spans); err != nil {
			return false, x.failed(fmt.Errorf("traces: %w", err))
		}
	}
	p.spansSent = true
	for p.logsSent < len(p.logs) {
		n := min(len(p.logs)-p.logsSent, 1024)
		if err := x.o.Logs.Export(ctx, p.logs[p.logsSent:p.logsSent+n]); err != nil {
			return false, x.failed(fmt.Errorf("logs: %w", err))
		}
		p.logsSent += n
	}
	if err := x.o.Record.SetExportPosition(x.o.Name, p.events, p.chunks); err != nil {
		return false, x.failed(err)
	}
	x.pend = nil
	x.mu.Lock()
	recovered := x.st.Failing
	since := x.st.FailingSince
	x.evMark, x.chMark = p.events, p.chunks
	x.st.Position, x.st.OutputPosition = p.events.ID, p.chunks.ID
	x.st.Spans += int64(len(p.spans))
	x.st.Logs += int64(len(p.logs))
	x.st.LastSent = time.Now()
	x.st.Failing, x.st.LastError, x.st.FailingSince = false, "", time.Time{}
	x.mu.Unlock()
	x.refreshBacklog()
	st := x.Status()
	if recovered {
		x.notice("export: the collector answers again after %s; sending what it missed, oldest first (position %d, %d events waiting)",
			time.Since(since).Round(time.Second), st.Position, st.Backlog)
	}
	return p.nEvents >= x.o.BatchEvents || st.Backlog > 0 || (x.o.Output && st.OutputBacklog > 0), nil
}

// failed notes a failed attempt (told once per outage) and returns err.
func (x *Exporter) failed(err error) error {
	x.mu.Lock()
	first := !x.st.Failing
	x.st.Failing, x.st.LastError = true, err.Error()
	if first {
		x.st.FailingSince = time.Now()
	}
	x.mu.Unlock()
	x.refreshBacklog()
	if first {
		st := x.Status()
		x.notice("export: the collector did not take a batch (%v); the record keeps everything from position %d (%d events waiting) and it is sent once the collector answers", err, st.Position, st.Backlog)
	}
	return err
}

func (x *Exporter) refreshBacklog() {
	x.mu.Lock()
	pos, chPos := x.evMark.ID, x.chMark.ID
	x.mu.Unlock()
	n, err := x.o.Record.CountEventsAfter(pos)
	if err != nil {
		return
	}
	var bytes int64
	if x.o.Output {
		_, bytes, _ = x.o.Record.ChunkBacklog(chPos)
	}
	x.mu.Lock()
	x.st.Backlog, x.st.OutputBacklog = n, bytes
	x.mu.Unlock()
}

// build reads the next events (and output) after the position and makes them spans and log
// records. nil: nothing new.
func (x *Exporter) build(ctx context.Context) (*pending, error) {
	rec := x.o.Record
	x.mu.Lock()
	evPos, chPos := x.evMark, x.chMark
	x.mu.Unlock()
	// pruning that removed every row makes IDs begin again: a position past them means nothing
	if ok, err := rec.MarkStands(false, evPos); err != nil {
		return nil, err
	} else if !ok {
		x.notice("export: the record was emptied and its numbering began again: continuing from its first event")
		evPos = record.Mark{}
	}
	if ok, err := rec.MarkStands(true, chPos); err != nil {
		return nil, err
	} else if !ok {
		chPos = record.Mark{}
	}
	evs, upto, err := rec.EventsAfter(evPos.ID, x.o.BatchEvents)
	if err != nil {
		return nil, err
	}
	evUpto := evPos
	if upto != evPos.ID {
		evUpto = record.Mark{ID: upto}
		if n := len(evs); n > 0 && evs[n-1].ID == upto {
			evUpto = record.EventMark(evs[n-1])
		}
	}
	var chunks []record.OutputChunk
	chUpto := chPos
	if x.o.Output {
		if chunks, err = rec.ChunksAfter(chPos.ID, x.o.BatchChunks); err != nil {
			return nil, err
		}
		if n := len(chunks); n > 0 {
			chUpto = record.ChunkMark(chunks[n-1])
		}
	} else if last, err := rec.LastChunkID(); err == nil && last != chPos.ID {
		// output is not exported: what exists is not owed if it is turned on later
		chUpto = record.Mark{ID: last}
		if cs, err := rec.ChunksAfter(last-1, 1); err == nil && len(cs) == 1 && cs[0].ID == last {
			chUpto = record.ChunkMark(cs[0])
		}
	}
	if evUpto == evPos && chUpto == chPos {
		return nil, nil
	}
	var spans []spanSpec
	var logs []logSpec
	for _, ev := range evs {
		s, l := x.m.apply(ev, true)
		spans = append(spans, s...)
		logs = append(logs, l...)
	}
	for _, c := range chunks {
		logs = append(logs, x.m.outputLogs(c)...)
	}
	p := &pending{events: evUpto, chunks: chUpto, nEvents: len(evs)}
	for _, s := range spans {
		x.makeSpan(ctx, s)
	}
	p.spans = x.spans.take()
	for _, l := range logs {
		x.emitLog(ctx, l)
	}
	p.logs = x.logs.take()
	return p, nil
}

// makeSpan starts and ends the run's span through the SDK (its IDs derived from the run).
func (x *Exporter) makeSpan(ctx context.Context, s spanSpec) {
	ctx = trace.ContextWithSpanContext(withRun(context.Background(), s.run), trace.SpanContext{})
	_, sp := x.tracer.Start(ctx, s.name, trace.WithTimestamp(s.start), trace.WithAttributes(s.attrs...), trace.WithSpanKind(trace.SpanKindInternal))
	for _, e := range s.events {
		sp.AddEvent(e.kind, trace.WithTimestamp(e.time), trace.WithAttributes(e.attrs...))
	}
	if s.failed {
		sp.SetStatus(codes.Error, s.status)
	} else {
		sp.SetStatus(codes.Ok, "")
	}
	sp.End(trace.WithTimestamp(s.end))
}

// emitLog emits a log record through the SDK, linked to its run's span.
func (x *Exporter) emitLog(ctx context.Context, l logSpec) {
	lctx := context.Background()
	if l.run != nil {
		lctx = trace.ContextWithSpanContext(lctx, l.run.spanContext())
	}
	var r otellog.Record
	r.SetTimestamp(l.time)
	r.SetObservedTimestamp(time.Now())
	r.SetSeverity(l.severity)
	r.SetSeverityText(l.severity.String())
	if l.eventName != "" {
		r.SetEventName(l.eventName)
	}
	r.SetBody(attribute.StringValue(l.body))
	r.AddAttributes(l.attrs...)
	x.logger.Emit(lctx, r)
}

// spanSink collects ended spans for the export to send itself (so the position moves only after
// the collector confirmed them).
type spanSink struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (s *spanSink) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *spanSink) OnEnd(sp sdktrace.ReadOnlySpan) {
	s.mu.Lock()
	s.spans = append(s.spans, sp)
	s.mu.Unlock()
}
func (s *spanSink) Shutdown(context.Context) error   { return nil }
func (s *spanSink) ForceFlush(context.Context) error { return nil }
func (s *spanSink) take() []sdktrace.ReadOnlySpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.spans
	s.spans = nil
	return out
}

// logSink collects emitted log records likewise.
type logSink struct {
	mu   sync.Mutex
	logs []sdklog.Record
}

func (s *logSink) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (s *logSink) OnEmit(_ context.Context, r *sdklog.Record) error {
	s.mu.Lock()
	s.logs = append(s.logs, r.Clone())
	s.mu.Unlock()
	return nil
}
func (s *logSink) Shutdown(context.Context) error   { return nil }
func (s *logSink) ForceFlush(context.Context) error { return nil }
func (s *logSink) take() []sdklog.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.logs
	s.logs = nil
	return out
}
