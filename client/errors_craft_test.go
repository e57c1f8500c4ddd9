package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestScrubShortTokens: a short token is redacted where a bridge or a proxy would echo it (a
// header, a query parameter, a body field, the whole text), never out of the middle of words; a
// long one wherever it appears.
func TestScrubShortTokens(t *testing.T) {
	for _, c := range []struct{ secret, in, want string }{
		{"x", `Get "http://h/v1/sandbox/abc/processes": connection refused`, `Get "http://h/v1/sandbox/abc/processes": connection refused`},
		{"x", "bad header Bearer x", "bad header Bearer [redacted]"},
		{"x", "GET /v1/sandbox?token=x&a=1", "GET /v1/sandbox?token=[redacted]&a=1"},
		{"x", `{"token":"x"}`, `{"token":"[redacted]"}`},
		{"x", "x", "[redacted]"},
		{"abc", "/v1/sandbox/abcdef/processes: not found", "/v1/sandbox/abcdef/processes: not found"},
		{"abc", "Authorization: Bearer abc rejected", "Authorization: Bearer [redacted] rejected"},
		{"abc", "url ?key=abc", "url ?key=[redacted]"},
		{"abc", `{"error":"token 'abc' unknown"}`, `{"error":"token '[redacted]' unknown"}`},
		{"super-secret-token-value", "xsuper-secret-token-valuex", "x[redacted]x"},
		{"a+b/c=long-token", "q=a%2Bb%2Fc%3Dlong-token", "q=[redacted]"},
	} {
		if got := scrub(c.in, c.secret); got != c.want {
			t.Errorf("scrub(%q, %q) = %q; want %q", c.in, c.secret, got, c.want)
		}
	}
}

// TestNoAnswerNamesTheBridge: a bridge that accepts the connection and says nothing fails the
// call after the answer wait with ErrNoAnswer (also ErrTransport), naming the bridge and the call.
func TestNoAnswerNamesTheBridge(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	c, _ := New("http://"+l.Addr().String(), WithToken("t"), WithAnswerTimeout(300*time.Millisecond))
	start := time.Now()
	_, err = c.ListProcesses(context.Background(), "abc")
	if !errors.Is(err, ErrNoAnswer) || !errors.Is(err, ErrTransport) || !IsRetryable(err) {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(err.Error(), "no answer from the bridge at http://"+l.Addr().String()+" within 300ms") {
		t.Errorf("message %q", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
	// a follower's shorter wait, from the context
	start = time.Now()
	_, err = c.Logs(WithAnswerWait(context.Background(), 100*time.Millisecond), "abc", "p", LogQuery{Follow: true})
	if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "logs of p: ") {
		t.Errorf("logs: %v", err)
	}
}

// TestHTMLErrorPageIsNamed: an HTML error page (a proxy's, a login page) is named by its status
// and content type, not pasted into the message.
func TestHTMLErrorPageIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(403)
		_, _ = w.Write([]byte("<!DOCTYPE html><html><body>Forbidden</body></html>"))
	}))
	defer srv.Close()
	c, _ := New(srv.URL)
	_, err := c.GetProcess(context.Background(), "abc", "p")
	if err == nil || strings.Contains(err.Error(), "<") || !strings.Contains(err.Error(), "bridge answered 403: a text/html page") {
		t.Fatalf("error %v", err)
	}
}

// TestTransportErrorNamesTheCallNotTheURL: a bridge that refuses connections fails a log stream's
// open with the call and the cause, not net/http's whole request URL (its query holds the resume
// cursor, three lines of a terminal in a retry notice).
func TestTransportErrorNamesTheCallNotTheURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	c, _ := New("http://"+addr, WithToken("t"))
	_, err = c.ListProcesses(context.Background(), "abc")
	if !errors.Is(err, ErrTransport) {
		t.Fatalf("error %v, want ErrTransport", err)
	}
	msg := err.Error()
	if strings.Contains(msg, `Get "`) || strings.Contains(msg, "/v1/sandbox/abc") {
		t.Errorf("the error repeats the request URL: %q", msg)
	}
	if !strings.Contains(msg, "bridge unreachable: dial tcp "+addr) {
		t.Errorf("the error does not say what failed: %q", msg)
	}
}
