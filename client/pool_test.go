package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge/bridgetest"
)

// A bridge with a pool answers its statistics; a 503 capacity_exceeded names the numbers.
func TestPoolStatsFromAPoolBridge(t *testing.T) {
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/pool/stats":
			_, _ = w.Write([]byte(`{"warm":2,"assigned":7,"total":9,"config":{"warmTarget":2,"refreshInterval":10000,"maxInstances":10,"scaleBatchSize":5},"maxInstances":10}`))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"Cannot start container: instance limit reached (10/10). All container slots are in use.","code":"capacity_exceeded"}`))
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.PoolStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Warm != 2 || st.Assigned != 7 || st.Total != 9 || st.MaxInstances == nil || *st.MaxInstances != 10 ||
		st.Config.WarmTarget != 2 || st.Config.RefreshInterval != 10000 || st.Config.ScaleBatchSize != 5 {
		t.Fatalf("stats %+v", st)
	}
	if len(calls) != 1 || calls[0] != "GET /v1/pool/stats Bearer tok" {
		t.Fatalf("calls %q", calls)
	}
	_, err = c.StartProcess(context.Background(), "sb", client.ExecRequest{Argv: []string{"true"}})
	used, limit, ok := client.CapacityLimit(err)
	if !errors.Is(err, client.ErrCapacity) || !ok || used != 10 || limit != 10 {
		t.Fatalf("capacity: %v (%d/%d %v)", err, used, limit, ok)
	}
	if _, _, ok := client.CapacityLimit(errors.New("instance limit reached (1/2)")); ok {
		t.Fatal("a plain error is no capacity answer")
	}
}

// maxInstances null (not learned yet) is nil; a stalled answer is bounded by the client's timeout.
func TestPoolStatsNullLimitAndTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"warm":0,"assigned":1,"total":1,"config":{"warmTarget":0,"refreshInterval":10000},"maxInstances":null}`))
	}))
	defer srv.Close()
	c, _ := client.New(srv.URL, client.WithToken("tok"))
	st, err := c.PoolStats(context.Background())
	if err != nil || st.MaxInstances != nil || st.Total != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	stall := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stall }))
	defer slow.Close()
	defer close(stall) // (before Close, which waits for the handler)
	cs, _ := client.New(slow.URL, client.WithToken("tok"), client.WithRequestTimeout(200*time.Millisecond))
	if _, err := cs.PoolStats(context.Background()); err == nil {
		t.Fatalf("stalled: %v", err)
	}
}

// The local bridge has no pool routes: ErrUnsupported.
func TestPoolStatsOnTheLocalBridge(t *testing.T) {
	b := bridgetest.Start(t)
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PoolStats(context.Background())
	if !errors.Is(err, client.ErrUnsupported) {
		t.Fatalf("local bridge: %v", err)
	}
	b.Server.SetCapacityExceeded(true)
	_, err = c.StartProcess(context.Background(), "local", client.ExecRequest{Argv: []string{"true"}})
	if used, limit, ok := client.CapacityLimit(err); !ok || used != 1 || limit != 1 {
		t.Fatalf("capacity from the local bridge: %v", err)
	}
}
