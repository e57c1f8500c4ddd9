package localbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// object is a JSON object that keeps its keys in order. The published bridge writes every body
// with JSON.stringify, which keeps insertion order; a Go map would write its keys sorted. The
// OpenAPI document is edited through it so the published part keeps the published order.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

// obj builds an object from key, value pairs, in that order (values are encoded with encodeJS).
func obj(kv ...any) *object {
	o := &object{vals: map[string]json.RawMessage{}}
	for i := 0; i+1 < len(kv); i += 2 {
		o.set(kv[i].(string), kv[i+1])
	}
	return o
}

// parseObject reads one JSON object, keeping its key order (a repeated key keeps its first place
// and its last value, as JSON.parse does).
func parseObject(raw []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, seen := o.vals[k]; !seen {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return o, nil
}

// child parses the object under key (nil when it is absent or no object).
func (o *object) child(key string) *object {
	raw, ok := o.vals[key]
	if !ok {
		return nil
	}
	c, err := parseObject(raw)
	if err != nil {
		return nil
	}
	return c
}

// set replaces key's value in place, or appends key when it is new.
func (o *object) set(key string, v any) {
	raw, err := encodeJS(v)
	if err != nil {
		// only values built in this package reach here; none fails to encode
		raw = json.RawMessage("null")
	}
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = raw
}

// MarshalJSON writes the keys in order, compactly.
func (o *object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := encodeJS(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		if err := json.Compact(&buf, o.vals[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// encodeJS encodes v as JSON.stringify would: compact, without HTML escaping of <, > and &.
func encodeJS(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
