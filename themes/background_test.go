package themes

import "testing"

func TestParseBackground(t *testing.T) {
	for _, c := range []struct {
		in       string
		dark, ok bool
	}{
		{"\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[3;1R", true, true},
		{"\x1b]11;rgb:ffff/ffff/ffff\x07\x1b[3;1R", false, true},
		{"x\x1b]11;rgb:fd/f6/e3\x1b\\", false, true},
		{"\x1b[3;1R", true, false},                 // no colour answer
		{"\x1b]11;rgb:ffff/ffff\x07", true, false}, // malformed
		{"\x1b]11;rgb:zzzz/ffff/ffff\x07", true, false},
		{"\x1b]11;rgb:ffff/ffff/ffff", true, false}, // unterminated
	} {
		dark, ok := parseBackground([]byte(c.in))
		if dark != c.dark || ok != c.ok {
			t.Errorf("parseBackground(%q) = %v, %v; want %v, %v", c.in, dark, ok, c.dark, c.ok)
		}
	}
	if !cursorReport([]byte("\x1b]11;rgb:0/0/0\x07\x1b[12;40R")) || cursorReport([]byte("\x1b]11;rgb:0/0/0\x07")) {
		t.Error("cursorReport")
	}
}
