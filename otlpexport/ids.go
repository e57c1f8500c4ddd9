package otlpexport

import (
	"context"
	"crypto/sha256"
	"encoding/binary"

	"go.opentelemetry.io/otel/trace"
)

// runRef names one run as the export identifies it: the bridge's record identity (the same
// however the bridge was reached), the sandbox, the container life it ran in, its kind and ID.
// Its trace and span IDs are a hash of these, so a run exported twice (after a crash between the
// send and the saved position, by a second sandscope, after a state change) is the same span, and
// its output's log records point at that span before or after it was sent.
type runRef struct {
	bridge, sandbox, incarnation, kind, id string
}

// ids derives the run's trace ID (one trace per run) and span ID.
func (r runRef) ids() (trace.TraceID, trace.SpanID) {
	h := sha256.New()
	for _, s := range []string{"sandscope.run/v1", r.bridge, r.sandbox, r.incarnation, r.kind, r.id} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		h.Write(n[:]) // length-prefixed: no two tuples hash the same bytes
		h.Write([]byte(s))
	}
	sum := h.Sum(nil)
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	// an all-zero ID is invalid in OTLP; a hash that gives one is as good as any other value
	if !tid.IsValid() {
		tid[15] = 1
	}
	if !sid.IsValid() {
		sid[7] = 1
	}
	return tid, sid
}

// spanContext is the run's span as a parent for log records (sampled: every run is exported).
func (r runRef) spanContext() trace.SpanContext {
	tid, sid := r.ids()
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
}

type runKey struct{}

// derivedIDs is the tracer provider's ID generator: a span started with a runRef in its context
// gets the run's IDs. The export starts spans only that way.
type derivedIDs struct{}

func (derivedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	r, _ := ctx.Value(runKey{}).(runRef)
	return r.ids()
}

func (derivedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	r, _ := ctx.Value(runKey{}).(runRef)
	_, sid := r.ids()
	return sid
}

func withRun(ctx context.Context, r runRef) context.Context {
	return context.WithValue(ctx, runKey{}, r)
}

// RunIDs are the trace and span IDs a run is exported with: bridge is the record's identity
// (record.Record.Bridge), incarnation the record's number of the container life (the stable
// marker for a stable run), kind "process", "terminal" or "run". A consumer can compute them to
// find a run's span.
func RunIDs(bridge, sandbox, incarnation, kind, id string) (trace.TraceID, trace.SpanID) {
	return runRef{bridge: bridge, sandbox: sandbox, incarnation: incarnation, kind: kind, id: id}.ids()
}
