package watch_test

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

// receiver is an OTLP/HTTP receiver as the Collector's otlpreceiver serves it (POST /v1/traces and
// /v1/logs, protobuf bodies, gzip or not), decoding with the Collector's own pdata. It keeps every
// raw body, so a test can look for what must never be sent. It can be stopped and started again
// on the same address (a collector outage).
type receiver struct {
	addr string

	mu     sync.Mutex
	srv    *http.Server
	raw    [][]byte
	traces []ptrace.Traces
	logs   []plog.Logs
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{addr: l.Addr().String()}
	r.serve(l)
	t.Cleanup(r.stop)
	return r
}

func (r *receiver) url() string { return "http://" + r.addr }

func (r *receiver) serve(l net.Listener) {
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

// stop closes the receiver: connections are refused until restart.
func (r *receiver) stop() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// restart listens again on the same address.
func (r *receiver) restart(t *testing.T) {
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

// span is one decoded span with its resource attributes.
type span struct {
	ptrace.Span
	resource map[string]any
}

func (r *receiver) spans() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, td := range r.traces {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			res := rs.Resource().Attributes().AsRaw()
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					out = append(out, span{ss.Spans().At(k), res})
				}
			}
		}
	}
	return out
}

type logRecord struct {
	plog.LogRecord
	resource map[string]any
}

func (r *receiver) logRecords() []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logRecord
	for _, ld := range r.logs {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			res := rl.Resource().Attributes().AsRaw()
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				sl := rl.ScopeLogs().At(j)
				for k := 0; k < sl.LogRecords().Len(); k++ {
					out = append(out, logRecord{sl.LogRecords().At(k), res})
				}
			}
		}
	}
	return out
}

// contains reports whether any raw body holds b.
func (r *receiver) contains(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, raw := range r.raw {
		if bytes.Contains(raw, b) {
			return true
		}
	}
	return false
}

func (r *receiver) bodies() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.raw)
}

var errTimeout = errors.New("timed out")

// waitFor polls f until it holds or d passes.
func waitFor(d time.Duration, f func() bool) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if f() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errTimeout
}
