package attach

import (
	"fmt"
	"strings"
)

// DefaultDetachKey is the detach key when none is configured.
const DefaultDetachKey = "ctrl-]"

// DetachKey is a parsed detach key: one byte (ctrl-]) or a prefix byte followed by a second byte
// (ctrl-a d). With a prefix, the prefix typed twice sends one prefix byte to the terminal.
type DetachKey struct {
	Prefix byte
	Second byte // 0 for a single-key detach
	Spec   string
}

// ParseDetachKey parses "ctrl-]", "ctrl-a d", "ctrl-b ctrl-d"… Keys are ctrl-<char> (letters,
// @ [ \ ] ^ _ and space) or a single printable ASCII character for the second key.
func ParseDetachKey(spec string) (DetachKey, error) {
	fields := strings.Fields(spec)
	if len(fields) == 0 || len(fields) > 2 {
		return DetachKey{}, fmt.Errorf("detach key %q: want one key (ctrl-]) or a prefix and a key (ctrl-a d)", spec)
	}
	k := DetachKey{Spec: strings.Join(fields, " ")}
	var err error
	if k.Prefix, err = parseKey(fields[0]); err != nil {
		return DetachKey{}, fmt.Errorf("detach key %q: %w", spec, err)
	}
	if k.Prefix >= 0x20 {
		return DetachKey{}, fmt.Errorf("detach key %q: the first key must be a control key", spec)
	}
	if len(fields) == 2 {
		if k.Second, err = parseKey(fields[1]); err != nil {
			return DetachKey{}, fmt.Errorf("detach key %q: %w", spec, err)
		}
		if k.Second == k.Prefix {
			return DetachKey{}, fmt.Errorf("detach key %q: the second key must differ from the prefix", spec)
		}
	}
	return k, nil
}

func parseKey(s string) (byte, error) {
	ls := strings.ToLower(s)
	for _, p := range []string{"ctrl-", "ctrl+", "c-", "^"} {
		if strings.HasPrefix(ls, p) && len(ls) > len(p) {
			rest := s[len(p):]
			if strings.EqualFold(rest, "space") {
				return 0, nil
			}
			if len(rest) != 1 {
				return 0, fmt.Errorf("unknown key %q", s)
			}
			c := rest[0]
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			if c < '@' || c > '_' {
				return 0, fmt.Errorf("no control key for %q", s)
			}
			return c - '@', nil
		}
	}
	if len(s) == 1 && s[0] > 0x20 && s[0] < 0x7f {
		return s[0], nil
	}
	return 0, fmt.Errorf("unknown key %q", s)
}

// detector filters input bytes, removing the detach key and reporting when it was typed.
type detector struct {
	key     DetachKey
	pending bool // the prefix was typed; the next byte decides
}

// feed returns the bytes to send on and whether the detach key completed. Bytes after a detach in
// the same read are dropped (the user asked to leave).
func (d *detector) feed(p []byte) (out []byte, detach bool) {
	out = make([]byte, 0, len(p)+1)
	for _, b := range p {
		if d.key.Second == 0 {
			if b == d.key.Prefix {
				return out, true
			}
			out = append(out, b)
			continue
		}
		if d.pending {
			d.pending = false
			switch b {
			case d.key.Second:
				return out, true
			case d.key.Prefix:
				out = append(out, b)
			default:
				out = append(out, d.key.Prefix, b)
			}
			continue
		}
		if b == d.key.Prefix {
			d.pending = true
			continue
		}
		out = append(out, b)
	}
	return out, false
}
