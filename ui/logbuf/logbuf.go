package logbuf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"sandscope/client"
	"sandscope/sanitize"
)

// Kind says what an entry is: a line of output or one kind of marker.
type Kind uint8

const (
	// Output is a line of process output.
	Output Kind = iota
	// Gap marks missing bytes (truncated, cursor rejected, or a restart from the beginning).
	Gap
	// Interrupted marks where the stream broke.
	Interrupted
	// Reconnecting marks a resume attempt (not added by Append).
	Reconnecting
	// Resumed marks where the stream flowed again without a gap.
	Resumed
	// Quiet marks a quiet period confirmed by status (not added by Append).
	Quiet
	// SuspectEnd marks a stream end that status contradicts.
	SuspectEnd
	// Ended marks the confirmed end.
	Ended
	// Lost marks that the process vanished with its container.
	Lost
	// Failed marks that following gave up.
	Failed
	// Note is a marker the UI adds for its own reasons (a relaunch, a saved file).
	Note
)

func (k Kind) String() string {
	switch k {
	case Output:
		return "output"
	case Note:
		return "note"
	}
	// Markers carry the client's stream events: same names.
	for ck, mk := range markerKinds {
		if mk == k {
			return ck.String()
		}
	}
	return "unknown"
}

// breaksLine says a marker of this kind ends its source's partial lines: bytes after it do not
// continue the line before it.
func (k Kind) breaksLine() bool {
	switch k {
	case Gap, Ended, Lost, Failed:
		return true
	}
	return false
}

// KindOf maps a client event kind to the marker kind for it (Output for Data).
func KindOf(k client.LogEventKind) Kind {
	if mk, ok := markerKinds[k]; ok {
		return mk
	}
	return Output
}

// markerKinds maps the client's stream events to the markers that record them.
var markerKinds = map[client.LogEventKind]Kind{
	client.Gap:          Gap,
	client.Interrupted:  Interrupted,
	client.Reconnecting: Reconnecting,
	client.Resumed:      Resumed,
	client.Quiet:        Quiet,
	client.SuspectEnd:   SuspectEnd,
	client.Ended:        Ended,
	client.Lost:         Lost,
	client.Failed:       Failed,
}

// Line is one entry: a line of output or a marker.
type Line struct {
	Kind Kind
	// Text is the sanitised display text without LF (for markers, the marker's description). It may
	// hold SGR sequences; when it does it ends with a reset.
	Text string
	// Source names the process in multi-process views ("" when there is one).
	Source string
	// Stream is stdout or stderr (Output only).
	Stream client.Stream
	// Cursor is, for output, the bridge cursor of the chunk that completed the line (for a partial
	// line, of the latest chunk); for a marker, the event's cursor.
	Cursor string
	// Time is, for output, the time of the chunk that began the line; for a marker, the event's.
	Time time.Time
	// Capped says Text was cut at the display cap; LineBytes has the full bytes.
	Capped bool
	// Partial says the line has no LF yet and may still grow (only the last Partials() entries).
	Partial bool
	// NoEOL says the line was ended without LF, by a marker that broke the stream.
	NoEOL bool

	raw rawRef
}

// IsMarker says the entry is a marker, not output.
func (l Line) IsMarker() bool { return l.Kind != Output }

// rawRef locates an output line's bytes: file is the raw file index + 1 (0 for markers).
type rawRef struct {
	file int32
	off  int64
	n    int64
}

// Options configures a Buffer. The zero value is usable.
type Options struct {
	// Dir is where the buffer makes its private directory; "" means the user cache directory
	// (sandscope/logs), or the system temporary directory when there is none.
	Dir string
	// MemLines is how many built entries stay cached in memory (the rows drawn most recently); 0
	// means 4,096. The minimum is 64. History itself is the raw bytes on disk.
	MemLines int
	// Sanitize is how output is made safe; MaxRunes 0 means 4,096 here (negative: no cap).
	Sanitize sanitize.Options
}

const pageSize = 64

// ErrClosed is returned (and recorded by Err) when a closed Buffer is used.
var ErrClosed = errors.New("log buffer closed")

