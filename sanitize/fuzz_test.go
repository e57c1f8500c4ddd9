package sanitize

import (
	"bytes"
	"testing"
)

// seedInputs are the fuzz seeds and the chunking test's corpus: one of every sequence family.
var seedInputs = []string{
	"plain text\n",
	"\x1b[31mred\x1b[0m\n\x1b[1;38;5;208mbold orange\nstill\x1b[m\n",
	"a\x1b[2Jb\x1b[10;20H\x1b[?25l\x1b[6n\x1b[ q\n",
	"\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b]0;title\x1b\\\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n",
	"\x1bP1$r0m\x1b\\\x1b_Gabc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\\n",
	"\x1b(0\x1b)B\x1b#8\x1b7\x1b8\x1bc\x1bM\x1b=\n",
	"\x00\x01\x07\x08\x7f\t|\r\n",
	"\x9b2J\xc2\x9b2J\x9d0;t\x9c\xc2\x9d0;t\xc2\x9c\n",
	"\xff\xfe\xc0\xaf\xed\xa0\x80\xe4\xb8\n",
	"\u202eevil\u2066x\u2069 世界 🙂\n",
	"\x1b]0;unterminated\nnext\x1b[12\n\x1b",
	"progress 10%\rprogress 20%\r\n",
	"\x1b[8mhidden\x1b[0m\x1b[38:2::1:2:3mx\n",
	"a\x1b]0;t\x1b[2Jb\x18c\x1b[3\x071m\n",
}

// FuzzSanitize checks the sanitiser never panics, never lets an escape sequence other than a
// complete SGR through, never emits C0/C1 controls or invalid UTF-8, counts every input byte, and
// produces the same lines however the input is cut into chunks.
func FuzzSanitize(f *testing.F) {
	for i, s := range seedInputs {
		f.Add([]byte(s), byte(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode byte) {
		o := Options{
			StripSGR:    mode&1 != 0,
			ShowEscapes: mode&2 != 0,
			MaxRunes:    int(mode>>4) * 3,
		}
		if mode&4 != 0 {
			o.TabWidth = -1
		}
		txt, _ := Text(data, o)
		if err := check(txt); err != nil {
			t.Fatalf("Text(%q, %+v) = %q: %v", data, o, txt, err)
		}
		if o.StripSGR && bytes.IndexByte([]byte(txt), 0x1b) >= 0 {
			t.Fatalf("StripSGR output has ESC: %q", txt)
		}
		if ti := Title(string(data)); check(ti) != nil || bytes.IndexByte([]byte(ti), 0x1b) >= 0 {
			t.Fatalf("Title(%q) = %q", data, ti)
		}
		whole := streamAll(o, data)
		var total int64
		for _, l := range whole {
			raw := data[total : total+l.Raw]
			total += l.Raw
			if err := check(l.Text); err != nil {
				t.Fatalf("stream line %q from %q: %v", l.Text, data, err)
			}
			if l.EOL {
				raw = raw[:len(raw)-1]
			}
			if l.Verbatim && l.Text != string(raw) {
				t.Fatalf("verbatim line %q is not its input %q", l.Text, raw)
			}
		}
		if total != int64(len(data)) {
			t.Fatalf("lines account for %d bytes of %d", total, len(data))
		}
		split := int(mode)%7 + 1
		var chunks [][]byte
		for i := 0; i < len(data); i += split {
			chunks = append(chunks, data[i:min(i+split, len(data))])
		}
		if cut := streamAll(o, chunks...); !equalLines(whole, cut) {
			t.Fatalf("chunks of %d change the result for %q:\n%+v\n%+v", split, data, whole, cut)
		}
	})
}
