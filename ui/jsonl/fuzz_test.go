package jsonl

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRender checks Render never panics, stays within the width, and never emits a control
// character or an escape sequence (the caller adds all styling).
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"result","subtype":"success","duration_ms":10,"result":"ok"}`,
		`{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]}`,
		`{"event":"e","data":[1,{"x":"\u001b]52;c;AAAA\u0007"}]}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"x`,
		"not json \x1b[2J",
	} {
		f.Add(s, uint8(40))
	}
	f.Fuzz(func(t *testing.T, line string, w uint8) {
		r := Render(line, int(w))
		out := r.String()
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8: %q", out)
		}
		if w > 0 && r.Width() > int(w) {
			t.Fatalf("width %d > %d: %q", r.Width(), w, out)
		}
		if strings.ContainsFunc(out, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }) {
			t.Fatalf("control in output: %q", out)
		}
	})
}
