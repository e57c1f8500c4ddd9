package logbuf

import (
	"bufio"
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sandscope/client"
)

// Page encoding, per entry: kind, flags, source name index, [time], text, [cursor], [raw ref].
const (
	flCapped = 1 << iota
	flNoEOL
	flStderr
	flSameCursor
	flTime
	flRaw
	flVerbatim // text omitted: it is the line's raw bytes
)

var errCorrupt = errors.New("spilled page corrupt")

// spill moves the oldest page of memory to the lines file.
func (b *Buffer) spill() {
	if b.lines == nil {
		f, err := os.OpenFile(filepath.Join(b.dir, "lines"), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
		if err != nil {
			b.fail(fmt.Errorf("log buffer spill: %w", err))
			b.spillOff = true
			return
		}
		b.lines = f
		b.lw = bufio.NewWriterSize(f, 64<<10)
	}
	enc := b.enc[:0]
	prevCursor := ""
	for i := 0; i < pageSize; i++ {
		l := b.mem.ref(i)
		enc = b.encode(enc, l, i > 0 && l.Cursor == prevCursor)
		prevCursor = l.Cursor
	}
	b.enc = enc
	if _, err := b.lw.Write(enc); err != nil {
		b.fail(fmt.Errorf("log buffer spill: %w", err))
		b.spillOff = true
		return
	}
	b.pageOff = append(b.pageOff, b.written)
	b.written += int64(len(enc))
	b.mem.drop(pageSize)
	b.memBase += pageSize
}

func (b *Buffer) encode(dst []byte, l *Line, sameCursor bool) []byte {
	var fl byte
	if l.Capped {
		fl |= flCapped
	}
	if l.NoEOL {
		fl |= flNoEOL
	}
	if l.Stream == client.Stderr {
		fl |= flStderr
	}
	if sameCursor {
		fl |= flSameCursor
	}
	if !l.Time.IsZero() {
		fl |= flTime
	}
	if l.raw.file != 0 {
		fl |= flRaw
		if l.verbatim {
			fl |= flVerbatim
		}
	}
	dst = append(dst, byte(l.Kind), fl)
	dst = binary.AppendUvarint(dst, uint64(b.names[l.Source]))
	if fl&flTime != 0 {
		dst = binary.AppendVarint(dst, l.Time.UnixNano())
	}
	if fl&flVerbatim == 0 {
		dst = binary.AppendUvarint(dst, uint64(len(l.Text)))
		dst = append(dst, l.Text...)
	}
	if !sameCursor {
		dst = binary.AppendUvarint(dst, uint64(len(l.Cursor)))
		dst = append(dst, l.Cursor...)
	}
	if fl&flRaw != 0 {
		dst = binary.AppendUvarint(dst, uint64(l.raw.file))
		dst = binary.AppendUvarint(dst, uint64(l.raw.off))
		dst = binary.AppendUvarint(dst, uint64(l.raw.n))
	}
	return dst
}

// decodePage decodes one page; names is the interned source table, raws the raw files (by index) that
// verbatim lines take their text from.
func decodePage(p []byte, names []string, raws []*os.File) ([]Line, error) {
	out := make([]Line, 0, pageSize)
	cursor := ""
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	str := func() (string, bool) {
		n, ok := uv()
		if !ok || n > uint64(len(p)) {
			return "", false
		}
		s := string(p[:n])
		p = p[n:]
		return s, true
	}
	for len(out) < pageSize {
		if len(p) < 2 {
			return nil, errCorrupt
		}
		l := Line{Kind: Kind(p[0])}
		fl := p[1]
		p = p[2:]
		l.Capped = fl&flCapped != 0
		l.NoEOL = fl&flNoEOL != 0
		if fl&flStderr != 0 {
			l.Stream = client.Stderr
		}
		src, ok := uv()
		if !ok || src >= uint64(len(names)) {
			return nil, errCorrupt
		}
		l.Source = names[src]
		if fl&flTime != 0 {
			t, n := binary.Varint(p)
			if n <= 0 {
				return nil, errCorrupt
			}
			p = p[n:]
			l.Time = time.Unix(0, t)
		}
		if fl&flVerbatim == 0 {
			if l.Text, ok = str(); !ok {
				return nil, errCorrupt
			}
		}
		if fl&flSameCursor == 0 {
			if cursor, ok = str(); !ok {
				return nil, errCorrupt
			}
		}
		l.Cursor = cursor
		if fl&flRaw != 0 {
			f, ok1 := uv()
			off, ok2 := uv()
			n, ok3 := uv()
			if !ok1 || !ok2 || !ok3 {
				return nil, errCorrupt
			}
			l.raw = rawRef{file: int32(f), off: int64(off), n: int64(n)}
			l.verbatim = fl&flVerbatim != 0
			if l.verbatim && (f == 0 || f > uint64(len(raws))) {
				return nil, errCorrupt
			}
		}
		out = append(out, l)
	}
	if err := fillVerbatim(out, raws); err != nil {
		return nil, err
	}
	return out, nil
}

// maxRawRead bounds one read of raw bytes when filling verbatim lines.
const maxRawRead = 256 << 10

// fillVerbatim reads the text of verbatim lines from the raw files: one read per file per page
// usually, since a file's lines are consecutive in it (a read spans the other lines of that file in
// between, up to maxRawRead).
func fillVerbatim(lines []Line, raws []*os.File) error {
	filled := make([]bool, len(lines))
	for i := range lines {
		if !lines[i].verbatim || filled[i] {
			continue
		}
		file, start := lines[i].raw.file, lines[i].raw.off
		end := start
		var run []int
		for j := i; j < len(lines); j++ {
			l := &lines[j]
			if l.raw.file != file {
				continue // another source's line between
			}
			if l.raw.off != end || (end-start+l.raw.n > maxRawRead && len(run) > 0) {
				break
			}
			end += l.raw.n
			if l.verbatim {
				run = append(run, j)
			}
		}
		f := raws[file-1]
		if f == nil {
			return errors.New("raw file unavailable")
		}
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return fmt.Errorf("read raw: %w", err)
		}
		for _, j := range run {
			l := &lines[j]
			b := buf[l.raw.off-start : l.raw.off-start+l.raw.n]
			if !l.NoEOL && len(b) > 0 && b[len(b)-1] == '\n' {
				b = b[:len(b)-1]
			}
			l.Text = string(b)
			filled[j] = true
		}
	}
	for i := range lines {
		lines[i].verbatim = false // decoded pages are never spilled again
	}
	return nil
}

