package termpane

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// digestKeeping is digestAll with the worker's scrollback keeping: the rows the emulator pushes
// after every write, and the runs the fast path skips.
func digestKeeping(w *worker, em *vt.Emulator, data []byte, rows int, fast bool) (skipped int) {
	var tr marginTracker
	for len(data) > 0 {
		if fast && tr.safe(em.IsAltScreen()) {
			k := min(len(data), fastWindow)
			window := data[:k:k] // as the worker's peek: a window of its own size
			if n, _, pen, nl := skippableScan(window, rows); n > 0 {
				main, at := !em.IsAltScreen(), em.CursorPosition()
				em.Write(append(scrollOut(rows), pen...))
				if main {
					w.takeSkipped(em, window[:n], nl, at.X, rows)
				}
				data = data[n:]
				skipped += n
				continue
			}
		}
		p := data[:min(len(data), digestSlice)]
		tr.feed(p, rows)
		em.Write(p)
		if tr.clearHist {
			tr.clearHist = false
			w.hist.clear()
			w.swallow = 0 // the stand-ins went with the rest
		}
		w.drainHistory(em)
		data = data[len(p):]
	}
	return skipped
}

// keptText is the scrollback's rows as text: SGR removed, trailing blanks trimmed.
func keptText(h *history) []string {
	rows, _, _ := h.Window(0, histMax)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.TrimRight(ansi.Strip(r), " ")
	}
	return out
}

// The scrollback holds the same rows whether the fast path skipped drawing lines or not: lines
// that wrap, tabs, backspaces and carriage returns inside lines, wide characters, a run that
// begins mid-row, coloured runs, an erased scrollback.
func TestScrollbackMatchesFullEmulation(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		var data []byte
		data = append(data, "a prompt $ "...) // the first run continues this row
		for i := 0; i < 3000; i++ {
			switch r.IntN(12) {
			case 0:
				data = append(data, fmt.Sprintf("long %d %s\r\n", i, strings.Repeat("w", 60+r.IntN(150)))...)
			case 1:
				data = append(data, fmt.Sprintf("tab\there %d\tand\bback\r\n", i)...)
			case 2:
				data = append(data, fmt.Sprintf("progress %d%%\rdone %d\r\n", i, i)...)
			case 3:
				data = append(data, fmt.Sprintf("日本語の行 %d 日本語\r\n", i)...)
			default:
				data = append(data, fmt.Sprintf("line %d of plain text\r\n", i)...)
			}
		}
		if seed%3 == 0 {
			data = append(data, colouredRun(r, 3000)...)
		}
		if seed%3 == 1 {
			data = append(data, randomStream(r, 300)...) // regions, alt screen, moves: exact only
			data = append(data, "\x1b[?1049l\x1b[r"...)
			data = append(data, colouredRun(r, 2000)...)
		}
		if seed == 6 {
			data = append(data, "\x1b[3J"...) // erase the scrollback: both forget
			data = append(data, colouredRun(r, 500)...)
		}
		for _, plain := range []bool{true, false} {
			full := &worker{plain: plain, hist: newHistory(plain)}
			quick := &worker{plain: plain, hist: newHistory(plain)}
			emFull, emQuick := vt.NewEmulator(80, 24), vt.NewEmulator(80, 24)
			emFull.SetScrollbackSize(histMax)
			emQuick.SetScrollbackSize(histMax)
			digestKeeping(full, emFull, data, 24, false)
			skipped := digestKeeping(quick, emQuick, data, 24, true)
			if skipped == 0 {
				t.Fatalf("seed %d: the fast path never engaged", seed)
			}
			want, got := keptText(full.hist), keptText(quick.hist)
			if len(want) != len(got) {
				t.Fatalf("seed %d plain %v: %d rows kept with the fast path, %d without", seed, plain, len(got), len(want))
			}
			for i := range want {
				if want[i] != got[i] {
					t.Fatalf("seed %d plain %v: row %d of %d differs:\nfull %q\nfast %q\nabove: %q", seed, plain, i, len(want), want[i], got[i], want[max(i-3, 0):i])
				}
			}
			if seed != 6 && len(want) < 3000 {
				t.Fatalf("seed %d: only %d rows kept", seed, len(want))
			}
		}
	}
}

// Colours survive into the scrollback, whether the lines were drawn or skipped.
func TestScrollbackKeepsColour(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "\x1b[31mred %d\x1b[m plain\r\n", i)
	}
	for _, fast := range []bool{false, true} {
		w := &worker{hist: newHistory(false)}
		em := vt.NewEmulator(40, 10)
		em.SetScrollbackSize(histMax)
		digestKeeping(w, em, b.Bytes(), 10, fast)
		rows, _, _ := w.hist.Window(0, histMax)
		if len(rows) != 1991 || !strings.Contains(rows[5], "red 5") || !strings.Contains(rows[5], "\x1b[") {
			t.Fatalf("fast %v: %d rows, row 5 %q", fast, len(rows), rows[5])
		}
	}
}

