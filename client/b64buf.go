package client

import (
	"encoding/base64"
	"encoding/binary"
)

// b64pair maps two base64 characters, read as a little-endian uint16 (first character in the low
// byte), to their 12 decoded bits; b64bad marks a pair holding a character outside the standard
// alphabet (padding, CR, LF and backslash included). Decoding two characters per lookup roughly
// doubles the speed of output streams, which spend most of their time here.
var b64pair = func() *[1 << 16]uint16 {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var val [256]uint16
	for i := range val {
		val[i] = b64bad
	}
	for i := 0; i < len(alphabet); i++ {
		val[alphabet[i]] = uint16(i)
	}
	t := new([1 << 16]uint16)
	for i := range t {
		a, b := val[i&0xff], val[i>>8]
		if a == b64bad || b == b64bad {
			t[i] = b64bad
			continue
		}
		t[i] = a<<6 | b
	}
	return t
}()

const b64bad = 0x8000

// decodeBase64 decodes standard padded base64 into dst, which must hold
// base64.StdEncoding.DecodedLen(len(src)) bytes, and returns the decoded length. Unlike
// base64.StdEncoding.Decode it rejects CR and LF instead of skipping them; otherwise it accepts
// exactly what the standard decoder accepts and yields the same bytes. The final quantum (where
// padding lives) always goes to the standard decoder.
func decodeBase64(dst, src []byte) (int, bool) {
	si, di, ok := decodeBase64Blocks(dst, src, 12)
	if !ok {
		return 0, false
	}
	return decodeBase64Tail(dst, di, src[si:])
}

// decodeBase64Blocks decodes whole 8-character blocks from the start of src while at least keep
// characters follow them, and stops early at the first block holding a character outside the
// alphabet; ok is false only when such a block came before the last keep characters. It returns how
// much of src and dst it used. dst needs 2 bytes of slack past the decoded bytes, which a dst sized
// for a longer src by at least one quantum has.
func decodeBase64Blocks(dst, src []byte, keep int) (si, di int, ok bool) {
	// Each block yields 6 bytes through an 8-byte store. Padding never passes the alphabet check,
	// so the blocks decoded here are exactly what the standard decoder makes of them.
	for len(src)-si >= 16+keep && len(dst)-di >= 14 {
		// Two blocks per round: fewer bounds checks and loop overhead.
		x := binary.LittleEndian.Uint64(src[si:])
		y := binary.LittleEndian.Uint64(src[si+8:])
		a := b64pair[uint16(x)]
		b := b64pair[uint16(x>>16)]
		c := b64pair[uint16(x>>32)]
		d := b64pair[uint16(x>>48)]
		e := b64pair[uint16(y)]
		f := b64pair[uint16(y>>16)]
		g := b64pair[uint16(y>>32)]
		h := b64pair[uint16(y>>48)]
		if (a|b|c|d|e|f|g|h)&b64bad != 0 {
			return si, di, false
		}
		v := uint64(a)<<52 | uint64(b)<<40 | uint64(c)<<28 | uint64(d)<<16
		w := uint64(e)<<52 | uint64(f)<<40 | uint64(g)<<28 | uint64(h)<<16
		binary.BigEndian.PutUint64(dst[di:], v)
		binary.BigEndian.PutUint64(dst[di+6:], w)
		si += 16
		di += 12
	}
	for len(src)-si >= 8+keep && len(dst)-di >= 8 {
		x := binary.LittleEndian.Uint64(src[si:])
		a := b64pair[uint16(x)]
		b := b64pair[uint16(x>>16)]
		c := b64pair[uint16(x>>32)]
		d := b64pair[uint16(x>>48)]
		if (a|b|c|d)&b64bad != 0 {
			return si, di, false
		}
		v := uint64(a)<<52 | uint64(b)<<40 | uint64(c)<<28 | uint64(d)<<16
		binary.BigEndian.PutUint64(dst[di:], v)
		si += 8
		di += 6
	}
	return si, di, true
}

// decodeBase64Tail decodes tail, which starts on a quantum boundary, into dst[di:] and returns the
// total decoded length.
func decodeBase64Tail(dst []byte, di int, tail []byte) (int, bool) {
	for _, ch := range tail {
		if ch == '\r' || ch == '\n' {
			return 0, false
		}
	}
	n, err := base64.StdEncoding.Decode(dst[di:], tail)
	if err != nil {
		return 0, false
	}
	return di + n, true
}
