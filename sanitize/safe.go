package sanitize

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Safe is text that may be written to a terminal as it is: it holds no escape sequence, no control
// character, no C1 control, no bidi override and no invalid UTF-8. Only this package's functions
// make one (its field is unexported), so a function that takes or returns Safe documents in its
// signature that the text went through the sanitiser. Error values keep the raw text; Safe is what
// reaches a screen.
type Safe struct{ s string }

// String returns the safe text.
func (s Safe) String() string { return s.s }

// Len is the text's length in runes.
func (s Safe) Len() int { return utf8.RuneCountInString(s.s) }

// Literal marks text sandscope itself wrote (a constant, a number) as safe. It is still run
// through the sanitiser, so a mistake cannot smuggle a sequence through.
func Literal(s string) Safe { return Label(s) }

// Join concatenates safe texts.
func Join(parts ...Safe) Safe {
	var b []byte
	for _, p := range parts {
		b = append(b, p.s...)
	}
	return Safe{string(b)}
}

// labelMax caps a label: an ID, a state word, a cwd, a cursor, a command line.
const labelMax = 200

// messageMax caps a message: an error or notice line.
const messageMax = 2000

// Label makes an untrusted short string (an ID, a state, a cursor, a cwd, an argv element) safe
// for one line of a screen or a command's output: every escape sequence is removed, controls,
// C1 controls and bidi overrides are shown visibly ("^J", "<9b>", "<U+202E>"), invalid UTF-8
// becomes U+FFFD, and text longer than 200 runes is cut and ends with "…".
func Label(s string) Safe { return Safe{Title(s)} }

// Message makes an untrusted message (a bridge's error text, a stream's failure reason) safe for
// one line of output: like Label, but removed escape sequences are shown ("^[]2;…") so a reader
// sees that something was there, and the cap is 2000 runes.
func Message(s string) Safe {
	t, capped := Text([]byte(s), Options{StripSGR: true, ShowEscapes: true, TabWidth: -1, MaxRunes: messageMax})
	if capped {
		t += ellipsis
	}
	return Safe{t}
}

// Elide shortens safe text to at most max runes, keeping its first and last part around "…".
// It works on text that is already safe, so the parts cannot join into a sequence.
func Elide(s Safe, max int) Safe {
	r := []rune(s.s)
	if max < 3 || len(r) <= max {
		if max > 0 && len(r) > max {
			return Safe{string(r[:max])}
		}
		return s
	}
	head := (max - 1) / 2
	tail := max - 1 - head
	return Safe{string(r[:head]) + ellipsis + string(r[len(r)-tail:])}
}

// JSON rewrites JSON text (as encoding/json writes it) so that no code point a terminal acts on or
// that reorders what a reader sees is written raw inside a string: C1 controls (U+0080–U+009F),
// bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and U+FEFF become \uXXXX
// escapes. The result decodes to the same values. encoding/json already escapes C0 controls,
// U+2028 and U+2029.
func JSON(b []byte) []byte {
	clean := true
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if jsonEscaped(r) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return b
	}
	out := bytes.NewBuffer(make([]byte, 0, len(b)+32))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if jsonEscaped(r) {
			out.WriteString(`\u`)
			for k := 3; k >= 0; k-- {
				out.WriteByte(hexdigits[(r>>(4*k))&0xf])
			}
		} else {
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}

func jsonEscaped(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f || r == 0xfeff:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// DropHyperlinks removes OSC 8 hyperlink sequences (ESC ] 8 ; params ; URL, ended by BEL or ST)
// from text a terminal emulator rendered, keeping the link's visible text. sandscope never passes
// on a live link a process chose: the user would click a URL they cannot inspect.
func DropHyperlinks(s string) string {
	const intro = "\x1b]8;"
	i := indexString(s, intro)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i >= 0 {
		b = append(b, s[:i]...)
		rest := s[i+len(intro):]
		end, n := -1, 0
		for k := 0; k < len(rest); k++ {
			if rest[k] == 0x07 {
				end, n = k, 1
				break
			}
			if rest[k] == 0x1b && k+1 < len(rest) && rest[k+1] == '\\' {
				end, n = k, 2
				break
			}
		}
		if end < 0 {
			s = "" // unterminated: drop the rest of the sequence
			break
		}
		s = rest[end+n:]
		i = indexString(s, intro)
	}
	return string(append(b, s...))
}

func indexString(s, sub string) int {
	return strings.Index(s, sub)
}
