package termpane

// The pane's scrollback: the rows that scrolled off the top of the main screen, oldest first, at
// most histMax of them, read with the paging keys while the pane is not focused.
//
// x/vt keeps a scrollback of its own, but in a slice it shifts by one for every line pushed once
// it is full (a third of the emulator's time on scrolling output). So the emulator's scrollback is
// only a hand-off: the worker takes the rows it pushed after every write (it never fills up) and
// keeps them here, rendered as text.
//
// The catch-up fast path (fastpath.go) digests runs of plain lines without drawing them; they
// never reach the emulator's scrollback. The worker keeps them here instead, as a lazy block over
// the skipped bytes and the line feeds the fast path's scan found: keeping a run costs nothing per
// line, and its rows are rendered only when someone scrolls back. Rendering a plain line is its
// bytes behind the pen (the SGR sequences that set the colours it starts with); a line with
// controls that move within it (tab, backspace, carriage return), one wider than the pane, and the
// run's first line when it continued a row already on the screen go through a one-row emulator, so
// they come out as the pane would have drawn them (a wide line as several rows). The pen a run
// starts with is not known (the emulator does not expose it): colours set before a skipped run and
// not reset are missing from the run's rows in the scrollback (never from the screen).

import (
	"bytes"
	"fmt"
	"sync"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"sandscope/sanitize"
)

const (
	// histMax is how many rows the scrollback keeps.
	histMax = 10000
	// lazyMax bounds the skipped bytes lazy blocks may hold on to; past it the oldest are rendered
	// (only runs of very long lines get there: 10,000 lines of a typical run are ~1 MiB).
	lazyMax = 4 << 20
)

// skipRun is a run of plain lines the fast path skipped: its bytes (the pane's own copy), where
// each line ends (just past its line feed), the width at the time, and the row its first line
// continued (nil: it began at column 0 of a blank row).
type skipRun struct {
	b      []byte
	ends   []int
	cols   int
	start  uv.Line
	startX int
}

// lineAt is line i of the run.
func (r *skipRun) lineAt(i int) (off int, line []byte) {
	if i > 0 {
		off = r.ends[i-1]
	}
	return off, r.b[off:r.ends[i]]
}

// histEntry is one rendered row, or a lazy block: lines [from, to) of a skipped run, a row each
// until rendered (a line wider than the pane becomes several then).
type histEntry struct {
	text     string
	run      *skipRun
	from, to int
}

func (e *histEntry) rows() int {
	if e.run == nil {
		return 1
	}
	return e.to - e.from
}

// history is the scrollback. The worker adds to it; the UI reads it (rendering lazy blocks then).
type history struct {
	mu        sync.Mutex
	plain     bool
	entries   []histEntry
	count     int   // rows held (a lazy block counts a row a line)
	base      int64 // rows dropped from the front since the start: the first row held is row base
	lazy      int   // lazy blocks held
	lazyBytes int

	mini     *vt.Emulator // the one-row emulator lines that need one are drawn with
	miniCols int
}

func newHistory(plain bool) *history { return &history{plain: plain} }

// add appends rendered rows.
func (h *history) add(texts []string) {
	if len(texts) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range texts {
		h.entries = append(h.entries, histEntry{text: t})
	}
	h.count += len(texts)
	h.trimLocked()
}

// addRun appends a skipped run b as a lazy block; nl holds the offsets of its line feeds (b ends
// with the last).
func (h *history) addRun(b []byte, nl []int, cols int, start uv.Line, startX int) {
	if len(nl) == 0 {
		return
	}
	run := &skipRun{b: b, ends: make([]int, len(nl)), cols: cols, start: start, startX: startX}
	for i, p := range nl {
		run.ends[i] = p + 1
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	from := 0
	if len(nl) > histMax {
		// the run alone fills the scrollback: every row before its newest lines is gone
		from = len(nl) - histMax
		h.base += int64(h.count + from)
		clear(h.entries)
		h.entries, h.count, h.lazy, h.lazyBytes = h.entries[:0], 0, 0, 0
	}
	h.entries = append(h.entries, histEntry{run: run, from: from, to: len(nl)})
	h.count += len(nl) - from
	h.lazy++
	h.lazyBytes += cap(b)
	h.trimLocked()
	for h.lazyBytes > lazyMax && h.lazy > 0 {
		h.renderLocked(true)
	}
}

// clear forgets every row (the program erased the scrollback: CSI 3 J).
func (h *history) clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.base += int64(h.count)
	h.entries, h.count, h.lazy, h.lazyBytes = nil, 0, 0, 0
}

// trimLocked drops the oldest rows beyond histMax.
func (h *history) trimLocked() {
	drop := h.count - histMax
	if drop <= 0 {
		return
	}
	i := 0
	for drop > 0 {
		e := &h.entries[i]
		if n := e.rows(); n <= drop {
			drop -= n
			h.count -= n
			h.base += int64(n)
			if e.run != nil {
				h.lazy--
				h.lazyBytes -= cap(e.run.b)
			}
			i++
			continue
		}
		// part of a lazy block
		e.from += drop
		h.count -= drop
		h.base += int64(drop)
		drop = 0
	}
	clear(h.entries[:i])
	h.entries = h.entries[i:]
}

// Len is how many rows are held (a lazy line counts one until rendered), and the number of the
// first.
func (h *history) Len() (n int, base int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count, h.base
}

