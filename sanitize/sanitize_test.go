package sanitize

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

type tcase struct {
	name string
	in   string
	want string
}

func runText(t *testing.T, o Options, cases []tcase) {
	t.Helper()
	for _, c := range cases {
		got, _ := Text([]byte(c.in), o)
		if got != c.want {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
		if err := check(got); err != nil {
			t.Errorf("%s: output %q: %v", c.name, got, err)
		}
	}
}

func TestPlainAndSGR(t *testing.T) {
	runText(t, Options{}, []tcase{
		{"plain", "hello, world", "hello, world"},
		{"unicode", "héllo 世界 🙂", "héllo 世界 🙂"},
		{"sgr kept", "\x1b[31mred\x1b[0m", "\x1b[31mred\x1b[0m"},
		{"sgr closed at end", "\x1b[1mbold", "\x1b[1mbold\x1b[0m"},
		{"sgr empty reset", "\x1b[32mg\x1b[m", "\x1b[32mg\x1b[0m"},
		{"sgr mid line", "a\x1b[4mb\x1b[24mc", "a\x1b[4mb\x1b[24mc\x1b[0m"},
		{"sgr conceal dropped", "\x1b[8msecret\x1b[0m", "secret"},
		{"sgr conceal among others", "x\x1b[1;8;31my", "x\x1b[1;31my\x1b[0m"},
		{"sgr 256 colour 8 is not conceal", "x\x1b[38;5;8my", "x\x1b[38;5;8my\x1b[0m"},
		{"sgr truecolor", "x\x1b[38;2;8;8;8my", "x\x1b[38;2;8;8;8my\x1b[0m"},
		{"sgr colon form", "x\x1b[38:2::255:0:0my", "x\x1b[38:2::255:0:0my\x1b[0m"},
		{"sgr reset inside", "x\x1b[1;0;31my", "x\x1b[0;31my\x1b[0m"},
		{"sgr before text", "\x1b[1;0;31my", "\x1b[31my\x1b[0m"},
		{"sgr reset without style", "a\x1b[0mb", "ab"},
		{"private csi m is not sgr", "a\x1b[?31mb", "ab"},
		{"csi m with intermediate is not sgr", "a\x1b[31 mb", "ab"},
	})
	runText(t, Options{StripSGR: true}, []tcase{
		{"strip", "\x1b[31mred\x1b[0m plain", "red plain"},
		{"strip truecolor", "\x1b[38;2;1;2;3mx", "x"},
	})
}

func TestCSI(t *testing.T) {
	runText(t, Options{}, []tcase{
		{"erase display", "a\x1b[2Jb", "ab"},
		{"cursor position", "a\x1b[10;20Hb", "ab"},
		{"cursor up", "a\x1b[1Ab", "ab"},
		{"erase line", "a\x1b[Kb", "ab"},
		{"hide cursor", "a\x1b[?25lb", "ab"},
		{"alt screen", "a\x1b[?1049hb", "ab"},
		{"bracketed paste", "a\x1b[?2004hb", "ab"},
		{"device status query", "a\x1b[6nb", "ab"},
		{"device attributes", "a\x1b[cb\x1b[>cc", "abc"},
		{"window ops", "a\x1b[21tb", "ab"},
		{"cursor style with intermediate", "a\x1b[2 qb", "ab"},
		{"scroll region", "a\x1b[1;5rb", "ab"},
		{"csi interrupted by control", "\x1b[3\x071m", "^[[3^G1m"},
		{"csi interrupted by non-ascii", "\x1b[3é", "^[[3é"},
		{"csi unterminated at end", "x\x1b[12;", "x^[[12;"},
	})
	runText(t, Options{ShowEscapes: true}, []tcase{
		{"shown", "a\x1b[2Jb", "a^[[2Jb"},
		{"sgr still kept", "\x1b[31mr", "\x1b[31mr\x1b[0m"},
	})
}

func TestStrings(t *testing.T) {
	runText(t, Options{}, []tcase{
		{"osc 52 clipboard bel", "a\x1b]52;c;ZWNobyBwd25lZA==\x07b", "ab"},
		{"osc 52 clipboard st", "a\x1b]52;c;ZWNobw==\x1b\\b", "ab"},
		{"osc 0 title", "a\x1b]0;pwned\x07b", "ab"},
		{"osc 1 icon", "a\x1b]1;pwned\x07b", "ab"},
		{"osc 2 title st", "a\x1b]2;pwned\x1b\\b", "ab"},
		{"osc 8 link keeps text", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"osc 8-bit st raw", "a\x1b]0;t\x9cb", "ab"},
		{"osc 8-bit st utf8", "a\x1b]0;t\xc2\x9cb", "ab"},
		{"osc with utf8", "a\x1b]2;títle\x07b", "ab"},
		{"dcs", "a\x1bP1$r0m\x1b\\b", "ab"},
		{"dcs bel does not end it", "a\x1bPq\x07x\x1b\\b", "ab"},
		{"apc", "a\x1b_Gf=100;AAAA\x1b\\b", "ab"},
		{"pm", "a\x1b^private\x1b\\b", "ab"},
		{"sos", "a\x1bXstring\x1b\\b", "ab"},
		{"osc unterminated shown", "a\x1b]0;title", "a^[]0;title"},
		{"osc cancelled by CAN", "a\x1b]0;t\x18b", "a^[]0;t^Xb"},
		{"osc cut by new escape", "a\x1b]0;t\x1b[2Jb", "a^[]0;tb"},
	})
	runText(t, Options{ShowEscapes: true}, []tcase{
		{"osc shown", "a\x1b]0;t\x07b", "a^[]0;t^Gb"},
		{"osc st shown", "a\x1b]0;t\x1b\\b", "a^[]0;t^[\\b"},
	})
}

func TestEscAndControls(t *testing.T) {
	runText(t, Options{}, []tcase{
		{"charset g0", "a\x1b(0b", "ab"},
		{"charset g1", "a\x1b)Bb", "ab"},
		{"decaln", "a\x1b#8b", "ab"},
		{"save restore", "a\x1b7b\x1b8c", "abc"},
		{"full reset", "a\x1bcb", "ab"},
		{"reverse index", "a\x1bMb", "ab"},
		{"keypad modes", "a\x1b=b\x1b>c", "abc"},
		{"lone st", "a\x1b\\b", "ab"},
		{"lone esc at end", "a\x1b", "a^["},
		{"esc esc", "\x1b\x1b[2J", "^["},
		{"esc then control", "\x1b\x01", "^[^A"},
		{"esc then DEL", "\x1b\x7f", "^[^?"},
		{"c0", "\x00\x01\x07\x08\x0b\x0c\x0e\x1f", "^@^A^G^H^K^L^N^_"},
		{"del", "a\x7fb", "a^?b"},
		{"cr", "a\rb", "a^Mb"},
		{"lf in one line", "a\nb", "a^Jb"},
		{"tab", "a\tb", "a       b"},
		{"tab at stop", "12345678\tx", "12345678        x"},
		{"c1 raw csi", "\x9b2J", "<9b>2J"},
		{"c1 raw osc", "\x9d0;t\x07", "<9d>0;t^G"},
		{"c1 utf8 csi", "\xc2\x9b2J", "<9b>2J"},
		{"c1 utf8 nel", "a\xc2\x85b", "a<85>b"},
		{"invalid byte", "a\xffb", "a\uFFFDb"},
		{"overlong", "\xc0\xaf", "\uFFFD\uFFFD"},
		{"truncated rune at end", "a\xe4\xb8", "a\uFFFD\uFFFD"},
		{"truncated rune before ascii", "\xe4\xb8x", "\uFFFD\uFFFDx"},
		{"surrogate", "\xed\xa0\x80", "\uFFFD\uFFFD<80>"},
		{"bidi override", "a\u202eb", "a<U+202E>b"},
		{"bidi embedding", "\u202a\u202b\u202c\u202d", "<U+202A><U+202B><U+202C><U+202D>"},
		{"bidi isolates", "\u2066\u2067\u2068\u2069", "<U+2066><U+2067><U+2068><U+2069>"},
		{"replacement char itself", "\uFFFD", "\uFFFD"},
	})
	runText(t, Options{TabWidth: 4}, []tcase{{"tab 4", "ab\tc", "ab  c"}})
	runText(t, Options{TabWidth: -1}, []tcase{{"tab visible", "a\tb", "a^Ib"}})
}

func TestCap(t *testing.T) {
	for _, c := range []struct {
		in, want string
		max      int
		capped   bool
	}{
		{"abcdef", "abc", 3, true},
		{"abc", "abc", 3, false},
		{"\x1b[31mabcdef", "\x1b[31mabc\x1b[0m", 3, true},
		{"ab\x01cd", "ab", 3, true},
		{"世界世界", "世界", 2, true},
		{"a\tb", "a", 4, true},
	} {
		got, capped := Text([]byte(c.in), Options{MaxRunes: c.max})
		if got != c.want || capped != c.capped {
			t.Errorf("Text(%q, max %d) = %q, %v; want %q, %v", c.in, c.max, got, capped, c.want, c.capped)
		}
	}
}

func TestTitle(t *testing.T) {
	for _, c := range []tcase{
		{"osc and sgr", "\x1b]0;x\x07\x1b[31mred\x1b[0m", "red"},
		{"newline", "a\nb", "a^Jb"},
		{"tab", "a\tb", "a^Ib"},
		{"bidi", "evil\u202etxt.exe", "evil<U+202E>txt.exe"},
		{"long", strings.Repeat("x", 300), strings.Repeat("x", 200) + "…"},
	} {
		if got := Title(c.in); got != c.want {
			t.Errorf("%s: Title(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

func streamAll(o Options, chunks ...[]byte) []Line {
	s := NewStream(o)
	var out []Line
	for _, c := range chunks {
		out = s.Feed(out, c)
	}
	if l, ok := s.Flush(); ok {
		out = append(out, l)
	}
	return out
}

func texts(ls []Line) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Text)
	}
	return out
}

func TestStreamLines(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want []string
	}{
		{"lines", "a\nb\n", []string{"a", "b"}},
		{"partial end", "a\nb", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"lone cr", "10%\r20%\n", []string{"10%^M20%"}},
		{"cr at end", "a\r", []string{"a^M"}},
		{"empty lines", "\n\n", []string{"", ""}},
		{"sgr carried", "\x1b[31mred\nstill\x1b[0m\nplain\n", []string{"\x1b[31mred\x1b[0m", "\x1b[31mstill\x1b[0m", "plain"}},
		{"osc cut by newline", "\x1b]0;abc\ndef\x07\n", []string{"^[]0;abc", "def^G"}},
		{"csi cut by newline", "a\x1b[3\nb\n", []string{"a^[[3", "b"}},
	} {
		got := texts(streamAll(Options{}, []byte(c.in)))
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("%s: lines %q, want %q", c.name, got, c.want)
		}
	}
}

