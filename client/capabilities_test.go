package client

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseCapabilitiesBridgeID: a bridge ID is kept only when it is a short token; anything a
// hostile document sends otherwise reads as no ID, and the rest of the document still counts.
func TestParseCapabilitiesBridgeID(t *testing.T) {
	doc := func(id string) []byte {
		b, err := json.Marshal(map[string]any{
			"info":  map[string]any{"x-sandscope-bridge-id": id},
			"paths": map[string]any{"/v1/sandbox/{id}/processes": map[string]any{}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct{ name, id, want string }{
		{"local bridge ID", "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz"},
		{"dashes and capitals", "Bridge-0001", "Bridge-0001"},
		{"64 characters", strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{"path traversal", "../x", ""},
		{"long path traversal", "../../../../etc/passwd", ""},
		{"slash", "abcdefgh/ijk", ""},
		{"1 MiB", strings.Repeat("a", 1<<20), ""},
		{"65 characters", strings.Repeat("a", 65), ""},
		{"too short", "abc", ""},
		{"control characters", "abcdefgh\x1b[2J", ""},
		{"newline", "abcdefgh\nijk", ""},
		{"NUL", "abcdefgh\x00", ""},
		{"non-ASCII", "abcdefghé", ""},
		{"spaces", "abcd efgh", ""},
		{"absent", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps, err := ParseCapabilities(doc(tc.id))
			if err != nil || caps.BridgeID != tc.want || caps.Dialect != DialectPreview {
				t.Fatalf("got %q (%s, %v), want %q", caps.BridgeID, caps.Dialect, err, tc.want)
			}
		})
	}
	caps, err := ParseCapabilities([]byte(`{"paths":{"/v1/sandbox/{id}/processes":{}}}`))
	if err != nil || caps.BridgeID != "" {
		t.Fatalf("no info: %q %v", caps.BridgeID, err)
	}
	for _, raw := range []string{`12345678901`, `{"a":1}`, `["abcdefghij"]`, `null`, `true`} {
		caps, err := ParseCapabilities([]byte(`{"info":{"x-sandscope-bridge-id":` + raw + `},"paths":{"/v1/sandbox/{id}/processes":{}}}`))
		if err != nil || caps.BridgeID != "" || caps.Dialect != DialectPreview {
			t.Fatalf("bridge ID %s: got %q (%s, %v), want no ID and the document read", raw, caps.BridgeID, caps.Dialect, err)
		}
	}
}
