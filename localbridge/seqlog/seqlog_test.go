package seqlog

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

func readAll(t *testing.T, r *Reader) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []Event
	for {
		ev, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		out = append(out, ev)
	}
}

func TestCursorFormat(t *testing.T) {
	l := New("6f1c2a9e-3d4b-4e8f-9a1b-2c3d4e5f6a7b", 0, 0)
	want := "djEuTm1ZeFl6SmhPV1V0TTJRMFlpMDBaVGhtTFRsaE1XSXRNbU16WkRSbE5XWTJZVGRpLjE"
	if got := l.Cursor(1); got != want {
		t.Fatalf("cursor = %s, want %s", got, want)
	}
	if got := string(l.AppendCursor(nil, 42)); got != l.Cursor(42) {
		t.Fatalf("AppendCursor = %s, want %s", got, l.Cursor(42))
	}
}

func TestParseCursorOrder(t *testing.T) {
	l := New("store-a", 0, 0)
	for i := 0; i < 5; i++ {
		l.Append(Stdout, []byte("x"))
	}
	other := New("store-b", 0, 0)
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	sa := enc("store-a")
	cases := []struct {
		name string
		in   string
		seq  uint64
		err  error
	}{
		{"ok", l.Cursor(3), 3, nil},
		{"head", l.Cursor(5), 5, nil},
		{"empty", "", 0, ErrInvalidCursor},
		{"bad char", l.Cursor(3) + "=", 0, ErrInvalidCursor},
		{"plus", "ab+c", 0, ErrInvalidCursor},
		{"non canonical", enc("v1."+sa+".3") + "A", 0, ErrInvalidCursor},
		{"two parts", enc("v1." + sa), 0, ErrInvalidCursor},
		{"four parts", enc("v1." + sa + ".3.4"), 0, ErrInvalidCursor},
		{"v2", enc("v2." + sa + ".3"), 0, ErrInvalidCursor},
		{"bad store", enc("v1.@@.3"), 0, ErrInvalidCursor},
		{"other store", other.Cursor(1), 0, ErrOtherStore},
		{"other store bad seq", enc("v1." + enc("store-b") + ".x"), 0, ErrOtherStore},
		{"zero", enc("v1." + sa + ".0"), 0, ErrInvalidCursor},
		{"leading zero", enc("v1." + sa + ".03"), 0, ErrInvalidCursor},
		{"negative", enc("v1." + sa + ".-3"), 0, ErrInvalidCursor},
		{"unsafe", enc("v1." + sa + ".9007199254740992"), 0, ErrInvalidCursor},
		{"future", l.Cursor(6), 0, ErrFutureCursor},
	}
	for _, c := range cases {
		seq, err := l.ParseCursor(c.in)
		if !errors.Is(err, c.err) || seq != c.seq {
			t.Errorf("%s: ParseCursor(%q) = %d, %v; want %d, %v", c.name, c.in, seq, err, c.seq, c.err)
		}
	}
}

func TestSnapshotAndFollow(t *testing.T) {
	l := New("s", 0, 0)
	l.Append(Stdout, []byte("a"))
	l.Append(Stderr, []byte("b"))
	snap := l.Subscribe(0, false)
	l.Append(Stdout, []byte("c"))
	if evs := readAll(t, snap); len(evs) != 2 || string(evs[1].Data) != "b" || evs[1].Kind != Stderr {
		t.Fatalf("snapshot = %+v", evs)
	}
	fol := l.Subscribe(1, true)
	live := l.SubscribeLive()
	done := make(chan []Event, 2)
	go func() { done <- readAll(t, fol) }()
	go func() { done <- readAll(t, live) }()
	time.Sleep(10 * time.Millisecond)
	l.Append(Stdout, []byte("d"))
	fin := l.Finish("exit")
	if fin != 5 {
		t.Fatalf("finish seq = %d", fin)
	}
	if l.Append(Stdout, []byte("late")) != 0 {
		t.Fatal("append after finish stored")
	}
	a, b := <-done, <-done
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a) != 4 || a[0].Seq != 2 || a[3].Kind != Final || a[3].Final != "exit" {
		t.Fatalf("follow = %+v", a)
	}
	if len(b) != 2 || string(b[0].Data) != "d" || b[1].Kind != Final {
		t.Fatalf("live = %+v", b)
	}
	// A finished log: following ends after the terminal event.
	if evs := readAll(t, l.Subscribe(0, true)); len(evs) != 5 {
		t.Fatalf("finished follow = %d events", len(evs))
	}
}

