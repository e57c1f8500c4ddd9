package client

import (
	"bytes"
	"encoding/base64"
	"unicode/utf8"
)

// decodeLogFast decodes the bridge's output events without encoding/json: a flat object whose
// values are strings without escapes ({"type","cursor","timestamp","data"}), with the base64 data
// decoded in place. It gives up (ok false) on anything else — nested objects (terminal events),
// escapes, numbers, odd spacing — and the caller falls back to encoding/json, so the two paths
// accept and produce the same thing. Output streams spend nearly all their decoding time here.
func decodeLogFast(b []byte) (r rawLogEvent, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return r, false
	}
	i++
	first := true
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return r, false
		}
		if b[i] == '}' && first {
			i++
			break
		}
		key, j, ok := simpleString(b, i, true)
		if !ok {
			return r, false
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return r, false
		}
		i = skipWS(b, i+1)
		isData := string(key) == "data"
		val, j, ok := simpleString(b, i, !isData)
		if !ok {
			return r, false
		}
		i = j
		switch string(key) {
		case "type":
			r.Type = string(val)
		case "cursor":
			r.Cursor = string(val)
		case "timestamp":
			r.Timestamp = string(val)
		case "state":
			r.State = string(val)
		case "data":
			if bytes.IndexByte(val, '\n') >= 0 || bytes.IndexByte(val, '\r') >= 0 {
				return r, false
			}
			out := make([]byte, base64.StdEncoding.DecodedLen(len(val)))
			n, err := base64.StdEncoding.Decode(out, val)
			if err != nil {
				return r, false
			}
			r.Data = out[:n]
		case "exit", "error":
			return r, false // objects, handled by encoding/json
		default:
			// Case-insensitive key matching in encoding/json: leave such keys to it.
			if bytes.EqualFold(key, []byte("type")) || bytes.EqualFold(key, []byte("cursor")) ||
				bytes.EqualFold(key, []byte("timestamp")) || bytes.EqualFold(key, []byte("data")) ||
				bytes.EqualFold(key, []byte("state")) || bytes.EqualFold(key, []byte("exit")) ||
				bytes.EqualFold(key, []byte("error")) {
				return r, false
			}
		}
		first = false
		i = skipWS(b, i)
		if i >= len(b) {
			return r, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] == '}' {
			i++
			break
		}
		return r, false
	}
	if skipWS(b, i) != len(b) {
		return r, false
	}
	return r, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// simpleString reads a JSON string starting at b[i] that has no escapes. check asks for the full
// validity check (no control characters, valid UTF-8); the data value skips it because base64
// decoding rejects every byte outside its alphabet anyway (save CR and LF, checked by the caller).
func simpleString(b []byte, i int, check bool) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	rest := b[i+1:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil, 0, false
	}
	s = rest[:end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, 0, false
	}
	if check {
		for _, c := range s {
			if c < 0x20 {
				return nil, 0, false
			}
		}
		if !utf8.Valid(s) {
			return nil, 0, false
		}
	}
	return s, i + 1 + end + 1, true
}
