package sanitize

import "unicode/utf8"

// Options says how text is made safe. The zero value keeps SGR colour, removes other escape
// sequences, expands tabs to stops of 8 and does not cap lines.
type Options struct {
	// StripSGR drops SGR colour sequences too.
	StripSGR bool
	// ShowEscapes shows removed escape sequences as visible text ("^[[2J") instead of dropping them.
	ShowEscapes bool
	// TabWidth is the distance between tab stops; 0 means 8; a negative value shows tabs as "^I".
	TabWidth int
	// MaxRunes caps each line at this many visible runes (SGR sequences do not count); 0 means no cap.
	// A capped line reports Capped; the caller keeps the full bytes.
	MaxRunes int
}

// Line is one line of sanitised output.
type Line struct {
	// Text is the display text: no LF, no controls, ESC only inside SGR sequences. When colours are
	// active at the end of Text it ends with a reset, so the line can be drawn on its own.
	Text string
	// Capped says Text was cut at Options.MaxRunes.
	Capped bool
	// Raw is how many input bytes the line spans, including its LF when it has one.
	Raw int64
	// EOL says the line ended with LF (false for a partial line or one ended by Flush).
	EOL bool
	// Verbatim says Text is exactly the input bytes (without the LF): nothing was removed, shown,
	// expanded or cut. Callers that keep the raw bytes anyway need not store Text twice.
	Verbatim bool
	// Carry is the colour state the line began with (Stream.Carry at its first byte): a Stream
	// Reset to it and fed the line's bytes gives this Line again, so a caller that keeps the raw
	// bytes can rebuild any line later instead of keeping its text.
	Carry string
}

// String sanitises s for one screen line: an LF inside it is shown as "^J".
func String(s string, o Options) string {
	t, _ := Text([]byte(s), o)
	return t
}

// Text sanitises b for one screen line (an LF inside it is shown as "^J") and reports whether it was
// capped at o.MaxRunes.
func Text(b []byte, o Options) (string, bool) {
	var m machine
	m.init(o, false)
	m.feed(b)
	m.finish()
	return m.take(), m.capped
}

// titleMax caps header text: a title is a label, not content.
const titleMax = 200

// Title makes s safe as one line of header text (a terminal title, a process name): every escape
// sequence including SGR is removed, controls and LF are shown visibly, and text longer than 200 runes
// is cut and ends with "…".
func Title(s string) string {
	t, capped := Text([]byte(s), Options{StripSGR: true, TabWidth: -1, MaxRunes: titleMax})
	if capped {
		t += "…"
	}
	return t
}

// Stream sanitises output that arrives in arbitrary chunks and splits it into lines. An escape
// sequence, a CRLF pair or a UTF-8 character split across chunks is carried to the next chunk. A Stream
// is not safe for concurrent use.
type Stream struct {
	m       machine
	carried int64 // input bytes of the current partial line seen in earlier chunks
}

// Carry returns the colour state carried into the next line: the SGR sequences still active, in
// order, or "" when none is. Only SGR state crosses an LF, so at a line start it is all the state a
// Stream has: Reset(Carry()) on another Stream makes it continue exactly like this one.
func (s *Stream) Carry() string { return s.m.carryString() }

// Reset makes s start a line with carry (a value of Carry) as its colour state, forgetting any
// pending input.
func (s *Stream) Reset(carry string) {
	m := &s.m
	m.carry = m.carry[:0]
	for len(carry) > 0 {
		n := 1
		for n < len(carry) && carry[n] != esc {
			n++
		}
		m.carry = append(m.carry, []byte(carry[:n]))
		carry = carry[n:]
	}
	m.carryOK = false
	m.state = stGround
	m.seq = m.seq[:0]
	m.seqOver, m.strEsc, m.cr = false, false, false
	m.utfN = 0
	m.newLine()
	s.carried = 0
}

// Capped says the pending line reached the cap: further bytes cannot change its text, only how
// many bytes it spans and the colour state after it.
func (s *Stream) Capped() bool { return s.m.capped }

// NewStream returns a Stream that sanitises with o.
func NewStream(o Options) *Stream {
	s := &Stream{}
	s.m.init(o, true)
	return s
}

// Feed sanitises the chunk p and appends every line it completes to dst, returning the extended
// slice. Bytes after the last LF stay pending (see Pending and Flush).
func (s *Stream) Feed(dst []Line, p []byte) []Line {
	return s.feed(dst, p, false)
}

