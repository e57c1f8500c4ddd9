package logbuf

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/sanitize"
)

// eager is the reference for the lazy Buffer: the buffer as it was before lines were built on demand,
// every line sanitised at ingest by its source's sanitize.Stream and kept whole.
type eager struct {
	opt      sanitize.Options
	lines    []Line
	partials []*eagerSource
	sources  map[sourceKey]*eagerSource
	raw      bytes.Buffer
	rawBy    map[sourceKey]*bytes.Buffer
}

type eagerSource struct {
	sourceKey
	st      *sanitize.Stream
	start   int64
	partial bool
	pTime   time.Time
	pCursor string
}

func newEager(o sanitize.Options) *eager {
	return &eager{opt: o, sources: map[sourceKey]*eagerSource{}, rawBy: map[sourceKey]*bytes.Buffer{}}
}

func (e *eager) source(name string, stream client.Stream) *eagerSource {
	k := sourceKey{name, stream}
	if s := e.sources[k]; s != nil {
		return s
	}
	s := &eagerSource{sourceKey: k, st: sanitize.NewStream(e.opt)}
	e.sources[k] = s
	e.rawBy[k] = &bytes.Buffer{}
	return s
}

func (e *eager) drop(s *eagerSource) {
	s.partial = false
	for i, p := range e.partials {
		if p == s {
			e.partials = append(e.partials[:i], e.partials[i+1:]...)
			return
		}
	}
}

func (e *eager) addData(name string, stream client.Stream, data []byte, cursor string, t time.Time) {
	if len(data) == 0 {
		return
	}
	s := e.source(name, stream)
	e.raw.Write(data)
	e.rawBy[s.sourceKey].Write(data)
	for _, l := range s.st.Feed(nil, data) {
		began := t
		if s.partial {
			began = s.pTime
			e.drop(s)
		}
		e.lines = append(e.lines, Line{Kind: Output, Text: l.Text, Source: name, Stream: stream, Cursor: cursor,
			Time: began, Capped: l.Capped, raw: rawRef{off: s.start, n: l.Raw}})
		s.start += l.Raw
	}
	if _, ok := s.st.Pending(); ok {
		if !s.partial {
			s.partial, s.pTime = true, t
			e.partials = append(e.partials, s)
		}
		s.pCursor = cursor
	}
}

func (e *eager) end(s *eagerSource) {
	l, ok := s.st.Flush()
	e.drop(s)
	if !ok {
		return
	}
	e.lines = append(e.lines, Line{Kind: Output, Text: l.Text, Source: s.name, Stream: s.stream, Cursor: s.pCursor,
		Time: s.pTime, Capped: l.Capped, NoEOL: true, raw: rawRef{off: s.start, n: l.Raw}})
	s.start += l.Raw
}

func (e *eager) addMarker(name string, k Kind, text, cursor string, t time.Time) {
	if k.breaksLine() {
		for _, st := range []client.Stream{client.Stdout, client.Stderr} {
			if s := e.sources[sourceKey{name, st}]; s != nil && s.partial {
				e.end(s)
			}
		}
	}
	o := e.opt
	o.StripSGR = true
	txt, _ := sanitize.Text([]byte(text), o)
	e.lines = append(e.lines, Line{Kind: k, Text: txt, Source: name, Cursor: cursor, Time: t})
}

func (e *eager) line(i int) Line {
	if i < len(e.lines) {
		return e.lines[i]
	}
	s := e.partials[i-len(e.lines)]
	pl, _ := s.st.Pending()
	return Line{Kind: Output, Text: pl.Text, Source: s.name, Stream: s.stream, Cursor: s.pCursor, Time: s.pTime,
		Capped: pl.Capped, Partial: true, raw: rawRef{off: s.start, n: pl.Raw}}
}

func (e *eager) bytesOf(i int) []byte {
	l := e.line(i)
	if l.Kind != Output {
		return nil
	}
	b := e.rawBy[sourceKey{l.Source, l.Stream}].Bytes()[l.raw.off : l.raw.off+l.raw.n]
	if !l.Partial && !l.NoEOL && len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	return b
}

func sameLine(a, b Line) bool {
	return a.Kind == b.Kind && a.Text == b.Text && a.Source == b.Source && a.Stream == b.Stream &&
		a.Cursor == b.Cursor && a.Time.Equal(b.Time) && a.Time.IsZero() == b.Time.IsZero() && a.Capped == b.Capped &&
		a.Partial == b.Partial && a.NoEOL == b.NoEOL && a.raw.off == b.raw.off && a.raw.n == b.raw.n
}