// The scrollback keeps the newest histMax rows, however they came.
func TestScrollbackIsBounded(t *testing.T) {
	h := newHistory(true)
	var b bytes.Buffer
	for i := 0; i < 30000; i++ {
		fmt.Fprintf(&b, "%d\r\n", i)
	}
	h.add([]string{"drawn before"})
	var nl []int
	for i, c := range b.Bytes() {
		if c == '\n' {
			nl = append(nl, i)
		}
	}
	h.addRun(b.Bytes(), nl, 80, nil, 0)
	h.add([]string{"drawn after"})
	n, base := h.Len()
	if n != histMax || base != 30002-histMax {
		t.Fatalf("kept %d rows from %d", n, base)
	}
	rows, _, _ := h.Window(base, 3)
	if rows[0] != "20001" || h.lazyBytes != 0 {
		t.Fatalf("oldest kept %q, lazy bytes %d", rows[0], h.lazyBytes)
	}
}

// After `seq 1 100` in a pane of 10 rows, the paging keys read what scrolled off while the pane
// is not focused, the header says where the view is, and end (or focusing) returns to live.
func TestPaneScrollback(t *testing.T) {
	f := newFake()
	m := New(f, 80, 11, Options{TerminalID: "t1", Plain: true})
	defer m.Close()
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "%d\r\n", i)
	}
	b.WriteString("$ ")
	f.send(output(b.String(), 1))
	settle(t, m, 0)
	v := m.View()
	if !strings.Contains(v, "100") || strings.Contains(v, "scrollback") {
		t.Fatalf("live view:\n%s", v)
	}
	key := func(k tea.KeyType) { m.Update(tea.KeyMsg{Type: k}) }
	key(tea.KeyPgUp)
	v = m.View()
	lines := strings.Split(v, "\n")
	// the screen shows 92 to 100 and the prompt: 91 rows scrolled off
	if !m.Scrolled() || !strings.Contains(lines[0], "scrollback: line 82 of 101 · G/end returns to live") ||
		strings.TrimSpace(lines[1]) != "82" || strings.TrimSpace(lines[10]) != "91" {
		t.Fatalf("a page up:\n%s", v)
	}
	key(tea.KeyHome)
	lines = strings.Split(m.View(), "\n")
	if !strings.Contains(lines[0], "scrollback: line 1 of 101") || strings.TrimSpace(lines[1]) != "1" {
		t.Fatalf("top:\n%s", strings.Join(lines, "\n"))
	}
	key(tea.KeyPgDown)
	if lines = strings.Split(m.View(), "\n"); strings.TrimSpace(lines[1]) != "11" {
		t.Fatalf("a page down:\n%s", strings.Join(lines, "\n"))
	}
	key(tea.KeyEnd)
	if m.Scrolled() || strings.Contains(m.View(), "scrollback") {
		t.Fatalf("end did not return to live:\n%s", m.View())
	}
	key(tea.KeyPgUp)
	key(tea.KeyEnter) // focus: keys go to the terminal, the view is live
	if !m.Focused() || m.Scrolled() {
		t.Fatal("focusing left the view scrolled back")
	}
	key(tea.KeyPgUp) // focused: the key goes to the sandbox
	f.waitWritten(t, "\x1b[5~")
	if m.Scrolled() {
		t.Fatal("a focused pane scrolled")
	}
}

// BenchmarkFastPathScrollback is the cost the scrollback adds to the catch-up fast path, apart
// from the pane's goroutines and frame loop (BenchmarkCat64MiB measures the whole pane, and on a
// busy machine its wall-clock rate varies more than this difference): 64 MiB digested the way the
// worker does when far behind, dropping the skipped lines ("drop", as before the scrollback) or
// keeping them ("keep"); and the same without the fast path on 1 MiB ("exact-drop",
// "exact-keep": every row the emulator pushes is rendered into the scrollback).
//
//	go test ./ui/termpane -run '^$' -bench FastPathScrollback -count 3
func BenchmarkFastPathScrollback(b *testing.B) {
	for _, bc := range []struct {
		name string
		gen  func(int) []byte
	}{{"plain", catOutput}, {"coloured", colouredOutput}} {
		big := bc.gen(64 << 20)
		for _, mode := range []string{"drop", "keep", "exact-drop", "exact-keep"} {
			data, fast := big, true
			if strings.HasPrefix(mode, "exact") {
				data, fast = big[:1<<20], false
			}
			b.Run(bc.name+"/"+mode, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for i := 0; i < b.N; i++ {
					em := vt.NewEmulator(120, 40)
					if strings.HasSuffix(mode, "keep") {
						em.SetScrollbackSize(histMax)
						digestKeeping(&worker{hist: newHistory(false)}, em, data, 40, fast)
					} else {
						em.SetScrollbackSize(1)
						digestAll(em, data, 40, fast)
					}
				}
			})
		}
	}
}
