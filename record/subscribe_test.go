package record

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandscope/client"
)

// TestSubscribeCancelWhileAdding cancels subscriptions while events are added on other
// goroutines (screens unsubscribe while the watcher writes). Under -race, a change sent to a
// channel its cancel closes at the same moment is a data race; the test also checks delivery
// and that cancel and Close end the channels.
func TestSubscribeCancelWhileAdding(t *testing.T) {
	r := open(t, t.TempDir())
	defer r.Close()
	const perAdder = 2000
	var adders sync.WaitGroup
	var done atomic.Int32
	for w := 0; w < 2; w++ {
		adders.Add(1)
		go func() {
			defer adders.Done()
			defer done.Add(1)
			for i := range perAdder {
				r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "demo", Time: t0.Add(time.Duration(i) * time.Millisecond)}))
			}
		}()
	}
	cancels := 0
	for done.Load() < 2 {
		ch, cancel := r.Subscribe()
		cancel()
		cancel() // a second cancel does nothing
		for range ch {
		} // cancel closes the channel
		cancels++
	}
	adders.Wait()
	if cancels == 0 {
		t.Fatal("no subscription was cancelled while events were added")
	}

	ch, _ := r.Subscribe()
	r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "demo", Time: t0}))
	if got := <-ch; got != "demo" {
		t.Fatalf("subscriber told of %q, not demo", got)
	}
	r.Close()
	for range ch {
	} // Close ends every subscription
	late, _ := r.Subscribe()
	select {
	case _, ok := <-late:
		if ok {
			t.Fatal("a subscription taken after Close was told of a change")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a subscription taken after Close is open")
	}
}
