package faultproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"time"
)

// sseRewriter rewrites an event stream line by line: it corrupts the k-th "data:" line, or injects
// a forged event after the k-th event and then ends the stream cleanly. Lines are forwarded as
// soon as they are complete, so streaming is not delayed.
type sseRewriter struct {
	src   io.ReadCloser
	br    *bufio.Reader
	fault Fault

	out        []byte // pending output
	dataLines  int64  // "data:" lines seen
	events     int64  // events completed (blank line after data)
	inEvent    bool   // a data line was seen since the last blank line
	lastCursor string
	ended      bool // stream finished (injected or upstream EOF)
	err        error
}

func newSSERewriter(src io.ReadCloser, f Fault) *sseRewriter {
	s := &sseRewriter{src: src, br: bufio.NewReaderSize(src, 64<<10), fault: f}
	if f.kind == kindInjectSSE && f.n == 0 {
		s.inject()
	}
	return s
}

func (s *sseRewriter) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.ended {
			return 0, io.EOF
		}
		if s.err != nil {
			return 0, s.err
		}
		line, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A huge line: forward it as it comes, unmodified.
			s.out = append(s.out, line...)
			continue
		}
		if len(line) > 0 {
			if err == nil {
				s.line(line)
			} else {
				s.out = append(s.out, line...) // partial last line
			}
		}
		if err != nil {
			s.err = err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// line handles one complete line (with its newline).
func (s *sseRewriter) line(line []byte) {
	body := bytes.TrimRight(line, "\r\n")
	switch {
	case bytes.HasPrefix(body, []byte("data:")):
		s.dataLines++
		s.inEvent = true
		payload := bytes.TrimPrefix(bytes.TrimPrefix(body, []byte("data:")), []byte(" "))
		var ev struct {
			Cursor string `json:"cursor"`
		}
		if json.Unmarshal(payload, &ev) == nil && ev.Cursor != "" {
			s.lastCursor = ev.Cursor
		}
		if s.fault.kind == kindGarbleSSE && s.dataLines == s.fault.n {
			s.out = append(s.out, "data: "...)
			s.out = append(s.out, garble(payload)...)
			s.out = append(s.out, '\n')
			return
		}
		s.out = append(s.out, line...)
	case len(body) == 0:
		s.out = append(s.out, line...)
		if s.inEvent {
			s.inEvent = false
			s.events++
			if s.fault.kind == kindInjectSSE && s.events == s.fault.n {
				s.inject()
			}
		}
	default:
		s.out = append(s.out, line...)
	}
}

// garble breaks JSON while keeping it one line: the payload is cut in half and junk appended.
func garble(payload []byte) []byte {
	half := payload[:len(payload)/2]
	out := append([]byte(nil), half...)
	return append(out, "\x01#garbled"...)
}

// inject appends the forged event and ends the stream.
func (s *sseRewriter) inject() {
	ev := s.fault.body
	if s.fault.forgedExit {
		forged := struct {
			Type      string `json:"type"`
			State     string `json:"state"`
			Cursor    string `json:"cursor,omitempty"`
			Timestamp string `json:"timestamp"`
			Exit      struct {
				Code     int  `json:"code"`
				TimedOut bool `json:"timedOut"`
			} `json:"exit"`
		}{Type: "terminal", State: "exited", Cursor: s.lastCursor,
			Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
		forged.Exit.Code = s.fault.code
		b, _ := json.Marshal(forged)
		ev = string(b)
	}
	s.out = append(s.out, "data: "...)
	s.out = append(s.out, ev...)
	s.out = append(s.out, "\n\n"...)
	s.ended = true
}

func (s *sseRewriter) Close() error { return s.src.Close() }
