package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestAPIErrorKinds(t *testing.T) {
	cases := []struct {
		status int
		ct     string
		body   string
		is     error
		text   bool
	}{
		{401, "application/json", `{"error":"Unauthorized","code":"unauthorized"}`, ErrUnauthorized, false},
		{404, "application/json", `{"error":"Process not found","code":"not_found"}`, ErrNotFound, false},
		{404, "text/plain; charset=UTF-8", `404 Not Found`, ErrUnsupported, true},
		{400, "application/json", `{"error":"argv must be a non-empty array","code":"invalid_request"}`, ErrInvalidRequest, false},
		{403, "application/json", `{"error":"cwd must resolve to a location within /workspace","code":"invalid_request"}`, ErrInvalidRequest, false},
		{503, "application/json", `{"error":"Cannot start container: instance limit reached (2/2).","code":"capacity_exceeded"}`, ErrCapacity, false},
		{500, "text/plain; charset=UTF-8", `Internal Server Error`, ErrServerText, true},
	}
	for _, tc := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tc.ct)
			w.WriteHeader(tc.status)
			_, _ = io.WriteString(w, tc.body)
		}))
		c, _ := New(srv.URL, WithToken("tok"))
		_, err := c.GetProcess(context.Background(), "abc", "p")
		srv.Close()
		if !errors.Is(err, tc.is) {
			t.Errorf("%d %s: %v is not %v", tc.status, tc.body, err, tc.is)
		}
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != tc.status || ae.Text != tc.text {
			t.Errorf("%d: APIError %+v", tc.status, ae)
		}
		if tc.is == ErrNotFound && errors.Is(err, ErrUnsupported) || tc.is == ErrUnsupported && errors.Is(err, ErrNotFound) {
			t.Errorf("%d: route 404 and object 404 confused", tc.status)
		}
		if !strings.Contains(err.Error(), "get process p") {
			t.Errorf("error lacks the operation: %v", err)
		}
	}
	if !IsRetryable(&APIError{Status: 503, Code: "capacity_exceeded"}) || IsRetryable(&APIError{Status: 404}) {
		t.Error("retryable classification")
	}
}

func TestErrorsNeverContainToken(t *testing.T) {
	const tok = "super-secret-token-value"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":"bad header `+r.Header.Get("Authorization")+`","code":"invalid_request"}`)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, WithToken(tok))
	_, err := c.ListProcesses(context.Background(), "abc")
	if err == nil || strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error %v", err)
	}
}

func TestTransportErrorAndTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, _ := New("http://"+addr, WithToken("t"))
	if _, err := c.Running(context.Background(), "abc"); !errors.Is(err, ErrTransport) || !IsRetryable(err) {
		t.Fatalf("closed port: %v", err)
	}

	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	c2, _ := New(srv.URL, WithRequestTimeout(50*time.Millisecond))
	if _, err := c2.Running(context.Background(), "abc"); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrTransport) {
		t.Fatalf("timeout: %v", err)
	}
	if _, err := c2.Logs(context.Background(), "abc", "p", LogQuery{Follow: true}); !errors.Is(err, ErrTransport) {
		t.Fatalf("stream header timeout: %v", err)
	}
}

