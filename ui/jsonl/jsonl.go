package jsonl

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"sandscope/sanitize"
)

// Class says what a segment is, for styling.
type Class uint8

const (
	Plain   Class = iota // ordinary text
	Faint                // separators, punctuation, "…", secondary details
	Type                 // the event type: "assistant", "result", "system"
	Role                 // a message role: "user", "assistant"
	Tool                 // a tool name in a tool call
	Name                 // other names: subtype, event name, model
	Text                 // message text
	Key                  // a field name in a key=value summary
	Error                // an error flag or failed result
	Success              // a successful result
)

// Segment is a piece of rendered text with its class. Text is sanitised.
type Segment struct {
	Class Class
	Text  string
}

// Rendered is one rendered line.
type Rendered struct {
	Segments []Segment
	// JSON says the line was a JSON object (possibly cut short).
	JSON bool
	// Truncated says the JSON ended early (the line was capped or cut); what was there is rendered.
	Truncated bool
	// Kind is the event's headline (type, role or event), "" when none.
	Kind string
}

// String is the rendered text without styles.
func (r Rendered) String() string {
	var sb strings.Builder
	for _, s := range r.Segments {
		sb.WriteString(s.Text)
	}
	return sb.String()
}

// Style joins the segments, passing each through style (which may return text unchanged).
func (r Rendered) Style(style func(Class, string) string) string {
	var sb strings.Builder
	for _, s := range r.Segments {
		sb.WriteString(style(s.Class, s.Text))
	}
	return sb.String()
}

// Width is the display width of the rendered text.
func (r Rendered) Width() int {
	w := 0
	for _, s := range r.Segments {
		w += width(s.Text)
	}
	return w
}

var textOpts = sanitize.Options{StripSGR: true, TabWidth: -1}

// clean folds whitespace runs to one space and sanitises.
func clean(s string) string {
	if strings.ContainsAny(s, "\n\r\t") || strings.Contains(s, "  ") {
		s = strings.Join(strings.Fields(s), " ")
	}
	return sanitize.String(s, textOpts)
}

// Render renders line within width display columns (width <= 0: no limit).
func Render(line string, width int) Rendered {
	v, truncated, ok := parse(line)
	obj, isObj := v.(*object)
	if !ok || !isObj {
		txt := sanitize.String(line, textOpts)
		r := Rendered{Segments: []Segment{{Plain, txt}}}
		r.Segments = fit(r.Segments, width)
		return r
	}
	b := &builder{}
	kind := b.top(obj)
	if truncated {
		b.add(Faint, " …")
	}
	return Rendered{Segments: fit(b.segs, width), JSON: true, Truncated: truncated, Kind: kind}
}

type builder struct {
	segs []Segment
}

func (b *builder) add(c Class, s string) {
	if s == "" {
		return
	}
	if n := len(b.segs); n > 0 && b.segs[n-1].Class == c {
		b.segs[n-1].Text += s
		return
	}
	b.segs = append(b.segs, Segment{c, s})
}

func (b *builder) sep() {
	if len(b.segs) > 0 {
		b.add(Faint, " · ")
	}
}

func (b *builder) text(s string) {
	b.add(Text, clean(s))
}

