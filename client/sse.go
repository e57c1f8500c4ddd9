package client

import (
	"bufio"
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
type SSEDecoder struct {
	r       *bufio.Reader
	MaxSize int

	line    []byte // the line being read
	spare   []byte // the other line buffer (holds the first data line of the current event)
	data    []byte
	skipLF  bool // the previous line ended in CR: a following LF belongs to it
	hasData bool
}

// NewSSEDecoder returns a decoder reading from r.
func NewSSEDecoder(r io.Reader) *SSEDecoder {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 1<<20)
	}
	return &SSEDecoder{r: br, MaxSize: DefaultMaxEventSize}
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
	d.data = nil
	d.hasData = false
	for {
		line, err := d.readLine()
		if err != nil {
			if err == io.EOF {
				// A final line without terminator: the event it belongs to was never dispatched.
				return SSEEvent{}, io.EOF
			}
			return SSEEvent{}, err
		}
		if len(line) == 0 {
			if !d.hasData {
				ev = SSEEvent{}
				continue
			}
			ev.Data = d.data
			if ev.Data == nil {
				ev.Data = []byte{}
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if !d.hasData {
				// First data line: keep it in place and read the next lines into the other
				// buffer, saving a copy of what is usually the whole event.
				d.data = value
				d.line, d.spare = d.spare[:0], d.line
				d.hasData = true
				continue
			}
			if len(d.data)+1+len(value) > d.MaxSize {
				return SSEEvent{}, ErrEventTooLarge
			}
			d.data = append(d.data, '\n')
			d.data = append(d.data, value...)
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

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// readLine returns the next line without its terminator. The returned slice is valid until the
// next call. At the end of input it returns the partial line with io.EOF.
func (d *SSEDecoder) readLine() ([]byte, error) {
	d.line = d.line[:0]
	for {
		if d.r.Buffered() == 0 {
			if _, err := d.r.Peek(1); err != nil {
				return d.line, err
			}
		}
		buf, _ := d.r.Peek(d.r.Buffered())
		if d.skipLF {
			d.skipLF = false
			if buf[0] == '\n' {
				_, _ = d.r.Discard(1)
				continue
			}
		}
		end := bytes.IndexByte(buf, '\n')
		search := buf
		if end >= 0 {
			search = buf[:end]
		}
		if cr := bytes.IndexByte(search, '\r'); cr >= 0 {
			end = cr
		}
		if end < 0 {
			if len(d.line)+len(buf) > d.MaxSize {
				return nil, ErrEventTooLarge
			}
			d.line = append(d.line, buf...)
			_, _ = d.r.Discard(len(buf))
			continue
		}
		if len(d.line)+end > d.MaxSize {
			return nil, ErrEventTooLarge
		}
		if buf[end] == '\r' {
			d.skipLF = true
		}
		// Copied out: the buffer is refilled by the next read.
		d.line = append(d.line, buf[:end]...)
		_, _ = d.r.Discard(end + 1)
		return d.line, nil
	}
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
