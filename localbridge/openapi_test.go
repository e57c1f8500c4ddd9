package localbridge_test

import (
	"encoding/json"
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// TestServedDocument: the served document keeps the preview's paths (capability detection) and
// marks every addition.
func TestServedDocument(t *testing.T) {
	b := bridgetest.Start(t)
	r := call(t, b, "GET", "/v1/openapi.json?token="+b.Token, nil, false)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/sandbox/{id}/processes", "/v1/sandbox/{id}/terminals/{terminalId}/connect"} {
		if doc.Paths[p] == nil {
			t.Fatalf("missing %s", p)
		}
	}
	for _, p := range []string{"/v1/sandbox/{id}/exec", "/v1/sandbox/{id}/pty", "/v1/sandbox/{id}/session"} {
		if doc.Paths[p] != nil {
			t.Fatalf("stable path %s present", p)
		}
	}
	for p, m := range map[string]string{"/v1/sandbox": "get", localbridge.ListPath: "get", "/v1/sandbox/{id}/stop": "post", "/v1/sandbox/{id}/replace": "post"} {
		if !strings.Contains(string(doc.Paths[p][m]), `"x-sandscope-extension":true`) {
			t.Fatalf("%s %s not marked as an extension", m, p)
		}
	}
	// The list's own path is the one announced as listSandboxes (GET /v1/sandbox is kept for
	// older clients under another operation ID), and both answer the same list.
	caps, err := client.ParseCapabilities(r.Body)
	if err != nil || caps.ListPath != localbridge.ListPath {
		t.Fatalf("announced list path %q (%v), want %s", caps.ListPath, err, localbridge.ListPath)
	}
	if r := call(t, b, "POST", "/v1/sandbox/"+sb+"/processes", `{"argv":["true"]}`, true); r.Status != 200 {
		t.Fatalf("launch: %s", r)
	}
	legacy, own := call(t, b, "GET", "/v1/sandbox", nil, true), call(t, b, "GET", localbridge.ListPath, nil, true)
	if legacy.Status != 200 || string(legacy.Body) != string(own.Body) || !strings.Contains(string(own.Body), `"id":"`+sb+`"`) {
		t.Fatalf("GET /v1/sandbox %s, %s %s", legacy, localbridge.ListPath, own)
	}
	if r := call(t, b, "GET", localbridge.ListPath, nil, false); r.Status != 401 {
		t.Fatalf("list without credentials: %s", r)
	}
}