// top renders a top-level object and returns its headline.
func (b *builder) top(o *object) string {
	typ := o.str("type")
	switch {
	case typ == "assistant" || typ == "user":
		b.add(Type, clean(typ))
		if m, ok := o.get("message").(*object); ok {
			b.message(m, false)
		} else {
			b.rest(o, "type")
		}
		return typ
	case typ == "result":
		b.result(o)
		return typ
	case typ == "system":
		b.add(Type, "system")
		if st := o.str("subtype"); st != "" {
			b.add(Plain, " ")
			b.add(Name, clean(st))
		}
		for _, k := range []string{"model", "cwd", "permissionMode"} {
			if s := o.str(k); s != "" {
				b.add(Plain, " ")
				b.kv(k, s)
			}
		}
		if t, ok := o.get("tools").([]any); ok {
			b.add(Plain, " ")
			b.add(Faint, fmt.Sprintf("%d tools", len(t)))
		}
		if s := o.str("message"); s != "" {
			b.add(Plain, " ")
			b.text(s)
		}
		return typ
	case typ == "stream_event":
		b.add(Type, "stream_event")
		if ev, ok := o.get("event").(*object); ok {
			b.add(Plain, " ")
			b.block(ev)
		}
		return typ
	case o.has("role") && (o.has("content") || o.has("tool_calls")):
		r := o.str("role")
		b.message(o, true)
		return r
	case o.has("event") && o.has("data"):
		ev := scalar(o.get("event"))
		b.add(Type, clean(ev))
		b.add(Plain, " ")
		b.value(o.get("data"), 0)
		return ev
	case typ != "":
		b.add(Type, clean(typ))
		if st := o.str("subtype"); st != "" {
			b.add(Plain, " ")
			b.add(Name, clean(st))
		}
		skip := []string{"type", "subtype"}
		// Streaming envelopes (item.completed, content_block_start…) wrap one content block.
		for _, k := range []string{"item", "content_block", "part", "delta"} {
			if inner, ok := o.get(k).(*object); ok && inner.has("type") {
				b.add(Plain, " ")
				b.block(inner)
				skip = append(skip, k)
				break
			}
		}
		b.rest(o, skip...)
		return typ
	}
	b.rest(o)
	return ""
}

// message renders {role, content, tool_calls}; withRole shows the role first.
func (b *builder) message(m *object, withRole bool) {
	if withRole {
		b.add(Role, clean(m.str("role")))
	}
	switch c := m.get("content").(type) {
	case string:
		b.add(Plain, " ")
		b.text(c)
	case []any:
		for i, blk := range c {
			if i == 0 {
				b.add(Plain, " ")
			} else {
				b.sep()
			}
			if bo, ok := blk.(*object); ok {
				b.block(bo)
			} else {
				b.value(blk, 1)
			}
		}
	case nil:
	default:
		b.add(Plain, " ")
		b.value(c, 1)
	}
	if calls, ok := m.get("tool_calls").([]any); ok {
		for _, c := range calls {
			co, ok := c.(*object)
			if !ok {
				continue
			}
			b.sep()
			fn, _ := co.get("function").(*object)
			if fn == nil {
				fn = co
			}
			b.add(Faint, "⚙ ")
			b.add(Tool, clean(fn.str("name")))
			if args := fn.get("arguments"); args != nil {
				b.add(Plain, " ")
				if s, ok := args.(string); ok { // OpenAI sends arguments as a JSON string
					if v, _, ok := parse(s); ok {
						args = v
					}
				}
				b.value(args, 1)
			}
		}
	}
}

// block renders one content block.
func (b *builder) block(o *object) {
	switch t := o.str("type"); t {
	case "text", "input_text", "output_text":
		b.text(o.str("text"))
	case "thinking", "redacted_thinking":
		b.add(Name, t)
		b.add(Plain, " ")
		b.text(o.str("thinking"))
	case "tool_use", "server_tool_use":
		b.add(Faint, "⚙ ")
		b.add(Tool, clean(o.str("name")))
		if in := o.get("input"); in != nil {
			b.add(Plain, " ")
			b.value(in, 1)
		}
	case "tool_result":
		if e, _ := o.get("is_error").(bool); e {
			b.add(Error, "✗ result")
		} else {
			b.add(Name, "↳ result")
		}
		b.add(Plain, " ")
		switch c := o.get("content").(type) {
		case string:
			b.text(c)
		case []any:
			for i, x := range c {
				if i > 0 {
					b.add(Plain, " ")
				}
				if xo, ok := x.(*object); ok && xo.has("text") {
					b.text(xo.str("text"))
				} else {
					b.value(x, 1)
				}
			}
		default:
			b.value(c, 1)
		}
	case "image":
		b.add(Faint, "[image]")
	case "text_delta":
		b.text(o.str("text"))
	case "command_execution":
		b.add(Faint, "⚙ ")
		b.add(Tool, "exec")
		b.add(Plain, " ")
		b.text(o.str("command"))
		b.rest(o, "type", "command", "id", "aggregated_output")
	case "agent_message", "reasoning":
		b.add(Name, t)
		b.add(Plain, " ")
		b.text(o.str("text"))
	default:
		if t != "" {
			b.add(Name, clean(t))
			b.add(Plain, " ")
		}
		b.rest(o, "type")
	}
}

