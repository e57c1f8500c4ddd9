// Package otlptest is an OTLP/HTTP receiver for tests, decoding with the OpenTelemetry
// Collector's own pdata, as its otlpreceiver does.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// Receiver is an OTLP/HTTP receiver as the Collector's otlpreceiver serves it (POST /v1/traces and
// /v1/logs, protobuf bodies, gzip or not), decoding with the Collector's own pdata. It keeps every
// raw body, so a test can look for what must never be sent. It can be stopped and started again
// on the same address (a collector outage).
type Receiver struct {
	addr string

	mu     sync.Mutex
	srv    *http.Server
	raw    [][]byte
	traces []ptrace.Traces
	logs   []plog.Logs
}

func Start(t testing.TB) *Receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{addr: l.Addr().String()}
	r.serve(l)
	t.Cleanup(r.Stop)
	return r
}

func (r *Receiver) URL() string { return "http://" + r.addr }

func (r *Receiver) serve(l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, err := readBody(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		er := ptraceotlp.NewExportRequest()
		if err := er.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.raw = append(r.raw, body)
		r.traces = append(r.traces, er.Traces())
		r.mu.Unlock()
		resp, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	})
	mux.HandleFunc("POST /v1/logs", func(w http.ResponseWriter, req *http.Request) {
		body, err := readBody(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		er := plogotlp.NewExportRequest()
		if err := er.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.raw = append(r.raw, body)
		r.logs = append(r.logs, er.Logs())
		r.mu.Unlock()
		resp, _ := plogotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

func readBody(req *http.Request) ([]byte, error) {
	var rd io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		rd = gz
	}
	return io.ReadAll(io.LimitReader(rd, 64<<20))
}

// Stop closes the receiver: connections are refused until restart.
func (r *Receiver) Stop() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Restart listens again on the same address.
func (r *Receiver) Restart(t testing.TB) {
	t.Helper()
	var l net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if l, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("receiver: listen again on %s: %v", r.addr, err)
	}
	r.serve(l)
}

// Span is one decoded span with its resource attributes.
type Span struct {
	ptrace.Span
	Resource map[string]any
}

// Spans are every span received, in order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Span
	for _, td := range r.traces {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			res := rs.Resource().Attributes().AsRaw()
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					out = append(out, Span{ss.Spans().At(k), res})
				}
			}
		}
	}
	return out
}

// LogRecord is one decoded log record with its resource attributes.
type LogRecord struct {
	plog.LogRecord
	Resource map[string]any
}

// LogRecords are every log record received, in order.
func (r *Receiver) LogRecords() []LogRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []LogRecord
	for _, ld := range r.logs {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			res := rl.Resource().Attributes().AsRaw()
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				sl := rl.ScopeLogs().At(j)
				for k := 0; k < sl.LogRecords().Len(); k++ {
					out = append(out, LogRecord{sl.LogRecords().At(k), res})
				}
			}
		}
	}
	return out
}

// Contains reports whether any raw body holds b.
func (r *Receiver) Contains(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, raw := range r.raw {
		if bytes.Contains(raw, b) {
			return true
		}
	}
	return false
}

// Bodies is how many requests were received.
func (r *Receiver) Bodies() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.raw)
}

// ErrTimeout is WaitFor's error when the condition did not hold in time.
var ErrTimeout = errors.New("timed out")

// WaitFor polls f until it holds or d passes.
func WaitFor(d time.Duration, f func() bool) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if f() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ErrTimeout
}
