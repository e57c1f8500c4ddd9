package logview

import (
	"context"
	"sync"
	"testing"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// ctxBridge records the context of every follow it starts.
type ctxBridge struct {
	*uitest.Bridge
	mu   sync.Mutex
	ctxs []context.Context
}

func (b *ctxBridge) Follow(ctx context.Context, s, p string, o driver.FollowOptions) <-chan client.LogEvent {
	b.mu.Lock()
	b.ctxs = append(b.ctxs, ctx)
	b.mu.Unlock()
	return b.Bridge.Follow(ctx, s, p, o)
}

// TestFollowersEndWithTheView: a second Init replaces the follower (the first one's context ends),
// closing the view ends every follower, and a closed view starts none.
func TestFollowersEndWithTheView(t *testing.T) {
	br := &ctxBridge{Bridge: uitest.NewBridge()}
	ctx := uitest.Context(t, br.Bridge, 100, 27)
	ctx.Driver = br
	m := New(ctx, []common.LogTarget{{Sandbox: "sbx", Process: client.Process{ID: "p1", State: "running"}, Incarnation: 1}}, Options{})
	m.SetSize(100, 27)
	m.Init()
	m.Init()
	br.mu.Lock()
	if len(br.ctxs) != 2 || br.ctxs[0].Err() == nil {
		br.mu.Unlock()
		t.Fatalf("after a second Init the first follower still runs (%d follows)", len(br.ctxs))
	}
	br.mu.Unlock()
	m.Close()
	m.Init()
	br.mu.Lock()
	defer br.mu.Unlock()
	if len(br.ctxs) != 2 {
		t.Fatalf("a closed view started a follower (%d follows)", len(br.ctxs))
	}
	for i, c := range br.ctxs {
		if c.Err() == nil {
			t.Fatalf("follower %d still runs after Close", i)
		}
	}
}