func (b *builder) result(o *object) {
	b.add(Type, "result")
	st := o.str("subtype")
	isErr, _ := o.get("is_error").(bool)
	if st != "" {
		b.add(Plain, " ")
		if isErr || strings.HasPrefix(st, "error") {
			b.add(Error, clean(st))
		} else {
			b.add(Success, clean(st))
		}
	} else if isErr {
		b.add(Plain, " ")
		b.add(Error, "error")
	}
	if ms, ok := o.get("duration_ms").(json.Number); ok {
		if f, err := ms.Float64(); err == nil {
			b.add(Plain, " ")
			b.add(Faint, strconv.FormatFloat(f/1000, 'f', 1, 64)+"s")
		}
	}
	if n, ok := o.get("num_turns").(json.Number); ok {
		b.add(Plain, " ")
		b.add(Faint, clean(n.String())+" turns")
	}
	for _, k := range []string{"total_cost_usd", "cost_usd"} {
		if c, ok := o.get(k).(json.Number); ok {
			if f, err := c.Float64(); err == nil {
				b.add(Plain, " ")
				b.add(Faint, "$"+strconv.FormatFloat(f, 'f', 4, 64))
			}
			break
		}
	}
	if s := o.str("result"); s != "" {
		b.add(Plain, " ")
		b.text(s)
	}
}

// kv renders key=value for a scalar.
func (b *builder) kv(k, v string) {
	b.add(Key, clean(k))
	b.add(Faint, "=")
	b.add(Plain, clean(v))
}

// rest renders the object's remaining fields as key=value pairs, interesting keys first.
func (b *builder) rest(o *object, skip ...string) {
	first := true
	for _, k := range o.orderedKeys(skip) {
		if first {
			first = false
			if len(b.segs) > 0 {
				b.add(Plain, " ")
			}
		} else {
			b.add(Plain, " ")
		}
		b.add(Key, clean(k))
		b.add(Faint, "=")
		b.value(o.get(k), 1)
	}
}

// value renders any JSON value compactly; depth limits nesting.
func (b *builder) value(v any, depth int) {
	switch x := v.(type) {
	case nil:
		b.add(Faint, "null")
	case string:
		if depth == 0 {
			b.text(x)
		} else {
			c := clean(x)
			if c == "" || strings.ContainsAny(c, " =\"{}[],") {
				c = `"` + c + `"`
			}
			b.add(Text, c)
		}
	case json.Number:
		b.add(Plain, clean(x.String()))
	case bool:
		b.add(Plain, strconv.FormatBool(x))
	case []any:
		if depth >= 3 {
			b.add(Faint, fmt.Sprintf("[%d]", len(x)))
			return
		}
		b.add(Faint, "[")
		for i, e := range x {
			if i > 0 {
				b.add(Faint, ", ")
			}
			if i == 8 {
				b.add(Faint, fmt.Sprintf("+%d", len(x)-i))
				break
			}
			b.value(e, depth+1)
		}
		b.add(Faint, "]")
	case *object:
		if depth >= 3 {
			b.add(Faint, fmt.Sprintf("{%d}", len(x.keys)))
			return
		}
		b.add(Faint, "{")
		for i, k := range x.keys {
			if i > 0 {
				b.add(Faint, " ")
			}
			b.add(Key, clean(k))
			b.add(Faint, "=")
			b.value(x.vals[i], depth+1)
		}
		b.add(Faint, "}")
	}
}

