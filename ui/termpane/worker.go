package termpane

import (
	"context"
	"fmt"
	"io"
	"sandscope/sanitize"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"sandscope/client"
	"sandscope/ui/common"
)

// Conn is what the pane needs of a terminal connection (*client.TerminalConn satisfies it).
type Conn = common.TermConn

// Snapshot is one rendered state of the emulator, taken by the worker.
type Snapshot struct {
	Lines         []string // Rows lines; styled with SGR unless the pane is plain
	Cols, Rows    int
	CursorX       int
	CursorY       int
	CursorVisible bool
	AltScreen     bool
	Title         string // raw, as the program set it: sanitise before showing
	Received      int64  // output bytes received from the connection
	Digested      int64  // output bytes the emulator has processed
	Cursor        string // bridge cursor of the last output chunk received
	Rendered      int64  // Digested when these lines were rendered
	Skipped       int64  // bytes the catch-up fast path digested without drawing them
	Failure       string // the emulator failed on the output (it is then no longer fed)
}

// Behind is how many received bytes the emulator has not processed yet.
func (s Snapshot) Behind() int64 { return s.Received - s.Digested }

// input is one thing to send to the remote PTY, in order.
type input struct {
	raw   []byte
	key   uv.KeyEvent
	paste string
	mouse uv.MouseEvent
}

const (
	digestSlice  = 4 << 10   // bytes fed to the emulator between looks at input and resizes
	fastBehind   = 256 << 10 // the catch-up fast path starts when this far behind
	fastWindow   = 512 << 10 // how much backlog one fast-path step looks at
	maxQueued    = 8 << 20   // beyond this the reader stops taking output (the socket backs up)
	defaultFrame = time.Second / 30
)

// worker owns the emulator. Only run touches em.
type worker struct {
	conn  Conn
	plain bool
	fast  bool // the catch-up fast path is allowed (fastpath.go)
	frame time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	status chan client.TermEvent // non-output events for the UI; closed when the connection ends
	inputs chan input
	resize chan [2]int
	poke   chan struct{} // output queued
	room   chan struct{} // queue drained below the limit

	qmu    sync.Mutex
	queue  [][]byte
	queued int64

	received atomic.Int64
	digested atomic.Int64
	skipped  atomic.Int64 // bytes the fast path digested without drawing
	cursor   atomic.Pointer[string]
	eof      atomic.Bool // the connection's event stream ended
	failure  atomic.Pointer[string]

	smu  sync.Mutex
	snap Snapshot

	// hist is the scrollback (history.go); swallow counts the rows the emulator will push that
	// are blank stand-ins for the last rows of a skipped run, already in hist (run only).
	hist    *history
	swallow int
}

func newWorker(parent context.Context, conn Conn, cols, rows int, plain, fast bool, frame time.Duration) *worker {
	if frame <= 0 {
		frame = defaultFrame
	}
	ctx, cancel := context.WithCancel(parent)
	w := &worker{
		conn: conn, plain: plain, fast: fast, frame: frame, ctx: ctx, cancel: cancel,
		status: make(chan client.TermEvent, 1024),
		inputs: make(chan input, 256),
		resize: make(chan [2]int, 1),
		poke:   make(chan struct{}, 1),
		room:   make(chan struct{}, 1),
	}
	em := vt.NewEmulator(cols, rows)
	// x/vt v0.1.0 keeps its scrollback in a slice it shifts by one for every line that scrolls off
	// once it is full (a third of the time spent on scrolling output). The worker takes the rows
	// out after every write (history.go), so it never fills: its size only has to hold what one
	// write can push.
	em.SetScrollbackSize(histMax)
	w.hist = newHistory(plain)
	w.snap = Snapshot{Cols: cols, Rows: rows, Lines: make([]string, rows)}
	w.wg.Add(3)
	go w.read()
	go w.drainReplies(em)
	go w.run(em, cols, rows)
	return w
}

