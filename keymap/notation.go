package keymap

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
)

// Key is one key in sandscope's notation, parsed by ParseKey: the one parser of key strings for
// the key map's overrides, the config's detach key and full-screen attach.
type Key struct {
	// Name is the key as key.Matches compares it: "ctrl+]", "enter", "T", "alt+x", " " (space).
	Name string
	// Byte is what a terminal sends for the key when that is one byte (control keys, printable
	// ASCII); Terminal says whether there is such a byte.
	Byte     byte
	Terminal bool
}

// knownNames are the names Bubble Tea gives keys that are not plain characters ("enter",
// "ctrl+a", "pgup", "shift+tab", "f5"…), collected from its own key types.
var knownNames = func() map[string]tea.KeyType {
	out := map[string]tea.KeyType{}
	for t := tea.KeyType(-256); t <= 256; t++ {
		if t == tea.KeyRunes {
			continue
		}
		if s := (tea.Key{Type: t}).String(); s != "" && !strings.HasPrefix(s, "unknown") {
			out[s] = t
		}
	}
	return out
}()

// aliases are other spellings of named keys.
var aliases = map[string]string{"space": " ", "return": "enter", "escape": "esc", "pagedown": "pgdown",
	"pgdn": "pgdown", "pageup": "pgup", "del": "delete", "ins": "insert", "bs": "backspace"}

// ParseKey parses one key: a single character ("q", "T", "/", "?"), a named key ("enter", "esc",
// "tab", "space", "up", "pgup", "f5", "shift+tab"), a control key ("ctrl+a", also written "ctrl-a",
// "c-a" or "^a"), or either with "alt+" before it. Bad input is an error naming the key, never a
// panic.
func ParseKey(s string) (Key, error) {
	if s == " " {
		return Key{Name: " ", Byte: ' ', Terminal: true}, nil
	}
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Key{}, fmt.Errorf("empty key %q", in)
	}
	alt := false
	if l := strings.ToLower(s); strings.HasPrefix(l, "alt+") || strings.HasPrefix(l, "alt-") || strings.HasPrefix(l, "m-") {
		alt = true
		s = s[strings.IndexAny(s, "+-")+1:]
		if s == "" {
			return Key{}, fmt.Errorf("key %q: nothing after alt", in)
		}
	}
	k, err := parsePlain(s)
	if err != nil {
		return Key{}, fmt.Errorf("key %q: %w", in, err)
	}
	if alt {
		return Key{Name: "alt+" + k.Name}, nil // two bytes on a terminal: not a detach key
	}
	return k, nil
}

func parsePlain(s string) (Key, error) {
	if r, size := utf8.DecodeRuneInString(s); size == len(s) {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return Key{}, fmt.Errorf("not a printable character")
		}
		k := Key{Name: s}
		if r < 0x7f {
			k.Byte, k.Terminal = byte(r), true
		}
		return k, nil
	}
	l := strings.ToLower(s)
	for _, p := range []string{"ctrl+", "ctrl-", "c-", "^"} {
		if !strings.HasPrefix(l, p) {
			continue
		}
		rest := l[len(p):]
		if rest == "" {
			return Key{}, fmt.Errorf("nothing after %q", p)
		}
		if a, ok := aliases[rest]; ok && a == " " {
			rest = "@" // ctrl+space sends NUL, Bubble Tea's ctrl+@
		}
		if len(rest) == 1 && rest[0] >= '@' && rest[0] <= '_' || len(rest) == 1 && rest[0] >= 'a' && rest[0] <= 'z' {
			c := rest[0]
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			// named as Bubble Tea names the byte: ctrl+a, ctrl+], and tab for ctrl+i
			return Key{Name: tea.Key{Type: tea.KeyType(c - '@')}.String(), Byte: c - '@', Terminal: true}, nil
		}
		if _, ok := knownNames["ctrl+"+rest]; ok { // ctrl+up, ctrl+pgdown…
			return Key{Name: "ctrl+" + rest}, nil
		}
		return Key{}, fmt.Errorf("no control key for %q (want a letter or one of @ [ \\ ] ^ _)", rest)
	}
	if a, ok := aliases[l]; ok {
		l = a
	}
	if l == " " {
		return Key{Name: " ", Byte: ' ', Terminal: true}, nil
	}
	t, ok := knownNames[l]
	if !ok {
		return Key{}, fmt.Errorf("unknown key (a character, a name like enter, esc, tab, space, up, pgup, f5, or ctrl+x)")
	}
	k := Key{Name: l}
	if t >= 0 && t < 0x20 || t == 0x7f {
		k.Byte, k.Terminal = byte(t), true // enter, tab, esc, backspace
	}
	return k, nil
}

// Detach is a parsed detach key: one key (ctrl+]) or a prefix and a key (ctrl+a d). With a
// prefix, the prefix typed twice sends one prefix byte to the terminal.
type Detach struct {
	Prefix Key
	Second *Key // nil for a single-key detach
	Spec   string
}

// ParseDetach parses a detach key: "ctrl+]" (or "ctrl-]"), "ctrl+a d", "ctrl-b ctrl-d". The first
// key must be a control key and the second a key a terminal sends as one byte, different from the
// first. Bad input is an error saying what is wanted, never a panic.
func ParseDetach(spec string) (Detach, error) {
	fields := strings.Fields(spec)
	if len(fields) == 0 || len(fields) > 2 {
		return Detach{}, fmt.Errorf("detach key %q: want one key (ctrl+]) or a prefix and a key (ctrl+a d)", spec)
	}
	d := Detach{Spec: strings.Join(fields, " ")}
	var err error
	if d.Prefix, err = ParseKey(fields[0]); err != nil {
		return Detach{}, fmt.Errorf("detach key %q: %w", spec, err)
	}
	if !d.Prefix.Terminal || d.Prefix.Byte >= 0x20 || !strings.HasPrefix(d.Prefix.Name, "ctrl+") {
		return Detach{}, fmt.Errorf("detach key %q: the first key must be a control key (ctrl+a … ctrl+z, ctrl+] …)", spec)
	}
	if len(fields) == 2 {
		k, err := ParseKey(fields[1])
		if err != nil {
			return Detach{}, fmt.Errorf("detach key %q: %w", spec, err)
		}
		if !k.Terminal {
			return Detach{}, fmt.Errorf("detach key %q: the second key must be a control key or a printable ASCII character", spec)
		}
		if k.Byte == d.Prefix.Byte {
			return Detach{}, fmt.Errorf("detach key %q: the second key must differ from the prefix", spec)
		}
		d.Second = &k
	}
	return d, nil
}