func TestStreamRawAndEOL(t *testing.T) {
	in := []byte("ab\r\n\x1b[2Jc\nlast")
	ls := streamAll(Options{}, in)
	var total int64
	for _, l := range ls {
		total += l.Raw
	}
	if total != int64(len(in)) {
		t.Fatalf("raw total %d, want %d", total, len(in))
	}
	if ls[0].Raw != 4 || ls[1].Raw != 6 || ls[2].Raw != 4 {
		t.Errorf("raw sizes %d %d %d", ls[0].Raw, ls[1].Raw, ls[2].Raw)
	}
	if !ls[0].EOL || !ls[1].EOL || ls[2].EOL {
		t.Errorf("EOL flags %v %v %v", ls[0].EOL, ls[1].EOL, ls[2].EOL)
	}
}

func TestStreamPending(t *testing.T) {
	s := NewStream(Options{})
	if _, ok := s.Pending(); ok {
		t.Fatal("pending on empty stream")
	}
	out := s.Feed(nil, []byte("one\ntw"))
	if len(out) != 1 || out[0].Text != "one" {
		t.Fatalf("lines %q", texts(out))
	}
	p, ok := s.Pending()
	if !ok || p.Text != "tw" || p.Raw != 2 {
		t.Fatalf("pending %+v %v", p, ok)
	}
	out = s.Feed(out[:0], []byte("o\x1b]0;"))
	if len(out) != 0 {
		t.Fatalf("unexpected lines %q", texts(out))
	}
	if p, _ := s.Pending(); p.Text != "two" || p.Raw != 7 {
		t.Fatalf("pending with open osc %+v", p)
	}
	out = s.Feed(out, []byte("x\x07!\n"))
	if len(out) != 1 || out[0].Text != "two!" || out[0].Raw != 11 {
		t.Fatalf("completed %+v", out)
	}
	if _, ok := s.Pending(); ok {
		t.Fatal("pending after LF")
	}
	if _, ok := s.Flush(); ok {
		t.Fatal("flush with nothing pending")
	}
}

