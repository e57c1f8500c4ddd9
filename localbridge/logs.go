package localbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"

	asmbase64 "github.com/segmentio/asm/base64"

	"sandscope/localbridge/seqlog"
)

// parseBoolParam applies the bridge's rule: "true" or "1" is true, any other present value false.
func parseBoolParam(v string, present, def bool) bool {
	if !present {
		return def
	}
	return v == "true" || v == "1"
}

// handleLogs: GET /processes/{pid}/logs (lookup) as Server-Sent Events.
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request, inc *incarnation, rawID string) {
	p := s.findProcess(w, inc, rawID)
	if p == nil {
		return
	}
	q := r.URL.Query()
	replay := parseBoolParam(q.Get("replay"), q.Has("replay"), true)
	follow := parseBoolParam(q.Get("follow"), q.Has("follow"), false)
	var after uint64
	if q.Has("since") {
		seq, err := p.log.ParseCursor(q.Get("since"))
		if err != nil {
			// The real bridge lets the SDK's INVALID_PROCESS_CURSOR escape as a bare 500.
			writeInternalError(w)
			return
		}
		after = seq
	}
	if p.log.Stats().Aborted {
		writeInternalError(w)
		return
	}
	var reader *seqlog.Reader
	switch {
	case replay:
		reader = p.log.Subscribe(after, follow)
	case follow && !p.log.Finished():
		reader = p.log.SubscribeLive()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	if reader == nil {
		return
	}
	streamLog(r.Context(), w, rc, p.log, reader)
}

// streamLog copies reader's events to w as SSE, flushing once per batch of ready events. A log
// aborted by a stop or replacement aborts the HTTP response (no clean end), as on the bridge.
func streamLog(ctx context.Context, w io.Writer, rc *http.ResponseController, log *seqlog.Log, reader *seqlog.Reader) {
	var evs []seqlog.Event
	const chunk = 512 << 10
	buf := make([]byte, 0, chunk+256<<10)
	for {
		var err error
		evs, err = reader.NextBatch(ctx, evs[:0], 64)
		wrote := false
		for i, ev := range evs {
			buf = appendSSE(buf, log, ev)
			evs[i] = seqlog.Event{} // drop the reference to the log's data early
			if len(buf) >= chunk {
				if _, werr := w.Write(buf); werr != nil {
					return
				}
				buf, wrote = buf[:0], true
			}
		}
		if len(buf) > 0 {
			if _, werr := w.Write(buf); werr != nil {
				return
			}
			buf, wrote = buf[:0], true
		}
		if wrote {
			if ferr := rc.Flush(); ferr != nil {
				return
			}
		}
		if cap(buf) > 4<<20 {
			buf = make([]byte, 0, chunk+256<<10)
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return
		default:
			// The log was aborted (stop, replacement), the server is closing, or the client went
			// away: no clean end of the stream, so a client never takes the cut for the log's end.
			panic(http.ErrAbortHandler)
		}
	}
}

// appendSSE encodes one log event as `data: <compact JSON>\n\n`.
func appendSSE(b []byte, log *seqlog.Log, ev seqlog.Event) []byte {
	b = append(b, "data: {\"type\":\""...)
	b = append(b, ev.Kind.String()...)
	b = append(b, '"')
	switch ev.Kind {
	case seqlog.Truncated:
		b = appendTimestamp(b, ev)
	case seqlog.Stdout, seqlog.Stderr:
		b = append(b, ",\"cursor\":\""...)
		b = log.AppendCursor(b, ev.Seq)
		b = append(b, '"')
		b = appendTimestamp(b, ev)
		b = append(b, ",\"data\":\""...)
		b = appendBase64(b, ev.Data)
		b = append(b, '"')
	case seqlog.Final:
		fe, _ := ev.Final.(finalEvent)
		b = append(b, ",\"state\":"...)
		b = strconv.AppendQuote(b, fe.state)
		b = append(b, ",\"cursor\":\""...)
		b = log.AppendCursor(b, ev.Seq)
		b = append(b, '"')
		b = appendTimestamp(b, ev)
		if fe.exit != nil {
			b = append(b, ",\"exit\":"...)
			b = appendCompactJSON(b, fe.exit)
		}
		if fe.err != nil {
			b = append(b, ",\"error\":"...)
			b = appendCompactJSON(b, fe.err)
		}
	}
	return append(b, "}\n\n"...)
}

// appendBase64 appends data in standard padded base64. segmentio/asm encodes with AVX2 (amd64) or
// NEON (arm64) where the CPU has them: several times faster than encoding/base64, which matters
// for a process writing hundreds of MB/s.
func appendBase64(b, data []byte) []byte {
	n := asmbase64.StdEncoding.EncodedLen(len(data))
	b = slices.Grow(b, n)
	asmbase64.StdEncoding.Encode(b[len(b):len(b)+n], data)
	return b[:len(b)+n]
}

func appendTimestamp(b []byte, ev seqlog.Event) []byte {
	b = append(b, ",\"timestamp\":\""...)
	b = ev.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	return append(b, '"')
}

// appendCompactJSON appends v as JSON.stringify would write it (no HTML escaping).
func appendCompactJSON(b []byte, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return append(b, "null"...)
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
