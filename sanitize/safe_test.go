package sanitize

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDropHyperlinks(t *testing.T) {
	for in, want := range map[string]string{
		"a \x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 b":         "a click b",
		"\x1b[31mred\x1b]8;id=1;http://x\x1b\\link\x1b]8;;\x1b\\\x1b[0m": "\x1b[31mredlink\x1b[0m",
		"plain":                 "plain",
		"x\x1b]8;;unterminated": "x",
	} {
		if got := DropHyperlinks(in); got != want {
			t.Errorf("DropHyperlinks(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSafeLabelMessageElide(t *testing.T) {
	hostile := "\x1b]2;PWNED\x07\x9b2J\u009d0;X\u009c\u202eabc\x1b]52;c;Zm9v\x07\n"
	for _, s := range []string{Label(hostile).String(), Message(hostile).String()} {
		if strings.ContainsAny(s, "\x1b\x07\n\u009b\u009d\u202e") {
			t.Errorf("unsafe: %q", s)
		}
	}
	// A cursor whose first and last 8 bytes would, joined, form an OSC 52 write.
	cursor := "\x1b]52;c;" + strings.Repeat("A", 100) + "Zm9v\x07"
	if e := Elide(Label(cursor), 17).String(); strings.ContainsAny(e, "\x1b\x07") || Elide(Label(cursor), 17).Len() > 17 {
		t.Errorf("Elide: %q", e)
	}
	if Label(strings.Repeat("x", 1<<20)).Len() > labelMax+1 {
		t.Error("a megabyte label is not capped")
	}
}

func TestJSONEscapesC1AndBidi(t *testing.T) {
	in := map[string]string{"id": "a\u009b2Jb\u202ec\u2066d\u00e9"}
	b, _ := json.Marshal(in)
	out := JSON(b)
	if strings.ContainsAny(string(out), "\u009b\u202e\u2066") || !strings.Contains(string(out), `\u009b`) {
		t.Fatalf("JSON = %s", out)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["id"] != in["id"] {
		t.Fatalf("round trip: %v %q", err, back["id"])
	}
	if !strings.Contains(string(out), "é") {
		t.Error("ordinary non-ASCII must stay as it is")
	}
}
