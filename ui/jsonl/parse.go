package jsonl

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

// parse reads one JSON value from line, keeping object key order (numbers as json.Number). A value
// cut short by the end of the line is returned as far as it was read with truncated set; ok is false
// when line is not JSON (a syntax error, trailing garbage, or too deep).
func parse(line string) (v any, truncated, ok bool) {
	s := strings.TrimSpace(line)
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return nil, false, false
	}
	p := &parser{s: s}
	v, err := p.value(0)
	switch err {
	case nil:
		p.space()
		if p.i != len(p.s) {
			return nil, false, false
		}
		return v, false, true
	case errEOF:
		return v, true, true
	}
	return nil, false, false
}

type parseError string

func (e parseError) Error() string { return string(e) }

const (
	errEOF    = parseError("unexpected end of JSON")
	errSyntax = parseError("JSON syntax error")
)

// parser is a small JSON reader: a hand-written one is several times faster than encoding/json's
// token API, and it can return what it read of a value cut short.
type parser struct {
	s string
	i int
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads one value; on error it returns what it has read so far.
func (p *parser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errSyntax
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, errEOF
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		o := &object{}
		for first := true; ; first = false {
			p.space()
			if p.i >= len(p.s) {
				return o, errEOF
			}
			if p.s[p.i] == '}' {
				p.i++
				return o, nil
			}
			if !first {
				if p.s[p.i] != ',' {
					return o, errSyntax
				}
				p.i++
				p.space()
				if p.i >= len(p.s) {
					return o, errEOF
				}
			}
			if p.s[p.i] != '"' {
				return o, errSyntax
			}
			k, err := p.str()
			if err != nil {
				return o, err
			}
			p.space()
			if p.i >= len(p.s) {
				return o, errEOF
			}
			if p.s[p.i] != ':' {
				return o, errSyntax
			}
			p.i++
			v, err := p.value(depth + 1)
			if v != nil || err == nil {
				o.keys = append(o.keys, k)
				o.vals = append(o.vals, v)
			}
			if err != nil {
				return o, err
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		for first := true; ; first = false {
			p.space()
			if p.i >= len(p.s) {
				return a, errEOF
			}
			if p.s[p.i] == ']' {
				p.i++
				return a, nil
			}
			if !first {
				if p.s[p.i] != ',' {
					return a, errSyntax
				}
				p.i++
			}
			v, err := p.value(depth + 1)
			if v != nil || err == nil {
				a = append(a, v)
			}
			if err != nil {
				return a, err
			}
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		for p.i < len(p.s) && strings.IndexByte("+-0123456789.eE", p.s[p.i]) >= 0 {
			p.i++
		}
		return json.Number(p.s[start:p.i]), nil
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	}
	return nil, errSyntax
}

func (p *parser) lit(w string) error {
	rest := p.s[p.i:]
	if strings.HasPrefix(rest, w) {
		p.i += len(w)
		return nil
	}
	if len(rest) < len(w) && strings.HasPrefix(w, rest) {
		p.i = len(p.s)
		return errEOF
	}
	return errSyntax
}

// str reads a string starting at its opening quote.
func (p *parser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			s := p.s[start:p.i]
			p.i++
			return s, nil
		}
		if c == '\\' {
			return p.strSlow(start)
		}
		p.i++
	}
	return "", errEOF
}

// strSlow decodes a string with escapes, from start (just after the opening quote).
func (p *parser) strSlow(start int) (string, error) {
	var b strings.Builder
	b.WriteString(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			return "", errEOF
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					if x, err := p.hex4(); err == nil {
						if d := utf16.DecodeRune(r, x); d != utf8.RuneError {
							r2 = d
						} else {
							p.i = save
						}
					} else if err == errEOF {
						return "", err
					} else {
						p.i = save
					}
				}
				r = r2
			}
			b.WriteRune(r)
		default:
			return "", errSyntax
		}
	}
	return "", errEOF
}

func (p *parser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		p.i = len(p.s)
		return 0, errEOF
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, errSyntax
		}
	}
	p.i += 4
	return r, nil
}