// Skim is Feed without the text of the lines it completes (their Text is ""; everything else is as
// Feed gives it): for a caller that keeps the raw bytes and rebuilds the lines it shows from them and
// their Carry. The pending line is kept in full, as by Feed.
func (s *Stream) Skim(dst []Line, p []byte) []Line {
	return s.feed(dst, p, true)
}

func (s *Stream) feed(dst []Line, p []byte, skim bool) []Line {
	m := &s.m
	m.dst, m.emitting, m.skim = dst, true, skim
	m.pos = 0
	m.lineStart = 0
	m.carried = s.carried
	m.feed(p)
	s.carried = m.carried + int64(len(p)-m.lineStart)
	dst = m.dst
	m.dst, m.emitting, m.skim = nil, false, false
	return dst
}

// Pending returns the partial line sanitised so far (an escape sequence or UTF-8 character still open
// at its end is not included yet). ok is false when no input is pending.
func (s *Stream) Pending() (l Line, ok bool) {
	if s.carried == 0 {
		return Line{}, false
	}
	m := &s.m
	text := string(m.out)
	if m.openStyle {
		text += sgrReset
	}
	return Line{Text: text, Capped: m.capped, Raw: s.carried, Verbatim: m.verb && m.state == stGround && m.utfN == 0 && !m.cr, Carry: m.lineCarry}, true
}

// Flush ends the partial line as if the input ended there: an open escape sequence is shown, an
// incomplete UTF-8 character becomes U+FFFD, a trailing CR is shown. ok is false when nothing was
// pending. Colour state carries on to the next line.
func (s *Stream) Flush() (l Line, ok bool) {
	if s.carried == 0 {
		return Line{}, false
	}
	m := &s.m
	m.finish()
	l = Line{Text: m.take(), Capped: m.capped, Raw: s.carried, Verbatim: m.verb, Carry: m.lineCarry}
	m.newLine()
	s.carried = 0
	return l, true
}

// Parser states.
const (
	stGround   = iota
	stEsc      // after ESC
	stEscInter // ESC followed by intermediates (charset selection and friends)
	stCSI      // ESC [
	stStr      // ESC ] P _ ^ X: a string up to ST (or BEL for OSC)
)

const (
	esc        = 0x1b
	invalid    = 0x110000 // invalid byte b arrives as rune invalid+b
	maxSeq     = 256      // bytes of a CSI or ESC sequence kept
	maxStr     = 4096     // bytes of a string sequence kept (the rest is counted, not kept)
	maxCarry   = 16       // SGR sequences carried to the next line
	sgrReset   = "\x1b[0m"
	ellipsis   = "…"
	hexdigits  = "0123456789abcdef"
	hexdigitsU = "0123456789ABCDEF"
)

type machine struct {
	opt   Options
	lines bool // LF ends a line (Stream) rather than being shown

	out       []byte
	col       int  // visible runes in out
	capped    bool // the cap was reached: text is counted, not kept
	openStyle bool // out has an SGR that was not reset
	needStyle bool // no text emitted in this line yet: write carried SGR state first
	cr        bool // a CR waits to see whether LF follows
	verb      bool // the line so far is the input unchanged

	state   int
	seq     []byte // raw bytes of the open sequence, from its ESC
	seqOver bool   // seq overflowed its bound
	seqKind byte   // introducer of a string sequence
	inter   bool   // CSI has intermediates
	badCSI  bool   // CSI has a parameter byte after an intermediate
	strEsc  bool   // in a string: the previous byte was ESC

	utf  [utf8.UTFMax]byte // incomplete UTF-8 character carried between chunks
	utfN int

	carry     [][]byte // SGR sequences active since the last reset
	carryStr  string   // carry joined, valid when carryOK
	carryOK   bool
	lineCarry string // carry when the current line began (Stream only)

	// Stream bookkeeping.
	dst       []Line // lines completed by the current Feed
	emitting  bool   // in Feed: LF appends a Line to dst
	skim      bool   // in Skim: completed lines get no Text
	pos       int    // index in the current chunk
	lineStart int    // index in the current chunk where the current line began
	carried   int64
}

func (m *machine) init(o Options, lines bool) {
	m.opt = o
	m.lines = lines
	m.needStyle = true
	m.verb = true
	if o.TabWidth == 0 {
		m.opt.TabWidth = 8
	}
}

func (m *machine) take() string {
	if m.openStyle {
		m.out = append(m.out, sgrReset...)
		m.openStyle = false
	}
	return string(m.out)
}

