package termpane

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// digestAll feeds data the way the worker does when far behind: fast-path steps where allowed,
// 16 KiB slices otherwise.
func digestAll(em *vt.Emulator, data []byte, rows int, fast bool) (skipped int) {
	var tr marginTracker
	for len(data) > 0 {
		if fast && tr.safe(em.IsAltScreen()) {
			if n := skippable(data[:min(len(data), fastWindow)], rows); n > 0 {
				em.Write(scrollOut(rows))
				data = data[n:]
				skipped += n
				continue
			}
		}
		p := data[:min(len(data), digestSlice)]
		tr.feed(p, rows)
		em.Write(p)
		data = data[len(p):]
	}
	return skipped
}

func randomStream(r *rand.Rand, lines int) []byte {
	var b bytes.Buffer
	words := []string{"alpha", "βeta", "日本語", "tab\there", "x", "0123456789", "\x07", "back\bspace"}
	for i := 0; i < lines; i++ {
		switch r.IntN(40) {
		case 0:
			fmt.Fprintf(&b, "\x1b[%d;%dr", 1+r.IntN(5), 8+r.IntN(10)) // scroll region
		case 1:
			b.WriteString("\x1b[r")
		case 2:
			b.WriteString("\x1b[?1049h")
		case 3:
			b.WriteString("\x1b[?1049l")
		case 4:
			fmt.Fprintf(&b, "\x1b[%d;%dH", 1+r.IntN(24), 1+r.IntN(80))
		case 5:
			fmt.Fprintf(&b, "\x1b[3%dm", r.IntN(8))
		case 6:
			b.WriteString("\x1b[2J")
		case 7:
			b.WriteString("\x1b]0;title\x07")
		case 8:
			b.WriteString("\x1b[1;24r")
		}
		n := r.IntN(12)
		for j := 0; j < n; j++ {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		if r.IntN(10) == 0 {
			b.WriteString("\n")
		} else {
			b.WriteString("\r\n")
		}
	}
	return b.Bytes()
}

func TestFastPathMatchesFullEmulation(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var data []byte
		if seed%3 == 0 {
			// long plain runs (the case the fast path is for) between escape-heavy parts
			var b bytes.Buffer
			for i := 0; i < 3000; i++ {
				fmt.Fprintf(&b, "plain line %d %s\r\n", i, bytes.Repeat([]byte("z"), i%150))
			}
			data = append(randomStream(r, 200), b.Bytes()...)
			data = append(data, randomStream(r, 200)...)
			data = append(data, b.Bytes()...)
		} else {
			data = randomStream(r, 4000)
		}
		full, quick := vt.NewEmulator(80, 24), vt.NewEmulator(80, 24)
		digestAll(full, data, 24, false)
		skipped := digestAll(quick, data, 24, true)
		if full.Render() != quick.Render() || full.CursorPosition() != quick.CursorPosition() || full.IsAltScreen() != quick.IsAltScreen() {
			t.Fatalf("seed %d: fast path (skipped %d of %d bytes) differs from full emulation:\n--- full ---\n%s\n--- fast ---\n%s",
				seed, skipped, len(data), full.String(), quick.String())
		}
		if seed%3 == 0 && skipped == 0 {
			t.Fatalf("seed %d: fast path never engaged on long plain runs", seed)
		}
	}
}

func TestMarginTracker(t *testing.T) {
	var tr marginTracker
	tr.feed([]byte("\x1b[5;20r"), 24)
	if tr.safe(false) {
		t.Fatal("region set but safe")
	}
	tr.feed([]byte("\x1b[?1049h"), 24)
	if !tr.safe(true) {
		t.Fatal("alt screen has no region")
	}
	tr.feed([]byte("\x1b[?1049l\x1b[1;24r"), 24)
	if !tr.safe(false) {
		t.Fatal("full region reset not seen")
	}
	tr.feed([]byte("\x1b["), 24)
	if tr.safe(false) {
		t.Fatal("inside a sequence counts as safe")
	}
	tr.feed([]byte("?69h"), 24)
	if tr.safe(false) {
		t.Fatal("left/right margins on but safe")
	}
	tr.feed([]byte("\x1bc"), 24)
	if !tr.safe(false) {
		t.Fatal("RIS did not reset")
	}
}

// Whatever bytes a process prints, feeding the emulator never takes the program down.
func FuzzEmulatorFeed(f *testing.F) {
	f.Add([]byte("\x1b[5;20r\x1b[?1049h plain\r\n\x1b]0;t\x07\x1b[6n"))
	f.Add([]byte("\x1bP+q544e\x1b\\\x1b[?69h\x1b[2;5s\x1b[99999;99999H\xff\xfe"))
	f.Fuzz(func(t *testing.T, p []byte) {
		em := vt.NewEmulator(20, 5)
		go func() { // replies must be drained or Write blocks
			buf := make([]byte, 256)
			for {
				if _, err := em.Read(buf); err != nil {
					return
				}
			}
		}()
		if err := safeWrite(em, p); err != nil {
			t.Logf("contained: %v", err)
		}
		var tr marginTracker
		tr.feed(p, 5)
		_ = skippable(p, 5)
		em.InputPipe().(*io.PipeWriter).Close()
	})
}
