package client

// refSSEDecoder is the SSE decoder as it was before CRs were searched for lazily (once per read
// instead of once per line): FuzzSSEDecoderLazyCR holds the decoder to its exact behaviour,
// events, errors and limits included.

import (
	"bytes"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

type refSSEDecoder struct {
	src     io.Reader
	MaxSize int

	buf     []byte // read buffer: buf[r:w] is not framed yet
	r, w    int
	scanned int   // how much of buf[r:w] is known to hold no line end
	rerr    error // the reader's error, returned once the buffered bytes are used up

	// The current event's data: borrowed as buf[dataStart:dataEnd] while it is a single line that
	// no refill has had to move, else owned in own.
	borrowed           bool
	dataStart, dataEnd int
	own                []byte

	skipLF  bool // the previous line ended in CR: a following LF belongs to it
	hasData bool

	// size is the initial buffer and minRead the least room a read gets (0: sseBufSize and
	// sseMinRead); tests make them small so that buffer moves happen often.
	size, minRead int
}

// NewrefSSEDecoder returns a decoder reading from r.
func newRefSSEDecoder(r io.Reader) *refSSEDecoder {
	return &refSSEDecoder{src: r, MaxSize: DefaultMaxEventSize}
}

// Next returns the next complete event. At the end of the stream it returns io.EOF (an unfinished
// event is discarded, as the SSE spec says); a broken stream returns the reader's error.
func (d *refSSEDecoder) Next() (SSEEvent, error) {
	ev, err := d.next()
	if err != nil {
		return ev, err
	}
	ev.Data = append([]byte(nil), ev.Data...)
	return ev, nil
}

// next is Next without copying: ev.Data is valid only until the following call.
func (d *refSSEDecoder) next() (SSEEvent, error) {
	var ev SSEEvent
	d.borrowed, d.hasData = false, false
	d.own = d.own[:0]
	for {
		start, end, err := d.readLine()
		if err != nil {
			// At io.EOF, a final line without terminator belongs to an event never dispatched.
			d.borrowed = false
			return SSEEvent{}, err
		}
		line := d.buf[start:end]
		if len(line) == 0 {
			if !d.hasData {
				ev = SSEEvent{}
				continue
			}
			if d.borrowed {
				ev.Data = d.buf[d.dataStart:d.dataEnd]
			} else {
				ev.Data = d.own
				if ev.Data == nil {
					ev.Data = []byte{}
				}
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value, vstart := line, []byte(nil), end
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value, vstart = line[:i], line[i+1:], start+i+1
			if len(value) > 0 && value[0] == ' ' {
				value, vstart = value[1:], vstart+1
			}
		}
		switch string(field) {
		case "data":
			if !d.hasData {
				// First data line: usually the whole event. Leave it where it was read.
				d.hasData, d.borrowed = true, true
				d.dataStart, d.dataEnd = vstart, end
				continue
			}
			d.ownData()
			if len(d.own)+1+len(value) > d.MaxSize {
				return SSEEvent{}, ErrEventTooLarge
			}
			d.own = append(d.own, '\n')
			d.own = append(d.own, value...)
		case "event":
			ev.Event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
			}
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 && isDigits(value) {
				ev.Retry = n
			}
		}
	}
}

// ownData moves a borrowed first data line into own, before the buffer is moved or more data
// lines are joined to it.
func (d *refSSEDecoder) ownData() {
	if d.borrowed {
		d.own = append(d.own[:0], d.buf[d.dataStart:d.dataEnd]...)
		d.borrowed = false
	}
}

// readLine frames the next line and returns where it lies in d.buf, without its terminator; the
// bytes stay there until the next call. At the end of input it returns the reader's error (io.EOF
// after a final unterminated line, which is dropped).
func (d *refSSEDecoder) readLine() (start, end int, err error) {
	for {
		if d.skipLF && d.r < d.w {
			d.skipLF = false
			if d.buf[d.r] == '\n' {
				d.r++
			}
		}
		if d.r < d.w && !d.skipLF {
			seg := d.buf[d.r+d.scanned : d.w]
			i := bytes.IndexByte(seg, '\n')
			search := seg
			if i >= 0 {
				search = seg[:i]
			}
			if cr := bytes.IndexByte(search, '\r'); cr >= 0 {
				i = cr
			}
			if i >= 0 {
				start, end = d.r, d.r+d.scanned+i
				if end-start > d.MaxSize {
					return 0, 0, ErrEventTooLarge
				}
				if d.buf[end] == '\r' {
					d.skipLF = true
				}
				d.r, d.scanned = end+1, 0
				return start, end, nil
			}
			d.scanned = d.w - d.r
			if d.scanned > d.MaxSize {
				return 0, 0, ErrEventTooLarge
			}
		}
		if d.rerr != nil {
			return 0, 0, d.rerr
		}
		d.fill()
	}
}

// fill reads more input after the unframed bytes, first making room: the unframed bytes move to
// the front when little room is left behind them, and the buffer grows when they fill it.
func (d *refSSEDecoder) fill() {
	size, minRead := 1<<20, 64<<10
	if d.size > 0 {
		size, minRead = d.size, d.minRead
	}
	if d.buf == nil {
		d.buf = make([]byte, size)
	}
	if d.r == d.w && len(d.buf) > 4*size {
		d.ownData()
		d.buf, d.r, d.w = make([]byte, size), 0, 0 // a huge line is done: give its memory back
	}
	if len(d.buf)-d.w < minRead && d.r > 0 {
		d.ownData() // the borrowed line is about to be overwritten
		d.w = copy(d.buf, d.buf[d.r:d.w])
		d.r = 0
	}
	if len(d.buf)-d.w < minRead {
		d.ownData()
		grown := make([]byte, max(2*len(d.buf), d.w+minRead))
		d.w = copy(grown, d.buf[d.r:d.w])
		d.buf, d.r = grown, 0
	}
	for tries := 0; tries < 100; tries++ {
		n, err := d.src.Read(d.buf[d.w:])
		if n < 0 || n > len(d.buf)-d.w {
			d.rerr = io.ErrNoProgress // a broken reader
			return
		}
		d.w += n
		if err != nil {
			d.rerr = err
			return
		}
		if n > 0 {
			return
		}
	}
	d.rerr = io.ErrNoProgress
}

// chunkReader reads its input in pieces whose sizes come from sizes, cyclically (1 to 256 bytes).
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n = int(r.sizes[r.i%len(r.sizes)]) + 1
		r.i++
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// decoderPair is a decoder and the reference over the same input, read in the same pieces, with
// the same buffer sizes (small > 0: minRead below size makes the bytes move within the buffer,
// above it the buffer grows) and limit (maxSize > 0).
func decoderPair(in, sizes []byte, small uint8, maxSize uint16) (*SSEDecoder, *refSSEDecoder) {
	got := NewSSEDecoder(&chunkReader{data: in, sizes: sizes})
	want := newRefSSEDecoder(&chunkReader{data: in, sizes: sizes})
	if small > 0 {
		got.size, got.minRead = int(small%64)+1, int(small/4)+1
		want.size, want.minRead = got.size, got.minRead
	}
	if maxSize > 0 {
		got.MaxSize, want.MaxSize = int(maxSize), int(maxSize)
	}
	return got, want
}

// The decoder frames every stream as the reference did: the same events (borrowed and copied),
// the same error at the same point, with small buffers so that the unframed bytes move and the
// buffer grows often, reads cut anywhere and MaxSize small or not.
func FuzzSSEDecoderLazyCR(f *testing.F) {
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n: c\n\nevent: x\rdata: y\r\r"), []byte{3, 0, 200}, uint8(0), uint16(0))
	f.Add([]byte("data: one\n\ndata: two\r\rdata: three\r\n\r\n"), []byte{0}, uint8(5), uint16(8))
	f.Add([]byte("\r\r\r\n\n\r\ndata:\r\ndata\r\r"), []byte{}, uint8(1), uint16(3))
	f.Add(bytes.Repeat([]byte("data: 0123456789abcdef\r\n\n"), 40), []byte{17, 90, 1}, uint8(2), uint16(30))
	f.Fuzz(func(t *testing.T, in, sizes []byte, small uint8, maxSize uint16) {
		for _, copied := range []bool{false, true} {
			got, want := decoderPair(in, sizes, small, maxSize)
			for i := 0; ; i++ {
				var g, w SSEEvent
				var gerr, werr error
				if copied {
					g, gerr = got.Next()
					w, werr = want.Next()
				} else {
					g, gerr = got.next()
					w, werr = want.next()
				}
				if gerr != werr {
					t.Fatalf("event %d: error %v, reference %v", i, gerr, werr)
				}
				if gerr != nil {
					break
				}
				if g.Event != w.Event || g.ID != w.ID || g.Retry != w.Retry || !bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) {
					t.Fatalf("event %d: got %+v, reference %+v", i, g, w)
				}
			}
		}
	})
}

