package seqlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind says what an event carries.
type Kind uint8

const (
	// Stdout is a chunk of standard output (or terminal output).
	Stdout Kind = iota + 1
	// Stderr is a chunk of standard error.
	Stderr
	// Final is the terminal event: no bytes, Event.Final holds the payload given to Finish.
	Final
	// Truncated is a marker, not a stored event: events before Event.Seq the reader had not yet
	// seen were evicted. It has no cursor (Seq is the next event the reader will get).
	Truncated
)

// String names the kind as the bridge's SSE "type" does.
func (k Kind) String() string {
	switch k {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	case Final:
		return "terminal"
	case Truncated:
		return "truncated"
	}
	return "unknown"
}

// Event is one stored event (or a Truncated marker). Data is shared with the log and other
// readers: never modify it.
type Event struct {
	Seq   uint64
	Kind  Kind
	Time  time.Time
	Data  []byte
	Final any
}

// ErrAborted is returned by readers of a log that was aborted without a reason.
var ErrAborted = errors.New("log aborted")

// Log is one store's ordered, bounded sequence of events. All methods are safe for concurrent use.
type Log struct {
	storeID   string
	prefix    string // "v1." + base64url(storeID) + "."
	maxBytes  int
	maxEvents int

	mu       sync.Mutex
	events   []Event // retained events; events[head:] are live
	head     int
	bytes    int    // retained data bytes
	last     uint64 // seq of the newest event ever appended (0 = none)
	finished bool
	abortErr error
	wake     chan struct{} // closed and replaced on change when someone waits
	waiting  bool
}

// New makes an empty log for storeID keeping at most maxBytes of data and maxEvents events
// (values ≤ 0 mean unlimited). The newest event is always kept, even when larger than maxBytes.
func New(storeID string, maxBytes, maxEvents int) *Log {
	return &Log{
		storeID:   storeID,
		prefix:    "v1." + base64.RawURLEncoding.EncodeToString([]byte(storeID)) + ".",
		maxBytes:  maxBytes,
		maxEvents: maxEvents,
		wake:      make(chan struct{}),
	}
}

// Append stores a copy of data as the next event and returns its sequence number, or 0 when the log
// is already finished or aborted (or data is empty).
func (l *Log) Append(kind Kind, data []byte) uint64 {
	if len(data) == 0 || (kind != Stdout && kind != Stderr) {
		return 0
	}
	return l.AppendOwned(kind, bytes.Clone(data))
}

// AppendOwned is Append for data the caller hands over and never modifies again: the log keeps it
// without a copy.
func (l *Log) AppendOwned(kind Kind, buf []byte) uint64 {
	if len(buf) == 0 || (kind != Stdout && kind != Stderr) {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.abortErr != nil {
		return 0
	}
	return l.appendLocked(Event{Kind: kind, Data: buf})
}

// Finish stores the terminal event with payload final and ends the log; readers get io.EOF after
// it. It returns the event's sequence number, or 0 when the log was already finished or aborted.
func (l *Log) Finish(final any) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.abortErr != nil {
		return 0
	}
	seq := l.appendLocked(Event{Kind: Final, Final: final})
	l.finished = true
	return seq
}

// Abort ends the log abnormally: every reader's next call returns err (ErrAborted when nil).
func (l *Log) Abort(err error) {
	if err == nil {
		err = ErrAborted
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.abortErr != nil {
		return
	}
	l.abortErr = err
	l.notifyLocked()
}

func (l *Log) appendLocked(ev Event) uint64 {
	l.last++
	ev.Seq = l.last
	ev.Time = time.Now()
	l.events = append(l.events, ev)
	l.bytes += len(ev.Data)
	for len(l.events)-l.head > 1 &&
		((l.maxBytes > 0 && l.bytes > l.maxBytes) || (l.maxEvents > 0 && len(l.events)-l.head > l.maxEvents)) {
		l.bytes -= len(l.events[l.head].Data)
		l.events[l.head] = Event{}
		l.head++
	}
	if l.head > 64 && l.head*2 >= len(l.events) {
		n := copy(l.events, l.events[l.head:])
		clear(l.events[n:])
		l.events = l.events[:n]
		l.head = 0
	}
	l.notifyLocked()
	return ev.Seq
}

func (l *Log) notifyLocked() {
	if l.waiting {
		close(l.wake)
		l.wake = make(chan struct{})
		l.waiting = false
	}
}

// first is the seq of the oldest retained event (last+1 when none is retained). Caller holds mu.
func (l *Log) firstLocked() uint64 {
	if len(l.events) == l.head {
		return l.last + 1
	}
	return l.events[l.head].Seq
}

// Stats reports the retained window and the log's state.
type Stats struct {
	First, Last uint64 // oldest retained and newest seq (First = Last+1 when nothing is retained)
	Bytes       int    // retained data bytes
	Events      int    // retained events
	Finished    bool
	Aborted     bool
}

// Stats returns a snapshot of the log's window.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{First: l.firstLocked(), Last: l.last, Bytes: l.bytes, Events: len(l.events) - l.head,
		Finished: l.finished, Aborted: l.abortErr != nil}
}

// Head is the newest sequence number (0 before the first event).
func (l *Log) Head() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Finished reports whether the terminal event was stored.
func (l *Log) Finished() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.finished
}