// Buffer holds a log: see the package documentation.
type Buffer struct {
	mu     sync.Mutex
	opt    Options
	dir    string
	err    error // first disk error
	closed bool

	segs      []seg  // final entries, in order
	marks     []Line // the markers' entries (seg.mark indexes it)
	committed int
	markers   []int // indices of final markers, ascending

	partials []*source // sources with a partial line, by arrival of its first byte
	sources  map[sourceKey]*source

	raws []*rawFile
	runs []run

	cache   lineCache
	render  *sanitize.Stream // rebuilds lines from their raw bytes
	scratch []sanitize.Line
	rbuf    []byte   // raw bytes of a long line being rebuilt
	seg     segCache // raw bytes of the last segment read
}

type sourceKey struct {
	name   string
	stream client.Stream
}

// source is the ingest state of one source and stream.
type source struct {
	sourceKey
	st        *sanitize.Stream
	file      int32 // raw file index + 1
	lineStart int64 // raw offset where the next (or partial) line begins
	partial   bool
	pTime     time.Time
	pCursor   string
}

// run is a stretch of arrival order: n bytes at off in raw file file (index + 1).
type run struct {
	file int32
	off  int64
	n    int64
}

// New makes an empty Buffer with its private directory.
func New(o Options) (*Buffer, error) {
	if o.MemLines == 0 {
		o.MemLines = 4096
	}
	if o.MemLines < pageSize {
		o.MemLines = pageSize
	}
	switch {
	case o.Sanitize.MaxRunes == 0:
		o.Sanitize.MaxRunes = 4096
	case o.Sanitize.MaxRunes < 0:
		o.Sanitize.MaxRunes = 0
	}
	parent := o.Dir
	if parent == "" {
		if c, err := os.UserCacheDir(); err == nil {
			parent = filepath.Join(c, "sandscope", "logs")
		} else {
			parent = os.TempDir()
		}
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("log buffer: %w", err)
	}
	removeStale(parent)
	dir, err := os.MkdirTemp(parent, "log-")
	if err != nil {
		return nil, fmt.Errorf("log buffer: %w", err)
	}
	if err := writeOwner(dir); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("log buffer: %w", err)
	}
	b := &Buffer{
		opt:     o,
		dir:     dir,
		sources: map[sourceKey]*source{},
		render:  sanitize.NewStream(o.Sanitize),
	}
	b.cache.init(o.MemLines)
	return b, nil
}

// Dir is the buffer's private directory (removed by Close).
func (b *Buffer) Dir() string { return b.dir }

// Err is the first disk error the buffer met (nil when none); after one, the bytes that could not be
// written stay in memory.
func (b *Buffer) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *Buffer) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Append adds client events from one source: Data becomes output lines, Quiet and Reconnecting are
// skipped, every other kind becomes a marker with Describe's text.
//
// Chunks of output are written from evs' own buffers before Append returns, not copied first: the
// caller may reuse them once it has.
func (b *Buffer) Append(source string, evs ...client.LogEvent) {
	defer b.endBatch()
	for i := range evs {
		ev := &evs[i]
		switch ev.Kind {
		case client.Data:
			b.addData(source, ev.Stream, ev.Data, ev.Cursor, ev.Time, true)
		case client.Quiet, client.Reconnecting:
		default:
			b.AddMarker(source, KindOf(ev.Kind), Describe(*ev), ev.Cursor, ev.Time)
		}
	}
}

// AddData adds output bytes from one source and stream, with the chunk's cursor and time.
//
// Lines are not built here: each is a range of the raw bytes plus the colour state it began with,
// and Line builds it when asked. Only SGR state crosses an LF (see sanitize.Stream.Carry), so the
// sanitiser runs at ingest (without making text) only where that state may change or a line is
// open: the line a chunk completes, lines holding ESC, and the partial line after the chunk's last
// LF. The other lines are counted, not sanitised.
func (b *Buffer) AddData(name string, stream client.Stream, data []byte, cursor string, t time.Time) {
	b.addData(name, stream, data, cursor, t, false)
}

