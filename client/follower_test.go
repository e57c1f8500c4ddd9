package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

func TestFollowDeliversAllAndEndsConfirmed(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	fb.write("p1", "stdout", []byte("hello "))
	fb.write("p1", "stderr", []byte("oops\n"))
	c := fb.client(t)
	f := c.Follow(context.Background(), "sbx", "p1", followFastOpts())
	go func() {
		time.Sleep(20 * time.Millisecond)
		fb.write("p1", "stdout", []byte("world\n"))
		fb.exit("p1", 3)
	}()
	evs := logCollect(t, f, 10*time.Second)
	out, errb := logDataOf(evs)
	if string(out) != "hello world\n" || string(errb) != "oops\n" {
		t.Fatalf("stdout %q stderr %q", out, errb)
	}
	last := evs[len(evs)-1]
	if last.Kind != Ended || last.Status == nil || last.Status.Exit == nil || last.Status.Exit.Code != 3 {
		t.Fatalf("last event %+v", last)
	}
	if last.Cursor != FormatCursor("p1", 4) || f.Cursor() != last.Cursor {
		t.Fatalf("final cursor %q / %q", last.Cursor, f.Cursor())
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.lastAuth != "Bearer s3cret-token" || fb.lastUA != DefaultUserAgent {
		t.Fatalf("auth %q ua %q", fb.lastAuth, fb.lastUA)
	}
}

// Random cuts of the connection at byte offsets: output must be byte-identical, and every cut must
// show up as Interrupted … Resumed.
func TestFollowRandomCutsByteExact(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	rng := rand.New(rand.NewPCG(1, 2))
	want := fb.writeRandom("p1", rng, 400, 3000)
	fb.exit("p1", 0)
	fb.cutAfter = func(conn int) int {
		if conn > 60 {
			return 0
		}
		return 1 + rng.IntN(40000)
	}
	c := fb.client(t)
	opts := followFastOpts()
	opts.RetryBudget = 3
	evs := logCollect(t, c.Follow(context.Background(), "sbx", "p1", opts), 20*time.Second)
	out, _ := logDataOf(evs)
	fb.mu.Lock()
	cuts := fb.aborts
	fb.mu.Unlock()
	if cuts < 30 {
		t.Fatalf("only %d cuts happened", cuts)
	}
	if !bytes.Equal(out, want) {
		t.Fatalf("output differs: got %d bytes, want %d", len(out), len(want))
	}
	if n := countKind(evs, Interrupted); n != cuts {
		t.Fatalf("interrupted %d times, cuts %d", n, cuts)
	}
	if countKind(evs, Resumed) != cuts || countKind(evs, Gap) != 0 {
		t.Fatalf("resumed %d gaps %d cuts %d", countKind(evs, Resumed), countKind(evs, Gap), cuts)
	}
	if evs[len(evs)-1].Kind != Ended {
		t.Fatalf("last %v", evs[len(evs)-1].Kind)
	}
}

func TestFollowForgedTerminalIsSuspect(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	for i := 0; i < 5; i++ {
		fb.write("p1", "stdout", []byte(fmt.Sprintf("line %d\n", i)))
	}
	fb.forgeAt = 3
	c := fb.client(t)
	f := c.Follow(context.Background(), "sbx", "p1", followFastOpts())
	go func() {
		time.Sleep(30 * time.Millisecond)
		fb.exit("p1", 42)
	}()
	evs := logCollect(t, f, 10*time.Second)
	if countKind(evs, SuspectEnd) < 1 {
		t.Fatalf("no suspect end: %v", logKinds(evs))
	}
	out, _ := logDataOf(evs)
	if string(out) != "line 0\nline 1\nline 2\nline 3\nline 4\n" {
		t.Fatalf("output %q", out)
	}
	last := evs[len(evs)-1]
	if last.Kind != Ended || last.Status.Exit.Code != 42 {
		t.Fatalf("last %+v", last)
	}
	for _, e := range evs {
		if e.Kind == SuspectEnd && (e.Status == nil || e.Status.State != "running") {
			t.Fatalf("suspect end without running status: %+v", e)
		}
	}
}

func TestFollowLostOnReplace(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	fb.write("p1", "stdout", []byte("before\n"))
	c := fb.client(t)
	f := c.Follow(context.Background(), "sbx", "p1", followFastOpts())
	first := <-f.Events()
	if first.Kind != Data {
		t.Fatalf("first %v", first.Kind)
	}
	fb.replace()
	evs := logCollect(t, f, 10*time.Second)
	last := evs[len(evs)-1]
	if last.Kind != Lost || last.Loss == nil {
		t.Fatalf("events %v", logKinds(evs))
	}
	l := last.Loss
	if l.Previous != 1 || l.Incarnation != 2 || l.Inferred || l.SandboxRunning == nil || !*l.SandboxRunning {
		t.Fatalf("loss evidence %+v", l)
	}
}

func TestFollowInvalidCursorRestartsWithoutDuplicates(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	for i := 0; i < 10; i++ {
		fb.write("p1", "stdout", []byte{byte('a' + i)})
	}
	fb.exit("p1", 0)
	fb.cutAfter = func(conn int) int {
		if conn == 1 {
			return len(eventLine("p1", 1, fakeEvent{typ: "stdout", data: []byte("a")}))*4 + 5
		}
		return 0
	}
	fb.openStatus = func(conn int, since string) int {
		if since != "" {
			return 500 // the bridge rejects every cursor
		}
		return 0
	}
	c := fb.client(t)
	evs := logCollect(t, c.Follow(context.Background(), "sbx", "p1", followFastOpts()), 10*time.Second)
	out, _ := logDataOf(evs)
	if string(out) != "abcdefghij" {
		t.Fatalf("output %q (%v)", out, logKinds(evs))
	}
	// The restart from the oldest retained event replays seq 1..4 (dropped as already shown) and
	// continues at 5: the cursor numbers prove nothing is missing, so no gap is shown.
	if countKind(evs, Gap) != 0 || countKind(evs, Resumed) == 0 || evs[len(evs)-1].Kind != Ended {
		t.Fatalf("events %v", logKinds(evs))
	}
}

// After a text 500 on resume the follower restarts from the oldest retained event. Whether that
// shows a gap is decided by sequence numbers: none when the evicted head was already shown (even
// though the bridge sends `truncated`), one with the exact missing count when it was not, and a
// conservative one when cursors cannot be parsed.
func TestFollowRestartGapOnlyWithEvidence(t *testing.T) {
	cases := []struct {
		name    string
		retain  int // events retained from the second connection on (10 outputs + terminal = 11)
		opaque  bool
		wantOut string
		wantGap *GapInfo
	}{
		{name: "evicted head already shown", retain: 9, wantOut: "abcdefghij"}, // truncated, then seq 3, 4 again
		{name: "evicted past the last shown", retain: 3, wantOut: "abcdij",
			wantGap: &GapInfo{Reason: GapInvalidCursor, Events: 4, FromCursor: FormatCursor("p1", 4), ToCursor: FormatCursor("p1", 9)}},
		{name: "opaque cursors", opaque: true, wantOut: "abcdabcdefghij",
			wantGap: &GapInfo{Reason: GapRestarted, Events: -1, FromCursor: "op" + FormatCursor("p1", 4)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fb := newFakeBridge(t)
			fb.addProcess("p1")
			for i := 0; i < 10; i++ {
				fb.write("p1", "stdout", []byte{byte('a' + i)})
			}
			fb.exit("p1", 0)
			fb.opaque = tc.opaque
			line := len(eventLine("p1", 1, fakeEvent{typ: "stdout", data: []byte("a")}))
			if tc.opaque {
				line += 2
			}
			fb.cutAfter = func(conn int) int {
				if conn == 1 {
					return line*4 + 5 // four events delivered, the fifth cut
				}
				return 0
			}
			fb.openStatus = func(conn int, since string) int {
				if conn >= 2 {
					fb.retainEvents = tc.retain // called under fb.mu
				}
				if conn == 2 {
					return 500 // the resume from seq 4 is refused once
				}
				return 0
			}
			evs := logCollect(t, fb.client(t).Follow(context.Background(), "sbx", "p1", followFastOpts()), 10*time.Second)
			out, _ := logDataOf(evs)
			if string(out) != tc.wantOut || evs[len(evs)-1].Kind != Ended {
				t.Fatalf("output %q, want %q (%v)", out, tc.wantOut, logKinds(evs))
			}
			var gaps []*GapInfo
			for _, e := range evs {
				if e.Kind == Gap {
					gaps = append(gaps, e.Gap)
				}
			}
			switch {
			case tc.wantGap == nil && len(gaps) != 0:
				t.Fatalf("false gap %+v (%v)", gaps[0], logKinds(evs))
			case tc.wantGap != nil && len(gaps) != 1:
				t.Fatalf("%d gaps, want 1 (%v)", len(gaps), logKinds(evs))
			case tc.wantGap != nil:
				g := *gaps[0]
				if g.Reason != tc.wantGap.Reason || g.Events != tc.wantGap.Events || g.FromCursor != tc.wantGap.FromCursor ||
					(tc.wantGap.ToCursor != "" && g.ToCursor != tc.wantGap.ToCursor) {
					t.Fatalf("gap %+v, want %+v", g, *tc.wantGap)
				}
			}
		})
	}
}

func TestFollowTruncatedReportsGap(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	for i := 0; i < 10; i++ {
		fb.write("p1", "stdout", []byte{byte('a' + i)})
	}
	fb.exit("p1", 0)
	fb.retainEvents = 4 // keeps seq 8..11 (h, i, j, terminal)
	c := fb.client(t)
	evs := logCollect(t, c.Follow(context.Background(), "sbx", "p1", followFastOpts()), 10*time.Second)
	out, _ := logDataOf(evs)
	if string(out) != "hij" {
		t.Fatalf("output %q", out)
	}
	if evs[0].Kind != Gap || evs[0].Gap.Reason != GapTruncated || evs[0].Gap.ToCursor != FormatCursor("p1", 8) {
		t.Fatalf("first %+v", evs[0])
	}
}

func TestFollowMalformedEventResumesWithoutLoss(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	for i := 0; i < 6; i++ {
		fb.write("p1", "stdout", []byte{byte('a' + i)})
	}
	fb.exit("p1", 0)
	fb.garbleAt = 3
	c := fb.client(t)
	evs := logCollect(t, c.Follow(context.Background(), "sbx", "p1", followFastOpts()), 10*time.Second)
	out, _ := logDataOf(evs)
	if string(out) != "abcdef" {
		t.Fatalf("output %q", out)
	}
	var me *MalformedEventError
	found := false
	for _, e := range evs {
		if e.Kind == Interrupted && errors.As(e.Err, &me) {
			found = true
		}
	}
	if !found {
		t.Fatalf("malformed event not reported: %v", logKinds(evs))
	}
}

func TestFollowRetryBudgetFails(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	fb.write("p1", "stdout", []byte("x"))
	fb.openStatus = func(conn int, since string) int { return 502 }
	c := fb.client(t)
	opts := followFastOpts()
	opts.RetryBudget = 3
	evs := logCollect(t, c.Follow(context.Background(), "sbx", "p1", opts), 10*time.Second)
	last := evs[len(evs)-1]
	if last.Kind != Failed || !errors.Is(last.Err, ErrTransport) {
		t.Fatalf("events %v last %+v", logKinds(evs), last)
	}
	if countKind(evs, Reconnecting) != 3 || countKind(evs, Interrupted) != 1 {
		t.Fatalf("events %v", logKinds(evs))
	}
}

func TestFollowQuietAndSnapshot(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	fb.write("p1", "stdout", []byte("x"))
	c := fb.client(t)
	opts := followFastOpts()
	opts.QuietAfter = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	f := c.Follow(ctx, "sbx", "p1", opts)
	if ev := <-f.Events(); ev.Kind != Data {
		t.Fatalf("first %v", ev.Kind)
	}
	if ev := <-f.Events(); ev.Kind != Quiet || ev.Status == nil || ev.Status.State != "running" {
		t.Fatalf("second %+v", ev)
	}
	cancel()
	for range f.Events() {
	}
	<-f.Done()

	snap := logCollect(t, c.Follow(context.Background(), "sbx", "p1", FollowOptions{NoFollow: true}), 10*time.Second)
	if len(snap) != 1 || snap[0].Kind != Data {
		t.Fatalf("snapshot %v", logKinds(snap))
	}
}

func TestFollowNotFoundFails(t *testing.T) {
	fb := newFakeBridge(t)
	c := fb.client(t)
	evs := logCollect(t, c.Follow(context.Background(), "sbx", "nope", followFastOpts()), 10*time.Second)
	if len(evs) != 1 || evs[0].Kind != Failed || !errors.Is(evs[0].Err, ErrNotFound) {
		t.Fatalf("events %+v", evs)
	}
}

// A consumer that stops reading must not strand the goroutine once the context is cancelled.
func TestFollowCancelWhileBlockedOnSend(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	for i := 0; i < 50; i++ {
		fb.write("p1", "stdout", []byte("x"))
	}
	c := fb.client(t)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	opts := followFastOpts()
	opts.Buffer = 1
	f := c.Follow(ctx, "sbx", "p1", opts)
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-f.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("follower goroutine did not end after cancel")
	}
	_ = before
}

// A terminal event that arrives early while the process really has ended must not hide the output
// the bridge still holds after it.
func TestFollowEarlyTerminalAfterRealExitLosesNothing(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	for i := 0; i < 5; i++ {
		fb.write("p1", "stdout", []byte(fmt.Sprintf("line %d\n", i)))
	}
	fb.exit("p1", 6)
	fb.forgeAt = 3
	c := fb.client(t)
	evs := logCollect(t, c.Follow(context.Background(), "sbx", "p1", followFastOpts()), 10*time.Second)
	out, _ := logDataOf(evs)
	if string(out) != "line 0\nline 1\nline 2\nline 3\nline 4\n" {
		t.Fatalf("output %q events %v", out, logKinds(evs))
	}
	if last := evs[len(evs)-1]; last.Kind != Ended || last.Status.Exit.Code != 6 || last.Cursor != FormatCursor("p1", 6) {
		t.Fatalf("last %+v", last)
	}
}
