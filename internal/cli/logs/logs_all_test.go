package logs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sandscope/client"
	"sandscope/followall"
	"sandscope/internal/cli/cmdutil"
	"strings"
	"testing"
)

func TestLineBufferKeepsLinesWhole(t *testing.T) {
	var lb lineBuffer
	feed := func(data string, clean, noSGR, final bool) string {
		lb.feed([]byte(data), "p | ", clean, noSGR, final)
		return string(lb.take())
	}
	if b := feed("par", false, false, false); b != "" {
		t.Fatalf("partial line written: %q", b)
	}
	if b := feed("tial\nnext\nrest", false, false, false); b != "p | partial\np | next\n" {
		t.Fatalf("got %q", b)
	}
	if b := feed("", false, false, true); b != "p | rest\n" {
		t.Fatalf("final flush %q", b)
	}
	if b := feed("", false, false, true); b != "" {
		t.Fatalf("second flush %q", b)
	}
	// Batches accumulate until taken.
	lb.feed([]byte("a\n"), "p | ", false, false, false)
	lb.feed([]byte("b\n"), "q | ", false, false, false)
	if b := string(lb.take()); b != "p | a\nq | b\n" {
		t.Fatalf("batch %q", b)
	}
	// A terminal gets no cursor moves or clears from a process; colours stay unless NO_COLOR.
	if b := feed("a\x1b[2Jb\x1b[31mred\x1b[0m\r\n", true, false, false); b != "p | ab\x1b[31mred\x1b[0m\n" {
		t.Fatalf("clean %q", b)
	}
	if b := feed("\x1b[31mred\x1b[0m\n", true, true, false); b != "p | red\n" {
		t.Fatalf("no colour %q", b)
	}
	// Not a terminal: the bytes as they are.
	if b := feed("a\x1b[2Jb\n", false, false, false); b != "p | a\x1b[2Jb\n" {
		t.Fatalf("raw %q", b)
	}
	// A line that never ends is cut, not held for ever.
	long := strings.Repeat("x", maxPartial+10)
	if b := feed(long, false, false, false); len(b) != len("p | ")+len(long)+1 {
		t.Fatalf("long line: %d bytes", len(b))
	}
	// The data's buffer may be reused by the follower: a held partial line is a copy.
	data := []byte("keep")
	lb.feed(data, "p | ", false, false, false)
	copy(data, "XXXX")
	if b := feed("\n", false, false, false); b != "p | keep\n" {
		t.Fatalf("partial line aliased the event's buffer: %q", b)
	}
}

func BenchmarkLineBuffer(b *testing.B) {
	line := "sandscope benchmark line 0123456789abcdefghijklmnopqrstuvwxyz\n"
	data := []byte(strings.Repeat(line, 64<<10/len(line)))
	data = data[:len(data)-7] // chunks cut mid-line
	var lb lineBuffer
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		lb.feed(data, "producer-1a2b3c4d | ", false, false, false)
		lb.take()
	}
}

func TestProcessNameAndFilters(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"sh", "-c", "echo hi", "build"}, "build-1a2b3c4d"},
		{[]string{"/usr/bin/node", "agent.js"}, "node-1a2b3c4d"},
		{[]string{"\x1b[2Jevil\n"}, "2Jevil-1a2b3c4d"},
		{nil, "1a2b3c4d"},
	} {
		if got := followall.Name(client.Process{ID: "1a2b3c4d-5e6f", Command: c.cmd}); got != c.want {
			t.Errorf("%q: got %q want %q", c.cmd, got, c.want)
		}
	}
	if colorOf("x") != colorOf("x") {
		t.Error("colour not stable")
	}
	m, err := followall.ParseStates([]string{"running,ended"})
	if err != nil || !m["running"] || !m["exited"] || !m["error"] {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := followall.ParseStates([]string{"bogus"}); err == nil {
		t.Fatal("bad state accepted")
	}
	for _, c := range []struct {
		counts map[outcome]int
		code   int
	}{
		{map[outcome]int{outEnded: 3}, 0},
		{map[outcome]int{outEnded: 1, outLost: 1}, cmdutil.ExitLost},
		{map[outcome]int{outLost: 1, outFailed: 1}, cmdutil.ExitNoResume},
		{map[outcome]int{outUsage: 1, outLost: 1}, cmdutil.ExitUsage},
	} {
		err := allExit(c.counts, true)
		var ee *cmdutil.ExitError
		if code := 0; (err == nil && c.code != 0) || (err != nil && (!errors.As(err, &ee) || ee.Code != c.code)) {
			t.Errorf("%v: got %v want %d", c.counts, err, c.code+code)
		}
	}
}

// logs --all frames a large event in pieces (pieceEnd); the lines must be the same as if it
// were framed whole, whatever the line lengths (lines longer than a piece included).
func TestPiecesFrameLikeWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var data []byte
		for len(data) < 3*allBatch {
			n := rng.IntN(100)
			switch rng.IntN(20) {
			case 0:
				n = rng.IntN(3 * allBatch) // longer than a piece, often longer than maxPartial
			case 1:
				n = 0
			}
			data = append(data, bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, n)...)
			if rng.IntN(50) != 0 {
				data = append(data, '\n')
			}
		}
		var whole, pieces lineBuffer
		whole.feed(data, "p | ", false, false, false)
		want := append([]byte(nil), whole.take()...)
		var got []byte
		for rest := data; len(rest) > 0; {
			n := pieceEnd(rest)
			if n <= 0 || n > len(rest) {
				t.Fatalf("pieceEnd %d of %d", n, len(rest))
			}
			pieces.feed(rest[:n], "p | ", false, false, false)
			got = append(got, pieces.take()...)
			rest = rest[n:]
		}
		if !bytes.Equal(got, want) || !bytes.Equal(whole.partial, pieces.partial) {
			t.Fatalf("round %d: pieces framed %d bytes, whole %d", round, len(got), len(want))
		}
	}
}

// Lines copied in whole blocks come out as prefix + line + newline, whatever the lengths of the
// prefix and the lines (around the block size especially) and however the data is cut.
func TestRawLinesMatchPrefixingEachLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 300; round++ {
		prefix := strings.Repeat("p", rng.IntN(90)) + " | "
		var data []byte
		for len(data) < 8<<10 {
			n := rng.IntN(70)
			if rng.IntN(10) == 0 {
				n = 60 + rng.IntN(10) // around the block
			} else if rng.IntN(20) == 0 {
				n = rng.IntN(1000)
			}
			for i := 0; i < n; i++ {
				data = append(data, byte(' '+rng.IntN(90)))
			}
			data = append(data, '\n')
		}
		data = append(data, "unfinished"...)
		var want []byte
		lines := bytes.Split(data, []byte("\n"))
		for _, l := range lines[:len(lines)-1] {
			want = append(append(append(want, prefix...), l...), '\n')
		}
		var lb lineBuffer
		if rng.IntN(2) == 0 {
			lb.batch = make([]byte, 0, rng.IntN(200)) // little room to start with
		}
		var got []byte
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(300))
			lb.feed(rest[:n], prefix, false, false, false)
			got = append(got, lb.take()...)
			rest = rest[n:]
		}
		if !bytes.Equal(got, want) || string(lb.partial) != "unfinished" {
			t.Fatalf("round %d (prefix %d bytes): got %d bytes, want %d; partial %q", round, len(prefix), len(got), len(want), lb.partial)
		}
	}
}
