package client

import (
	"context"
	"strings"
	"testing"
	"time"
)

func nextSandboxEvent(t *testing.T, w *Watcher, k SandboxEventKind) SandboxEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watcher closed while waiting for %v", k)
			}
			if ev.Kind == k {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %v event", k)
		}
	}
}

func TestWatchExplicitIncarnation(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	c := fb.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := c.Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond})
	if ev := nextSandboxEvent(t, w, SandboxStarted); ev.Incarnation != (Incarnation{Number: 1}) {
		t.Fatalf("initial %+v", ev)
	}
	if ev := nextSandboxEvent(t, w, ProcessAppeared); ev.Process.ID != "p1" {
		t.Fatalf("%+v", ev)
	}
	fb.exit("p1", 2)
	if ev := nextSandboxEvent(t, w, ProcessChanged); ev.Process.State != "exited" || ev.Process.Exit.Code != 2 {
		t.Fatalf("%+v", ev.Process)
	}
	fb.addProcess("p2")
	nextSandboxEvent(t, w, ProcessAppeared)
	fb.replace()
	ev := nextSandboxEvent(t, w, IncarnationChanged)
	if ev.Incarnation != (Incarnation{Number: 2}) || ev.Previous != (Incarnation{Number: 1}) || !strings.Contains(strings.Join(ev.Evidence, ";"), "reports incarnation 2") {
		t.Fatalf("%+v", ev)
	}
	if v := nextSandboxEvent(t, w, ProcessVanished); !strings.Contains(strings.Join(v.Evidence, ";"), "absent") {
		t.Fatalf("%+v", v)
	}
	cancel()
	for range w.Events() {
	}
}

func TestWatchInferredIncarnation(t *testing.T) {
	fb := newFakeBridge(t)
	fb.hideIncarnation = true
	fb.addProcess("p1")
	c := fb.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := c.Watch(ctx, "sbx", WatchOptions{FastInterval: 5 * time.Millisecond})
	if ev := nextSandboxEvent(t, w, ProcessAppeared); ev.Incarnation != (Incarnation{Number: 1, Inferred: true}) {
		t.Fatalf("%+v", ev)
	}
	// The container stops, then a new one starts with a fresh process table.
	fb.mu.Lock()
	fb.running = false
	fb.procs = map[string]*fakeProc{}
	fb.mu.Unlock()
	nextSandboxEvent(t, w, SandboxStopped)
	fb.mu.Lock()
	fb.running = true
	fb.mu.Unlock()
	fb.addProcess("p9")
	ev := nextSandboxEvent(t, w, IncarnationChanged)
	if ev.Incarnation != (Incarnation{Number: 2, Inferred: true}) || !strings.Contains(ev.Evidence[0], "inferred") {
		t.Fatalf("%+v", ev)
	}
}

func TestWatchReportsErrors(t *testing.T) {
	fb := newFakeBridge(t)
	c := fb.client(t)
	bad, _ := New(fb.srv.URL, WithToken("wrong"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := bad.Watch(ctx, "sbx", WatchOptions{FastInterval: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if ev := nextSandboxEvent(t, w, WatchError); ev.Err == nil {
		t.Fatal("no error")
	}
	cancel()
	for range w.Events() {
	}
	_ = c
}
