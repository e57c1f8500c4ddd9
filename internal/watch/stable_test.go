package watch_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/watch"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
	"sandscope/record"
)

// TestWatchWakesNoStableContainer: on a stable bridge every request to a sandbox starts its
// container; watch, watching sandboxes the record knows there, must send none.
func TestWatchWakesNoStableContainer(t *testing.T) {
	br := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	c, err := client.New(br.URL, client.WithToken(br.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec, err := record.Open(record.Options{Dir: t.TempDir(), Bridge: record.NormalizeURL(br.URL)})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	known := []string{"agentone", "agenttwo"}
	for _, sb := range known {
		// history from an earlier run of sandscope: a run it started there
		r := record.StableRun{ID: "r-" + sb, Argv: []string{"sleep", "1"}, Started: time.Now().Add(-time.Hour), State: string(client.RunRunning), Updated: time.Now().Add(-time.Hour)}
		rec.Add(record.Event{Sandbox: sb, Source: record.FromStable, Kind: record.KindStableRun, Entity: record.StableRunEntity, EntityID: r.ID, Stable: &record.StableEntry{Run: &r}})
	}
	_ = rec.Flush()
	d, err := driver.Open(ctx, c, driver.Options{Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Features().NonWakingLookups {
		t.Fatal("the stable bridge claims non-waking lookups: this test would prove nothing")
	}
	var out syncBuffer
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := watch.Run(wctx, []watch.Target{{Driver: d, Record: rec}},
		watch.Options{Relist: 100 * time.Millisecond, Budget: record.WatchBudget{Fast: 100 * time.Millisecond, Slow: 100 * time.Millisecond, Background: 100}}, &out); err != nil {
		t.Fatal(err)
	}
	if n := br.Server.TotalAllocations(); n != 0 {
		t.Fatalf("watch started %d containers on a stable bridge:\n%s", n, out.String())
	}
	if got := out.String(); !strings.Contains(got, "watching 2 sandboxes") {
		t.Fatalf("watch did not watch the record's sandboxes:\n%s", got)
	}
	// the counter does count: one request to a sandbox starts its container
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, br.URL+"/v1/sandbox/"+known[0]+"/running", nil)
	req.Header.Set("Authorization", "Bearer "+br.Token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	if n := br.Server.Allocations(known[0]); n != 1 {
		t.Fatalf("a direct request made %d allocations; the check above proves nothing", n)
	}
}