// addData is AddData; with hold, data stays the caller's until the batch's end (endBatch).
func (b *Buffer) addData(name string, stream client.Stream, data []byte, cursor string, t time.Time, hold bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		b.fail(ErrClosed)
		return
	}
	if len(data) == 0 {
		return
	}
	s := b.source(name, stream)
	b.writeRaw(s, data, hold)
	p := data
	if s.partial {
		nl := bytes.IndexByte(p, '\n')
		if nl < 0 {
			b.feed(s, p, cursor, t)
			return
		}
		b.feed(s, p[:nl+1], cursor, t)
		p = p[nl+1:]
	}
	for {
		e := bytes.IndexByte(p, 0x1b)
		if e < 0 {
			break
		}
		// The lines before the one holding the ESC begin with the carry of now; that line goes
		// through the sanitiser (no escape sequence spans an LF).
		if ls := bytes.LastIndexByte(p[:e], '\n') + 1; ls > 0 {
			b.addLines(s, p[:ls], cursor, t, s.st.Carry())
			p, e = p[ls:], e-ls
		}
		le := bytes.IndexByte(p[e:], '\n')
		if le < 0 {
			b.feed(s, p, cursor, t)
			return
		}
		b.feed(s, p[:e+le+1], cursor, t)
		p = p[e+le+1:]
	}
	// At a line start with no ESC ahead: every whole line begins with the carry of now.
	whole := bytes.LastIndexByte(p, '\n') + 1
	if whole > 0 {
		b.addLines(s, p[:whole], cursor, t, s.st.Carry())
		p = p[whole:]
	}
	if len(p) > 0 {
		b.feed(s, p, cursor, t)
	}
}

// feed runs p through the source's sanitiser: lines it completes are committed by reference.
func (b *Buffer) feed(s *source, p []byte, cursor string, t time.Time) {
	lines := s.st.Skim(b.scratch[:0], p)
	for i := range lines {
		l := &lines[i]
		began := t
		if s.partial {
			began = s.pTime
			b.dropPartial(s)
		}
		b.appendSeg(seg{file: s.file, off: s.lineStart, end: s.lineStart + l.Raw, n: 1,
			t0: unixNano(began), t: unixNano(t), cursor: cursor, carry: l.Carry})
		s.lineStart += l.Raw
	}
	clear(lines)
	b.scratch = lines[:0]
	if _, ok := s.st.Pending(); ok {
		if !s.partial {
			s.partial = true
			s.pTime = t
			b.partials = append(b.partials, s)
		}
		s.pCursor = cursor
	}
}

// addLines commits the whole lines in p (it ends with LF), all beginning with carry, in segments of
// at most segBytes bytes (a longer line is a segment alone). Lines are counted, not visited.
func (b *Buffer) addLines(s *source, p []byte, cursor string, t time.Time, carry string) {
	tn := unixNano(t)
	for len(p) > 0 {
		i := bytes.LastIndexByte(p[:min(len(p), segBytes)], '\n') + 1
		if i == 0 {
			i = bytes.IndexByte(p, '\n') + 1
		}
		n := bytes.Count(p[:i], newline)
		b.appendSeg(seg{file: s.file, off: s.lineStart, end: s.lineStart + int64(i), n: int32(n),
			t0: tn, t: tn, cursor: cursor, carry: carry})
		s.lineStart += int64(i)
		p = p[i:]
	}
}

var newline = []byte{'\n'}

// AddMarker adds a marker for a source. Text is sanitised. A marker that breaks the stream (Gap,
// Ended, Lost, Failed) first ends the source's partial lines.
func (b *Buffer) AddMarker(name string, k Kind, text, cursor string, t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		b.fail(ErrClosed)
		return
	}
	if k == Output {
		k = Note
	}
	if k.breaksLine() {
		for _, stream := range []client.Stream{client.Stdout, client.Stderr} {
			if s := b.sources[sourceKey{name, stream}]; s != nil && s.partial {
				b.endPartial(s)
			}
		}
	}
	o := b.opt.Sanitize
	o.StripSGR = true
	txt, _ := sanitize.Text([]byte(text), o)
	b.markers = append(b.markers, b.committed)
	b.marks = append(b.marks, Line{Kind: k, Text: txt, Source: name, Cursor: cursor, Time: t})
	b.appendSeg(seg{n: 1, mark: int32(len(b.marks) - 1)})
}

// EndPartial ends every partial line (as when a view stops following): each becomes final with
// NoEOL. Bytes that arrive later start new lines.
func (b *Buffer) EndPartial() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.partials) > 0 {
		b.endPartial(b.partials[0])
	}
}

func (b *Buffer) endPartial(s *source) {
	l, ok := s.st.Flush()
	b.dropPartial(s)
	if !ok {
		return
	}
	b.appendSeg(seg{file: s.file, off: s.lineStart, end: s.lineStart + l.Raw, n: 1, noEOL: true,
		t0: unixNano(s.pTime), t: unixNano(s.pTime), cursor: s.pCursor, carry: l.Carry})
	s.lineStart += l.Raw
}