// read takes events off the connection: output into the queue, everything else to the UI.
func (w *worker) read() {
	defer w.wg.Done()
	defer close(w.status)
	defer w.eof.Store(true)
	events := w.conn.Events()
	for {
		var ev client.TermEvent
		var ok bool
		select {
		case ev, ok = <-events:
		case <-w.ctx.Done():
			return
		}
		if !ok {
			signal(w.poke)
			return
		}
		if ev.Kind == client.TermReplayed {
			// a stable PTY replays its whole ring buffer on each connect: clear, then repaint
			if !w.enqueue(append([]byte("\x1b[H\x1b[2J\x1b[3J"), ev.Data...)) {
				return
			}
		}
		if ev.Kind == client.TermOutput {
			if !w.enqueue(ev.Data) {
				return
			}
			c := ev.Cursor
			w.cursor.Store(&c)
			continue
		}
		select {
		case w.status <- ev:
		case <-w.ctx.Done():
			return
		}
	}
}

func (w *worker) enqueue(p []byte) bool {
	for {
		w.qmu.Lock()
		if w.queued < maxQueued {
			w.queue = append(w.queue, p)
			w.queued += int64(len(p))
			w.qmu.Unlock()
			w.received.Add(int64(len(p)))
			signal(w.poke)
			return true
		}
		w.qmu.Unlock()
		select {
		case <-w.room:
		case <-w.ctx.Done():
			return false
		}
	}
}

// peek copies up to n queued bytes without removing them.
func (w *worker) peek(n int) []byte {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	out := make([]byte, 0, min(int64(n), w.queued))
	for _, seg := range w.queue {
		if len(out) >= n {
			break
		}
		out = append(out, seg[:min(len(seg), n-len(out))]...)
	}
	return out
}

// discard drops n queued bytes.
func (w *worker) discard(n int) {
	for n > 0 {
		p := w.take(n)
		if p == nil {
			return
		}
		n -= len(p)
	}
}

func (w *worker) backlog() int64 {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	return w.queued
}

// take removes up to n queued bytes.
func (w *worker) take(n int) []byte {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	if len(w.queue) == 0 {
		return nil
	}
	head := w.queue[0]
	if len(head) > n {
		w.queue[0] = head[n:]
		head = head[:n]
	} else {
		w.queue[0] = nil
		w.queue = w.queue[1:]
	}
	w.queued -= int64(len(head))
	if w.queued < maxQueued {
		signal(w.room)
	}
	return head
}

// drainReplies forwards everything the emulator writes to its input pipe (query replies, encoded
// keys, paste) to the connection. The pipe is unbuffered: without this reader the emulator blocks.
func (w *worker) drainReplies(em *vt.Emulator) {
	defer w.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, err := em.Read(buf)
		if n > 0 {
			// A write while disconnected fails; the remote never saw the bytes, which is what a
			// user typing into a dead link expects.
			_, _ = w.conn.Write(append([]byte(nil), buf[:n]...))
		}
		if err != nil {
			return
		}
	}
}

