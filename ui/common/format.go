package common

import (
	"sandscope/client"
	"sandscope/internal/cellwidth"
	"sandscope/sanitize"

	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// Age renders a duration compactly: "4s", "3m", "2h05m", "3d".
func Age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	// without fmt: every running process's RUNTIME is one of these, on every redraw
	var buf [24]byte
	b := buf[:0]
	switch {
	case d < time.Minute:
		b = append(strconv.AppendInt(b, int64(d/time.Second), 10), 's')
	case d < time.Hour:
		b = append(strconv.AppendInt(b, int64(d/time.Minute), 10), 'm')
		b = append(twoDigits(b, int64(d%time.Minute/time.Second)), 's')
	case d < 48*time.Hour:
		b = append(strconv.AppendInt(b, int64(d/time.Hour), 10), 'h')
		b = append(twoDigits(b, int64(d%time.Hour/time.Minute)), 'm')
	default:
		b = append(strconv.AppendInt(b, int64(d/(24*time.Hour)), 10), 'd')
	}
	return string(b)
}

// twoDigits appends n (0 to 59) as %02d does.
func twoDigits(b []byte, n int64) []byte {
	if n < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, n, 10)
}

// Since renders the age of t relative to now, "never" for the zero time.
func Since(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return Age(now.Sub(t)) + " ago"
}

// ShortCursor shortens a bridge cursor for the status line, keeping both ends.
func ShortCursor(c string) string {
	if c == "" {
		return "-"
	}
	// sanitised before it is shortened, so the two halves cannot join into a sequence
	return sanitize.Elide(sanitize.Label(c), 17).String()
}

// CursorSeq shows a bridge cursor by its sequence number ("@42") when it has the known format,
// else sanitised and shortened; "" for no cursor.
func CursorSeq(raw string) string {
	if raw == "" {
		return ""
	}
	if c := client.ParseCursor(raw); c.Known {
		return fmt.Sprintf("@%d", c.Seq)
	}
	return "@" + sanitize.Elide(sanitize.Label(raw), 9).String()
}

// Bytes renders a byte count: "812 B", "4.1 KiB", "3.0 MiB".
func Bytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	case n < 1024*1024*1024:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1024*1024*1024))
}

// Clock renders a wall time as hh:mm:ss in UTC-independent local form of t's location.
func Clock(t time.Time) string {
	if t.IsZero() {
		return "--:--:--"
	}
	return t.Format("15:04:05")
}

// Fit cuts (as Cut does) or pads s (which may hold SGR) to exactly w cells.
func Fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if cellwidth.PrintableASCII(s) {
		if len(s) > w {
			return s[:w-1] + Ellipsis
		}
		return s + strings.Repeat(" ", w-len(s))
	}
	return fitGeneral(s, w)
}

func fitGeneral(s string, w int) string {
	s = clipCells(s, w+1)
	n := ansi.StringWidth(s)
	if n > w {
		return cutGeneral(s, w)
	}
	return s + strings.Repeat(" ", w-n)
}

// Ellipsis is the one mark of text cut short.
const Ellipsis = "…"

// Cut is the one way text is cut for the screen: s (which may hold SGR) in at most w cells, ending
// with one "…" when something was cut. The mark is never doubled: text that already ends in "…"
// where it is cut ("copying…") keeps that one.
func Cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if cellwidth.PrintableASCII(s) {
		if len(s) > w {
			return s[:w-1] + Ellipsis
		}
		return s
	}
	return cutGeneral(s, w)
}

func cutGeneral(s string, w int) string {
	s = clipCells(s, w+1)
	if ansi.StringWidth(s) <= w {
		return s
	}
	cut := ansi.Truncate(s, w, Ellipsis)
	if kept := strings.TrimRight(strings.TrimSuffix(ansi.Strip(cut), Ellipsis), " "); strings.HasSuffix(kept, Ellipsis) {
		return ansi.Truncate(s, ansi.StringWidth(kept), "") // the text's own "…" at the cut is the mark
	}
	return cut
}

// More marks that text goes on after s (the last line shown of a longer message): s in at most w
// cells ending with one "…" (s's own, when it already ends with one).
func More(s string, w int) string {
	s = strings.TrimRight(s, " ")
	if strings.HasSuffix(s, Ellipsis) {
		return Cut(s, w)
	}
	return Cut(s+Ellipsis, w)
}

// FitCells cuts (without a mark) or pads s (which may hold SGR) to exactly w cells: for content
// whose cells are exact, such as a terminal's screen lines.
func FitCells(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if cellwidth.PrintableASCII(s) {
		if len(s) > w {
			return s[:w]
		}
		return s + strings.Repeat(" ", w-len(s))
	}
	return fitCellsGeneral(s, w)
}

func fitCellsGeneral(s string, w int) string {
	s = clipCells(s, w+1)
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "")
	}
	return s + strings.Repeat(" ", w-n)
}

// WithCursor draws cell x of a styled line in the cursor style (the styles of the cells around it
// are kept; the cursor cell's own is replaced).
func WithCursor(line string, x int, cursor lipgloss.Style) string {
	cell := ansi.Strip(ansi.Cut(line, x, x+1))
	if cell == "" {
		cell = " "
	}
	return ansi.Truncate(line, x, "") + "\x1b[m" + cursor.Render(cell) + ansi.TruncateLeft(line, x+1, "")
}

