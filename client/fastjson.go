package client

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// decodeLogFast decodes the bridge's output events without encoding/json: a flat object whose
// values are strings without escapes ({"type","cursor","timestamp","data"}), with the base64 data
// decoded in place. It gives up (ok false) on anything else — nested objects (terminal events),
// escapes, numbers, odd spacing — and the caller falls back to encoding/json, so the two paths
// accept and produce the same thing. Output streams spend nearly all their decoding time here.
func decodeLogFast(b []byte) (r rawLogEvent, ok bool) {
	return decodeLogFastInto(b, nil)
}

// decodeLogFastInto is decodeLogFast with the decoded data placed in alloc(n)[:n] (a fresh slice
// when alloc is nil). alloc must return at least n bytes.
func decodeLogFastInto(b []byte, alloc func(n int) []byte) (r rawLogEvent, ok bool) {
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
		key, j, ok := simpleString(b, i)
		if !ok {
			return r, false
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return r, false
		}
		i = skipWS(b, i+1)
		if string(key) == "data" {
			j, ok = decodeDataValue(b, i, alloc, &r)
		} else {
			var val []byte
			val, j, ok = simpleString(b, i)
			ok = ok && r.setString(key, val)
		}
		if !ok {
			return r, false
		}
		i = j
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

// setString stores a string member of an output event. It refuses (false) members the fast path
// leaves to encoding/json: the objects exit and error, and keys matching a known one only without
// regard to case (encoding/json matches keys case-insensitively).
func (r *rawLogEvent) setString(key, val []byte) bool {
	switch string(key) {
	case "type":
		r.Type = eventType(val)
	case "cursor":
		r.Cursor = string(val)
	case "timestamp":
		r.ts = val // parsed where it lies (logMessage): no string is made of it
	case "state":
		r.State = string(val)
	case "exit", "error":
		return false
	default:
		for _, k := range []string{"type", "cursor", "timestamp", "data", "state", "exit", "error"} {
			if bytes.EqualFold(key, []byte(k)) {
				return false
			}
		}
	}
	return true
}

// eventType is the type member as a string, without allocating one for the types the bridge sends.
func eventType(val []byte) string {
	switch string(val) {
	case "stdout":
		return "stdout"
	case "stderr":
		return "stderr"
	case "terminal":
		return "terminal"
	case "truncated":
		return "truncated"
	}
	return string(val)
}

// decodeDataValue decodes the base64 string at b[i] into r.Data and returns the index after it.
// Backslashes (escapes), CR and LF fail like any byte outside the alphabet, leaving those cases to
// encoding/json.
func decodeDataValue(b []byte, i int, alloc func(int) []byte, r *rawLogEvent) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	rest := b[i+1:]
	guess := -1
	if n := len(rest); n >= 2 && rest[n-2] == '"' && rest[n-1] == '}' {
		// The bridge puts data last: the value most likely ends at the object's end. A successful
		// decode proves it (a quote is not in the alphabet), saving a search through the value.
		guess = n - 2
		if data, ok := decodeBase64Value(rest[:guess], alloc); ok {
			r.Data = data
			return i + 1 + guess + 1, true
		}
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || end == guess {
		return 0, false
	}
	data, ok := decodeBase64Value(rest[:end], alloc)
	if !ok {
		return 0, false
	}
	r.Data = data
	return i + 1 + end + 1, true
}

// decodeBase64Value decodes a data value into alloc(n) (a fresh slice when alloc is nil).
func decodeBase64Value(val []byte, alloc func(int) []byte) ([]byte, bool) {
	if len(val)%4 != 0 {
		return nil, false
	}
	size := len(val) / 4 * 3
	var out []byte
	if alloc != nil {
		out = alloc(size)[:size]
	} else {
		out = make([]byte, size)
	}
	n, ok := decodeBase64(out, val)
	if !ok {
		return nil, false
	}
	return out[:n], true
}

// skipWS skips JSON whitespace but CR: an event holding a CR is left to encoding/json, so that a
// successful fast decode proves the event free of CRs (see nextLogMessage).
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n') {
		i++
	}
	return i
}

// simpleString reads a JSON string starting at b[i] that has no escapes, no control characters and
// is valid UTF-8. One pass finds its end and checks its bytes, eight at a time while none is a
// quote, a backslash, a control or outside ASCII; only a string with bytes outside ASCII is checked
// again as UTF-8.
func simpleString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	j := i + 1
	for ; j+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[j:])); j += 8 {
	}
	for ; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s = b[i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, j + 1, true
		case c < 0x20 || c == '\\':
			return nil, 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, 0, false
}

// plainWord says none of the eight bytes in w is a quote, a backslash, a control (below 0x20) or
// outside ASCII.
func plainWord(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - lo) & ^v & hi } // non-zero when a byte of v is 0
	return (w|zero(w^(lo*'"'))|zero(w^(lo*'\\'))|((w-lo*0x20)&^w))&hi == 0
}
