package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// SSEEvent is one Server-Sent Events event. The bridge only sends data lines; Event, ID and Retry are
// kept for completeness.
type SSEEvent struct {
	Event string // "" when the stream did not name it (the spec's default "message")
	Data  []byte // data lines joined with "\n"; owned by the caller
	ID    string
	Retry int // milliseconds; 0 when absent
}

// ErrEventTooLarge is returned when one SSE line exceeds the decoder's limit.
var ErrEventTooLarge = errors.New("SSE event too large")

// DefaultMaxEventSize bounds one SSE line and one event's data (the bridge's chunks are far smaller;
// the bound only stops a hostile stream from growing memory without limit).
const DefaultMaxEventSize = 64 << 20

// SSEDecoder reads Server-Sent Events from a stream: lines ending in CRLF, LF or CR, data lines of
// any size up to MaxSize, multi-line data, comments and unknown fields (ignored).
//
// It reads into a buffer of its own and frames lines in place: an event's data is handed out as a
// slice of that buffer (copied by Next, borrowed by next), so the bytes of a fast log are read once
// by the kernel copy and once by the decoder, and not moved in between.
type SSEDecoder struct {
	src     io.Reader
	MaxSize int

	buf     []byte // read buffer: buf[r:w] is not framed yet
	r, w    int
	scanned int   // how much of buf[r:w] is known to hold no line end
	rerr    error // the reader's error, returned once the buffered bytes are used up

	// CRs are looked for apart from LFs, each byte once: buf[r:crTo] has been searched, and
	// buf[crAt] is the first CR at or after r when r <= crAt < crTo (crAt == crTo: none in
	// buf[r:crTo]). A stream without CRs is then searched for them once per read, not per line.
	crAt, crTo int

	// The current event's data: borrowed as buf[dataStart:dataEnd] while it is a single line that
	// no refill has had to move, else owned in own.
	borrowed           bool
	dataStart, dataEnd int
	own                []byte

	skipLF  bool // the previous line ended in CR: a following LF belongs to it
	hasData bool

	// nextLF's state: lfStart is where the line it framed began (for unframe), and noLF is set
	// once a stream turned out to hold CRs, which nextLF leaves to next from then on.
	lfStart int
	noLF    bool

	// size is the initial buffer and minRead the least room a read gets (0: sseBufSize and
	// sseMinRead); tests make them small so that buffer moves happen often.
	size, minRead int
}

// sseBufSize is the decoder's initial read buffer; it grows for longer lines (up to MaxSize) and
// shrinks back once they are framed.
const sseBufSize = 1 << 20

// sseMinRead is the least room a read gets: less, and the unframed bytes move or the buffer grows.
const sseMinRead = 64 << 10

// NewSSEDecoder returns a decoder reading from r.
func NewSSEDecoder(r io.Reader) *SSEDecoder {
	return &SSEDecoder{src: r, MaxSize: DefaultMaxEventSize}
}

// Next returns the next complete event. At the end of the stream it returns io.EOF (an unfinished
// event is discarded, as the SSE spec says); a broken stream returns the reader's error.
func (d *SSEDecoder) Next() (SSEEvent, error) {
	ev, err := d.next()
	if err != nil {
		return ev, err
	}
	ev.Data = append([]byte(nil), ev.Data...)
	return ev, nil
}