// Log events framed on LF alone and decoded (nextLogMessage) come out as the reference decoder's
// framing followed by decodeLogMessage gives them: the same messages, decoding errors and read
// errors, CRs anywhere (inside the data, between JSON tokens, as line ends) included.
func FuzzLogStreamLFFraming(f *testing.F) {
	ev := func(data string) string {
		return `data: {"type":"stdout","cursor":"djEuWVdKai4x","timestamp":"2026-08-14T10:00:00.010Z","data":"` + data + "\"}\n\n"
	}
	f.Add([]byte(ev("aGVsbG8K")+ev("aGk=")), []byte{3, 0, 200}, uint8(0), uint16(0))
	f.Add([]byte(ev("aGVs\rbG8K")+ev("aGk=")), []byte{0}, uint8(5), uint16(0))
	f.Add([]byte("data: {\"type\":\"stdout\",\r\"cursor\":\"c\",\"data\":\"aGk=\"}\n\n"+ev("aGk=")), []byte{}, uint8(1), uint16(0))
	f.Add([]byte("data: {\"type\":\"stdout\",\"cursor\":\"c\"\r\ndata: ,\"data\":\"aGk=\"}\n\n"), []byte{}, uint8(0), uint16(0))
	f.Add([]byte("data: {\"type\":\"terminal\",\"cursor\":\"c\",\"exit\":{\"code\":0}}\n\ndata: {\"type\":\"stdout\"\r\r"+ev("aGk=")), []byte{9}, uint8(0), uint16(40))
	f.Add([]byte(ev("aGk=")+"data: x\r\n\r\n"+ev("aGk=")+"\r\n"+ev("")), []byte{17, 90, 1}, uint8(2), uint16(0))
	f.Fuzz(func(t *testing.T, in, sizes []byte, small uint8, maxSize uint16) {
		got, want := decoderPair(in, sizes, small, maxSize)
		for i := 0; ; i++ {
			g, gerr, grerr := nextLogMessage(got, nil)
			var w LogMessage
			var werr error
			wev, wrerr := want.next()
			if wrerr == nil {
				w, werr = decodeLogMessage(wev.Data, nil)
			}
			if grerr != wrerr {
				t.Fatalf("event %d: read error %v, reference %v", i, grerr, wrerr)
			}
			if grerr != nil {
				return
			}
			if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
				t.Fatalf("event %d: error %v, reference %v", i, gerr, werr)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("event %d: got %+v, reference %+v", i, g, w)
			}
		}
	})
}

// A stream of CRLF lines gives the same messages, and is framed by next after its first line
// (searching each line once for LF in nextLF and again in next would cost a pass more).
func TestLogStreamCRLFLeavesLFFraming(t *testing.T) {
	ev := "data: {\"type\":\"stdout\",\"cursor\":\"c\",\"data\":\"aGk=\"}\r\n\r\n"
	d := NewSSEDecoder(strings.NewReader(ev + ev + ev))
	for i := 0; i < 3; i++ {
		m, err, rerr := nextLogMessage(d, nil)
		if err != nil || rerr != nil || string(m.Data) != "hi" {
			t.Fatalf("event %d: %+v %v %v", i, m, err, rerr)
		}
		if !d.noLF {
			t.Fatalf("event %d: still framing on LF alone", i)
		}
	}
	if _, _, rerr := nextLogMessage(d, nil); rerr != io.EOF {
		t.Fatalf("end: %v", rerr)
	}
}
