package client

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
)

// Cursor is a bridge log cursor. The bridge calls cursors opaque but specifies their format:
// base64url_nopad("v1." + base64url_nopad(storeID) + "." + decimal(seq)). When Raw has that exact
// canonical form, Known is true and Store/Seq are set, which lets the follower order events and drop
// duplicates; any other cursor is kept as an opaque token (Known false).
type Cursor struct {
	Raw   string
	Store string
	Seq   int64
	Known bool
}

// maxCursorLen bounds the cursors parsed as known (the bridge's are about 70 characters); longer
// ones stay opaque.
const maxCursorLen = 4096

// maxSafeInteger is the largest integer the bridge's JavaScript side represents exactly.
const maxSafeInteger = 1<<53 - 1

// ParseCursor parses raw. It never fails: unknown formats come back with Known false.
//
// A follower parses every event's cursor, so cursors of the bridge's size are parsed in stack
// buffers (one allocation, the store); longer ones take parseCursorLong, which accepts the same.
func ParseCursor(raw string) Cursor { return parseCursorAfter(raw, Cursor{}) }

// parseCursorAfter is ParseCursor for the cursor that follows prev in a stream: when both name the
// same store, the result shares prev's Store instead of allocating it again (every event of a log
// carries the same store).
func parseCursorAfter(raw string, prev Cursor) Cursor {
	c := Cursor{Raw: raw}
	if raw == "" || len(raw) > maxCursorLen {
		return c
	}
	if len(raw) > cursorStackLen {
		return parseCursorLong(raw)
	}
	var in [cursorStackLen]byte
	var dec, store [cursorStackLen / 4 * 3]byte
	inner, ok := decodeCanonical(dec[:], in[:copy(in[:], raw)])
	if !ok {
		return c
	}
	// "v1." store "." seq, with exactly two dots
	if len(inner) < 3 || string(inner[:3]) != "v1." {
		return c
	}
	rest := inner[3:]
	dot := bytes.IndexByte(rest, '.')
	if dot < 0 || bytes.IndexByte(rest[dot+1:], '.') >= 0 {
		return c
	}
	st, ok := decodeCanonical(store[:], rest[:dot])
	if !ok || len(st) == 0 {
		return c
	}
	seq, ok := parseCanonicalSeq(rest[dot+1:])
	if !ok {
		return c
	}
	c.Seq, c.Known = seq, true
	if prev.Known && string(st) == prev.Store {
		c.Store = prev.Store
	} else {
		c.Store = string(st)
	}
	return c
}

// cursorStackLen is the longest cursor ParseCursor parses without allocating buffers (the
// bridge's are about 70 characters).
const cursorStackLen = 256

// decodeCanonical decodes src (unpadded base64url) into dst and reports whether src is the
// canonical encoding of the result, as parseCursorLong checks by encoding it again. The strict
// decoder refuses padding and non-zero trailing bits, and every other character it accepts stands
// for one value of six bits; so the encoding is canonical exactly when no character was skipped
// (CR and LF), which the length shows.
func decodeCanonical(dst, src []byte) ([]byte, bool) {
	enc := base64.RawURLEncoding.Strict()
	n, err := enc.Decode(dst, src)
	if err != nil || enc.EncodedLen(n) != len(src) {
		return nil, false // a shorter result: the decoder skipped CR or LF
	}
	return dst[:n], true
}

// parseCursorLong is ParseCursor for cursors longer than cursorStackLen.
func parseCursorLong(raw string) Cursor {
	c := Cursor{Raw: raw}
	inner, err := base64.RawURLEncoding.Strict().DecodeString(raw)
	if err != nil || base64.RawURLEncoding.EncodeToString(inner) != raw {
		return c
	}
	parts := strings.Split(string(inner), ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return c
	}
	store, err := base64.RawURLEncoding.Strict().DecodeString(parts[1])
	if err != nil || len(store) == 0 || base64.RawURLEncoding.EncodeToString(store) != parts[1] {
		return c
	}
	seq, ok := parseCanonicalSeq(parts[2])
	if !ok {
		return c
	}
	c.Store, c.Seq, c.Known = string(store), seq, true
	return c
}

// parseCanonicalSeq parses a sequence number written without sign or leading zeros, 1 to 2^53-1.
func parseCanonicalSeq[T string | []byte](s T) (int64, bool) {
	if len(s) == 0 || len(s) > 16 || s[0] == '0' {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0') // at most 16 digits: no overflow
	}
	if n < 1 || n > maxSafeInteger {
		return 0, false
	}
	return n, true
}

// FormatCursor builds the canonical cursor for store and seq (seq ≥ 1).
func FormatCursor(store string, seq int64) string {
	inner := "v1." + base64.RawURLEncoding.EncodeToString([]byte(store)) + "." + strconv.FormatInt(seq, 10)
	return base64.RawURLEncoding.EncodeToString([]byte(inner))
}

// After reports whether c certainly comes after prev in the same log: both known, same store, higher
// sequence number. ok is false when the two cannot be compared (unknown format or another store).
func (c Cursor) After(prev Cursor) (after, ok bool) {
	if !c.Known || !prev.Known || c.Store != prev.Store {
		return false, false
	}
	return c.Seq > prev.Seq, true
}
