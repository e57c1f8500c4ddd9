package logbuf

import (
	"bufio"
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

	raw      rawRef
	verbatim bool // Text is the raw bytes unchanged (without the LF): spilled pages store it once
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
	// MemLines is how many recent entries stay in memory; 0 means 50,000. The minimum is 64.
	MemLines int
	// Sanitize is how output is made safe; MaxRunes 0 means 4,096 here (negative: no cap).
	Sanitize sanitize.Options
	// PageCache is how many pages of 64 spilled entries stay decoded; 0 means 64.
	PageCache int
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
	rawErr error // first error writing raw bytes: saves are incomplete
	closed bool

	mem       ring // final entries memBase..committed-1
	memBase   int
	committed int
	markers   []int // indices of final markers, ascending

	partials []*source // sources with a partial line, by arrival of its first byte
	sources  map[sourceKey]*source
	names    map[string]uint32 // interned source names for page encoding
	nameList []string

	// spilled entries
	lines    *os.File
	lw       *bufio.Writer
	written  int64   // bytes handed to lw
	flushed  int64   // bytes known to be in the file
	pageOff  []int64 // offset of each spilled page
	spillOff bool    // spilling stopped after an error
	cache    pageCache

	// raw bytes
	raws []*rawFile
	runs []run

	scratch []sanitize.Line
	enc     []byte // page encoding scratch
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
	lineStart int64 // raw offset where the partial line began
	partial   bool
	pTime     time.Time
	pCursor   string
}

type rawFile struct {
	f    *os.File
	w    *bufio.Writer
	size int64
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
		o.MemLines = 50000
	}
	if o.MemLines < pageSize {
		o.MemLines = pageSize
	}
	if o.PageCache <= 0 {
		o.PageCache = 64
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
		names:   map[string]uint32{},
	}
	b.mem.init(o.MemLines + pageSize)
	b.cache.init(o.PageCache)
	return b, nil
}

// Dir is the buffer's private directory (removed by Close).
func (b *Buffer) Dir() string { return b.dir }

// Err is the first disk error the buffer met (nil when none); after one, older entries stay in memory.
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
func (b *Buffer) Append(source string, evs ...client.LogEvent) {
	for i := range evs {
		ev := &evs[i]
		switch ev.Kind {
		case client.Data:
			b.AddData(source, ev.Stream, ev.Data, ev.Cursor, ev.Time)
		case client.Quiet, client.Reconnecting:
		default:
			b.AddMarker(source, KindOf(ev.Kind), Describe(*ev), ev.Cursor, ev.Time)
		}
	}
}

// AddData adds output bytes from one source and stream, with the chunk's cursor and time.
func (b *Buffer) AddData(name string, stream client.Stream, data []byte, cursor string, t time.Time) {
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
	b.writeRaw(s, data)
	lines := s.st.Feed(b.scratch[:0], data)
	for i := range lines {
		l := &lines[i]
		began := t
		if s.partial {
			began = s.pTime
			b.dropPartial(s)
		}
		b.commit(Line{
			Kind: Output, Text: l.Text, Source: name, Stream: stream, Cursor: cursor, Time: began,
			Capped: l.Capped, raw: rawRef{file: s.file, off: s.lineStart, n: l.Raw}, verbatim: l.Verbatim,
		})
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
	b.commit(Line{Kind: k, Text: txt, Source: name, Cursor: cursor, Time: t})
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
	b.commit(Line{
		Kind: Output, Text: l.Text, Source: s.name, Stream: s.stream, Cursor: s.pCursor, Time: s.pTime,
		Capped: l.Capped, NoEOL: true, raw: rawRef{file: s.file, off: s.lineStart, n: l.Raw}, verbatim: l.Verbatim,
	})
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
	if _, ok := b.names[name]; !ok {
		b.names[name] = uint32(len(b.nameList))
		b.nameList = append(b.nameList, name)
	}
	s := &source{sourceKey: k, st: sanitize.NewStream(b.opt.Sanitize)}
	f, err := os.OpenFile(filepath.Join(b.dir, fmt.Sprintf("raw-%d", len(b.raws))), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		b.fail(fmt.Errorf("log buffer raw file: %w", err))
	}
	b.raws = append(b.raws, &rawFile{f: f, w: bufio.NewWriterSize(fileOrDiscard(f), 64<<10)})
	s.file = int32(len(b.raws))
	b.sources[k] = s
	return s
}

func fileOrDiscard(f *os.File) io.Writer {
	if f == nil {
		return io.Discard
	}
	return f
}

func (b *Buffer) writeRaw(s *source, data []byte) {
	rf := b.raws[s.file-1]
	if _, err := rf.w.Write(data); err != nil {
		err = fmt.Errorf("log buffer raw write: %w", err)
		b.fail(err)
		if b.rawErr == nil {
			b.rawErr = err
		}
	}
	if n := len(b.runs); n > 0 && b.runs[n-1].file == s.file && b.runs[n-1].off+b.runs[n-1].n == rf.size {
		b.runs[n-1].n += int64(len(data))
	} else {
		b.runs = append(b.runs, run{file: s.file, off: rf.size, n: int64(len(data))})
	}
	rf.size += int64(len(data))
}

// commit appends a final entry and spills the oldest page when memory is full.
func (b *Buffer) commit(l Line) {
	if l.Kind != Output {
		b.markers = append(b.markers, b.committed)
	}
	if b.mem.n == len(b.mem.buf) { // spilling failed earlier: grow instead of dropping
		b.mem.grow()
	}
	b.mem.push(l)
	b.committed++
	if b.mem.n >= b.opt.MemLines+pageSize && !b.spillOff {
		b.spill()
	}
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
		l, _ := b.line(i)
		out = append(out, l)
	}
	return out
}

