package client_test

// Protocol tests against the real local bridge over loopback HTTP, with the fault-injecting proxy
// between client and bridge where the test needs the network to misbehave.

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/faultproxy"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

const sandbox = "local"

func drain(t *testing.T, f *client.Follower, deadline time.Duration) []client.LogEvent {
	t.Helper()
	var out []client.LogEvent
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-f.Events():
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timer.C:
			t.Fatalf("follower did not finish in %v (%d events)", deadline, len(out))
		}
	}
}

func tally(evs []client.LogEvent) (stdout []byte, n map[client.LogEventKind]int) {
	n = map[client.LogEventKind]int{}
	for _, e := range evs {
		n[e.Kind]++
		if e.Kind == client.Data && e.Stream == client.Stdout {
			stdout = append(stdout, e.Data...)
		}
	}
	return stdout, n
}

func newClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// 200 random cuts of a ~20 MB stream: the followed output must equal, byte for byte, what the process
// wrote (tee'd to a workspace file and read back through the files API), each cut visible as
// Interrupted → Resumed, and no gap. Retention is raised above the stream size so a reader that falls
// behind cannot hide behind eviction: any truncation would show up as a Gap and fail the test.
// The bridge reads the pipe in reads of at most 16 KiB here (about 22 KB as one SSE event), so cut
// offsets of up to 150 KB land past the first event almost always and 200 of them fit in the stream.
func TestFollowThroughRandomCutsOfA20MBStream(t *testing.T) {
	const cuts = 200
	b := bridgetest.Start(t, bridgetest.WithProcessLogLimits(64<<20, 1_000_000),
		bridgetest.WithConfig(func(c *localbridge.Config) { c.ProcessReadSize = 16 << 10 }))
	p := faultproxy.New(b.URL)
	defer p.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	rule := p.Add(faultproxy.Rule{Path: "/logs", Times: cuts, Fault: faultproxy.CutAfterRandom(rng, 150_000)})

	direct := newClient(t, b.URL, b.Token)
	ctx := context.Background()
	proc, err := direct.StartProcess(ctx, sandbox, client.ExecRequest{Argv: []string{"sh", "-c", "head -c 15000000 /dev/urandom | base64 | tee out.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, p.URL(), b.Token)
	evs := drain(t, c.Follow(ctx, sandbox, proc.ID, client.FollowOptions{MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, RetryBudget: 10}), 5*time.Minute)
	got, n := tally(evs)
	want, err := direct.ReadFile(ctx, sandbox, "out.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 20_000_000 {
		t.Fatalf("process wrote only %d bytes", len(want))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("followed %d bytes, process wrote %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	last := evs[len(evs)-1]
	if last.Kind != client.Ended || last.Status.Exit == nil || last.Status.Exit.Code != 0 {
		t.Fatalf("last event %+v", last)
	}
	hits := rule.Hits()
	t.Logf("%d cuts applied, %d interrupted, %d resumed", hits, n[client.Interrupted], n[client.Resumed])
	if hits != cuts {
		t.Fatalf("only %d of %d cuts applied", hits, cuts)
	}
	// A cut placed beyond the end of the final stream never bites; every other one must be seen.
	if n[client.Interrupted] < hits-1 || n[client.Interrupted] > hits || n[client.Resumed] != n[client.Interrupted] {
		t.Fatalf("cuts %d, interrupted %d, resumed %d", hits, n[client.Interrupted], n[client.Resumed])
	}
	if n[client.Gap] != 0 {
		t.Fatalf("%d gaps: the reader fell behind retention", n[client.Gap])
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A forged `terminal` event (exit 0) while the bridge still says running: SuspectEnd, keep
// following, and end with the real exit code.
func TestFollowForgedExitIsSuspect(t *testing.T) {
	b := bridgetest.Start(t)
	p := faultproxy.New(b.URL)
	defer p.Close()
	p.Add(faultproxy.Rule{Path: "/logs", Times: 1, Fault: faultproxy.ForgedExit(1, 0)})
	c := newClient(t, p.URL(), b.Token)
	ctx := context.Background()
	proc, err := c.StartProcess(ctx, sandbox, client.ExecRequest{Argv: []string{"sh", "-c", "echo one; sleep 0.5; echo two; exit 5"}})
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, c.Follow(ctx, sandbox, proc.ID, client.FollowOptions{MinBackoff: 10 * time.Millisecond}), time.Minute)
	got, n := tally(evs)
	if string(got) != "one\ntwo\n" {
		t.Fatalf("output %q", got)
	}
	if n[client.SuspectEnd] < 1 {
		t.Fatalf("no SuspectEnd: %v", n)
	}
	for _, e := range evs {
		if e.Kind == client.SuspectEnd && (e.Status == nil || e.Status.State != "running") {
			t.Fatalf("SuspectEnd without a running status: %+v", e)
		}
	}
	last := evs[len(evs)-1]
	if last.Kind != client.Ended || last.Status.Exit.Code != 5 {
		t.Fatalf("last %+v", last)
	}
}

// The sandbox is replaced while a process is followed: Lost, with explicit incarnation evidence.
func TestFollowLostWhenSandboxReplaced(t *testing.T) {
	b := bridgetest.Start(t)
	c := newClient(t, b.URL, b.Token)
	ctx := context.Background()
	proc, err := c.StartProcess(ctx, sandbox, client.ExecRequest{Argv: []string{"sh", "-c", "echo started; sleep 30"}})
	if err != nil {
		t.Fatal(err)
	}
	f := c.Follow(ctx, sandbox, proc.ID, client.FollowOptions{MinBackoff: 10 * time.Millisecond})
	if ev := <-f.Events(); ev.Kind != client.Data || string(ev.Data) != "started\n" {
		t.Fatalf("first %+v", ev)
	}
	if err := b.Server.ReplaceSandbox(sandbox); err != nil {
		t.Fatal(err)
	}
	evs := drain(t, f, time.Minute)
	last := evs[len(evs)-1]
	if last.Kind != client.Lost || last.Loss == nil {
		t.Fatalf("last %+v", last)
	}
	l := last.Loss
	if l.Inferred || l.Previous == 0 || l.Incarnation == l.Previous || l.SandboxRunning == nil {
		t.Fatalf("evidence %+v", l)
	}
	if !strings.Contains(last.Reason, "incarnation") {
		t.Fatalf("reason %q", last.Reason)
	}
}

// Capabilities, the sandbox list extension and the watcher's explicit incarnations, on the real
// local bridge.
func TestLocalBridgeCapabilitiesAndWatch(t *testing.T) {
	b := bridgetest.Start(t)
	c := newClient(t, b.URL, b.Token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	caps, err := c.Capabilities(ctx)
	if err != nil || caps.Dialect != client.DialectPreview || !caps.Local {
		t.Fatalf("%+v %v", caps, err)
	}
	proc, err := c.StartProcess(ctx, sandbox, client.ExecRequest{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.ListSandboxes(ctx)
	if err != nil || len(list) != 1 || list[0].ID != sandbox || !list[0].Running {
		t.Fatalf("%+v %v", list, err)
	}
	w := c.Watch(ctx, sandbox, client.WatchOptions{FastInterval: 20 * time.Millisecond})
	wait := func(k client.SandboxEventKind) client.SandboxEvent {
		for {
			select {
			case ev := <-w.Events():
				if ev.Kind == k {
					return ev
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no %v", k)
			}
		}
	}
	if ev := wait(client.ProcessAppeared); ev.Process.ID != proc.ID {
		t.Fatalf("%+v", ev)
	}
	if err := c.ReplaceSandbox(ctx, sandbox); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartProcess(ctx, sandbox, client.ExecRequest{Argv: []string{"sleep", "30"}}); err != nil {
		t.Fatal(err)
	}
	ev := wait(client.IncarnationChanged)
	if ev.Incarnation.Inferred || ev.Incarnation.Number == ev.Previous.Number {
		t.Fatalf("%+v", ev)
	}
}

// A stream that stalls (proxy holds it) while the process ends: the quiet check sees the process
// has ended, calls the stream stalled, resumes from the cursor and ends confirmed, nothing lost.
func TestFollowStalledStreamResumes(t *testing.T) {
	b := bridgetest.Start(t)
	p := faultproxy.New(b.URL)
	defer p.Close()
	c := newClient(t, p.URL(), b.Token)
	ctx := context.Background()
	proc, err := c.StartProcess(ctx, sandbox, client.ExecRequest{Argv: []string{"sh", "-c", "echo first; sleep 0.3; echo second; exit 4"}})
	if err != nil {
		t.Fatal(err)
	}
	// Hold the first logs stream after its first event (the stdout line "first").
	line := len(`data: {"type":"stdout","cursor":"","timestamp":"2026-01-01T00:00:00.000Z","data":"Zmlyc3QK"}`) + len(client.FormatCursor(proc.ID, 1)) + 2
	p.Add(faultproxy.Rule{Path: "/logs", Times: 1, Fault: faultproxy.StallAfter(int64(line), 0)})
	evs := drain(t, c.Follow(ctx, sandbox, proc.ID, client.FollowOptions{QuietAfter: 200 * time.Millisecond, MinBackoff: 10 * time.Millisecond}), time.Minute)
	got, n := tally(evs)
	if string(got) != "first\nsecond\n" || n[client.Interrupted] != 1 || n[client.Resumed] != 1 {
		t.Fatalf("output %q events %v", got, n)
	}
	var reason string
	for _, e := range evs {
		if e.Kind == client.Interrupted {
			reason = e.Reason
		}
	}
	last := evs[len(evs)-1]
	if !strings.Contains(reason, "stalled") || last.Kind != client.Ended || last.Status.Exit.Code != 4 {
		t.Fatalf("reason %q last %+v", reason, last)
	}
}