// run feeds the emulator, applies input and resizes, and renders snapshots at frame rate.
func (w *worker) run(em *vt.Emulator, cols, rows int) {
	defer w.wg.Done()
	var title string
	em.SetCallbacks(vt.Callbacks{Title: func(s string) { title = s }})
	var tr marginTracker
	doResize := func(sz [2]int) {
		if sz[0] != cols || sz[1] != rows {
			cols, rows = sz[0], sz[1]
			em.Resize(cols, rows)
			w.drainHistory(em)
			tr.region = [2]bool{} // a resize resets both screens' scroll regions
			_ = w.conn.Resize(cols, rows)
		}
	}
	pw := em.InputPipe()
	defer func() {
		// Closing the reply pipe ends drainReplies. (em.Close would flip a flag drainReplies reads.)
		if c, ok := pw.(*io.PipeWriter); ok {
			_ = c.CloseWithError(io.EOF)
		}
	}()
	lastRender := time.Time{}
	dirty := true
	// Where a fast-path scan last met a byte that is not plain (stream offset, -1: none) and at
	// which height: until that byte is digested, scanning again finds nothing to skip.
	blockedAt, blockedRows := int64(-1), 0
	ticker := time.NewTicker(w.frame)
	defer ticker.Stop()
	for {
		// Input and resizes first: a keystroke must not wait behind a backlog of output.
		for more := true; more; {
			select {
			case in := <-w.inputs:
				w.apply(em, pw, in)
			case sz := <-w.resize:
				doResize(sz)
				dirty = true
			default:
				more = false
			}
		}
		if w.fast && w.backlog() >= fastBehind && tr.safe(em.IsAltScreen()) &&
			(w.digested.Load() > blockedAt || rows != blockedRows) {
			window := w.peek(fastWindow)
			n, stop, pen, nl := skippableScan(window, rows)
			if n == 0 && stop < len(window) {
				blockedAt, blockedRows = w.digested.Load()+int64(stop), rows
			}
			if n > 0 {
				w.discard(n)
				main := !em.IsAltScreen()
				at := em.CursorPosition()
				_, _ = em.Write(append(scrollOut(rows), pen...))
				if main {
					w.takeSkipped(em, window[:n], nl, at.X, rows)
				}
				w.digested.Add(int64(n))
				w.skipped.Add(int64(n))
				dirty = true
				continue
			}
		}
		if p := w.take(digestSlice); p != nil {
			tr.feed(p, rows)
			if w.failure.Load() == nil {
				if err := safeWrite(em, p); err != nil {
					msg := err.Error()
					w.failure.Store(&msg)
				}
				if tr.clearHist {
					tr.clearHist = false
					w.hist.clear()
					w.swallow = 0 // stand-ins pushed before the erase went with the rest
				}
				w.drainHistory(em)
			}
			w.digested.Add(int64(len(p)))
			dirty = true
			if time.Since(lastRender) >= w.frame {
				w.render(em, title)
				lastRender, dirty = time.Now(), false
			}
			if w.ctx.Err() != nil {
				return
			}
			continue
		}
		if dirty {
			w.render(em, title)
			lastRender, dirty = time.Now(), false
		}
		select {
		case <-w.poke:
		case in := <-w.inputs:
			w.apply(em, pw, in)
		case sz := <-w.resize:
			doResize(sz)
			dirty = true
		case <-ticker.C:
		case <-w.ctx.Done():
			return
		}
	}
}

func (w *worker) apply(em *vt.Emulator, pw io.Writer, in input) {
	switch {
	case in.raw != nil:
		_, _ = pw.Write(in.raw)
	case in.key != nil:
		em.SendKey(in.key)
	case in.paste != "":
		em.Paste(in.paste)
	case in.mouse != nil:
		em.SendMouse(in.mouse)
	}
}

func (w *worker) render(em *vt.Emulator, title string) {
	if w.failure.Load() != nil {
		return // the emulator's state cannot be trusted any more: keep the last good picture
	}
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("terminal emulator failed while drawing: %v", r)
			w.failure.Store(&msg)
		}
	}()
	cols, rows := em.Width(), em.Height()
	lines := make([]string, rows)
	if w.plain {
		var b strings.Builder
		for y := 0; y < rows; y++ {
			b.Reset()
			for x := 0; x < cols; x++ {
				c := em.CellAt(x, y)
				switch {
				case c == nil:
					b.WriteByte(' ')
				case c.Width == 0:
					// the right half of a wide character: already drawn
				case c.Content == "":
					b.WriteByte(' ')
				default:
					b.WriteString(c.Content)
				}
			}
			lines[y] = b.String()
		}
	} else {
		all := strings.Split(em.Render(), "\n")
		for y := 0; y < rows; y++ {
			if y < len(all) {
				// hyperlinks (OSC 8) the process chose are dropped, their text kept
				lines[y] = padTo(sanitize.DropHyperlinks(strings.TrimRight(all[y], "\r")), cols)
			} else {
				lines[y] = strings.Repeat(" ", cols)
			}
		}
	}
	pos := em.CursorPosition()
	s := Snapshot{
		Lines: lines, Cols: cols, Rows: rows,
		CursorX: pos.X, CursorY: pos.Y, CursorVisible: !em.CursorHidden(),
		AltScreen: em.IsAltScreen(), Title: title,
		Rendered: w.digested.Load(),
	}
	if c := w.cursor.Load(); c != nil {
		s.Cursor = *c
	}
	w.smu.Lock()
	w.snap = s
	w.smu.Unlock()
}