func (b *Buffer) line(i int) (Line, bool) {
	switch {
	case i < 0 || i >= b.committed+len(b.partials):
		return Line{}, false
	case i >= b.committed:
		return b.partialLine(b.partials[i-b.committed]), true
	case i >= b.memBase:
		return b.mem.at(i - b.memBase), true
	}
	p, err := b.page(i / pageSize)
	if err != nil {
		b.fail(err)
		return Line{Kind: Note, Text: sanitize.String("unreadable: "+err.Error(), sanitize.Options{StripSGR: true})}, true
	}
	return p[i%pageSize], true
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
	l, ok := b.line(i)
	if !ok {
		b.mu.Unlock()
		return nil, fmt.Errorf("line %d: out of range", i)
	}
	if l.raw.file == 0 {
		b.mu.Unlock()
		return nil, nil
	}
	rf := b.raws[l.raw.file-1]
	if err := rf.w.Flush(); err != nil {
		b.fail(err)
	}
	f := rf.f
	b.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("line %d: raw file unavailable", i)
	}
	buf := make([]byte, l.raw.n)
	if _, err := f.ReadAt(buf, l.raw.off); err != nil {
		return nil, fmt.Errorf("line %d: read raw: %w", i, err)
	}
	if !l.Partial && !l.NoEOL && len(buf) > 0 && buf[len(buf)-1] == '\n' {
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
	files, err := b.flushRaw()
	runs := b.runs[:len(b.runs):len(b.runs)]
	rawErr := b.rawErr
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("save raw: %w", err)
	}
	for _, r := range runs {
		f := files[r.file-1]
		if f == nil {
			return errors.New("save raw: raw file unavailable")
		}
		if _, err := io.Copy(w, io.NewSectionReader(f, r.off, r.n)); err != nil {
			return fmt.Errorf("save raw: %w", err)
		}
	}
	if rawErr != nil {
		return fmt.Errorf("save raw: incomplete: %w", rawErr)
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
	files, err := b.flushRaw()
	size := b.raws[s.file-1].size
	rawErr := b.rawErr
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("save raw %s %s: %w", name, stream, err)
	}
	f := files[s.file-1]
	if f == nil {
		return fmt.Errorf("save raw %s %s: raw file unavailable", name, stream)
	}
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, size)); err != nil {
		return fmt.Errorf("save raw %s %s: %w", name, stream, err)
	}
	if rawErr != nil {
		return fmt.Errorf("save raw %s %s: incomplete: %w", name, stream, rawErr)
	}
	return nil
}

func (b *Buffer) flushRaw() ([]*os.File, error) {
	files := make([]*os.File, len(b.raws))
	for i, rf := range b.raws {
		if err := rf.w.Flush(); err != nil {
			b.fail(err)
			return nil, err
		}
		files[i] = rf.f
	}
	return files, nil
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
	if b.lines != nil {
		b.lines.Close()
	}
	// Forget the entries so late readers see an empty buffer instead of reading closed files.
	b.mem = ring{buf: make([]Line, 1)}
	b.memBase, b.committed, b.markers, b.partials, b.pageOff = 0, 0, nil, nil, nil
	b.cache.init(1)
	if err := os.RemoveAll(b.dir); err != nil {
		return fmt.Errorf("log buffer close: %w", err)
	}
	return nil
}

// ring is a fixed-capacity queue of entries.
type ring struct {
	buf  []Line
	head int
	n    int
}

func (r *ring) init(c int) { r.buf = make([]Line, c) }

func (r *ring) push(l Line) {
	r.buf[(r.head+r.n)%len(r.buf)] = l
	r.n++
}

func (r *ring) at(i int) Line { return r.buf[(r.head+i)%len(r.buf)] }

func (r *ring) ref(i int) *Line { return &r.buf[(r.head+i)%len(r.buf)] }

func (r *ring) drop(k int) {
	for i := 0; i < k; i++ {
		r.buf[(r.head+i)%len(r.buf)] = Line{}
	}
	r.head = (r.head + k) % len(r.buf)
	r.n -= k
}

func (r *ring) grow() {
	nb := make([]Line, 2*len(r.buf))
	for i := 0; i < r.n; i++ {
		nb[i] = r.at(i)
	}
	r.buf, r.head = nb, 0
}