// Window returns the rows [from, from+n) by row number (clamped to those held), rendering every
// lazy block first (a wide line becomes several rows, so the numbers after it move), and the
// numbers of the first row held and of the row after the last.
func (h *history) Window(from int64, n int) (rows []string, base, end int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.lazy > 0 {
		h.renderLocked(false)
	}
	base, end = h.base, h.base+int64(h.count)
	i, j := max(from, base)-base, min(from+int64(n), end)-base
	for k := i; k < j; k++ {
		rows = append(rows, h.entries[k].text)
	}
	return rows, base, end
}

// renderLocked renders the first lazy block (the oldest) in place, or all of them (!oldest).
func (h *history) renderLocked(oldest bool) {
	first := -1
	for i := range h.entries {
		if h.entries[i].run != nil {
			first = i
			break
		}
	}
	if first < 0 {
		h.lazy, h.lazyBytes = 0, 0
		return
	}
	var out []histEntry
	j := first
	for ; j < len(h.entries); j++ {
		e := h.entries[j]
		if e.run == nil {
			out = append(out, e)
			continue
		}
		if oldest && j > first {
			break
		}
		run := e.run
		off, _ := run.lineAt(e.from)
		pen := updatePen(nil, run.b[:off]) // the pen its first line starts with
		for l := e.from; l < e.to; l++ {
			off, line := run.lineAt(l)
			for _, t := range h.renderLine(run, off, line, pen) {
				out = append(out, histEntry{text: t})
			}
			pen = updatePen(pen, line)
		}
		h.lazy--
		h.lazyBytes -= cap(run.b)
	}
	tail := append(out, h.entries[j:]...)
	h.entries = append(h.entries[:first], tail...)
	h.recount()
	h.trimLocked()
}

// recount counts the rows held.
func (h *history) recount() {
	h.count = 0
	for i := range h.entries {
		h.count += h.entries[i].rows()
	}
}

// renderLine draws one line of a skipped run as the rows the pane would have shown.
func (h *history) renderLine(run *skipRun, off int, line, pen []byte) []string {
	body := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	simple := len(body) <= run.cols && (off > 0 || run.start == nil)
	for k := 0; simple && k < len(body); k++ {
		switch c := body[k]; {
		case c == 0x1b:
			// erase in line: to its end is nothing in a row of the scrollback; the other forms
			// erase what the line drew
			if n, final, ok := plainCSI(body[k:]); ok && final == 'K' {
				p := string(body[k+2 : k+n-1])
				simple = p == "" || p == "0"
			}
		case c < 0x20:
			simple = false
		}
	}
	if simple {
		s := dropEL(append(append([]byte(nil), pen...), body...))
		if h.plain {
			return []string{ansi.Strip(string(s))}
		}
		if len(pen) > 0 || bytes.IndexByte(body, 0x1b) >= 0 {
			s = append(s, "\x1b[m"...)
		}
		return []string{string(s)}
	}
	return h.renderMini(run, off, line, pen)
}

// renderMini draws a line with the one-row emulator: every row it scrolls off is one row of the
// line.
func (h *history) renderMini(run *skipRun, off int, line, pen []byte) (out []string) {
	if h.mini == nil || h.miniCols != run.cols {
		h.mini = vt.NewEmulator(run.cols, 1)
		h.mini.SetScrollbackSize(histMax)
		h.miniCols = run.cols
	}
	em := h.mini
	defer func() {
		if r := recover(); r != nil {
			// hostile bytes meeting an emulator bug: keep the text, not the layout
			h.mini = nil
			out = []string{sanitize.DropHyperlinks(ansi.Strip(string(line)))}
		}
	}()
	_, _ = em.WriteString("\x1b[m\r\x1b[2K")
	x := 0
	if off == 0 && run.start != nil {
		for cx := range run.start {
			em.SetCell(cx, 0, &run.start[cx])
		}
		x = run.startX
	}
	_, _ = em.WriteString(fmt.Sprintf("\x1b[1;%dH", x+1))
	_, _ = em.Write(pen)
	_, _ = em.Write(line)
	if line[len(line)-1] != '\n' {
		_, _ = em.WriteString("\r\n")
	}
	sb := em.Scrollback()
	for _, l := range sb.Lines() {
		out = append(out, renderRow(l, h.plain))
	}
	sb.Clear()
	return out
}

// renderRow renders a row the emulator pushed to its scrollback.
func renderRow(l uv.Line, plain bool) string {
	if plain {
		return l.String()
	}
	return sanitize.DropHyperlinks(l.Render())
}

// updatePen follows the pen through b: the SGR sequences since the last one that resets it.
func updatePen(pen, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		if b[i] != 0x1b {
			continue
		}
		n, final, ok := plainCSI(b[i:])
		if !ok {
			continue
		}
		if final == 'm' {
			if resetsPen(b[i+2 : i+n-1]) {
				pen = pen[:0]
			}
			if len(pen)+n > 512 {
				pen = pen[:0] // a pen never reset: keep the newest sequence only
			}
			pen = append(pen, b[i:i+n]...)
		}
		i += n - 1
	}
	return pen
}

// dropEL removes erase-in-line sequences (they clear what the row draws next; a row of the
// scrollback has nothing after it).
func dropEL(b []byte) []byte {
	out := b[:0]
	for i := 0; i < len(b); i++ {
		if b[i] == 0x1b {
			if n, final, ok := plainCSI(b[i:]); ok && final == 'K' {
				i += n - 1
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}
