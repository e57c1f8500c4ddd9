package termpane

// The catch-up fast path. The emulator spends most of its time scrolling: every line feed at the
// bottom moves the whole screen. When the pane is far behind on plain scrolling text (a `cat` of a
// big file), lines that will scroll off before anything draws them do not need to be drawn: the
// visible screen after a run of at least `rows` plain lines ending in CR LF, followed by at least
// `rows` more plain lines, is the same whether the first run is drawn or replaced by CR + `rows`
// line feeds. "Plain" means no charset shift, no C1 control and no escape sequence other than SGR
// (colours and attributes, `CSI … m`) and erase in line (`CSI … K`): nothing in the skipped run can
// change modes, the title, the cursor beyond its line, or tab stops. SGR only changes the pen, so
// the replacement ends by replaying the run's SGR sequences from the last one that resets the pen:
// the tail then starts with the same pen it would have had. Erase in line only touches a line that
// scrolls off. The one thing that would break the equivalence is a scroll region (or left/right
// margins), so the fast path is off whenever one may be set. Lines skipped this way are not in the
// emulator's scrollback: the worker keeps them in the pane's own (history.go).
// TestFastPathMatchesFullEmulation checks the equivalence against full emulation, for plain and
// for coloured output, and TestScrollbackMatchesFullEmulation that the scrollback is the same too.

import (
	"strconv"
	"unicode/utf8"
)

// marginTracker follows, from the byte stream, whether the active screen may have a scroll region
// or left/right margins. It errs on the side of "may".
type marginTracker struct {
	st     int // 0 ground, 1 after ESC, 2 in CSI, 3 in another sequence
	priv   bool
	params []byte
	alt    bool    // the alternate screen is active
	region [2]bool // a scroll region may be set on [main, alt]
	lrm    bool    // left/right margin mode may be on
	// clearHist says the main screen's scrollback was erased (CSI 3 J) since the flag was reset.
	clearHist bool
}

func (t *marginTracker) feed(p []byte, rows int) {
	for _, c := range p {
		switch t.st {
		case 0:
			if c == 0x1b {
				t.st = 1
			}
		case 1:
			switch c {
			case '[':
				t.st, t.priv, t.params = 2, false, t.params[:0]
			case 'c': // RIS: full reset
				t.st, t.alt, t.region, t.lrm = 0, false, [2]bool{}, false
			case 0x1b:
			default:
				t.st = 0
				if c < 0x30 && c >= 0x20 {
					t.st = 3
				}
			}
		case 2:
			switch {
			case c == '?' && len(t.params) == 0 && !t.priv:
				t.priv = true
			case c >= '0' && c <= '9' || c == ';' || c == ':':
				if len(t.params) < 64 {
					t.params = append(t.params, c)
				} else {
					t.region = [2]bool{true, true} // too long to read: assume the worst
				}
			case c >= 0x40 && c <= 0x7e:
				t.final(c, rows)
				t.st = 0
			case c == 0x1b:
				t.st = 1
			case c >= 0x20 && c <= 0x2f, c > 0x7e:
				t.st = 3
			}
		case 3:
			if c >= 0x40 && c <= 0x7e {
				t.st = 0
			} else if c == 0x1b {
				t.st = 1
			}
		}
	}
}

func (t *marginTracker) final(c byte, rows int) {
	scr := 0
	if t.alt {
		scr = 1
	}
	switch {
	case c == 'r' && !t.priv:
		t.region[scr] = !fullRegion(string(t.params), rows)
	case c == 'J' && !t.priv && !t.alt && string(t.params) == "3":
		t.clearHist = true
	case t.priv && (c == 'h' || c == 'l'):
		on := c == 'h'
		for _, p := range splitParams(t.params) {
			switch p {
			case "69":
				t.lrm = on
			case "47", "1047", "1049":
				t.alt = on
			}
		}
	}
}

func splitParams(p []byte) []string {
	var out []string
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == ';' {
			out = append(out, string(p[start:i]))
			start = i + 1
		}
	}
	return out
}