func TestRequestsShape(t *testing.T) {
	type seen struct{ method, path, query, ct, body string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Content-Type"), string(b)})
		switch {
		case strings.HasSuffix(r.URL.Path, "/processes") && r.Method == "POST":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"p1","pid":1,"command":["sh"],"state":"running","startedAt":"2026-01-01T00:00:00.000Z","incarnation":3}`)
		case strings.Contains(r.URL.Path, "/file/"):
			_, _ = io.WriteString(w, "content")
		default:
			w.WriteHeader(204)
		}
	}))
	defer srv.Close()
	c, _ := New(srv.URL+"/", WithUserAgent("sandscope/test"))
	ctx := context.Background()
	p, err := c.StartProcess(ctx, "abc", ExecRequest{Argv: []string{"sh", "-c", "x"}, Cwd: "sub", Timeout: 1500})
	if err != nil || p.Incarnation != 3 {
		t.Fatalf("start: %v %+v", err, p)
	}
	if err := c.KillProcess(ctx, "abc", "p/1", 0); err != nil {
		t.Fatal(err)
	}
	if err := c.KillProcess(ctx, "abc", "p1", 9); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadFile(ctx, "abc", "dir/a b.txt"); err != nil {
		t.Fatal(err)
	}
	ls, err := c.Logs(ctx, "abc", "p1", LogQuery{Since: "c+1", Replay: true, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	ls.Close()
	want := []seen{
		// The first sandbox call reads the capabilities (this server has no document: asked once).
		{"GET", "/v1/openapi.json", "", "", ""},
		{"POST", "/v1/sandbox/abc/processes", "", "application/json", `{"argv":["sh","-c","x"],"cwd":"sub","timeout":1500}`},
		{"POST", "/v1/sandbox/abc/processes/p%2F1/kill", "", "application/json", `{}`},
		{"POST", "/v1/sandbox/abc/processes/p1/kill", "", "application/json", `{"signal":9}`},
		{"GET", "/v1/sandbox/abc/file/workspace/dir/a%20b.txt", "", "", ""},
		{"GET", "/v1/sandbox/abc/processes/p1/logs", "follow=true&replay=true&since=c%2B1", "", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("requests %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: got %+v want %+v", i, got[i], want[i])
		}
	}
	if _, err := c.StartProcess(ctx, "ABC", ExecRequest{Argv: []string{"x"}}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("bad sandbox ID: %v", err)
	}
	if err := c.KillProcess(ctx, "abc", "p", 65); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("bad signal: %v", err)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "http://u:secret@host", "http://h/?token=x", "::"} {
		if _, err := New(u); err == nil {
			t.Errorf("%q accepted", u)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: credentials in error %v", u, err)
		}
	}
}

func TestCapabilities(t *testing.T) {
	// The documents the published bridges serve (testdata holds copies of the protocol dumps).
	preview, err := os.ReadFile("testdata/openapi-v1-preview.json")
	if err != nil {
		t.Fatal(err)
	}
	caps, err := ParseCapabilities(preview)
	if err != nil || caps.Dialect != DialectPreview || caps.Local {
		t.Fatalf("preview: %+v %v", caps, err)
	}
	stable, err := os.ReadFile("testdata/openapi-stable.json")
	if err != nil {
		t.Fatal(err)
	}
	caps, err = ParseCapabilities(stable)
	if err != nil || caps.Dialect != DialectStable || caps.Local {
		t.Fatalf("stable document: %+v %v", caps, err)
	}
	caps, _ = ParseCapabilities([]byte(`{"paths":{"/v1/sandbox/{id}/exec":{},"/v1/sandbox/{id}/pty":{}}}`))
	if caps.Dialect != DialectStable {
		t.Fatalf("stable: %+v", caps)
	}
	caps, _ = ParseCapabilities([]byte(`{"paths":{"/v1/sandbox/{id}/processes":{},"/v1/sandbox":{"get":{"x-sandscope-extension":true}},"/v1/sandbox/{id}/stop":{"x-sandscope-extension":true}}}`))
	if !caps.Local || len(caps.Extensions) != 2 {
		t.Fatalf("local: %+v", caps)
	}
	if _, err := ParseCapabilities([]byte(`<html>`)); err == nil {
		t.Fatal("garbage accepted")
	}

	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.URL.Path != "/v1/openapi.json" {
			http.Error(w, "404 Not Found", 404)
			return
		}
		_, _ = io.WriteString(w, `{"paths":{"/v1/sandbox/{id}/processes":{}}}`)
	}))
	defer srv.Close()
	c, _ := New(srv.URL)
	for i := 0; i < 3; i++ {
		if caps, err := c.Capabilities(context.Background()); err != nil || caps.Dialect != DialectPreview {
			t.Fatal(caps, err)
		}
	}
	if calls != 1 {
		t.Fatalf("capabilities fetched %d times", calls)
	}
	if _, err := c.ListSandboxes(context.Background()); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("list sandboxes on a real bridge: %v", err)
	}
	if calls != 1 {
		t.Fatal("unsupported extension was still requested")
	}
}
