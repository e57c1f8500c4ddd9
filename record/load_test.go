package record

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandscope/client"
)

// A sandbox's history is read from the file outside the record's lock: while one is being read,
// the states in memory, Add and Loaded answer at once; a second reader of the same sandbox waits
// for the first read instead of reading it again; and an event Add folded meanwhile is in the
// state every reader gets.
func TestStateReadOutsideTheLock(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir)
	scene(r)
	r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "other", Time: t0,
		Incarnation: client.Incarnation{Number: 1}, Evidence: []string{"first poll"}}))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	started, release := make(chan struct{}), make(chan struct{})
	var reads atomic.Int32
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, Version: "test", FlushEvery: 5 * time.Millisecond,
		beforeRead: func(sb string) {
			if sb != "demo" {
				return
			}
			if reads.Add(1) == 1 {
				close(started)
			}
			<-release
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Loaded("demo") || r.Loaded("other") {
		t.Fatal("a state was in memory before anything asked for it")
	}
	r.State("other") // in memory from here on

	var wg sync.WaitGroup
	got := make([]*State, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = r.State("demo")
		}()
		if i == 0 {
			waitUntil(t, "the first read of demo to start", closed(started))
		}
	}

	// demo is being read (and held there): the lock is free for everything else
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		if st := r.State("other"); len(st.Incarnations) != 1 {
			t.Errorf("other: %+v", st.Incarnations)
		}
		if r.Loaded("demo") {
			t.Error("demo reads as loaded while its read is held")
		}
		r.Memo("other", "test", func(*State) any { return 1 })
	}()
	waitUntil(t, "the record to answer for other while demo is read", closed(answered))

	// Add loads demo itself (under the lock, to apply its event at once); the held read's state
	// is then dropped for the one Add loaded
	added := make(chan struct{})
	go func() {
		defer close(added)
		r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: "demo", Time: t0.Add(20 * time.Second),
			Incarnation: client.Incarnation{Number: 2}, Process: running("agent3", 4, 2)}))
	}()
	waitUntil(t, "Add for demo while its read is held", closed(added))
	close(release)
	wg.Wait()

	if n := reads.Load(); n != 1 {
		t.Fatalf("demo was read %d times from the file, want once", n)
	}
	for i, st := range got {
		checkScene(t, st, true)
		if e := st.Find(Process, "agent3"); e == nil || e.Earlier {
			t.Fatalf("reader %d: the event Add folded meanwhile is missing or marked earlier: %+v", i, e)
		}
	}
}

// closed reports whether ch is closed, for waitUntil.
func closed(ch <-chan struct{}) func() bool {
	return func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}
