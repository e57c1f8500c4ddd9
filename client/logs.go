package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// LogQuery selects what GET …/processes/{pid}/logs streams.
type LogQuery struct {
	Since  string // resume strictly after this cursor; "" sends no since parameter
	Replay bool   // include the retained backlog
	Follow bool   // keep streaming live output until the terminal event
}

// LogMessage is one decoded event of a process log stream, as the bridge sent it.
type LogMessage struct {
	Type   string // "stdout", "stderr", "terminal", "truncated", or whatever else the bridge sends
	Cursor string
	Time   time.Time
	Data   []byte    // stdout/stderr: the raw bytes
	State  string    // terminal: "exited" or "error"
	Exit   *Exit     // terminal, exited
	Error  *RunError // terminal, error
}

type rawLogEvent struct {
	Type      string    `json:"type"`
	Cursor    string    `json:"cursor"`
	Timestamp string    `json:"timestamp"`
	Data      []byte    `json:"data"`
	State     string    `json:"state"`
	Exit      *Exit     `json:"exit"`
	Error     *RunError `json:"error"`

	// ts is the timestamp as the fast decoder found it (a slice of the event; Timestamp is then
	// empty), parsed by logMessage before the event's bytes are reused.
	ts []byte
}

// DecodeLogMessage decodes one SSE data payload of a process log. Errors are *MalformedEventError.
// The result never aliases data.
func DecodeLogMessage(data []byte) (LogMessage, error) {
	return decodeLogMessage(data, nil)
}

// malformed reports an event that could not be understood, keeping a copy of its bytes.
func malformed(data []byte, err error) *MalformedEventError {
	return &MalformedEventError{Data: append([]byte(nil), data...), Err: err}
}

// decodeLogMessage is DecodeLogMessage with output bytes decoded into alloc(n) when alloc is set.
func decodeLogMessage(data []byte, alloc func(int) []byte) (LogMessage, error) {
	if r, ok := decodeLogFastInto(data, alloc); ok {
		return logMessage(data, r)
	}
	return decodeLogSlow(data)
}

// decodeLogSlow decodes an event the fast decoder refused, with encoding/json.
func decodeLogSlow(data []byte) (LogMessage, error) {
	var r rawLogEvent
	if err := json.Unmarshal(data, &r); err != nil {
		return LogMessage{}, malformed(data, err)
	}
	return logMessage(data, r)
}

// logMessage checks a decoded event and makes it a LogMessage.
func logMessage(data []byte, r rawLogEvent) (LogMessage, error) {
	m := LogMessage{Type: r.Type, Cursor: r.Cursor, Data: r.Data, State: r.State, Exit: r.Exit, Error: r.Error}
	switch {
	case len(r.ts) > 0:
		m.Time = parseTimestamp(r.ts)
	case r.Timestamp != "":
		if t, err := time.Parse(time.RFC3339Nano, r.Timestamp); err == nil {
			m.Time = t
		}
	}
	switch r.Type {
	case "stdout", "stderr":
		if r.Cursor == "" {
			return LogMessage{}, malformed(data, errors.New("output event without cursor"))
		}
	case "terminal":
		if r.Cursor == "" {
			return LogMessage{}, malformed(data, errors.New("terminal event without cursor"))
		}
		if r.Exit == nil && r.Error == nil {
			return LogMessage{}, malformed(data, errors.New("terminal event without exit or error"))
		}
	case "":
		return LogMessage{}, malformed(data, errors.New("event without type"))
	}
	return m, nil
}

// LogStream is an open process log stream. Close it when done.
type LogStream struct {
	resp   *http.Response
	dec    *SSEDecoder
	cancel context.CancelFunc
	op     string
	alloc  func(int) []byte // where output bytes are decoded; nil: fresh slices
}

// Logs opens a process's raw log stream. The stream lives until ctx is cancelled, Close is called or
// the bridge ends it; there is no whole-body timeout, only the answer wait for its headers.
func (c *Client) Logs(ctx context.Context, sandbox, process string, q LogQuery) (*LogStream, error) {
	op := "logs of " + process
	if err := checkSandbox(sandbox); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	v := url.Values{}
	if q.Since != "" {
		v.Set("since", q.Since)
	}
	v.Set("replay", boolParam(q.Replay))
	v.Set("follow", boolParam(q.Follow))
	sctx, cancel := context.WithCancel(ctx)
	req, err := c.newRequest(sctx, http.MethodGet, sandboxPath(sandbox, "processes", process, "logs"), v, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	// send bounds only the wait for the answer's headers
	resp, err := c.send(op, req)
	if err != nil {
		cancel()
		return nil, err
	}
	return &LogStream{resp: resp, dec: NewSSEDecoder(resp.Body), cancel: cancel, op: op}, nil
}

func boolParam(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// Next returns the next event. It returns io.EOF when the bridge closed the stream cleanly, a
// *MalformedEventError for an event it could not decode (the stream stays usable), and a
// *TransportError when the stream broke.
func (s *LogStream) Next() (LogMessage, error) {
	// Decoding right after framing, in the reading goroutine: the event is still in cache, and
	// decoding (SIMD base64) costs less than handing raw events to another goroutine would.
	m, err, rerr := nextLogMessage(s.dec, s.alloc)
	if rerr != nil {
		return LogMessage{}, s.readError(rerr)
	}
	return m, err
}

// nextLogMessage frames and decodes the next event of d: err is a decoding error
// (*MalformedEventError), rerr the decoder's own.
//
// The bridge's events are framed on LF alone (nextLF): the fast JSON decode refuses CRs anywhere
// (in strings, base64 and between tokens), so an event it accepts held none and was framed as
// next would have framed it. Only an event it refuses is searched for a CR and, holding one,
// framed again.
func nextLogMessage(d *SSEDecoder, alloc func(int) []byte) (m LogMessage, err, rerr error) {
	ev, unchecked, rerr := d.nextLF()
	if rerr != nil {
		return LogMessage{}, nil, rerr
	}
	if unchecked {
		if r, ok := decodeLogFastInto(ev.Data, alloc); ok {
			m, err = logMessage(ev.Data, r)
			return m, err, nil
		}
		if bytes.IndexByte(ev.Data, '\r') < 0 {
			// framed as next would have: the fast decode has said no already
			m, err = decodeLogSlow(ev.Data)
			return m, err, nil
		}
		d.unframe()
		if ev, rerr = d.next(); rerr != nil {
			return LogMessage{}, nil, rerr
		}
	}
	m, err = decodeLogMessage(ev.Data, alloc)
	return m, err, nil
}

// readError is the error Next returns for a failed read.
func (s *LogStream) readError(err error) error {
	if errors.Is(err, ErrEventTooLarge) {
		return fmt.Errorf("%s: %w", s.op, err)
	}
	if err == io.EOF {
		return err
	}
	return &TransportError{Op: s.op, Err: err}
}

// Close ends the stream.
func (s *LogStream) Close() error {
	s.cancel()
	return s.resp.Body.Close()
}
