package notify

import (
	"strings"
	"unicode/utf8"

	"sandscope/record"
)

// Signals are what an alert makes the terminal do besides the list and the status line.
type Signals struct {
	Bell   bool // BEL
	OSC9   bool // ESC ] 9 ; body BEL (iTerm2, WezTerm, kitty, Windows Terminal, ghostty)
	OSC777 bool // ESC ] 777 ; notify ; title ; body BEL (urxvt, foot, Konsole, WezTerm, ghostty)
}

// Any reports whether any signal is on.
func (s Signals) Any() bool { return s.Bell || s.OSC9 || s.OSC777 }

// Settings chooses the signals per alert kind (a kind not present gives none).
type Settings map[record.AlertKind]Signals

// ParseSettings turns the configuration's lists (kind → "bell", "osc9", "osc777") into Settings.
// An unknown kind or signal is an error naming it (the configuration file checks these first).
func ParseSettings(in map[string][]string) (Settings, error) {
	out := Settings{}
	for k, list := range in {
		kind := record.AlertKind(k)
		known := false
		for _, ak := range record.AlertKinds {
			known = known || ak == kind
		}
		if !known {
			return nil, &settingError{what: "kind", name: k}
		}
		var s Signals
		for _, v := range list {
			switch v {
			case "bell":
				s.Bell = true
			case "osc9":
				s.OSC9 = true
			case "osc777":
				s.OSC777 = true
			case "none":
			default:
				return nil, &settingError{what: "signal", name: v, kind: k}
			}
		}
		out[kind] = s
	}
	return out, nil
}

type settingError struct{ what, name, kind string }

func (e *settingError) Error() string {
	if e.what == "kind" {
		return "notify: no kind " + quote(e.name) + " (known: ended, lost, suspect, gap)"
	}
	return "notify." + e.kind + ": " + quote(e.name) + " is not one of bell, osc9, osc777, none"
}

func quote(s string) string { return "\"" + Clean(s, 40) + "\"" }

// maxField caps a title or body written into a desktop notification.
const maxField = 200

// Clean makes s safe inside a terminal control sequence: every C0 and C1 control, DEL and ESC is
// dropped (so nothing can end the sequence or start another), ';' — the field separator of OSC
// 777 — becomes ',', invalid UTF-8 becomes U+FFFD, runs of spaces shrink to one, and the text is
// cut at max runes with "…".
func Clean(s string, max int) string {
	var b strings.Builder
	n := 0
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size <= 1 {
			r = '\uFFFD'
		}
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			r = ' '
		case r == ';':
			r = ','
		case r == '\u2028' || r == '\u2029' || r == '\u202e' || r == '\u202d' || r == '\u2066' || r == '\u2067' || r == '\u2068' || r == '\u2069':
			r = ' ' // line separators and bidirectional overrides
		}
		if r == ' ' {
			if space || n == 0 {
				continue
			}
			space = true
		} else {
			space = false
		}
		if n == max {
			return strings.TrimRight(b.String(), " ") + "…"
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimRight(b.String(), " ")
}

// Sequence is the bytes an alert writes to the terminal under s: nothing, BEL, and the desktop
// notifications. title and body are cleaned here.
func Sequence(s Signals, title, body string) []byte {
	if !s.Any() {
		return nil
	}
	title, body = Clean(title, maxField), Clean(body, maxField)
	var b []byte
	if s.OSC9 {
		// "sandscope: " first: OSC 9 bodies that start with a digit and ';' are commands to some
		// terminals (ConEmu progress), and Clean leaves no ';' anyway.
		b = append(b, "\x1b]9;sandscope: "...)
		b = append(b, title+" — "+body...)
		b = append(b, '\a')
	}
	if s.OSC777 {
		b = append(b, "\x1b]777;notify;"...)
		b = append(b, "sandscope: "+title...)
		b = append(b, ';')
		b = append(b, body...)
		b = append(b, '\a')
	}
	if s.Bell {
		b = append(b, '\a')
	}
	return b
}