// TestStreamChunking feeds every corpus input whole, byte by byte and in odd chunks: the lines must
// be identical, however the input is cut.
func TestStreamChunking(t *testing.T) {
	for _, in := range seedInputs {
		for _, o := range []Options{{}, {StripSGR: true, MaxRunes: 5}, {ShowEscapes: true}} {
			whole := streamAll(o, []byte(in))
			for _, size := range []int{1, 2, 3, 7} {
				var chunks [][]byte
				for i := 0; i < len(in); i += size {
					chunks = append(chunks, []byte(in[i:min(i+size, len(in))]))
				}
				cut := streamAll(o, chunks...)
				if !equalLines(whole, cut) {
					t.Errorf("input %q opts %+v size %d:\n whole %+v\n cut   %+v", in, o, size, whole, cut)
				}
			}
		}
	}
}

func equalLines(a, b []Line) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// check verifies the output invariants: valid UTF-8, no C1 code points, no C0 controls, and ESC only
// inside complete SGR sequences.
func check(s string) error {
	if !utf8.ValidString(s) {
		return errf("invalid UTF-8")
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			j := i + 1
			if j >= len(s) || s[j] != '[' {
				return errf("ESC not starting CSI at %d", i)
			}
			j++
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
				j++
			}
			if j >= len(s) || s[j] != 'm' {
				return errf("ESC not in a complete SGR at %d", i)
			}
			i = j + 1
			continue
		case r < 0x20 || r == 0x7f:
			return errf("control %#x at %d", r, i)
		case r >= 0x80 && r <= 0x9f:
			return errf("C1 %#x at %d", r, i)
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return errf("bidi control %#x at %d", r, i)
		}
		i += size
	}
	return nil
}