// Cursor is the bridge cursor for seq in this log.
func (l *Log) Cursor(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString(strconv.AppendUint([]byte(l.prefix), seq, 10))
}

// AppendCursor appends the cursor for seq to dst (an allocation-free Cursor for hot paths).
func (l *Log) AppendCursor(dst []byte, seq uint64) []byte {
	var inner [160]byte
	b := strconv.AppendUint(append(inner[:0], l.prefix...), seq, 10)
	return base64.RawURLEncoding.AppendEncode(dst, b)
}

// CursorError is a cursor the log rejects. Msg is the bridge's own wording.
type CursorError struct{ Msg string }

func (e *CursorError) Error() string { return e.Msg }

// The cursor errors, in the bridge's words. Compare with errors.Is.
var (
	ErrInvalidCursor = &CursorError{"Invalid byte log cursor"}
	ErrOtherStore    = &CursorError{"Byte log cursor belongs to another run or store"}
	ErrFutureCursor  = &CursorError{"Byte log cursor is from the future"}
)

const maxSafeInteger = 1<<53 - 1

// ParseCursor validates s against this log in the bridge's order and returns its sequence number.
func (l *Log) ParseCursor(s string) (uint64, error) {
	store, seq, err := DecodeCursor(s)
	if err != nil {
		return 0, err
	}
	if store != l.storeID {
		return 0, ErrOtherStore
	}
	if seq == 0 {
		return 0, ErrInvalidCursor
	}
	if seq > l.Head() {
		return 0, ErrFutureCursor
	}
	return seq, nil
}

// DecodeCursor checks a cursor's form and returns its store ID and sequence number without
// comparing them with any log. seq is 0 when the store part is valid but the number is not (the
// bridge checks the store before the number).
func DecodeCursor(s string) (store string, seq uint64, err error) {
	if s == "" {
		return "", 0, ErrInvalidCursor
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", 0, ErrInvalidCursor
		}
	}
	inner, derr := base64.RawURLEncoding.DecodeString(s)
	if derr != nil || base64.RawURLEncoding.EncodeToString(inner) != s {
		return "", 0, ErrInvalidCursor
	}
	parts := strings.Split(string(inner), ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return "", 0, ErrInvalidCursor
	}
	sb, derr := base64.RawURLEncoding.DecodeString(parts[1])
	if derr != nil || parts[1] == "" || base64.RawURLEncoding.EncodeToString(sb) != parts[1] {
		return "", 0, ErrInvalidCursor
	}
	n, perr := strconv.ParseUint(parts[2], 10, 64)
	if perr != nil || strconv.FormatUint(n, 10) != parts[2] || n < 1 || n > maxSafeInteger {
		return string(sb), 0, nil
	}
	return string(sb), n, nil
}

// Reader is one pull position in a log. A Reader is used by one goroutine.
type Reader struct {
	l      *Log
	next   uint64 // next seq to deliver
	follow bool
	limit  uint64 // snapshot end when not following
	done   bool
}

// Subscribe makes a reader that starts strictly after seq after (0 = from the oldest retained
// event). Without follow it stops at the events that exist now; with follow it continues with live
// events until the terminal event.
func (l *Log) Subscribe(after uint64, follow bool) *Reader {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &Reader{l: l, next: after + 1, follow: follow, limit: l.last}
}

// SubscribeLive makes a following reader that sees only events appended from now on.
func (l *Log) SubscribeLive() *Reader {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &Reader{l: l, next: l.last + 1, follow: true, limit: l.last}
}

// Next returns the next event, blocking while following and nothing is new. It returns io.EOF at
// the end, the abort error if the log was aborted, or ctx's error.
func (r *Reader) Next(ctx context.Context) (Event, error) {
	evs, err := r.NextBatch(ctx, nil, 1)
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// NextBatch appends up to max ready events (at least one) to dst, blocking like Next when none is
// ready. A Truncated marker is always the first event of a batch.
func (r *Reader) NextBatch(ctx context.Context, dst []Event, max int) ([]Event, error) {
	if max < 1 {
		max = 1
	}
	l := r.l
	for {
		if r.done {
			return dst, io.EOF
		}
		l.mu.Lock()
		if l.abortErr != nil {
			err := l.abortErr
			l.mu.Unlock()
			return dst, err
		}
		first := l.firstLocked()
		if r.next < first {
			// The events the reader was about to get are gone.
			ev := Event{Seq: first, Kind: Truncated, Time: time.Now()}
			r.next = first
			l.mu.Unlock()
			return append(dst, ev), nil
		}
		end := l.last
		if !r.follow && r.limit < end {
			end = r.limit
		}
		if r.next <= end {
			i := l.head + int(r.next-first)
			n := int(end-r.next) + 1
			if n > max {
				n = max
			}
			dst = append(dst, l.events[i:i+n]...)
			r.next += uint64(n)
			if dst[len(dst)-1].Kind == Final {
				r.done = true
			}
			l.mu.Unlock()
			return dst, nil
		}
		if !r.follow || l.finished {
			r.done = true
			l.mu.Unlock()
			return dst, io.EOF
		}
		l.waiting = true
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
}