func (b *Buffer) dropPartial(s *source) {
	s.partial = false
	for i, p := range b.partials {
		if p == s {
			b.partials = append(b.partials[:i], b.partials[i+1:]...)
			break
		}
	}
}

func (b *Buffer) source(name string, stream client.Stream) *source {
	k := sourceKey{name, stream}
	if s := b.sources[k]; s != nil {
		return s
	}
	s := &source{sourceKey: k, st: sanitize.NewStream(b.opt.Sanitize)}
	f, err := os.OpenFile(filepath.Join(b.dir, fmt.Sprintf("raw-%d", len(b.raws))), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		b.fail(fmt.Errorf("log buffer raw file: %w", err))
		f = nil
	}
	b.raws = append(b.raws, &rawFile{f: f, key: k})
	s.file = int32(len(b.raws))
	b.sources[k] = s
	return s
}

func (b *Buffer) writeRaw(s *source, data []byte, hold bool) {
	rf := b.raws[s.file-1]
	if n := len(b.runs); n > 0 && b.runs[n-1].file == s.file && b.runs[n-1].off+b.runs[n-1].n == rf.size {
		b.runs[n-1].n += int64(len(data))
	} else {
		b.runs = append(b.runs, run{file: s.file, off: rf.size, n: int64(len(data))})
	}
	if err := rf.write(data, hold); err != nil {
		b.fail(fmt.Errorf("log buffer raw write: %w", err))
	}
	if !hold {
		b.boundWaiting() // a batch's end does it for held writes
	}
}

// endBatch writes what a batch's chunks left held (see rawFile.held): after it, nothing of the
// caller's buffers is kept. (It writes another batch's held chunks too, which is only sooner.)
func (b *Buffer) endBatch() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, rf := range b.raws {
		if err := rf.writeHeld(); err != nil {
			b.fail(fmt.Errorf("log buffer raw write: %w", err))
		}
	}
	b.boundWaiting()
}

// boundWaiting keeps the bytes the raw files hold in memory for their next whole block under
// rawWaitingMax blocks: the files holding the most write all they hold until it is. Called with
// b.mu held.
func (b *Buffer) boundWaiting() {
	limit := int64(rawWaitingMax * rawBlock)
	var waiting int64
	for _, rf := range b.raws {
		if rf.writable() {
			waiting += int64(len(rf.cur))
		}
	}
	for waiting > limit {
		var most *rawFile
		for _, rf := range b.raws {
			if rf.writable() && (most == nil || len(rf.cur) > len(most.cur)) {
				most = rf
			}
		}
		waiting -= int64(len(most.cur))
		if err := most.flushAll(); err != nil {
			b.fail(fmt.Errorf("log buffer raw write: %w", err))
		}
	}
}

// RawBytes is how many bytes of output the buffer holds, every source and stream together (what
// SaveRaw writes).
func (b *Buffer) RawBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, rf := range b.raws {
		n += rf.size
	}
	return n
}

// Len is the number of entries, partial lines included.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.committed + len(b.partials)
}

// Partials is how many entries at the end are partial lines.
func (b *Buffer) Partials() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.partials)
}

// Line returns entry i; ok is false when i is out of range. If a spilled page cannot be read, the
// entry is a Note saying so and Err reports the error.
func (b *Buffer) Line(i int) (Line, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.line(i)
}

// Lines returns up to n entries from index from.
func (b *Buffer) Lines(from, n int) []Line {
	b.mu.Lock()
	defer b.mu.Unlock()
	total := b.committed + len(b.partials)
	if from < 0 {
		n += from
		from = 0
	}
	if n <= 0 || from >= total {
		return nil
	}
	n = min(n, total-from)
	out := make([]Line, 0, n)
	for i := from; i < from+n; i++ {
		if l, ok := b.cache.get(i); ok || i >= b.committed {
			if !ok {
				l, _ = b.line(i)
			}
			out = append(out, l)
			continue
		}
		// Build the rest of the final rows in one pass over their segments.
		to := min(from+n, b.committed)
		k := len(out)
		out = b.buildRange(i, to, out)
		for j := k; j < len(out); j++ {
			b.cache.put(i+j-k, out[j])
		}
		i = to - 1
	}
	return out
}