// clipCells cuts a long s right after its first n cells, keeping the escape sequences (SGR) of
// the rest, so that measuring and truncating it to fewer than n cells gives what they give on s,
// at a cost bounded by n instead of len(s): a megabyte-long field a bridge sent is drawn as fast as
// a short one. Strings short enough to hold at most n cells anyway are returned as they are.
func clipCells(s string, n int) string {
	if len(s) <= n || len(s) <= 4*n+256 {
		return s // no cell takes less than a byte; short strings are cheap to measure
	}
	var state byte
	w, i := 0, 0
	for i < len(s) && w < n {
		_, cw, k, st := ansi.DecodeSequence(s[i:], state, nil)
		if k <= 0 {
			break
		}
		w += cw
		i += k
		state = st
	}
	if i >= len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	rest := s[i:]
	for {
		j := strings.IndexByte(rest, 0x1b)
		if j < 0 {
			break
		}
		seq, cw, k, _ := ansi.DecodeSequence(rest[j:], 0, nil)
		if k <= 0 {
			break
		}
		if cw == 0 {
			b.WriteString(seq)
		}
		rest = rest[j+k:]
	}
	return b.String()
}

// Argv renders a command line for display (sanitised, quoted where needed).
func Argv(argv []string) string {
	argv = DisplayArgv(argv)
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\"'$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return SanitizeText(strings.Join(parts, " "))
}

// truncateCells keeps the first n cells of s.
func truncateCells(s string, n int) string { return ansi.Truncate(s, n, "") }

// cutCells drops the first n cells of s.
func cutCells(s string, n int) string { return ansi.TruncateLeft(s, n, "") }

// StripANSI removes escape sequences (for text drawn in one style, e.g. the selected row).
func StripANSI(s string) string { return ansi.Strip(s) }

// JoinCells fits each cell to its column width and joins them with one space.
func JoinCells(cells []string, cols []int) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = Fit(c, cols[i])
	}
	return strings.Join(parts, " ")
}

// Wrap breaks plain text into lines of at most w cells, at spaces where it can (long words are
// cut). An empty string is one empty line.
func Wrap(s string, w int) []string {
	if w < 1 {
		w = 1
	}
	out := strings.Split(ansi.Wrap(s, w, ""), "\n")
	for i := range out {
		out[i] = strings.TrimRight(out[i], " ")
	}
	return out
}

// LoginShellArgv starts a login shell: bash when the host has it, else sh. `sandscope shell` uses
// it when no command is given; screens show it as what it does (DisplayArgv).
var LoginShellArgv = []string{"/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi"}

// DisplayArgv is the command to show for argv: what the user asked for, not the wrapper that
// runs it. The login shell wrapper shows as "bash -l"; `sh -c 'exec CMD'` (a plain command handed
// to a shell) shows as CMD. Anything else is shown as it is.
func DisplayArgv(argv []string) []string {
	if len(argv) == len(LoginShellArgv) && strings.Join(argv, "\x00") == strings.Join(LoginShellArgv, "\x00") {
		return []string{"bash", "-l"}
	}
	if len(argv) == 3 && (argv[0] == "sh" || argv[0] == "/bin/sh") && argv[1] == "-c" {
		if cmd, ok := strings.CutPrefix(argv[2], "exec "); ok && cmd != "" && !strings.ContainsAny(cmd, ";&|`$(){}<>\n\\\"'*?[]~#") {
			return strings.Fields(cmd)
		}
	}
	return argv
}

// AgeChange is the first moment after now at which Age of the time since t reads differently:
// the next whole second under an hour, the next whole minute under two days, the next day after.
func AgeChange(now, t time.Time) time.Time {
	d := now.Sub(t)
	if d < 0 {
		return t.Add(time.Second)
	}
	unit := time.Second
	switch {
	case d >= 48*time.Hour:
		unit = 24 * time.Hour
	case d >= time.Hour:
		unit = time.Minute
	}
	return t.Add((d/unit + 1) * unit)
}

// Timed is a screen whose text changes with the clock alone (ages, durations of what runs): the
// root redraws it when NextChange comes (zero: nothing on it changes by itself).
type Timed interface {
	NextChange(now time.Time) time.Time
}

// Ages notes the times a view drew live ages from (the Since and Age texts that move with the
// clock), so that the screen can say when its text next changes.
type Ages struct{ since []time.Time }

// Reset forgets the last view's ages (at the start of View).
func (a *Ages) Reset() { a.since = a.since[:0] }

// Since is common.Since, noted.
func (a *Ages) Since(now, t time.Time) string {
	if !t.IsZero() {
		a.since = append(a.since, t)
	}
	return Since(now, t)
}

// Age is Age(now − start), noted.
func (a *Ages) Age(now, start time.Time) string {
	a.since = append(a.since, start)
	return Age(now.Sub(start))
}

// Next is the first moment after now at which one of the noted ages reads differently (zero:
// none was drawn).
func (a *Ages) Next(now time.Time) time.Time {
	var next time.Time
	for _, t := range a.since {
		if c := AgeChange(now, t); next.IsZero() || c.Before(next) {
			next = c
		}
	}
	return next
}
