package localbridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"sandscope/localbridge/seqlog"
)

// A closing bridge is a bridge going away: a request that reaches it while Close ends the
// incarnations must get no answer. An answer then would say the sandbox has no container, and a
// client would report its processes lost when the bridge itself is what went.
func TestClosingBridgeAnswersNothing(t *testing.T) {
	s, err := New(Config{Root: t.TempDir(), Token: "tok", Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	hc := &http.Client{Timeout: 10 * time.Second}
	get := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/health", nil)
		req.Host = "127.0.0.1"
		return hc.Do(req)
	}
	resp, err := get()
	if err != nil {
		t.Fatalf("before Close: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("before Close: %s", resp.Status)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err = get()
	if err == nil {
		resp.Body.Close()
		t.Fatalf("after Close the bridge answered %s; want the connection dropped", resp.Status)
	}
}

// A log stream that stops for any reason but the log's end (an abort, the server closing, the
// client leaving) must not end cleanly: a clean end is what a client may take for the log's end.
func TestLogStreamCutIsNotACleanEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
		abort  bool
	}{
		{"log aborted", false, true},
		{"context ended", true, false},
		{"both (closing bridge)", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := seqlog.New("p", 1<<20, 0)
			log.Append(seqlog.Stdout, []byte("hello\n"))
			reader := log.Subscribe(0, true)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.abort {
				log.Abort(errStopped)
			}
			if tc.cancel {
				cancel()
			}
			rec := httptest.NewRecorder()
			got := func() (p any) {
				defer func() { p = recover() }()
				streamLog(ctx, rec, http.NewResponseController(rec), log, reader)
				return nil
			}()
			if err, _ := got.(error); !errors.Is(err, http.ErrAbortHandler) {
				t.Fatalf("stream ended with %v; want the response aborted", got)
			}
		})
	}
}