// drainHistory moves the rows the emulator pushed to its scrollback into the pane's.
func (w *worker) drainHistory(em *vt.Emulator) {
	sb := em.Scrollback()
	if sb.Len() == 0 {
		return
	}
	w.keepRows(sb.Lines())
	sb.Clear()
}

// keepRows renders pushed rows into the scrollback, less the blank stand-ins to swallow.
func (w *worker) keepRows(lines []uv.Line) {
	texts := make([]string, 0, len(lines))
	for _, l := range lines {
		if w.swallow > 0 {
			w.swallow--
			continue
		}
		texts = append(texts, renderRow(l, w.plain))
	}
	w.hist.add(texts)
}

// takeSkipped keeps a run the fast path skipped. Its replacement (CR and rows line feeds) pushed
// the screen's rows down to the cursor's: those above are history as they are; the cursor's own
// is where the run's first line began (at column x), so it goes with the run. The screen is then
// blank, and the first rows-1 rows the emulator pushes next are blank stand-ins for the run's last
// lines, which the run already holds: they are swallowed.
func (w *worker) takeSkipped(em *vt.Emulator, run []byte, nl []int, x, rows int) {
	sb := em.Scrollback()
	lines := sb.Lines()
	var start uv.Line
	if k := len(lines); k > 0 {
		w.keepRows(lines[:k-1])
		if w.swallow > 0 {
			w.swallow-- // (the plain tail keeps the cursor on the bottom row: not expected)
		} else {
			start = lines[k-1]
		}
	}
	sb.Clear()
	if len(start) == 0 && x == 0 {
		start = nil
	}
	w.hist.addRun(run, nl, em.Width(), start, x)
	w.swallow = rows - 1
}

// padTo pads a styled line with spaces to width cells (and resets styles at its end).
func padTo(s string, width int) string {
	n := ansi.StringWidth(s)
	if n > width {
		return ansi.Truncate(s, width, "")
	}
	if n < width {
		s += "\x1b[m" + strings.Repeat(" ", width-n)
	}
	return s
}

// Snapshot returns the latest rendered state with up-to-date byte counters.
func (w *worker) Snapshot() Snapshot {
	w.smu.Lock()
	s := w.snap
	w.smu.Unlock()
	s.Received, s.Digested, s.Skipped = w.received.Load(), w.digested.Load(), w.skipped.Load()
	if f := w.failure.Load(); f != nil {
		s.Failure = *f
	}
	if c := w.cursor.Load(); c != nil {
		s.Cursor = *c
	}
	return s
}

// idle reports that the connection ended and every byte was digested.
func (w *worker) idle() bool {
	return w.eof.Load() && w.received.Load() == w.digested.Load()
}

func (w *worker) setSize(cols, rows int) {
	for {
		select {
		case w.resize <- [2]int{cols, rows}:
			return
		default:
		}
		select { // replace a resize not yet applied: only the latest size matters
		case <-w.resize:
		default:
		}
	}
}

func (w *worker) close() {
	w.cancel()
	w.wg.Wait()
}

// safeWrite feeds the emulator, turning a panic inside it (hostile bytes meeting an emulator bug)
// into an error instead of taking the whole program down.
func safeWrite(em *vt.Emulator, p []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("terminal emulator failed: %v", r)
		}
	}()
	_, _ = em.Write(p)
	return nil
}

// scrollOut is what replaces a skipped run: back to column 0, then enough line feeds to scroll
// everything off the screen.
func scrollOut(rows int) []byte {
	b := make([]byte, 1+rows)
	b[0] = '\r'
	for i := 1; i <= rows; i++ {
		b[i] = '\n'
	}
	return b
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