// next is Next without copying: ev.Data is valid only until the following call.
func (d *SSEDecoder) next() (SSEEvent, error) {
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

// nextLF is next for the bridge's usual event, one "data: " line and an empty line, framed on LF
// alone: the data is not searched for CRs (a second pass over every byte). unchecked says so; the
// caller must then prove the data free of CRs (a JSON decode that refuses them) or search it, and
// call unframe when it finds one. Any other event, and any stream once unframe was called, is
// framed by next (unchecked false).
func (d *SSEDecoder) nextLF() (ev SSEEvent, unchecked bool, err error) {
	d.borrowed, d.hasData = false, false
	d.own = d.own[:0]
	// a CR already found ahead, or one pending from the previous line: next knows what to do
	if d.noLF || d.skipLF || d.r <= d.crAt && d.crAt < d.crTo {
		ev, err = d.next()
		return ev, false, err
	}
	for {
		if i := bytes.IndexByte(d.buf[d.r+d.scanned:d.w], '\n'); i >= 0 {
			end := d.r + d.scanned + i
			if end-d.r > d.MaxSize || end+1 >= d.w || d.buf[end+1] != '\n' || !bytes.HasPrefix(d.buf[d.r:end], []byte("data: ")) {
				// a stream of CRLF lines never fits: leave it to next without searching twice
				d.noLF = d.noLF || end > d.r && d.buf[end-1] == '\r'
				break
			}
			d.lfStart = d.r
			d.borrowed, d.hasData = true, true
			d.dataStart, d.dataEnd = d.r+len("data: "), end
			d.r, d.scanned = end+2, 0
			return SSEEvent{Data: d.buf[d.dataStart:d.dataEnd]}, true, nil
		}
		d.scanned = d.w - d.r // no LF; CRs unknown, so next searches again (below)
		if d.scanned > d.MaxSize || d.rerr != nil {
			break
		}
		d.fill()
	}
	d.scanned = 0 // next bounds its LF search by the first CR, which may lie in the scanned part
	ev, err = d.next()
	return ev, false, err
}

// unframe undoes the last nextLF whose data held a CR (the line ended there): the line is framed
// again by the next call, and CRs are searched for from then on.
func (d *SSEDecoder) unframe() {
	d.r, d.scanned, d.noLF = d.lfStart, 0, true
	d.borrowed, d.hasData = false, false
}

// ownData moves a borrowed first data line into own, before the buffer is moved or more data
// lines are joined to it.
func (d *SSEDecoder) ownData() {
	if d.borrowed {
		d.own = append(d.own[:0], d.buf[d.dataStart:d.dataEnd]...)
		d.borrowed = false
	}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// readLine frames the next line and returns where it lies in d.buf, without its terminator; the
// bytes stay there until the next call. At the end of input it returns the reader's error (io.EOF
// after a final unterminated line, which is dropped).
func (d *SSEDecoder) readLine() (start, end int, err error) {
	for {
		if d.skipLF && d.r < d.w {
			d.skipLF = false
			if d.buf[d.r] == '\n' {
				d.r++
			}
		}
		if d.r < d.w && !d.skipLF {
			// The line ends at the first LF before the next CR, else at that CR.
			cr := d.nextCR()
			limit := d.w
			if cr >= 0 {
				limit = cr
			}
			end = -1
			if i := bytes.IndexByte(d.buf[d.r+d.scanned:limit], '\n'); i >= 0 {
				end = d.r + d.scanned + i
			} else if cr >= 0 {
				end = cr
			}
			if end >= 0 {
				start = d.r
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

// nextCR returns the index of the first CR in buf[r:w], or -1. It searches only bytes not
// searched before.
func (d *SSEDecoder) nextCR() int {
	if d.r <= d.crAt && d.crAt < d.crTo {
		return d.crAt
	}
	from := max(d.crTo, d.r)
	if from < d.w {
		if i := bytes.IndexByte(d.buf[from:d.w], '\r'); i >= 0 {
			d.crAt, d.crTo = from+i, from+i+1
			return d.crAt
		}
	}
	d.crAt, d.crTo = d.w, d.w
	return -1
}

// shift moves the unframed bytes buf[r:w] to the front of dst, which becomes the buffer.
func (d *SSEDecoder) shift(dst []byte) {
	n := d.r
	d.w = copy(dst, d.buf[d.r:d.w])
	d.buf, d.r = dst, 0
	// a CR before r was framed already: none is known then
	d.crAt, d.crTo = max(d.crAt-n, 0), max(d.crTo-n, 0)
}

// fill reads more input after the unframed bytes, first making room: the unframed bytes move to
// the front when little room is left behind them, and the buffer grows when they fill it.
func (d *SSEDecoder) fill() {
	size, minRead := sseBufSize, sseMinRead
	if d.size > 0 {
		size, minRead = d.size, d.minRead
	}
	if d.buf == nil {
		d.buf = make([]byte, size)
	}
	if d.r == d.w && len(d.buf) > 4*size {
		d.ownData()
		d.buf, d.r, d.w = make([]byte, size), 0, 0 // a huge line is done: give its memory back
		d.crAt, d.crTo = 0, 0
	}
	if len(d.buf)-d.w < minRead && d.r > 0 {
		d.ownData() // the borrowed line is about to be overwritten
		d.shift(d.buf)
	}
	if len(d.buf)-d.w < minRead {
		d.ownData()
		d.shift(make([]byte, max(2*len(d.buf), d.w+minRead)))
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

// MalformedEventError is an event the decoder framed but whose JSON could not be understood. It is
// reported, not fatal: the follower resumes from the last good cursor.
type MalformedEventError struct {
	Data []byte
	Err  error
}

func (e *MalformedEventError) Error() string {
	snippet := e.Data
	if len(snippet) > 80 {
		snippet = snippet[:80]
	}
	return fmt.Sprintf("malformed log event (%v): %q", e.Err, snippet)
}
func (e *MalformedEventError) Unwrap() error { return e.Err }
