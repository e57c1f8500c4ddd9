package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestFollowSuspectEndingLeavesNoGap: a forged terminal event that uses a sequence number of its
// own (seq 2) while the process runs, then output at seq 3 and the real ending at seq 4. The skipped
// number is the suspect ending's: no GAP marker (before, it read "output evicted by the bridge"
// although no truncated event ever arrived).
func TestFollowSuspectEndingLeavesNoGap(t *testing.T) {
	var opened atomic.Int32
	data := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/logs"):
			w.Header().Set("Content-Type", "text/event-stream")
			if opened.Add(1) == 1 {
				fmt.Fprintf(w, "data: {\"type\":\"stdout\",\"cursor\":%q,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"data\":%q}\n\n", FormatCursor("s", 1), data("one\n"))
				fmt.Fprintf(w, "data: {\"type\":\"terminal\",\"state\":\"exited\",\"cursor\":%q,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"exit\":{\"code\":0,\"timedOut\":false}}\n\n", FormatCursor("s", 2))
				return
			}
			fmt.Fprintf(w, "data: {\"type\":\"stdout\",\"cursor\":%q,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"data\":%q}\n\n", FormatCursor("s", 3), data("two\n"))
			fmt.Fprintf(w, "data: {\"type\":\"terminal\",\"state\":\"exited\",\"cursor\":%q,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"exit\":{\"code\":7,\"timedOut\":false}}\n\n", FormatCursor("s", 4))
		case strings.Contains(r.URL.Path, "/processes/"):
			w.Header().Set("Content-Type", "application/json")
			if opened.Load() < 2 {
				fmt.Fprint(w, `{"id":"p1","pid":1,"command":["x"],"state":"running","startedAt":"2026-01-01T00:00:00Z"}`)
				return
			}
			fmt.Fprint(w, `{"id":"p1","pid":1,"command":["x"],"state":"exited","startedAt":"2026-01-01T00:00:00Z","exit":{"code":7,"timedOut":false}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	evs := logCollect(t, c.Follow(context.Background(), "sbx", "p1", followFastOpts()), 10*time.Second)
	if countKind(evs, SuspectEnd) != 1 {
		t.Fatalf("want one suspect end: %v", logKinds(evs))
	}
	for _, e := range evs {
		if e.Kind == Gap {
			t.Fatalf("a gap for the suspect ending's own sequence number: %q (%v)", e.Reason, logKinds(evs))
		}
	}
	if last := evs[len(evs)-1]; last.Kind != Ended {
		t.Fatalf("last event %v", logKinds(evs))
	}
}