// carryString is the carry joined (kept until the carry changes: most lines share it).
func (m *machine) carryString() string {
	if len(m.carry) == 0 {
		return ""
	}
	if !m.carryOK {
		n := 0
		for _, c := range m.carry {
			n += len(c)
		}
		b := make([]byte, 0, n)
		for _, c := range m.carry {
			b = append(b, c...)
		}
		m.carryStr, m.carryOK = string(b), true
	}
	return m.carryStr
}

// newLine resets per-line state; colour state carries over.
func (m *machine) newLine() {
	if m.lines {
		m.lineCarry = m.carryString()
	}
	m.out = m.out[:0]
	m.col = 0
	m.capped = false
	m.openStyle = false
	m.needStyle = true
	m.verb = true
}

// feed runs the parser over p.
func (m *machine) feed(p []byte) {
	i := 0
	// Finish a UTF-8 character begun in an earlier chunk.
	for m.utfN > 0 && i < len(p) {
		b := p[i]
		if b < 0x80 || b > 0xbf { // not a continuation: what we had is invalid
			m.flushUTF()
			break
		}
		m.utf[m.utfN] = b
		m.utfN++
		i++
		if utf8.FullRune(m.utf[:m.utfN]) {
			m.pos = i
			m.flushUTF()
		}
	}
	for i < len(p) {
		b := p[i]
		if m.state == stGround && !m.cr && b >= 0x20 && b < 0x7f {
			j := i + 1
			for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
				j++
			}
			m.printable(p[i:j])
			i = j
			continue
		}
		if b < 0x80 {
			m.pos = i + 1
			m.sym(rune(b), p[i:i+1])
			i++
			continue
		}
		if !utf8.FullRune(p[i:]) {
			m.utfN = copy(m.utf[:], p[i:])
			return
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			r = invalid + rune(b)
		}
		m.pos = i + size
		m.sym(r, p[i:i+size])
		i += size
	}
}

// flushUTF processes carried UTF-8 bytes: a complete character, or each byte as invalid.
func (m *machine) flushUTF() {
	buf := m.utf[:m.utfN]
	m.utfN = 0
	for len(buf) > 0 {
		r, size := utf8.DecodeRune(buf)
		if r == utf8.RuneError && size == 1 {
			r = invalid + rune(buf[0])
		}
		m.sym(r, buf[:size])
		buf = buf[size:]
	}
}

// finish ends the input: carried bytes are invalid, an open sequence is shown, a CR is shown.
func (m *machine) finish() {
	if m.utfN > 0 {
		m.flushUTF()
	}
	if m.state != stGround {
		if m.strEsc {
			m.strEsc = false
			m.abort()
			m.state = stEsc
			m.seq = append(m.seq[:0], esc)
		}
		m.abort()
	}
	if m.cr {
		m.cr = false
		m.visible("^M", 2)
	}
}

// sym handles one character (or one invalid byte) outside the printable-ASCII fast path.
func (m *machine) sym(r rune, raw []byte) {
	switch m.state {
	case stGround:
		m.ground(r)
	case stEsc:
		switch {
		case r == '[':
			m.state = stCSI
			m.inter, m.badCSI = false, false
			m.seqAppend(raw, maxSeq)
		case r == ']' || r == 'P' || r == '_' || r == '^' || r == 'X':
			m.state = stStr
			m.seqKind = byte(r)
			m.strEsc = false
			m.seqAppend(raw, maxSeq)
		case r >= 0x20 && r <= 0x2f:
			m.state = stEscInter
			m.seqAppend(raw, maxSeq)
		case r >= 0x30 && r <= 0x7e:
			m.seqAppend(raw, maxSeq)
			m.complete()
		default:
			m.abort()
			m.ground(r)
		}
	case stEscInter:
		switch {
		case r >= 0x20 && r <= 0x2f:
			m.seqAppend(raw, maxSeq)
		case r >= 0x30 && r <= 0x7e:
			m.seqAppend(raw, maxSeq)
			m.complete()
		default:
			m.abort()
			m.ground(r)
		}
	case stCSI:
		switch {
		case r >= 0x30 && r <= 0x3f:
			if m.inter {
				m.badCSI = true
			}
			m.seqAppend(raw, maxSeq)
		case r >= 0x20 && r <= 0x2f:
			m.inter = true
			m.seqAppend(raw, maxSeq)
		case r >= 0x40 && r <= 0x7e:
			m.seqAppend(raw, maxSeq)
			if r == 'm' && !m.inter && !m.badCSI && !m.seqOver && sgrParams(m.seq[2:len(m.seq)-1]) {
				m.sgr(m.seq[2 : len(m.seq)-1])
				m.state = stGround
				m.seq = m.seq[:0]
				return
			}
			m.complete()
		default:
			m.abort()
			m.ground(r)
		}
	case stStr:
		if m.strEsc {
			m.strEsc = false
			if r == '\\' {
				m.seqAppend([]byte{esc, '\\'}, maxStr)
				m.complete()
				return
			}
			// ESC inside a string ends it unterminated and starts a new sequence.
			m.abort()
			m.state = stEsc
			m.seq = append(m.seq[:0], esc)
			m.sym(r, raw)
			return
		}
		switch {
		case r == esc:
			m.strEsc = true
		case r == 0x07 && m.seqKind == ']':
			m.seqAppend(raw, maxStr)
			m.complete()
		case r == 0x9c || r == invalid+0x9c:
			m.seqAppend(raw, maxStr)
			m.complete()
		case r == '\n' || r == 0x18 || r == 0x1a:
			m.abort()
			m.ground(r)
		default:
			m.seqAppend(raw, maxStr)
		}
	}
}

