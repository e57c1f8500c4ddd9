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

	// The current event's data: borrowed as buf[dataStart:dataEnd] while it is a single line that
	// no refill has had to move, else owned in own.
	borrowed           bool
	dataStart, dataEnd int
	own                []byte

	skipLF  bool // the previous line ended in CR: a following LF belongs to it
	hasData bool
}

// sseBufSize is the decoder's initial read buffer; it grows for longer lines (up to MaxSize) and
// shrinks back once they are framed.
const sseBufSize = 1 << 20

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
func (d *SSEDecoder) fill() {
	if d.buf == nil {
		d.buf = make([]byte, sseBufSize)
	}
	if d.r == d.w && len(d.buf) > 4*sseBufSize {
		d.ownData()
		d.buf, d.r, d.w = make([]byte, sseBufSize), 0, 0 // a huge line is done: give its memory back
	}
	const minRead = 64 << 10
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
