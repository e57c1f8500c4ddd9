package attach

import (
	"fmt"

	"sandscope/keymap"
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

// ParseDetachKey parses "ctrl-]", "ctrl-a d", "ctrl-b ctrl-d"… in the key map's notation
// (keymap.ParseDetach, the one parser of key strings): the first key is a control key, the second a
// control key or a printable ASCII character.
func ParseDetachKey(spec string) (DetachKey, error) {
	d, err := keymap.ParseDetach(spec)
	if err != nil {
		return DetachKey{}, err
	}
	k := DetachKey{Prefix: d.Prefix.Byte, Spec: d.Spec}
	if d.Second != nil {
		if d.Second.Byte == 0 {
			return DetachKey{}, fmt.Errorf("detach key %q: the second key cannot be ctrl+space (NUL)", spec)
		}
		k.Second = d.Second.Byte
	}
	return k, nil
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
