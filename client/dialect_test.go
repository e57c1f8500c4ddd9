package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeDocBridge serves doc (nil: text 404, like a bridge without the route) at /v1/openapi.json
// and counts every other request, answering them with an empty process list.
type fakeDocBridge struct {
	mu      sync.Mutex
	docs    int
	sandbox []string
}

func (f *fakeDocBridge) start(t *testing.T, doc []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.URL.Path == "/v1/openapi.json" {
			f.docs++
			if doc == nil {
				http.Error(w, "404 Not Found", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
			return
		}
		f.sandbox = append(f.sandbox, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/running"):
			_, _ = w.Write([]byte(`{"running":true}`))
		default:
			_, _ = w.Write([]byte(`[]`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (f *fakeDocBridge) counts() (docs int, sandbox []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.docs, append([]string(nil), f.sandbox...)
}

// On a stable bridge every sandbox request starts a container, so none may be sent: each call
// fails with a typed error that says why, and a watcher reports it instead of polling.
func TestStableBridgeGetsNoSandboxRequests(t *testing.T) {
	doc, err := os.ReadFile("testdata/openapi-stable.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fakeDocBridge
	srv := f.start(t, doc)
	c, _ := New(srv.URL, WithToken("tok"))
	ctx := context.Background()

	checks := map[string]error{}
	_, checks["running"] = c.Running(ctx, "abc")
	_, checks["processes"] = c.ListProcesses(ctx, "abc")
	_, checks["start"] = c.StartProcess(ctx, "abc", ExecRequest{Argv: []string{"true"}})
	_, checks["logs"] = c.Logs(ctx, "abc", "p1", LogQuery{Follow: true})
	_, checks["terminal"] = c.ConnectTerminal(ctx, "abc", "t1", ConnectOptions{})
	for name, err := range checks {
		var se *StableBridgeError
		if !errors.Is(err, ErrUnsupported) || !errors.As(err, &se) {
			t.Errorf("%s: got %v, want a StableBridgeError", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "stable bridge API") {
			t.Errorf("%s: error does not say why: %v", name, err)
		}
	}

	f2 := c.Follow(ctx, "abc", "p1", FollowOptions{})
	var last LogEvent
	for ev := range f2.Events() {
		last = ev
	}
	if last.Kind != Failed || !errors.Is(last.Err, ErrUnsupported) {
		t.Errorf("follow ended with %v (%v), want Failed with ErrUnsupported", last.Kind, last.Err)
	}

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w := c.Watch(wctx, "abc", WatchOptions{FastInterval: 10 * time.Millisecond})
	ev := <-w.Events()
	if ev.Kind != WatchError || !errors.Is(ev.Err, ErrUnsupported) {
		t.Errorf("watch: first event %v (%v), want WatchError with ErrUnsupported", ev.Kind, ev.Err)
	}
	cancel()
	for range w.Events() {
	}

	docs, sandbox := f.counts()
	if len(sandbox) != 0 {
		t.Errorf("sandbox requests reached a stable bridge: %v", sandbox)
	}
	if docs != 1 {
		t.Errorf("capabilities read %d times, want once (cached)", docs)
	}
}

// A preview bridge, and one whose document cannot be read, get their sandbox calls; an unreadable
// document is asked for once, not before every call.
func TestDialectCheckLetsOtherBridgesThrough(t *testing.T) {
	preview, err := os.ReadFile("testdata/openapi-v1-preview.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{"preview": preview, "no document": nil} {
		t.Run(name, func(t *testing.T) {
			var f fakeDocBridge
			srv := f.start(t, doc)
			c, _ := New(srv.URL, WithToken("tok"))
			for i := 0; i < 3; i++ {
				if _, err := c.ListProcesses(context.Background(), "abc"); err != nil {
					t.Fatalf("list %d: %v", i, err)
				}
			}
			docs, sandbox := f.counts()
			if docs != 1 || len(sandbox) != 3 {
				t.Fatalf("document read %d times, %d sandbox requests; want 1 and 3", docs, len(sandbox))
			}
		})
	}
}
