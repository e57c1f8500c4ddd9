package localbridge

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// The stable text decoder, fed the same bytes in any chunking, gives the same text as in one
// piece; its text is valid UTF-8; valid input comes out unchanged; and session framing gives one
// piece per line with NULs dropped. Bad input never panics.
func FuzzStableTextDecoder(f *testing.F) {
	for _, seed := range []string{"hello\n", "\xff\xfe", "\xe2\x82", "a\xe2\x82\xacb", "\xf0\x9f\x98", "\xed\xa0\x80x", "\x00line\nlast"} {
		f.Add([]byte(seed), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		var whole textDecoder
		one := whole.decode(data) + whole.flush()
		if !utf8.ValidString(one) {
			t.Fatalf("decoded text is not UTF-8: %q", one)
		}
		if utf8.Valid(data) && one != string(data) {
			t.Fatalf("valid input changed: %q → %q", data, one)
		}
		step := int(cut%16) + 1
		var parts textDecoder
		var b strings.Builder
		for i := 0; i < len(data); i += step {
			b.WriteString(parts.decode(data[i:min(i+step, len(data))]))
		}
		b.WriteString(parts.flush())
		if b.String() != one {
			t.Fatalf("chunking by %d changed the text: %q vs %q", step, b.String(), one)
		}
		var lf lineFramer
		pieces := lf.push(one)
		if last := lf.flush(); last != "" {
			pieces = append(pieces, last)
		}
		joined := strings.Join(pieces, "")
		want := strings.ReplaceAll(one, "\x00", "")
		if want != "" && !strings.HasSuffix(want, "\n") {
			want += "\n"
		}
		if joined != want {
			t.Fatalf("framing: %q, want %q", joined, want)
		}
		for _, p := range pieces {
			if strings.Count(p, "\n") != 1 || !strings.HasSuffix(p, "\n") {
				t.Fatalf("piece %q is not one line", p)
			}
		}
		_, _ = stableArgvWord(bytes.TrimSpace(data))
		_, _ = jsNumberParam(string(data))
	})
}