func errf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func TestVerbatim(t *testing.T) {
	ls := streamAll(Options{MaxRunes: 8}, []byte("plain é\n\x1b[31mred\x1b[0m\ntab\there\ncrlf\r\n123456789\n\nlast"))
	want := []bool{true, false, false, false, false, true, true}
	if len(ls) != len(want) {
		t.Fatalf("%d lines", len(ls))
	}
	for i, l := range ls {
		if l.Verbatim != want[i] {
			t.Errorf("line %d %q: verbatim %v", i, l.Text, l.Verbatim)
		}
	}
	// A line after a coloured one carries the colour: not verbatim even though its input is plain.
	ls = streamAll(Options{}, []byte("\x1b[31mred\nplain\n"))
	if ls[1].Verbatim {
		t.Errorf("carried colour counted as verbatim: %q", ls[1].Text)
	}
}

// TestResumeRebuildsLines checks what lazy callers rely on: any line a Stream emits (or flushes) is
// given again by a Stream Reset to the line's Carry and fed only that line's bytes, in any chunks;
// and Skim gives the same lines as Feed without their text.
func TestResumeRebuildsLines(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := [][]byte{[]byte("ab"), []byte(" "), []byte("\t"), []byte("\n"), []byte("\r"), []byte("\x1b[31m"),
		[]byte("\x1b[1;4m"), []byte("\x1b[0m"), []byte("\x1b[38;5;200m"), []byte("\x1b]0;t\x07"), []byte("\x1b["),
		[]byte("\x1b"), []byte("\xc3\xa9"), []byte("\xc3"), []byte("\xff"), []byte("\xe2\x80\xae"), []byte("\x9b"),
		[]byte("\x1b[8m"), []byte("xyzxyzxyz"), []byte("\x1bP"), []byte("\x1b\\")}
	for _, o := range []Options{{MaxRunes: 12}, {}, {StripSGR: true, MaxRunes: 5}, {ShowEscapes: true, MaxRunes: 30}} {
		for round := 0; round < 200; round++ {
			var in []byte
			for n := r.IntN(80); n > 0; n-- {
				in = append(in, alphabet[r.IntN(len(alphabet))]...)
			}
			s, sk := NewStream(o), NewStream(o)
			var lines, skimmed []Line
			for p := in; len(p) > 0; {
				n := min(len(p), 1+r.IntN(7))
				lines = s.Feed(lines, p[:n])
				skimmed = sk.Skim(skimmed, p[:n])
				if sl, _ := s.Pending(); sl != func() Line { l, _ := sk.Pending(); return l }() {
					t.Fatalf("%+v: Skim's pending line differs from Feed's", o)
				}
				p = p[n:]
			}
			if len(skimmed) != len(lines) {
				t.Fatalf("%+v: Skim completed %d lines, Feed %d", o, len(skimmed), len(lines))
			}
			for i, l := range lines {
				l.Text = ""
				if skimmed[i] != l {
					t.Fatalf("%+v: skimmed %+v, fed %+v", o, skimmed[i], l)
				}
			}
			if l, ok := s.Flush(); ok {
				lines = append(lines, l)
			}
			off := int64(0)
			again := NewStream(o)
			for _, l := range lines {
				raw := in[off : off+l.Raw]
				off += l.Raw
				again.Reset(l.Carry)
				got := again.Feed(nil, raw)
				if !l.EOL {
					f, _ := again.Flush()
					got = append(got, f)
				}
				if len(got) != 1 || got[0] != l {
					t.Fatalf("%+v: line %q rebuilt as %+v, want %+v", o, raw, got, l)
				}
			}
			if off != int64(len(in)) {
				t.Fatalf("lines span %d of %d bytes", off, len(in))
			}
		}
	}
}
