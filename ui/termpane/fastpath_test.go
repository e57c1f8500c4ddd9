package termpane

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// digestAll feeds data the way the worker does when far behind: fast-path steps where allowed,
// 16 KiB slices otherwise.
func digestAll(em *vt.Emulator, data []byte, rows int, fast bool) (skipped int) {
	var tr marginTracker
	for len(data) > 0 {
		if fast && tr.safe(em.IsAltScreen()) {
			if n, pen := skippable(data[:min(len(data), fastWindow)], rows); n > 0 {
				em.Write(append(scrollOut(rows), pen...))
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

// colouredRun is output with SGR and erase in line on most lines, the way compilers and test
// runners print: resets, attributes that pile up without a reset, background colours (which a
// line feed at the bottom and erase in line fill with), 256-colour and true-colour forms.
func colouredRun(r *rand.Rand, lines int) []byte {
	var b bytes.Buffer
	sgrs := []string{"\x1b[m", "\x1b[0m", "\x1b[1m", "\x1b[31m", "\x1b[0;32m", "\x1b[;1;4m", "\x1b[44m",
		"\x1b[38;5;196m", "\x1b[48;2;10;20;30m", "\x1b[38:2::1:2:3m", "\x1b[7m", "\x1b[22;39m", "\x1b[00;7m", "\x1b[01m"}
	for i := 0; i < lines; i++ {
		for k := r.IntN(4); k > 0; k-- {
			b.WriteString(sgrs[r.IntN(len(sgrs))])
			fmt.Fprintf(&b, "word%d ", r.IntN(1000))
		}
		if r.IntN(5) == 0 {
			b.WriteString("\x1b[K")
		}
		if r.IntN(9) == 0 {
			b.WriteString("partial\x1b[1Kx")
		}
		b.WriteString(strings.Repeat("y", r.IntN(100)))
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

func TestFastPathMatchesFullEmulation(t *testing.T) {
	for seed := uint64(1); seed <= 18; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var data []byte
		if seed%3 == 2 {
			// coloured output, between escape-heavy parts
			data = append(colouredRun(r, 3000), randomStream(r, 200)...)
			data = append(data, colouredRun(r, 2000)...)
			data = append(data, "\x1b[5;10r"...)
			data = append(data, colouredRun(r, 500)...)
			data = append(data, "\x1b[r"...)
			data = append(data, colouredRun(r, 1000)...)
			// Lines without SGR show the pen the coloured run left, and the last fast-path step
			// skips the whole coloured run: its replayed pen is what these lines are drawn with.
			for i := 0; i < 40; i++ {
				data = append(data, fmt.Sprintf("uncoloured line %d\r\n", i)...)
			}
		} else if seed%3 == 0 {
			// long plain runs (the case the fast path is for) between escape-heavy parts
			var b bytes.Buffer
			for i := 0; i < 3000; i++ {
				fmt.Fprintf(&b, "plain line %d %s\r\n", i, bytes.Repeat([]byte("z"), i%150))
			}
			data = append(randomStream(r, 200), "\x1b[?1049l\x1b[r"...) // back to a screen the fast path may skip on
			data = append(data, b.Bytes()...)
			data = append(data, randomStream(r, 200)...)
			data = append(data, b.Bytes()...)
		} else {
			data = randomStream(r, 4000)
		}
		full, quick := vt.NewEmulator(80, 24), vt.NewEmulator(80, 24)
		digestAll(full, data, 24, false)
		skipped := digestAll(quick, data, 24, true)
		// The pen both end with shows in what is written next.
		full.Write([]byte("pen probe"))
		quick.Write([]byte("pen probe"))
		if full.Render() != quick.Render() || full.CursorPosition() != quick.CursorPosition() || full.IsAltScreen() != quick.IsAltScreen() {
			t.Fatalf("seed %d: fast path (skipped %d of %d bytes) differs from full emulation:\n--- full ---\n%s\n--- fast ---\n%s",
				seed, skipped, len(data), full.String(), quick.String())
		}
		if seed%3 != 1 && skipped == 0 {
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
		_, _ = skippable(p, 5)
		em.InputPipe().(*io.PipeWriter).Close()
	})
}

// The pen a skipped run leaves (attributes piled up after the last reset) is the pen the lines
// after it are drawn with.
func TestFastPathKeepsPen(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "\x1b[0;31mred %d\x1b[m plain\r\n", i)
	}
	b.WriteString("\x1b[31m\x1b[44mred on blue\r\n\x1b[1mand bold\x1b[K\r\n") // no reset after this
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&b, "still red on blue and bold %d\r\n", i)
	}
	full, quick := vt.NewEmulator(40, 10), vt.NewEmulator(40, 10)
	digestAll(full, b.Bytes(), 10, false)
	if skipped := digestAll(quick, b.Bytes(), 10, true); skipped < b.Len()/2 {
		t.Fatalf("skipped %d of %d bytes", skipped, b.Len())
	}
	if full.Render() != quick.Render() {
		t.Fatalf("fast path lost the pen:\n--- full ---\n%q\n--- fast ---\n%q", full.Render(), quick.Render())
	}
}