// piece makes one random piece of output: mostly plain lines (the fast path), with colour that is
// and is not reset before the LF, CR, escapes of every family, invalid UTF-8, tabs, lines over the
// display cap and over a segment's bytes, and runs of short lines longer than a segment.
func piece(r *rand.Rand) string {
	switch r.IntN(24) {
	case 0:
		return "\x1b[31mred, carried to the next line\n"
	case 1:
		return "\x1b[1;32mINFO\x1b[0m coloured and reset\n"
	case 2:
		return "\x1b[0m"
	case 3:
		return "carriage\rreturn\r\n"
	case 4:
		return "\x1b]0;title\x07\x1b[2Jcleared\n"
	case 5:
		return "bad \xff\xfe utf8 \xc3"
	case 6:
		return "\xa9 é \xe2\x80\xae bidi \x9b c1\n"
	case 7:
		return strings.Repeat("long line ", 500) + "\n"
	case 8:
		return strings.Repeat("x", 40<<10) + "\n"
	case 9:
		var sb strings.Builder
		for i := r.IntN(400); i > 0; i-- {
			fmt.Fprintf(&sb, "short %d\n", i)
		}
		return sb.String()
	case 10:
		return "tab\tbed\n"
	case 11:
		return "\x1b[38;5;200mno reset"
	case 12:
		return "\x1b"
	case 13:
		return "\x1bP dcs \x1b\\ after\n"
	case 14:
		return "\r"
	case 15:
		return "\n"
	default:
		return fmt.Sprintf("plain line %d with some words in it\n", r.IntN(1e6))
	}
}

// TestLazyMatchesEager feeds random streams from several sources, cut at random places (inside
// escapes, UTF-8 characters and CRLF pairs), with markers and EndPartial between, to the Buffer and
// to the eager reference, and compares every entry, LineBytes, markers and both saves, reading some
// entries while ingesting so the cache of built rows is exercised.
func TestLazyMatchesEager(t *testing.T) {
	smallBlocks(t)
	for seed := uint64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		o := sanitize.Options{MaxRunes: []int{4096, 40, 7}[seed%3]}
		b := newBuf(t, Options{MemLines: 64, Sanitize: o})
		if seed%4 == 0 {
			o.StripSGR = true
			b = newBuf(t, Options{MemLines: 64, Sanitize: o})
		}
		ref := newEager(b.opt.Sanitize)
		keys := []sourceKey{{"", client.Stdout}, {"", client.Stderr}, {"b", client.Stdout}}
		pending := map[sourceKey][]byte{}
		for op := 0; op < 600; op++ {
			k := keys[r.IntN(len(keys))]
			when := time.Unix(int64(op), 0)
			if op%7 == 0 {
				when = time.Time{}
			}
			cursor := fmt.Sprint("c", op%5)
			switch x := r.IntN(40); {
			case x == 0:
				kind := []Kind{Gap, Interrupted, Resumed, Ended, Note}[r.IntN(5)]
				text := fmt.Sprintf("marker \x1b[31m%d\x07", op)
				b.AddMarker(k.name, kind, text, cursor, when)
				ref.addMarker(k.name, kind, text, cursor, when)
			case x == 1:
				b.EndPartial()
				for len(ref.partials) > 0 {
					ref.end(ref.partials[0])
				}
			case x < 4 && b.Len() > 0:
				i := r.IntN(b.Len())
				if got, _ := b.Line(i); !sameLine(got, ref.line(i)) {
					t.Fatalf("seed %d op %d: line %d = %+v, want %+v", seed, op, i, got, ref.line(i))
				}
			default:
				p := append(pending[k], piece(r)...)
				for p2 := r.IntN(3); p2 > 0; p2-- {
					p = append(p, piece(r)...)
				}
				n := len(p)
				if r.IntN(2) == 0 {
					n = r.IntN(len(p) + 1)
				}
				b.AddData(k.name, k.stream, p[:n], cursor, when)
				ref.addData(k.name, k.stream, p[:n], cursor, when)
				pending[k] = append([]byte(nil), p[n:]...)
			}
		}
		compareAll(t, fmt.Sprintf("seed %d", seed), b, ref)
	}
}

