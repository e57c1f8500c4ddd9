package logbuf

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"
)

// Query is a substring to look for in entries' text (SGR sequences ignored).
type Query struct {
	Text       string
	IgnoreCase bool
}

// Match says l's text contains the query. An empty query matches everything.
func (q Query) Match(l Line) bool {
	return q.matcher()(l)
}

func (q Query) matcher() func(Line) bool {
	if q.Text == "" {
		return func(Line) bool { return true }
	}
	if !q.IgnoreCase {
		return func(l Line) bool { return strings.Contains(Plain(l.Text), q.Text) }
	}
	ascii := true
	for i := 0; i < len(q.Text); i++ {
		if q.Text[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		needle := strings.ToLower(q.Text)
		return func(l Line) bool { return containsFoldASCII(Plain(l.Text), needle) }
	}
	needle := strings.ToLower(q.Text)
	return func(l Line) bool { return strings.Contains(strings.ToLower(Plain(l.Text)), needle) }
}

// containsFoldASCII reports whether s contains needle (lower-case ASCII), ignoring ASCII case.
func containsFoldASCII(s, needle string) bool {
	n := len(needle)
	first := needle[0]
	for i := 0; i+n <= len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != first {
			continue
		}
		j := 1
		for ; j < n; j++ {
			d := s[i+j]
			if d >= 'A' && d <= 'Z' {
				d += 'a' - 'A'
			}
			if d != needle[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// Plain returns display text without its SGR sequences (the only escapes sanitised text holds).
func Plain(s string) string {
	i := strings.IndexByte(s, 0x1b)
	if i < 0 {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for i >= 0 {
		sb.WriteString(s[:i])
		s = s[i+1:]
		// skip "[" params "m"
		j := 0
		for j < len(s) && s[j] != 'm' {
			j++
		}
		if j < len(s) {
			j++
		}
		s = s[j:]
		i = strings.IndexByte(s, 0x1b)
	}
	sb.WriteString(s)
	return sb.String()
}

// chunk returns the entries of page p (indices p*64…) that exist now, partial lines excluded. It
// builds them under the lock (one page at a time, so appends and frames go on between pages) without
// disturbing the cache of drawn rows.
func (b *Buffer) chunk(p int) ([]Line, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	from, to := p*pageSize, min((p+1)*pageSize, b.committed)
	if from >= to {
		return nil, nil
	}
	return b.buildRange(from, to, make([]Line, 0, to-from)), nil
}

// Search returns the index of the first entry at or after from (Forward), or at or before from
// (Backward), whose text contains q, or -1 when there is none. It reads spilled entries from disk as
// needed without holding the buffer's lock, and stops early when ctx is done.
func (b *Buffer) Search(ctx context.Context, q Query, from int, dir Direction) (int, error) {
	match := q.matcher()
	if dir != Backward {
		dir = Forward
	}
	total := b.Len()
	if total == 0 {
		return -1, nil
	}
	if dir == Forward && from < 0 {
		from = 0
	}
	if dir == Backward && from >= total {
		from = total - 1
	}
	for i := from; i >= 0 && i < total; {
		if err := ctx.Err(); err != nil {
			return -1, err
		}
		p := i / pageSize
		lines, err := b.chunk(p)
		if err != nil {
			return -1, err
		}
		if i-p*pageSize >= len(lines) { // past the final entries: the partial lines
			l, ok := b.Line(i)
			if ok && match(l) {
				return i, nil
			}
			i += int(dir)
			continue
		}
		for k := i - p*pageSize; k >= 0 && k < len(lines); k += int(dir) {
			if match(lines[k]) {
				return p*pageSize + k, nil
			}
		}
		if dir == Forward {
			i = p*pageSize + len(lines) // a short chunk is followed by the partial lines
		} else {
			i = p*pageSize - 1
		}
	}
	return -1, nil
}

// Filter is a view of the entries a predicate accepts, kept as an index of matching positions (4
// bytes per match). Update brings it up to date incrementally; partial lines at the tail are matched
// afresh on every call.
type Filter struct {
	b    *Buffer
	pred func(Line) bool

	upd  sync.Mutex // serialises Update calls
	mu   sync.Mutex // guards idx and next
	idx  []uint32   // matching final indices, ascending
	next int        // next final index to examine
}

// NewFilter makes an empty filter view; call Update to fill it. pred must not call the Buffer.
func (b *Buffer) NewFilter(pred func(Line) bool) *Filter {
	return &Filter{b: b, pred: pred}
}

// Update examines up to max new final entries (max <= 0: all of them) and reports whether the filter
// has caught up with the buffer. It may run on its own goroutine: readers of the filter see matches
// appear page by page and are never blocked for the whole scan.
func (f *Filter) Update(ctx context.Context, max int) (bool, error) {
	f.upd.Lock()
	defer f.upd.Unlock()
	f.mu.Lock()
	next := f.next
	f.mu.Unlock()
	examined := 0
	var found []uint32
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		f.b.mu.Lock()
		committed := f.b.committed
		f.b.mu.Unlock()
		if next >= committed {
			return true, nil
		}
		if max > 0 && examined >= max {
			return false, nil
		}
		p := next / pageSize
		lines, err := f.b.chunk(p)
		if err != nil {
			return false, err
		}
		found = found[:0]
		for k := next - p*pageSize; k < len(lines); k++ {
			if f.pred(lines[k]) {
				found = append(found, uint32(p*pageSize+k))
			}
			next++
			examined++
		}
		f.mu.Lock()
		f.idx = append(f.idx, found...)
		f.next = next
		f.mu.Unlock()
	}
}

// tail returns the buffer indices of matching partial lines.
func (f *Filter) tail() []int {
	b := f.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.next < b.committed {
		return nil // not caught up: partial lines would jump the queue
	}
	var out []int
	for i, s := range b.partials {
		if f.pred(b.partialLine(s)) {
			out = append(out, b.committed+i)
		}
	}
	return out
}

// Len is the number of matching entries found so far.
func (f *Filter) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.idx) + len(f.tail())
}

// Index maps position j in the filter to the buffer index, or -1 when out of range.
func (f *Filter) Index(j int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j < 0 {
		return -1
	}
	if j < len(f.idx) {
		return int(f.idx[j])
	}
	t := f.tail()
	if j-len(f.idx) < len(t) {
		return t[j-len(f.idx)]
	}
	return -1
}

// Line returns the entry at filter position j.
func (f *Filter) Line(j int) (Line, bool) {
	i := f.Index(j)
	if i < 0 {
		return Line{}, false
	}
	return f.b.Line(i)
}

// Lines returns up to n entries from filter position from.
func (f *Filter) Lines(from, n int) []Line {
	var out []Line
	for j := max(from, 0); j < from+n; j++ {
		l, ok := f.Line(j)
		if !ok {
			break
		}
		out = append(out, l)
	}
	return out
}

// Position returns the filter position of the first match at buffer index i or later (len when
// none), to keep a view anchored when the filter changes.
func (f *Filter) Position(i int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	lo, hi := 0, len(f.idx)
	for lo < hi {
		mid := (lo + hi) / 2
		if int(f.idx[mid]) < i {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
