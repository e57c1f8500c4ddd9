package themes

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"golang.org/x/sys/unix"
)

// DarkBackground asks the terminal on in/out for its background colour (OSC 11), followed by a
// cursor-position report (CSI 6n) that every terminal answers, and waits at most timeout. It
// reports whether the background is dark, and ok=false when the terminal gave no colour (not a
// terminal, no answer in time, TERM=dumb, or inside tmux/screen, which cannot answer for every
// attached terminal). termenv's own query waits 5 s for a terminal that does not answer; this one
// waits timeout, and stops as soon as the cursor report arrives.
func DarkBackground(in, out *os.File, timeout time.Duration) (dark, ok bool) {
	t := os.Getenv("TERM")
	if t == "dumb" || strings.HasPrefix(t, "screen") || strings.HasPrefix(t, "tmux") {
		return true, false
	}
	if !term.IsTerminal(in.Fd()) || !term.IsTerminal(out.Fd()) {
		return true, false
	}
	st, err := term.MakeRaw(in.Fd())
	if err != nil {
		return true, false
	}
	defer func() { _ = term.Restore(in.Fd(), st) }()
	if _, err := out.WriteString("\x1b]11;?\x1b\\\x1b[6n"); err != nil {
		return true, false
	}
	deadline := time.Now().Add(timeout)
	var got []byte
	buf := make([]byte, 256)
	fd := int(in.Fd())
	for len(got) < 4096 {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		m, err := unix.Read(fd, buf)
		if err != nil || m <= 0 {
			break
		}
		got = append(got, buf[:m]...)
		if cursorReport(got) {
			break
		}
	}
	return parseBackground(got)
}

// cursorReport says b holds the answer to CSI 6n (ESC [ row ; col R), which ends the query.
func cursorReport(b []byte) bool {
	i := bytes.LastIndex(b, []byte("\x1b["))
	return i >= 0 && bytes.IndexByte(b[i:], 'R') > 0
}

// parseBackground reads "ESC ] 11 ; rgb:RRRR/GGGG/BBBB" (ended by BEL or ST) out of b.
func parseBackground(b []byte) (dark, ok bool) {
	i := bytes.Index(b, []byte("\x1b]11;rgb:"))
	if i < 0 {
		return true, false
	}
	rest := b[i+len("\x1b]11;rgb:"):]
	end := bytes.IndexAny(rest, "\x07\x1b")
	if end < 0 {
		return true, false
	}
	parts := strings.Split(string(rest[:end]), "/")
	if len(parts) != 3 {
		return true, false
	}
	var v [3]float64
	for k, p := range parts {
		if len(p) == 0 || len(p) > 4 {
			return true, false
		}
		n, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return true, false
		}
		v[k] = float64(n) / float64(uint64(1)<<(4*len(p))-1)
	}
	lum := 0.2126*v[0] + 0.7152*v[1] + 0.0722*v[2]
	return lum < 0.5, true
}