func TestTruncation(t *testing.T) {
	l := New("s", 10, 3)
	for i := 0; i < 5; i++ {
		l.Append(Stdout, []byte("abcd"))
	}
	st := l.Stats()
	if st.First != 4 || st.Last != 5 || st.Bytes != 8 {
		t.Fatalf("stats = %+v", st)
	}
	evs := readAll(t, l.Subscribe(0, false))
	if len(evs) != 3 || evs[0].Kind != Truncated || evs[1].Seq != 4 {
		t.Fatalf("open with evicted head = %+v", evs)
	}
	// A valid but expired cursor is not an error.
	if _, err := l.ParseCursor(l.Cursor(1)); err != nil {
		t.Fatalf("expired cursor: %v", err)
	}
	if evs := readAll(t, l.Subscribe(3, false)); len(evs) != 2 || evs[0].Kind != Stdout {
		t.Fatalf("cursor at the edge = %+v", evs)
	}
	// A reader that falls behind gets one marker per gap.
	r := l.Subscribe(4, true)
	for i := 0; i < 4; i++ {
		l.Append(Stdout, []byte("efgh"))
	}
	l.Finish(nil)
	evs = readAll(t, r)
	if len(evs) != 4 || evs[0].Kind != Truncated || evs[1].Seq != 8 || evs[3].Kind != Final {
		t.Fatalf("overtaken reader = %+v", evs)
	}
	// The event limit evicts too (the terminal event counts).
	l2 := New("s", 0, 2)
	l2.Append(Stdout, []byte("1"))
	l2.Append(Stdout, []byte("2"))
	l2.Finish(nil)
	if st := l2.Stats(); st.First != 2 || st.Events != 2 {
		t.Fatalf("event limit stats = %+v", st)
	}
}

func TestOversizedChunkKept(t *testing.T) {
	l := New("s", 4, 0)
	l.Append(Stdout, []byte("0123456789"))
	if evs := readAll(t, l.Subscribe(0, false)); len(evs) != 1 || len(evs[0].Data) != 10 {
		t.Fatalf("oversized = %+v", evs)
	}
}

func TestAbortWakesReaders(t *testing.T) {
	l := New("s", 0, 0)
	boom := errors.New("runtime replaced")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.SubscribeLive().Next(context.Background())
			errs <- err
		}()
	}
	time.Sleep(10 * time.Millisecond)
	l.Abort(boom)
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, boom) {
			t.Fatalf("reader error = %v", err)
		}
	}
}

func TestContextCancel(t *testing.T) {
	l := New("s", 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.SubscribeLive().Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// Many concurrent readers each see every byte exactly once, in order, while the writer never waits.
func TestConcurrentReaders(t *testing.T) {
	l := New("s", 0, 0)
	const n = 2000
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		r := l.Subscribe(0, true)
		go func() {
			defer wg.Done()
			var want uint64 = 1
			ctx := context.Background()
			var buf []Event
			for {
				var err error
				buf, err = r.NextBatch(ctx, buf[:0], 64)
				for _, ev := range buf {
					if ev.Seq != want {
						t.Errorf("seq %d, want %d", ev.Seq, want)
						return
					}
					want++
				}
				if errors.Is(err, io.EOF) {
					if want != n+2 {
						t.Errorf("ended at %d", want)
					}
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		l.Append(Stdout, []byte("chunk"))
	}
	l.Finish(nil)
	wg.Wait()
}

func FuzzParseCursor(f *testing.F) {
	l := New("store", 0, 0)
	l.Append(Stdout, []byte("x"))
	f.Add(l.Cursor(1))
	f.Add("")
	f.Add("djEu")
	f.Fuzz(func(t *testing.T, s string) {
		seq, err := l.ParseCursor(s)
		if err == nil && (seq != 1 || l.Cursor(seq) != s) {
			t.Fatalf("accepted %q as %d", s, seq)
		}
	})
}
