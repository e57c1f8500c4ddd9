package client

import (
	asmbase64 "github.com/segmentio/asm/base64"
)

// decodeBase64 decodes standard padded base64 into dst, which must hold len(src)/4*3 bytes, and
// returns the decoded length. It accepts exactly what base64.StdEncoding.Decode accepts and yields
// the same bytes, except that it rejects CR and LF instead of skipping them: a JSON string never
// holds them raw, so an event with them is left to encoding/json, which refuses it.
//
// Output streams spend most of their decoding time here; segmentio/asm decodes with AVX2 (amd64)
// or NEON (arm64) where the CPU has them, several times faster than encoding/base64, and falls
// back to encoding/base64 for the final bytes and on other CPUs.
func decodeBase64(dst, src []byte) (int, bool) {
	if len(src)%4 != 0 {
		return 0, false // incomplete quantum: the standard decoder refuses it too (no CR/LF here)
	}
	n, err := asmbase64.StdEncoding.Decode(dst, src)
	if err != nil {
		return 0, false
	}
	// Skipped CR/LF would make the result shorter than the input's own length says it is.
	want := len(src) / 4 * 3
	if len(src) > 0 && src[len(src)-1] == '=' {
		want--
		if src[len(src)-2] == '=' {
			want--
		}
	}
	if n != want {
		return 0, false
	}
	return n, true
}