func (b *Buffer) line(i int) (Line, bool) {
	switch {
	case i < 0 || i >= b.committed+len(b.partials):
		return Line{}, false
	case i >= b.committed:
		return b.partialLine(b.partials[i-b.committed]), true
	}
	if l, ok := b.cache.get(i); ok {
		return l, true
	}
	l := b.build(i)
	b.cache.put(i, l)
	return l, true
}

func (b *Buffer) partialLine(s *source) Line {
	pl, _ := s.st.Pending()
	return Line{
		Kind: Output, Text: pl.Text, Source: s.name, Stream: s.stream, Cursor: s.pCursor, Time: s.pTime,
		Capped: pl.Capped, Partial: true, raw: rawRef{file: s.file, off: s.lineStart, n: pl.Raw},
	}
}

// Markers is the number of final markers.
func (b *Buffer) Markers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.markers)
}

// Direction is which way Search and NextMarker go.
type Direction int

const (
	Forward  Direction = 1
	Backward Direction = -1
)

// NextMarker returns the index of the first marker at or after from (Forward) or at or before from
// (Backward), or -1 when there is none.
func (b *Buffer) NextMarker(from int, dir Direction) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	lo, hi := 0, len(b.markers)
	for lo < hi { // first marker >= from
		mid := (lo + hi) / 2
		if b.markers[mid] < from {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if dir == Backward {
		if lo < len(b.markers) && b.markers[lo] == from {
			return from
		}
		if lo == 0 {
			return -1
		}
		return b.markers[lo-1]
	}
	if lo == len(b.markers) {
		return -1
	}
	return b.markers[lo]
}

// LineBytes returns the full bytes of output entry i as the process wrote them, without the LF that
// ended it. Markers have none.
func (b *Buffer) LineBytes(i int) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ref rawRef
	eol := false
	switch {
	case i < 0 || i >= b.committed+len(b.partials):
		return nil, fmt.Errorf("line %d: out of range", i)
	case i >= b.committed:
		l := b.partialLine(b.partials[i-b.committed])
		ref = l.raw
	default:
		sg := &b.segs[b.segAt(i)]
		if sg.file == 0 {
			return nil, nil
		}
		off, end, err := b.lineRange(sg, i-sg.first)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i, err)
		}
		ref, eol = rawRef{file: sg.file, off: off, n: end - off}, !sg.noEOL
	}
	buf := make([]byte, ref.n)
	if err := b.raws[ref.file-1].readAt(buf, ref.off); err != nil {
		b.fail(err)
		return nil, fmt.Errorf("line %d: read raw: %w", i, err)
	}
	if eol && len(buf) > 0 && buf[len(buf)-1] == '\n' {
		buf = buf[:len(buf)-1]
	}
	return buf, nil
}

// SaveRaw writes every byte of output received, all sources and both streams interleaved in arrival
// order, from the first byte. Missing bytes (gaps) are simply absent.
func (b *Buffer) SaveRaw(w io.Writer) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	views := b.rawViews()
	runs := b.runs[:len(b.runs):len(b.runs)]
	b.mu.Unlock()
	for _, r := range runs {
		if err := views[r.file-1].copyTo(w, r.off, r.off+r.n); err != nil {
			return fmt.Errorf("save raw: %w", err)
		}
	}
	return nil
}

// SaveRawStream writes every byte one source wrote to one stream, exactly, from the first byte.
func (b *Buffer) SaveRawStream(w io.Writer, name string, stream client.Stream) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	s := b.sources[sourceKey{name, stream}]
	if s == nil {
		b.mu.Unlock()
		return nil
	}
	v := b.rawViews()[s.file-1]
	b.mu.Unlock()
	if err := v.copyTo(w, 0, v.size); err != nil {
		return fmt.Errorf("save raw %s %s: %w", name, stream, err)
	}
	return nil
}

// Close removes the buffer's files. The Buffer must not be used afterwards.
func (b *Buffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for _, rf := range b.raws {
		if rf.f != nil {
			rf.f.Close()
		}
	}
	// Forget the entries so late readers see an empty buffer instead of reading closed files.
	b.segs, b.marks, b.committed, b.markers, b.partials = nil, nil, 0, nil, nil
	b.cache.init(1)
	if err := os.RemoveAll(b.dir); err != nil {
		return fmt.Errorf("log buffer close: %w", err)
	}
	return nil
}