func compareAll(t *testing.T, name string, b *Buffer, ref *eager) {
	t.Helper()
	n := len(ref.lines) + len(ref.partials)
	if b.Len() != n || b.Partials() != len(ref.partials) {
		t.Fatalf("%s: Len %d Partials %d, want %d %d", name, b.Len(), b.Partials(), n, len(ref.partials))
	}
	var marks []int
	for i, l := range ref.lines {
		if l.IsMarker() {
			marks = append(marks, i)
		}
	}
	if b.Markers() != len(marks) {
		t.Fatalf("%s: %d markers, want %d", name, b.Markers(), len(marks))
	}
	for _, m := range marks {
		if b.NextMarker(m, Forward) != m || b.NextMarker(m, Backward) != m {
			t.Fatalf("%s: marker %d not found", name, m)
		}
	}
	all := b.Lines(0, n)
	for i := 0; i < n; i++ {
		want := ref.line(i)
		got, ok := b.Line(i)
		if !ok || !sameLine(got, want) || !sameLine(all[i], want) {
			t.Fatalf("%s: line %d = %+v (Lines: %+v), want %+v", name, i, got, all[i], want)
		}
		lb, err := b.LineBytes(i)
		if err != nil || !bytes.Equal(lb, ref.bytesOf(i)) {
			t.Fatalf("%s: LineBytes(%d) = %q, %v, want %q", name, i, lb, err, ref.bytesOf(i))
		}
	}
	// Backwards, one at a time, through a small cache.
	for i := n - 1; i >= 0; i -= 3 {
		if got, _ := b.Line(i); !sameLine(got, ref.line(i)) {
			t.Fatalf("%s: backwards line %d = %+v", name, i, got)
		}
	}
	for p := 0; p*pageSize < len(ref.lines); p++ {
		c, err := b.chunk(p)
		if err != nil {
			t.Fatal(err)
		}
		for k, l := range c {
			if !sameLine(l, ref.lines[p*pageSize+k]) {
				t.Fatalf("%s: chunk %d entry %d = %+v", name, p, k, l)
			}
		}
	}
	var raw bytes.Buffer
	if err := b.SaveRaw(&raw); err != nil || !bytes.Equal(raw.Bytes(), ref.raw.Bytes()) {
		t.Fatalf("%s: SaveRaw %d bytes, %v; want %d", name, raw.Len(), err, ref.raw.Len())
	}
	for k, want := range ref.rawBy {
		var got bytes.Buffer
		if err := b.SaveRawStream(&got, k.name, k.stream); err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%s: SaveRawStream %v: %d bytes, %v; want %d", name, k, got.Len(), err, want.Len())
		}
	}
	i, err := b.Search(context.Background(), Query{Text: "PLAIN LINE", IgnoreCase: true}, n-1, Backward)
	want := -1
	for j := n - 1; j >= 0; j-- {
		if strings.Contains(strings.ToLower(Plain(ref.line(j).Text)), "plain line") {
			want = j
			break
		}
	}
	if err != nil || i != want {
		t.Fatalf("%s: search found %d, %v; want %d", name, i, err, want)
	}
	if b.Err() != nil {
		t.Fatalf("%s: %v", name, b.Err())
	}
}

// FuzzLazyMatchesEager: `go test -fuzz FuzzLazyMatchesEager ./ui/logbuf/` feeds arbitrary bytes in
// chunks of arbitrary size, alternating two sources, and compares the lazy Buffer with the eager
// reference.
func FuzzLazyMatchesEager(f *testing.F) {
	f.Add([]byte("plain\n\x1b[31mred\ncarried\x1b[0m\nx\r\ny\xc3"), uint8(3), uint8(5))
	f.Add([]byte(strings.Repeat("long ", 2000)+"\n\x1b]0;t\x07\x1b[1mb\n"), uint8(200), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, size, maxRunes uint8) {
		o := sanitize.Options{MaxRunes: int(maxRunes)}
		b := newBuf(t, Options{Sanitize: o})
		ref := newEager(b.opt.Sanitize)
		n := int(size)%61 + 1
		for i := 0; len(data) > 0; i++ {
			k := min(len(data), n+i%3)
			name := []string{"a", "b"}[i%2]
			b.AddData(name, client.Stdout, data[:k], "c", time.Unix(int64(i), 0))
			ref.addData(name, client.Stdout, data[:k], "c", time.Unix(int64(i), 0))
			data = data[k:]
			if i%11 == 10 {
				b.AddMarker(name, Gap, "gap", "c", time.Unix(int64(i), 0))
				ref.addMarker(name, Gap, "gap", "c", time.Unix(int64(i), 0))
			}
		}
		compareAll(t, "fuzz", b, ref)
	})
}