// page returns spilled page p, from the cache or the file. Called with b.mu held.
func (b *Buffer) page(p int) ([]Line, error) {
	if l, ok := b.cache.get(p); ok {
		return l, nil
	}
	f, off, end, raws, err := b.pageRange(p)
	if err != nil {
		return nil, err
	}
	lines, err := readPage(f, off, end, b.nameList, raws)
	if err != nil {
		return nil, fmt.Errorf("spilled page %d: %w", p, err)
	}
	b.cache.put(p, lines)
	return lines, nil
}

// pageRange says where page p is, flushing the writers if the page or its raw bytes are still in
// them. Called with b.mu held; the returned files may be read without it.
func (b *Buffer) pageRange(p int) (f *os.File, off, end int64, raws []*os.File, err error) {
	if b.closed {
		return nil, 0, 0, nil, ErrClosed
	}
	off = b.pageOff[p]
	end = b.written
	if p+1 < len(b.pageOff) {
		end = b.pageOff[p+1]
	}
	if end > b.flushed {
		if err := b.lw.Flush(); err != nil {
			return nil, 0, 0, nil, err
		}
		b.flushed = b.written
	}
	raws, err = b.flushRaw()
	if err != nil {
		return nil, 0, 0, nil, err
	}
	return b.lines, off, end, raws, nil
}

func readPage(f *os.File, off, end int64, names []string, raws []*os.File) ([]Line, error) {
	buf := make([]byte, end-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, err
	}
	return decodePage(buf, names, raws)
}

// pageCache is an LRU of decoded pages.
type pageCache struct {
	max   int
	order *list.List // front: most recent; values are page numbers
	pages map[int]pageEntry
}

type pageEntry struct {
	lines []Line
	el    *list.Element
}

func (c *pageCache) init(max int) {
	c.max = max
	c.order = list.New()
	c.pages = map[int]pageEntry{}
}

func (c *pageCache) get(p int) ([]Line, bool) {
	e, ok := c.pages[p]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e.el)
	return e.lines, true
}

func (c *pageCache) put(p int, lines []Line) {
	if e, ok := c.pages[p]; ok {
		c.order.MoveToFront(e.el)
		return
	}
	for c.order.Len() >= c.max {
		last := c.order.Back()
		delete(c.pages, last.Value.(int))
		c.order.Remove(last)
	}
	c.pages[p] = pageEntry{lines: lines, el: c.order.PushFront(p)}
}
