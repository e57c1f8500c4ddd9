package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A bridge that ignores since= replays the whole log on every resume. With cursors the follower
// can recognise (ordered, or opaque but stable), what was shown is dropped and the end check
// confirms the ending: the output is shown once and the follow ends, with or without cuts.
func TestFollowBridgeIgnoringCursorShowsOutputOnce(t *testing.T) {
	for _, opaque := range []bool{false, true} {
		for _, cut := range []bool{false, true} {
			t.Run(fmt.Sprintf("opaque=%v/cut=%v", opaque, cut), func(t *testing.T) {
				fb := newFakeBridge(t)
				fb.ignoreSince = true
				fb.opaque = opaque
				if cut {
					// every other connection breaks after its first event and a half
					fb.cutAfter = func(conn int) int {
						if conn%2 == 1 {
							return 0
						}
						return 150
					}
				}
				fb.addProcess("p1")
				var want bytes.Buffer
				for i := range 5 {
					line := fmt.Sprintf("line %d\n", i)
					want.WriteString(line)
					fb.write("p1", "stdout", []byte(line))
				}
				c := fb.client(t)
				f := c.Follow(context.Background(), "sbx", "p1", followFastOpts())
				go func() {
					time.Sleep(20 * time.Millisecond)
					fb.write("p1", "stdout", []byte("late\n"))
					fb.exit("p1", 0)
				}()
				want.WriteString("late\n")
				evs := logCollect(t, f, 10*time.Second)
				out, _ := logDataOf(evs)
				if !bytes.Equal(out, want.Bytes()) {
					t.Fatalf("output %q, want %q (events %v)", out, want.String(), logKinds(evs))
				}
				if last := evs[len(evs)-1]; last.Kind != Ended {
					t.Fatalf("last event %v %q, want ended", last.Kind, last.Reason)
				}
			})
		}
	}
}

// When nothing lets the follower recognise the replay (cursors that change on every connection)
// or the replay never reaches an ending the status confirms, resumed streams that bring nothing
// new end the follow after maxReplays with ErrResumeIgnored: not success, not an endless replay,
// not a transport failure.
func TestFollowReplayWithoutProgressStops(t *testing.T) {
	cases := []struct {
		name  string
		setup func(fb *fakeBridge)
	}{
		{"cursors change per connection", func(fb *fakeBridge) { fb.opaque, fb.connCursors = true, true }},
		{"replay without the terminal event", func(fb *fakeBridge) { fb.noTerminal = true }},
		{"opaque replay without the terminal event", func(fb *fakeBridge) { fb.opaque, fb.noTerminal = true, true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fb := newFakeBridge(t)
			fb.ignoreSince = true
			tc.setup(fb)
			fb.addProcess("p1")
			fb.write("p1", "stdout", []byte("hello\n"))
			fb.write("p1", "stdout", []byte("world\n"))
			fb.exit("p1", 0)
			c := fb.client(t)
			f := c.Follow(context.Background(), "sbx", "p1", followFastOpts())
			evs := logCollect(t, f, 10*time.Second)
			last := evs[len(evs)-1]
			if last.Kind != Failed || !errors.Is(last.Err, ErrResumeIgnored) || errors.Is(last.Err, ErrTransport) {
				t.Fatalf("last event %v %q (%v), want failed with ErrResumeIgnored; events %v", last.Kind, last.Reason, last.Err, logKinds(evs))
			}
			if !strings.Contains(last.Reason, "ignores the resume cursor") {
				t.Fatalf("reason %q does not say what happened", last.Reason)
			}
			fb.mu.Lock()
			conns := fb.logConns
			fb.mu.Unlock()
			if conns > maxReplays+2 {
				t.Fatalf("%d log connections before stopping", conns)
			}
			out, _ := logDataOf(evs)
			if n := bytes.Count(out, []byte("hello\n")); n > maxReplays+1 {
				t.Fatalf("the log was shown %d times", n)
			}
		})
	}
}

// A bridge that honours the cursor but whose process stays quiet: resumes that bring nothing are
// not replays, and the follow goes on.
func TestFollowQuietResumesAreNotReplays(t *testing.T) {
	fb := newFakeBridge(t)
	fb.addProcess("p1")
	fb.write("p1", "stdout", []byte("hello\n"))
	fb.cutAfter = func(conn int) int {
		if conn <= 6 {
			return 1 // every stream breaks before its first event
		}
		return 0
	}
	c := fb.client(t)
	f := c.Follow(context.Background(), "sbx", "p1", followFastOpts())
	go func() {
		for {
			fb.mu.Lock()
			n := fb.logConns
			fb.mu.Unlock()
			if n > 6 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		fb.write("p1", "stdout", []byte("again\n"))
		fb.exit("p1", 0)
	}()
	evs := logCollect(t, f, 10*time.Second)
	out, _ := logDataOf(evs)
	if last := evs[len(evs)-1]; last.Kind != Ended || string(out) != "hello\nagain\n" {
		t.Fatalf("last %v %q, output %q; events %v", last.Kind, last.Reason, out, logKinds(evs))
	}
}

// A snapshot (NoFollow) of a bridge that holds the stream open despite follow=false ends once the
// stream stays quiet: with what was delivered when the status says running, with a failure that
// says so when the status cannot be looked up. It never waits forever.
func TestSnapshotOfStreamHeldOpenEnds(t *testing.T) {
	for _, statusFail := range []bool{false, true} {
		t.Run(fmt.Sprintf("statusFail=%v", statusFail), func(t *testing.T) {
			fb := newFakeBridge(t)
			fb.holdOpen = true
			fb.addProcess("p1")
			fb.write("p1", "stdout", []byte("hello\n"))
			c := fb.client(t)
			fb.mu.Lock()
			fb.statusFail = statusFail
			fb.mu.Unlock()
			p := Process{ID: "p1", State: "running"}
			opts := followFastOpts()
			opts.NoFollow, opts.QuietAfter, opts.Status = true, 50*time.Millisecond, &p
			evs := logCollect(t, c.Follow(context.Background(), "sbx", "p1", opts), 10*time.Second)
			out, _ := logDataOf(evs)
			if string(out) != "hello\n" {
				t.Fatalf("output %q", out)
			}
			last := evs[len(evs)-1]
			switch {
			case statusFail && (last.Kind != Failed || !strings.Contains(last.Reason, "snapshot stopped")):
				t.Fatalf("last event %v %q, want failed: snapshot stopped", last.Kind, last.Reason)
			case !statusFail && last.Kind != Data:
				t.Fatalf("last event %v %q, want the output and no ending", last.Kind, last.Reason)
			}
		})
	}
}
