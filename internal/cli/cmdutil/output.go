package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"
	"sandscope/client"
	"sandscope/sanitize"
	"sandscope/ui/common"
	"sandscope/vocab"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Output helpers: JSON, untrusted text made safe, ages, command lines, state words.

// WriteJSON writes v as indented JSON in which no string holds a C1 control or a bidi control raw
// (they are written as \u009b, \u202e…): valid JSON either way, but a terminal acts on raw ones.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(sanitize.JSON(b), '\n'))
	return err
}

// SafeText makes untrusted bridge text safe for a terminal: control characters (escape sequences
// included) and invalid UTF-8 are shown as visible escapes instead of being interpreted.
func SafeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsPrint(r) && r != ' ':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func Ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}

// CommandLine shows argv as every screen shows a command (common.Argv: the wrapper hidden,
// quoted where needed, controls in caret notation such as "^J"), cut at 80 cells.
func CommandLine(argv []string) string {
	return common.Cut(common.Argv(argv), 80)
}

// ProcessState is the state word the product uses everywhere (RUNNING, EXITED n, KILLED TERM,
// REPORTED n (unconfirmed), ENDED exit code unknown…).
func ProcessState(p client.Process) string {
	_, w, _ := vocab.State(p.State, p.Exit, p.Error)
	return w
}

func TerminalState(t client.Terminal) string {
	_, w, _ := vocab.State(t.Status, t.Exit, t.Error)
	return w
}
