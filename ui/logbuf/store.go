package logbuf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"time"

	"sandscope/internal/fileio"
	"sandscope/sanitize"
)

// A segment bounds what Line reads to build one entry: segBytes bytes at most (a line longer than
// that is a segment alone).
const segBytes = 32 << 10

// seg is a run of final entries: n output lines of one source and stream, consecutive in its raw
// file, with one cursor, one colour state at each line's start and one time after the first; or one
// marker (file 0).
type seg struct {
	first  int   // entry index of the first line
	off    int64 // raw offset of the first line
	end    int64 // raw offset after the last line (its LF included)
	t0, t  int64 // time the first line began, and the others (unixNano)
	cursor string
	carry  string // sanitize.Stream.Carry at each line's start
	file   int32  // raw file index + 1; 0 for a marker
	n      int32
	mark   int32 // the marker's index in Buffer.marks
	noEOL  bool  // one line ended without LF by a marker or EndPartial
}

// noTime stands for the zero time.Time.
const noTime = math.MinInt64

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == noTime {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// appendSeg commits the entries of g, extending the last segment when g continues it.
func (b *Buffer) appendSeg(g seg) {
	g.first = b.committed
	b.committed += int(g.n)
	if k := len(b.segs); k > 0 {
		l := &b.segs[k-1]
		if l.file == g.file && g.file != 0 && !l.noEOL && !g.noEOL && l.end == g.off &&
			l.first+int(l.n) == g.first && l.t == g.t0 && l.t == g.t && l.cursor == g.cursor &&
			l.carry == g.carry && g.end-l.off <= segBytes {
			l.end = g.end
			l.n += g.n
			return
		}
	}
	b.segs = append(b.segs, g)
}

// segAt is the index of the segment holding final entry i.
func (b *Buffer) segAt(i int) int {
	return sort.Search(len(b.segs), func(k int) bool { return b.segs[k].first > i }) - 1
}

// lineRange is where line k of segment g lies in its raw file (its LF included).
func (b *Buffer) lineRange(g *seg, k int) (off, end int64, err error) {
	if g.n == 1 {
		return g.off, g.end, nil
	}
	p, err := b.segBytes(g)
	if err != nil {
		return 0, 0, err
	}
	i := b.skip(p, k)
	j := i + bytes.IndexByte(p[i:], '\n') + 1
	return g.off + int64(i), g.off + int64(j), nil
}

// segBytes reads the raw bytes of a segment of several lines (at most segBytes), or returns them
// from the last read: a search asks for each segment a page at a time.
func (b *Buffer) segBytes(g *seg) ([]byte, error) {
	sc := &b.seg
	if sc.file == g.file && sc.off == g.off && sc.end == g.end {
		return sc.buf, nil
	}
	n := int(g.end - g.off)
	if cap(sc.buf) < n {
		sc.buf = make([]byte, n)
	}
	sc.file, sc.buf = 0, sc.buf[:n]
	if err := b.raws[g.file-1].readAt(sc.buf, g.off); err != nil {
		return nil, err
	}
	if bytes.Count(sc.buf, newline) != int(g.n) {
		return nil, errCorrupt
	}
	sc.file, sc.off, sc.end, sc.line, sc.pos = g.file, g.off, g.end, 0, 0
	return sc.buf, nil
}

// skip returns where line k of the segment whose bytes segBytes returned (p) begins, starting
// from the last line found when it is not past k.
func (b *Buffer) skip(p []byte, k int) int {
	sc := &b.seg
	line, i := 0, 0
	if sc.line <= k {
		line, i = sc.line, sc.pos
	}
	for ; line < k; line++ {
		i += bytes.IndexByte(p[i:], '\n') + 1
	}
	sc.line, sc.pos = k, i
	return i
}

// segCache is the last segment read.
type segCache struct {
	file      int32
	off, end  int64
	buf       []byte
	line, pos int // a line of it and where it begins
}

var errCorrupt = errors.New("raw bytes do not match the line index")

// build makes final entry i from its segment. Called with b.mu held.
func (b *Buffer) build(i int) Line {
	out := b.buildRange(i, i+1, nil)
	return out[0]
}

// buildRange appends final entries from..to-1 to out, reading each segment's bytes once.
func (b *Buffer) buildRange(from, to int, out []Line) []Line {
	for k := b.segAt(from); from < to; k++ {
		g := &b.segs[k]
		if g.file == 0 {
			out = append(out, b.marks[g.mark])
			from++
			continue
		}
		last := min(to, g.first+int(g.n))
		if g.n == 1 {
			out = append(out, b.buildLong(g))
			from = last
			continue
		}
		p, err := b.segBytes(g)
		if err != nil {
			for ; from < last; from++ {
				out = append(out, b.unreadable(err))
			}
			continue
		}
		i := b.skip(p, from-g.first)
		for ; from < last; from++ {
			e := i + bytes.IndexByte(p[i:], '\n') + 1
			t := g.t
			if from == g.first {
				t = g.t0
			}
			out = append(out, b.buildLine(g, p[i:e], g.off+int64(i), t))
			i = e
		}
		b.seg.line, b.seg.pos = last-g.first, i
	}
	return out
}

func (b *Buffer) unreadable(err error) Line {
	b.fail(err)
	return Line{Kind: Note, Text: sanitize.String("unreadable: "+err.Error(), sanitize.Options{StripSGR: true})}
}

// buildLine sanitises one line's raw bytes p (at off) as the stream did when it arrived.
func (b *Buffer) buildLine(g *seg, p []byte, off int64, t int64) Line {
	if l, ok := b.buildPlain(g, p); ok {
		l.raw = rawRef{file: g.file, off: off, n: int64(len(p))}
		l.Time = fromUnixNano(t)
		return l
	}
	st := b.render
	st.Reset(g.carry)
	var l Line
	if g.noEOL {
		b.scratch = st.Feed(b.scratch[:0], p)
		f, _ := st.Flush()
		l = b.lineOf(g, f.Text, f.Capped)
	} else {
		b.scratch = st.Feed(b.scratch[:0], p)
		if len(b.scratch) != 1 {
			return b.unreadable(errCorrupt)
		}
		f := b.scratch[0]
		clear(b.scratch)
		l = b.lineOf(g, f.Text, f.Capped)
	}
	l.raw = rawRef{file: g.file, off: off, n: int64(len(p))}
	l.Time = fromUnixNano(t)
	return l
}

// buildPlain builds a line of printable ASCII with no colour carried into it without the sanitiser:
// its text is its bytes, cut at the cap (what the sanitiser gives for such a line).
func (b *Buffer) buildPlain(g *seg, p []byte) (Line, bool) {
	if g.carry != "" {
		return Line{}, false
	}
	if !g.noEOL {
		p = p[:len(p)-1] // the LF
	}
	for _, c := range p {
		if c < 0x20 || c > 0x7e {
			return Line{}, false
		}
	}
	capped := false
	if max := b.opt.Sanitize.MaxRunes; max > 0 && len(p) > max {
		p, capped = p[:max], true
	}
	return b.lineOf(g, string(p), capped), true
}

func (b *Buffer) lineOf(g *seg, text string, capped bool) Line {
	k := b.raws[g.file-1].key
	return Line{Kind: Output, Text: text, Source: k.name, Stream: k.stream, Cursor: g.cursor,
		Capped: capped, NoEOL: g.noEOL}
}

// buildLong builds the one line of a segment, reading it in pieces and stopping once its text is
// capped: a line of many megabytes costs a frame no more than its first screenful.
func (b *Buffer) buildLong(g *seg) Line {
	n := g.end - g.off
	if n <= segBytes {
		if cap(b.rbuf) < int(n) {
			b.rbuf = make([]byte, n)
		}
		p := b.rbuf[:n]
		if err := b.raws[g.file-1].readAt(p, g.off); err != nil {
			return b.unreadable(err)
		}
		return b.buildLine(g, p, g.off, g.t0)
	}
	st := b.render
	st.Reset(g.carry)
	if cap(b.rbuf) < segBytes {
		b.rbuf = make([]byte, segBytes)
	}
	var got []sanitize.Line
	for off := g.off; off < g.end; {
		p := b.rbuf[:min(segBytes, g.end-off)]
		if err := b.raws[g.file-1].readAt(p, off); err != nil {
			return b.unreadable(err)
		}
		off += int64(len(p))
		if st.Capped() && off < g.end {
			continue // the text is final: only its end is left to find
		}
		got = st.Feed(got[:0], p)
	}
	var f Line
	switch {
	case len(got) == 1:
		f = b.lineOf(g, got[0].Text, got[0].Capped)
	case st.Capped() || g.noEOL:
		l, _ := st.Flush()
		f = b.lineOf(g, l.Text, l.Capped)
	default:
		return b.unreadable(errCorrupt)
	}
	f.raw = rawRef{file: g.file, off: g.off, n: n}
	f.Time = fromUnixNano(g.t0)
	return f
}

// rawBlock is how many bytes gather in memory before they are written to a raw file, and every
// write ends on a multiple of it: the file grows by whole, aligned blocks. One write of a MiB costs
// the kernel less than eight of 128 KiB (about a fifth less CPU for the log view's ingest of a
// replay's 10 KB events), and on ext4 a write that starts and ends on a MiB boundary costs about
// half of one that does not (the page cache takes it in large folios): 256 MiB in writes of 1 MiB
// took 0.03 s of CPU, in unaligned writes of 100-400 KB 0.065 s. Of what was written, the last
// rawTail bytes (or a block, if smaller) stay in memory, so the lines a frame draws while following
// are read without a system call; what follows the last whole block stays in cur until the next
// one fills. A chunk of rawDirect bytes or more (or half a block) is written from the caller's
// buffer, without a copy, as far as the last whole block it completes. (A variable so that tests
// can make it small.)
var rawBlock = 1 << 20

const (
	rawTail   = 64 << 10
	rawDirect = 64 << 10
)

// rawWaitingMax bounds, in blocks, the bytes a buffer's raw files keep waiting in memory for their
// next whole block: past it, the files holding the most write what they hold (a follow of many
// sources would otherwise keep up to a block for each).
const rawWaitingMax = 8

// rawHoldMin is the least a chunk of a batch (Buffer.Append) must hold to be written from the
// caller's buffer rather than copied into cur first; rawHoldMax bounds the chunks held at once.
const (
	rawHoldMin = 4 << 10
	rawHoldMax = 256
)

// rawFile holds the raw bytes of one source and stream: [0, disk) in f, its end [disk-len(prev),
// disk) also in prev, [disk, disk+len(cur)) in cur, then [disk+len(cur), size) in held. disk is a
// multiple of rawBlock unless the buffer's bound on bytes waiting in memory (rawWaitingMax) made a
// file write all it held. If f cannot be written, bytes stay in cur from then on.
type rawFile struct {
	f      *os.File
	key    sourceKey
	size   int64
	disk   int64
	cur    []byte
	prev   []byte
	failed bool
	// held are chunks of the batch being appended, still the caller's: written with cur in one
	// vectored write before the batch's end (writeHeld), instead of copied into cur. Copying every
	// byte of a fast log into cur was a tenth of the log view's ingest (figure 3).
	held  [][]byte
	heldN int64
	iov   [][]byte // writeHeld's list of buffers
	spare []byte   // the other tail buffer: prev and spare swap at each writeHeld
	// reserved is how much of f the file system has allocated ahead of the writes (reserveAhead);
	// noReserve is set once it cannot.
	reserved  int64
	noReserve bool
}

// Space is reserved ahead of a raw file's writes once it holds reserveFrom bytes (a short log never
// takes more disk than it needs), in steps that double from reserveFrom up to reserveMax.
const (
	reserveFrom = 1 << 20
	reserveMax  = 16 << 20
)

// reserveAhead makes sure the file system has allocated f up to end when the file is long enough to
// be worth it. A file system that cannot (EOPNOTSUPP, or no space to reserve) is left to allocate
// at each write, as without it: nothing is lost but the saving.
func (rf *rawFile) reserveAhead(end int64) {
	if rf.noReserve || end <= rf.reserved || end < reserveFrom {
		return
	}
	from := max(rf.reserved, rf.disk)
	to := max(end, from+min(max(from, reserveFrom), reserveMax))
	if err := reserveSpace(rf.f, from, to-from); err != nil {
		rf.noReserve = true
		return
	}
	rf.reserved = to
}

// write adds data after what the file holds. With hold (a batch, Buffer.Append), a chunk of
// rawHoldMin bytes or more is kept as the caller's until writeHeld, which the batch's end calls.
func (rf *rawFile) write(data []byte, hold bool) error {
	if hold && len(data) >= rawHoldMin && !rf.failed {
		rf.held = append(rf.held, data)
		rf.heldN += int64(len(data))
		rf.size += int64(len(data))
		if len(rf.held) >= rawHoldMax || rf.heldN >= 4*int64(rawBlock) {
			return rf.writeHeld()
		}
		return nil
	}
	if len(rf.held) > 0 {
		// what comes after held chunks goes after them: write them first (on failure they were
		// moved to cur, and this follows them there)
		if err := rf.writeHeld(); err != nil {
			rf.cur = append(rf.cur, data...)
			rf.size += int64(len(data))
			return err
		}
	}
	if len(data) >= min(rawDirect, rawBlock/2) && !rf.failed {
		// A large chunk goes to the file from the caller's buffer (copying it first would double
		// its cost): held for the length of one flush, which lets it go.
		rf.held = append(rf.held, data)
		rf.heldN += int64(len(data))
		rf.size += int64(len(data))
		return rf.flush()
	}
	rf.cur = append(rf.cur, data...)
	rf.size += int64(len(data))
	if len(rf.cur) >= rawBlock {
		return rf.flush()
	}
	return nil
}

// writeHeld is flush while chunks are held: without them, cur stays in memory until it fills a
// block.
func (rf *rawFile) writeHeld() error {
	if len(rf.held) == 0 {
		return nil
	}
	return rf.flush()
}

// flush writes cur, then the held chunks, to the file in one vectored write up to the last whole
// block they complete, and lets the chunks go: what follows that block's end moves to cur. The end
// of what it wrote stays in memory (prev) for the frames. If the write fails, the chunks are
// copied into cur, where the bytes stay from then on.
func (rf *rawFile) flush() error { return rf.writeOut(false) }

// flushAll is flush up to the last byte, not the last whole block: the file then ends mid-block,
// and the next flush writes up to a block boundary again.
func (rf *rawFile) flushAll() error { return rf.writeOut(true) }

// writeOut is flush, or with all flushAll.
func (rf *rawFile) writeOut(all bool) error {
	if len(rf.held) == 0 && (rf.failed || len(rf.cur) == 0) {
		return nil
	}
	block := int64(rawBlock)
	n := (rf.disk+int64(len(rf.cur))+rf.heldN)/block*block - rf.disk
	if all {
		n = int64(len(rf.cur)) + rf.heldN
	}
	if n <= 0 || rf.failed {
		rf.holdInCur(0)
		return nil
	}
	// prev (the bytes right before the write), then the first n bytes of cur and the held chunks:
	// the write takes the list after prev, keepTail all of it
	rf.iov = append(rf.iov[:0], rf.prev)
	left := n
	for i := -1; i < len(rf.held) && left > 0; i++ {
		part := rf.cur
		if i >= 0 {
			part = rf.held[i]
		}
		part = part[:min(int64(len(part)), left)]
		if len(part) > 0 {
			rf.iov = append(rf.iov, part)
			left -= int64(len(part))
		}
	}
	err := errors.New("raw file unavailable")
	if rf.f != nil {
		rf.reserveAhead(rf.disk + n)
		err = fileio.WriteAtv(rf.f, rf.iov[1:], rf.disk)
	}
	if err != nil {
		clear(rf.iov)
		rf.failed = true
		rf.holdInCur(0)
		return fmt.Errorf("%w (output kept in memory from here)", err)
	}
	rf.disk += n
	rf.keepTail(rf.iov)
	clear(rf.iov)
	rf.holdInCur(n)
	if cap(rf.cur) > 2*rawBlock { // a huge chunk passed through cur: do not keep its buffer
		rf.cur = bytes.Clone(rf.cur)
	}
	return nil
}

// writable says the file takes writes: what cur holds is waiting for the next block, not kept
// because the file failed.
func (rf *rawFile) writable() bool { return rf.f != nil && !rf.failed }

// holdInCur makes cur hold what follows the first n bytes of cur and the held chunks (the bytes
// not written), and lets the held chunks go.
func (rf *rawFile) holdInCur(n int64) {
	if n < int64(len(rf.cur)) {
		rf.cur = rf.cur[:copy(rf.cur, rf.cur[n:])]
		n = 0
	} else {
		n -= int64(len(rf.cur))
		rf.cur = rf.cur[:0]
	}
	for _, h := range rf.held {
		if n >= int64(len(h)) {
			n -= int64(len(h))
			continue
		}
		rf.cur = append(rf.cur, h[n:]...)
		n = 0
	}
	rf.dropHeld()
}

func (rf *rawFile) dropHeld() {
	clear(rf.held)
	rf.held, rf.heldN = rf.held[:0], 0
}

// keepTail makes prev the last rawTail bytes of parts, one after another.
func (rf *rawFile) keepTail(parts [][]byte) {
	need, first := min(rawTail, rawBlock), len(parts)
	for first > 0 && need > 0 {
		first--
		need -= len(parts[first])
	}
	tail := append(rf.spare[:0], parts[first][max(0, -need):]...)
	for _, p := range parts[first+1:] {
		tail = append(tail, p...)
	}
	rf.prev, rf.spare = tail, rf.prev[:0]
}

// readAt fills p with the bytes at off, from memory when they are still there.
func (rf *rawFile) readAt(p []byte, off int64) error {
	end := off + int64(len(p))
	if end > rf.size || off < 0 {
		return errCorrupt
	}
	memOff := rf.disk - int64(len(rf.prev))
	if off < memOff {
		if rf.f == nil {
			return errors.New("raw file unavailable")
		}
		n := min(end, rf.disk) - off
		if _, err := rf.f.ReadAt(p[:n], off); err != nil {
			return fmt.Errorf("read raw: %w", err)
		}
		p, off = p[n:], off+n
	}
	if len(p) > 0 && off < rf.disk {
		n := copy(p, rf.prev[off-memOff:])
		p, off = p[n:], off+int64(n)
	}
	if len(p) > 0 && off < rf.disk+int64(len(rf.cur)) {
		n := copy(p, rf.cur[off-rf.disk:])
		p, off = p[n:], off+int64(n)
	}
	at := rf.disk + int64(len(rf.cur))
	for _, h := range rf.held {
		if len(p) == 0 {
			break
		}
		if end := at + int64(len(h)); off < end {
			n := copy(p, h[off-at:])
			p, off = p[n:], off+int64(n)
		}
		at += int64(len(h))
	}
	return nil
}

// rawView is what a save reads without the buffer's lock: the file up to disk, then a copy of the
// bytes only memory holds.
type rawView struct {
	f    *os.File
	disk int64
	mem  []byte
	size int64
}

// rawViews writes every raw file's whole blocks and returns what a save reads. Called with b.mu
// held.
func (b *Buffer) rawViews() []rawView {
	out := make([]rawView, len(b.raws))
	for i, rf := range b.raws {
		if err := rf.flush(); err != nil {
			b.fail(fmt.Errorf("log buffer raw write: %w", err))
		}
		out[i] = rawView{f: rf.f, disk: rf.disk, mem: bytes.Clone(rf.cur), size: rf.size}
	}
	return out
}

func (v rawView) copyTo(w io.Writer, off, end int64) error {
	if off < v.disk {
		if v.f == nil {
			return errors.New("raw file unavailable")
		}
		n := min(end, v.disk) - off
		if _, err := io.Copy(w, io.NewSectionReader(v.f, off, n)); err != nil {
			return err
		}
		off += n
	}
	if off < end {
		if _, err := w.Write(v.mem[off-v.disk : end-v.disk]); err != nil {
			return err
		}
	}
	return nil
}

// lineCache keeps built entries by index (direct-mapped: the rows of a frame are consecutive).
type lineCache struct {
	slots []cached
}

type cached struct {
	i int
	l Line
}

func (c *lineCache) init(n int) {
	c.slots = make([]cached, n)
	for k := range c.slots {
		c.slots[k].i = -1
	}
}

func (c *lineCache) get(i int) (Line, bool) {
	s := &c.slots[i%len(c.slots)]
	return s.l, s.i == i
}

func (c *lineCache) put(i int, l Line) {
	c.slots[i%len(c.slots)] = cached{i: i, l: l}
}