// object is a JSON object that keeps its key order.
type object struct {
	keys []string
	vals []any
}

func (o *object) get(k string) any {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i]
		}
	}
	return nil
}

func (o *object) has(k string) bool {
	for _, key := range o.keys {
		if key == k {
			return true
		}
	}
	return false
}

func (o *object) str(k string) string {
	s, _ := o.get(k).(string)
	return s
}

// priority orders the keys a generic summary shows first.
var priority = map[string]int{
	"type": 1, "kind": 2, "event": 3, "level": 4, "role": 5, "name": 6, "tool": 7, "status": 8,
	"msg": 9, "message": 10, "text": 11, "error": 12,
}

func (o *object) orderedKeys(skip []string) []string {
	var ks []string
	for _, k := range o.keys {
		skipped := false
		for _, s := range skip {
			if k == s {
				skipped = true
			}
		}
		if !skipped {
			ks = append(ks, k)
		}
	}
	sort.SliceStable(ks, func(i, j int) bool {
		pi, pj := priority[ks[i]], priority[ks[j]]
		if pi == 0 {
			pi = 100
		}
		if pj == 0 {
			pj = 100
		}
		return pi < pj
	})
	return ks
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// fit cuts segments to cols display columns, ending with "…" when something was cut. Text segments
// share what the other segments leave, so a long message does not push later fields off the line.
func fit(segs []Segment, cols int) []Segment {
	if cols <= 0 {
		return segs
	}
	total, fixed, texts := 0, 0, 0
	for _, s := range segs {
		w := width(s.Text)
		total += w
		if s.Class == Text {
			texts++
		} else {
			fixed += w
		}
	}
	if total <= cols {
		return segs
	}
	out := make([]Segment, 0, len(segs))
	if texts > 0 && fixed < cols {
		avail := cols - fixed
		// Give each text its share; short texts give their unused share to the rest.
		var lens []int
		for _, s := range segs {
			if s.Class == Text {
				lens = append(lens, width(s.Text))
			}
		}
		shares := share(lens, avail)
		ti := 0
		for _, s := range segs {
			if s.Class == Text {
				if lens[ti] > shares[ti] {
					s.Text = cut(s.Text, shares[ti])
				}
				ti++
			}
			if s.Text != "" {
				out = append(out, s)
			}
		}
		segs = out
		out = make([]Segment, 0, len(segs))
	}
	used := 0
	for _, s := range segs {
		w := width(s.Text)
		if used+w <= cols {
			out = append(out, s)
			used += w
			continue
		}
		if rest := cols - used; rest > 0 {
			out = append(out, Segment{s.Class, cut(s.Text, rest)})
		}
		break
	}
	return out
}

// share splits avail columns among texts of the given lengths: short ones keep their length, the
// rest split what remains equally.
func share(lens []int, avail int) []int {
	out := make([]int, len(lens))
	left, open := avail, len(lens)
	done := make([]bool, len(lens))
	for changed := true; changed && open > 0; {
		changed = false
		each := left / open
		for i, l := range lens {
			if !done[i] && l <= each {
				out[i], done[i] = l, true
				left -= l
				open--
				changed = true
			}
		}
	}
	if open > 0 {
		each := left / open
		for i := range lens {
			if !done[i] {
				out[i] = each
			}
		}
	}
	return out
}

// cut shortens s to at most w columns, ending with "…".
func cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	if ascii(s) {
		return s[:w-1] + "…"
	}
	return runewidth.Truncate(s, w, "…")
}

// width is the display width of s (ASCII needs no table lookups).
func width(s string) int {
	if ascii(s) {
		return len(s)
	}
	return runewidth.StringWidth(s)
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
