package client

import (
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
func ParseCursor(raw string) Cursor {
	c := Cursor{Raw: raw}
	if raw == "" || len(raw) > maxCursorLen {
		return c
	}
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

func parseCanonicalSeq(s string) (int64, bool) {
	if s == "" || len(s) > 16 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > maxSafeInteger {
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