func (m *machine) seqAppend(raw []byte, limit int) {
	if len(m.seq)+len(raw) > limit {
		m.seqOver = true
		return
	}
	m.seq = append(m.seq, raw...)
}

// complete ends a well-formed sequence that is not kept: dropped, or shown with ShowEscapes.
func (m *machine) complete() {
	if m.opt.ShowEscapes {
		m.showSeq()
	}
	m.state = stGround
	m.seq = m.seq[:0]
	m.seqOver = false
}

// abort ends a malformed or unterminated sequence: always shown.
func (m *machine) abort() {
	m.showSeq()
	m.state = stGround
	m.seq = m.seq[:0]
	m.seqOver = false
	m.strEsc = false
}

// showSeq writes the open sequence as visible text.
func (m *machine) showSeq() {
	b := m.seq
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			r = invalid + rune(b[0])
		}
		b = b[size:]
		switch {
		case r == esc:
			m.visible("^[", 2)
		case r == '\t':
			m.visible("^I", 2)
		case r == '\n':
			m.visible("^J", 2)
		case r == '\r':
			m.visible("^M", 2)
		default:
			m.ground(r)
		}
	}
	if m.seqOver {
		m.visible(ellipsis, 1)
	}
}

// ground handles one character in text.
func (m *machine) ground(r rune) {
	if m.cr {
		m.cr = false
		if r == '\n' && m.lines {
			m.endLine()
			return
		}
		m.visible("^M", 2)
	}
	switch {
	case r == esc:
		m.verb = false
		m.state = stEsc
		m.seq = append(m.seq[:0], esc)
		m.seqOver = false
	case r == '\n' && m.lines:
		m.endLine()
	case r == '\r' && m.lines:
		m.verb = false
		m.cr = true
	case r == '\t' && m.opt.TabWidth > 0:
		n := m.opt.TabWidth - m.col%m.opt.TabWidth
		m.visible("        "[:min(n, 8)], min(n, 8))
		for n -= 8; n > 0; n -= 8 {
			m.visible("        "[:min(n, 8)], min(n, 8))
		}
	case r < 0x20 || r == 0x7f:
		m.visible(string([]byte{'^', byte(r) ^ 0x40}), 2)
	case r >= 0x80 && r <= 0x9f:
		m.hexByte(byte(r))
	case r >= invalid:
		b := byte(r - invalid)
		if b >= 0x80 && b <= 0x9f {
			m.hexByte(b)
		} else {
			m.visible("\uFFFD", 1)
		}
	case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
		v := []byte("<U+0000>")
		for i := 0; i < 4; i++ {
			v[6-i] = hexdigitsU[(r>>(4*i))&0xf]
		}
		m.visible(string(v), 8)
	default:
		if m.capped {
			return
		}
		if m.opt.MaxRunes > 0 && m.col+1 > m.opt.MaxRunes {
			m.capped = true
			m.verb = false
			return
		}
		m.style()
		m.out = utf8.AppendRune(m.out, r)
		m.col++
	}
}

func (m *machine) hexByte(b byte) {
	m.visible(string([]byte{'<', hexdigits[b>>4], hexdigits[b&0xf], '>'}), 4)
}

