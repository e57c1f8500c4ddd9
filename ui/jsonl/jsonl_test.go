package jsonl

import (
	"strings"
	"testing"
)

func TestShapes(t *testing.T) {
	for _, c := range []struct {
		name, in, want, kind string
	}{
		{"assistant text and tool",
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls -la"}}]}}`,
			`assistant Let me look. · ⚙ Bash {command="ls -la"}`, "assistant"},
		{"user tool result",
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"total 0\nfile"}]}}`,
			`user ↳ result total 0 file`, "user"},
		{"tool result error with blocks",
			`{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":[{"type":"text","text":"boom"}]}]}}`,
			`user ✗ result boom`, "user"},
		{"result",
			`{"type":"result","subtype":"success","is_error":false,"duration_ms":12345,"num_turns":4,"result":"Done.","total_cost_usd":0.0123}`,
			`result success 12.3s 4 turns $0.0123 Done.`, "result"},
		{"result error",
			`{"type":"result","subtype":"error_max_turns","is_error":true}`,
			`result error_max_turns`, "result"},
		{"system init",
			`{"type":"system","subtype":"init","model":"claude-x","cwd":"/workspace","tools":["Bash","Read"],"session_id":"s"}`,
			`system init model=claude-x cwd=/workspace 2 tools`, "system"},
		{"thinking",
			`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm"}]}}`,
			`assistant thinking hmm`, "assistant"},
		{"generic role content",
			`{"role":"user","content":"hello\tthere"}`,
			`user hello there`, "user"},
		{"openai tool calls",
			`{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`,
			`assistant · ⚙ get_weather {city=Paris}`, "assistant"},
		{"event data",
			`{"event":"progress","data":{"step":3,"of":10}}`,
			`progress {step=3 of=10}`, "progress"},
		{"generic typed",
			`{"type":"log","level":"warn","msg":"disk low","pct":91}`,
			`log level=warn msg="disk low" pct=91`, "log"},
		{"streaming envelope",
			`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"All tests pass."}}`,
			`item.completed agent_message All tests pass.`, "item.completed"},
		{"command item",
			`{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}`,
			`item.started ⚙ exec bash -lc ls status=in_progress`, "item.started"},
		{"content block delta",
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
			`content_block_delta Hel index=0`, "content_block_delta"},
		{"untyped object",
			`{"b":1,"msg":"m","a":[1,2]}`,
			`msg=m b=1 a=[1, 2]`, ""},
	} {
		r := Render(c.in, 0)
		if !r.JSON || r.Truncated {
			t.Errorf("%s: JSON %v truncated %v", c.name, r.JSON, r.Truncated)
		}
		if got := r.String(); got != c.want {
			t.Errorf("%s:\n got  %q\n want %q", c.name, got, c.want)
		}
		if r.Kind != c.kind {
			t.Errorf("%s: kind %q want %q", c.name, r.Kind, c.kind)
		}
	}
}

func TestClasses(t *testing.T) {
	r := Render(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Edit","input":{}}]}}`, 0)
	got := r.Style(func(c Class, s string) string {
		switch c {
		case Type:
			return "<type>" + s + "</type>"
		case Tool:
			return "<tool>" + s + "</tool>"
		}
		return s
	})
	if got != "<type>assistant</type> ⚙ <tool>Edit</tool> {}" {
		t.Errorf("styled %q", got)
	}
	r = Render(`{"type":"result","subtype":"success"}`, 0)
	if len(r.Segments) != 3 || r.Segments[2].Class != Success {
		t.Errorf("result segments %+v", r.Segments)
	}
}

func TestInvalidAndHostile(t *testing.T) {
	for _, in := range []string{"plain text", "{not json", `{"a":1} trailing`, "[1,2]", "", `"str"`} {
		r := Render(in, 0)
		if r.JSON {
			t.Errorf("%q: JSON true", in)
		}
		if r.String() != in {
			t.Errorf("%q: rendered %q", in, r.String())
		}
	}
	r := Render("\x1b]52;c;AAAA\x07text", 0)
	if r.JSON || r.String() != "text" {
		t.Errorf("escape in plain line: %q", r.String())
	}
	r = Render(`{"type":"assistant","message":{"content":[{"type":"text","text":"a\u001b]0;pwn\u0007b\u202ec\u009b"}]}}`, 0)
	if got := r.String(); got != "assistant ab<U+202E>c<9b>" {
		t.Errorf("hostile JSON string: %q", got)
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	Render(`{"a":`+deep+`}`, 80) // must not panic or recurse without bound
}

func TestTruncatedJSON(t *testing.T) {
	r := Render(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"echo hel`, 0)
	if !r.JSON || !r.Truncated {
		t.Fatalf("JSON %v truncated %v", r.JSON, r.Truncated)
	}
	if got := r.String(); !strings.HasPrefix(got, "assistant ⚙ Bash") || !strings.HasSuffix(got, "…") {
		t.Errorf("truncated render %q", got)
	}
}

func TestWidth(t *testing.T) {
	long := strings.Repeat("word ", 100)
	in := `{"type":"assistant","message":{"content":[{"type":"text","text":"` + long + `"},{"type":"tool_use","name":"Bash","input":{"command":"make test"}}]}}`
	for _, w := range []int{30, 60, 120} {
		r := Render(in, w)
		if r.Width() > w {
			t.Errorf("width %d: rendered %d: %q", w, r.Width(), r.String())
		}
		if w >= 60 && !strings.Contains(r.String(), "Bash") {
			t.Errorf("width %d: tool name pushed off by long text: %q", w, r.String())
		}
		if !strings.Contains(r.String(), "…") {
			t.Errorf("width %d: no elision mark: %q", w, r.String())
		}
	}
	r := Render(`{"role":"user","content":"世界世界世界世界世界"}`, 10)
	if r.Width() > 10 {
		t.Errorf("wide runes: width %d %q", r.Width(), r.String())
	}
	if short := Render(`{"role":"user","content":"hi"}`, 80); short.String() != "user hi" {
		t.Errorf("short %q", short.String())
	}
}

// BenchmarkRender measures rendering a typical Claude Code assistant line at 160 columns.
func BenchmarkRender(b *testing.B) {
	line := `{"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"m","content":[{"type":"text","text":"` +
		strings.Repeat("I will look at the failing test and fix it. ", 20) +
		`"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./...","description":"run tests"}}]},"session_id":"s"}`
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		Render(line, 160)
	}
}