// fullRegion reports DECSTBM parameters that mean "the whole screen".
func fullRegion(params string, rows int) bool {
	ps := splitParams([]byte(params))
	top, bottom := "", ""
	if len(ps) > 0 {
		top = ps[0]
	}
	if len(ps) > 1 {
		bottom = ps[1]
	}
	if len(ps) > 2 {
		return false
	}
	okTop := top == "" || top == "0" || top == "1"
	okBottom := bottom == "" || bottom == "0" || bottom == strconv.Itoa(rows)
	return okTop && okBottom
}

// safe reports whether the fast path may be used on the current screen.
func (t *marginTracker) safe(alt bool) bool {
	scr := 0
	if alt {
		scr = 1
	}
	return t.st == 0 && alt == t.alt && !t.region[scr] && !t.lrm
}

// skippable returns how many leading bytes of b may be replaced by CR + rows line feeds followed
// by pen (the SGR sequences that restore the pen at the end of the run), or 0. The skipped run is
// plain, ends with CR LF and holds at least rows line feeds; the plain run after it holds at least
// rows more.
func skippable(b []byte, rows int) (n int, pen []byte) {
	n, _, pen, _ = skippableScan(b, rows)
	return n, pen
}

// sgrSpan is where one SGR sequence lies in a scanned window, and whether it starts by resetting
// the pen (so nothing before it matters for the pen).
type sgrSpan struct {
	start, end int
	reset      bool
}

// skippableScan is skippable that also says where the scan stopped: at the first byte that is not
// plain, or at len(b). The answer depends on b[:stop] alone, so while that byte is still ahead and
// rows unchanged, asking again from a later start cannot find more to skip. nl holds the offsets
// of the line feeds of b[:n] (the scrollback keeps the skipped lines by them).
func skippableScan(b []byte, rows int) (n, stop int, pen []byte, nl []int) {
	var sgr []sgrSpan
	i := 0
scan:
	for i < len(b) {
		c := b[i]
		switch {
		case c == '\n':
			nl = append(nl, i)
		case c == 0x1b:
			end, final, ok := plainCSI(b[i:])
			if !ok {
				break scan
			}
			if final == 'm' {
				sgr = append(sgr, sgrSpan{i, i + end, resetsPen(b[i+2 : i+end-1])})
			}
			i += end
			continue
		case c == 0x0e, c == 0x0f, c == 0x7f:
			break scan
		case c < 0x20:
			// \r \t \b \a and the rest of C0 only act on the current line or nothing.
		case c >= 0x80:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) {
				break scan
			}
			i += n
			continue
		}
		i++
	}
	j := len(nl) - rows - 1 // the last LF that leaves rows LFs after it
	for ; j >= rows-1; j-- {
		if nl[j] > 0 && b[nl[j]-1] == '\r' {
			n = nl[j] + 1
			return n, i, penAt(b, sgr, n), nl[:j+1]
		}
	}
	return 0, i, nil, nil
}

// plainCSI reports whether p starts with an SGR (`ESC [ params m`) or an erase in line
// (`ESC [ digits K`) sequence, its length and final byte. Params are digits, ';' and ':' only: no
// private marker, no intermediate byte.
func plainCSI(p []byte) (n int, final byte, ok bool) {
	if len(p) < 3 || p[1] != '[' {
		return 0, 0, false
	}
	digitsOnly := true
	for k := 2; k < len(p) && k < 256; k++ {
		c := p[k]
		switch {
		case c >= '0' && c <= '9':
		case c == ';' || c == ':':
			digitsOnly = false
		case c == 'm':
			return k + 1, c, true
		case c == 'K' && digitsOnly:
			return k + 1, c, true
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// resetsPen reports SGR parameters whose first one is 0 (or empty): the pen is reset before the
// rest applies.
func resetsPen(params []byte) bool {
	k := 0
	for k < len(params) && params[k] == '0' {
		k++
	}
	return k == len(params) || params[k] == ';'
}

// penAt returns the SGR sequences before offset n that determine the pen at n: from the last one
// that resets it, in order.
func penAt(b []byte, sgr []sgrSpan, n int) []byte {
	last := len(sgr)
	for last > 0 && sgr[last-1].end > n {
		last--
	}
	first := last
	for first > 0 {
		first--
		if sgr[first].reset {
			break
		}
	}
	var pen []byte
	for _, s := range sgr[first:last] {
		pen = append(pen, b[s.start:s.end]...)
	}
	return pen
}