// printable writes a run of printable ASCII, honouring the cap.
func (m *machine) printable(p []byte) {
	if m.capped {
		return
	}
	m.style()
	if m.opt.MaxRunes > 0 && m.col+len(p) > m.opt.MaxRunes {
		p = p[:m.opt.MaxRunes-m.col]
		m.capped = true
		m.verb = false
	}
	m.out = append(m.out, p...)
	m.col += len(p)
}

// visible writes s, which is n runes wide for the cap; it is not split.
func (m *machine) visible(s string, n int) {
	m.verb = false
	if m.capped {
		return
	}
	if m.opt.MaxRunes > 0 && m.col+n > m.opt.MaxRunes {
		m.capped = true
		return
	}
	m.style()
	m.out = append(m.out, s...)
	m.col += n
}

// style writes the carried colour state before the first text of a line.
func (m *machine) style() {
	if !m.needStyle {
		return
	}
	m.needStyle = false
	if len(m.carry) > 0 {
		m.verb = false
	}
	for _, s := range m.carry {
		m.out = append(m.out, s...)
		m.openStyle = true
	}
}

func (m *machine) endLine() {
	m.state = stGround
	if m.emitting {
		end := m.pos
		var text string
		if m.skim {
			m.openStyle = false
		} else {
			text = m.take()
		}
		m.dst = append(m.dst, Line{Text: text, Capped: m.capped, Raw: m.carried + int64(end-m.lineStart), EOL: true, Verbatim: m.verb, Carry: m.lineCarry})
		m.lineStart = end
		m.carried = 0
	}
	m.newLine()
}

// sgrParams says p holds only what an SGR may: digits, ';' and ':'.
func sgrParams(p []byte) bool {
	for _, c := range p {
		if (c < '0' || c > '9') && c != ';' && c != ':' {
			return false
		}
	}
	return true
}

// sgr applies one SGR sequence with parameters p: it is normalised (conceal dropped, anything before
// the last reset dropped), written unless StripSGR, and remembered for the next line.
func (m *machine) sgr(p []byte) {
	if m.opt.StripSGR {
		return
	}
	var pa, ka [24][]byte // enough for any common SGR without allocating
	params := pa[:0]
	for start := 0; start <= len(p); {
		end := start
		for end < len(p) && p[end] != ';' {
			end++
		}
		params = append(params, p[start:end])
		start = end + 1
	}
	reset := false
	kept := ka[:0]
	for i := 0; i < len(params); i++ {
		t := params[i]
		if containsColon(t) {
			kept = append(kept, t)
			continue
		}
		v := atoi(t)
		switch {
		case v == 0:
			reset = true
			kept = kept[:0]
		case v == 8: // conceal would hide text from the reader
		case v == 38 || v == 48 || v == 58:
			n := 1
			if i+1 < len(params) {
				switch atoi(params[i+1]) {
				case 5:
					n = 3
				case 2:
					n = 5
				}
			}
			if i+n > len(params) {
				n = len(params) - i
			}
			kept = append(kept, params[i:i+n]...)
			i += n - 1
		default:
			kept = append(kept, t)
		}
	}
	var seq []byte
	if len(kept) > 0 || reset {
		seq = append(seq, esc, '[')
		if reset {
			seq = append(seq, '0')
			if len(kept) > 0 {
				seq = append(seq, ';')
			}
		}
		for i, k := range kept {
			if i > 0 {
				seq = append(seq, ';')
			}
			seq = append(seq, k...)
		}
		seq = append(seq, 'm')
	} else {
		return // only conceal: nothing to do
	}
	if reset || len(kept) > 0 {
		m.carryOK = false
	}
	if reset {
		m.carry = m.carry[:0]
	}
	if len(kept) > 0 {
		carried := seq
		if reset { // the carried form needs no reset
			carried = append([]byte{esc, '['}, seq[4:]...)
		}
		if len(m.carry) == maxCarry {
			copy(m.carry, m.carry[1:])
			m.carry = m.carry[:maxCarry-1]
		}
		m.carry = append(m.carry, carried)
	}
	if m.needStyle || m.capped {
		return // the state is written with the line's first text (or the line is full)
	}
	if len(kept) == 0 && !m.openStyle {
		return // a reset with nothing to reset
	}
	m.out = append(m.out, seq...)
	m.openStyle = len(kept) > 0
}

func containsColon(b []byte) bool {
	for _, c := range b {
		if c == ':' {
			return true
		}
	}
	return false
}

// atoi parses decimal digits, saturating; empty is 0.
func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
		if n > 1<<20 {
			return 1 << 20
		}
	}
	return n
}
