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

// TestParseCapabilitiesListPath: the sandbox list is found where the document announces it (the
// GET operation "listSandboxes" marked as an extension), on any bridge; only the other
// extensions make a bridge Local.
func TestParseCapabilitiesListPath(t *testing.T) {
	const preview = `"/v1/sandbox/{id}/processes":{}`
	const stable = `"/v1/sandbox/{id}/exec":{}`
	list := func(path string) string {
		return `"` + path + `":{"x-sandscope-extension":true,"get":{"operationId":"listSandboxes","x-sandscope-extension":true}}`
	}
	const stop = `"/v1/sandbox/{id}/stop":{"x-sandscope-extension":true,"post":{"operationId":"stopSandbox"}}`
	const legacy = `"/v1/sandbox":{"post":{"operationId":"createSandbox"},"get":{"operationId":"listSandboxesLegacy","x-sandscope-extension":true}}`
	for _, tc := range []struct {
		name, paths string
		listPath    string
		local       bool
	}{
		{"local bridge, preview", preview + "," + legacy + "," + list("/v1/x-sandscope/sandboxes") + "," + stop, "/v1/x-sandscope/sandboxes", true},
		{"local bridge, stable", stable + "," + list("/v1/x-sandscope/sandboxes") + "," + stop, "/v1/x-sandscope/sandboxes", true},
		{"older local bridge", preview + `,"/v1/sandbox":{"get":{"operationId":"listSandboxes","x-sandscope-extension":true}},` + stop, "/v1/sandbox", true},
		{"registry Worker", stable + "," + list("/v1/x-sandscope/sandboxes"), "/v1/x-sandscope/sandboxes", false},
		{"published bridge", stable + `,"/v1/sandbox":{"post":{"operationId":"createSandbox"}}`, "", false},
		{"list not marked", stable + `,"/v1/x-sandscope/sandboxes":{"get":{"operationId":"listSandboxes"}}`, "", false},
		{"other operation", stable + `,"/v1/x-sandscope/sandboxes":{"get":{"operationId":"listThings","x-sandscope-extension":true}}`, "", true},
		{"under a sandbox (would wake it)", stable + "," + list("/v1/sandbox/{id}/list"), "", true},
		{"outside /v1", stable + "," + list("/list"), "", true},
		{"absolute URL", stable + "," + list("https://evil.example/v1/x"), "", true},
		{"dot segments", stable + "," + list("/v1/../x"), "", true},
		{"query", stable + "," + list("/v1/x?token=1"), "", true},
		{"two announced", stable + "," + list("/v1/x-b") + "," + list("/v1/x-a"), "/v1/x-a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps, err := ParseCapabilities([]byte(`{"paths":{` + tc.paths + `}}`))
			if err != nil {
				t.Fatal(err)
			}
			if caps.ListPath != tc.listPath || caps.Local != tc.local {
				t.Fatalf("ListPath %q Local %v, want %q %v", caps.ListPath, caps.Local, tc.listPath, tc.local)
			}
			if got := caps.Features().SandboxList; got != (tc.listPath != "") {
				t.Fatalf("Features().SandboxList %v with ListPath %q", got, caps.ListPath)
			}
		})
	}
}
