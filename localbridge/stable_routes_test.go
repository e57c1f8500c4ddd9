package localbridge_test

import (
	"encoding/json"
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// TestStableRouting: the stable dialect answers as the published 0.12.10 bridge does where it
// differs from the preview dialect: no GET /v1/sandbox (the list is on its own path), "Not Found"
// outside the API, the pool routes, checks before "not supported", and field order. (The
// conformance package compares every such answer with the published handler itself.)
func TestStableRouting(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	const hono404 = "404 Not Found"
	const textType = "text/plain; charset=UTF-8"
	const unauth = `{"error":"Unauthorized","code":"unauthorized"}`
	const sbx = "/v1/sandbox/routes"
	cases := []struct {
		name         string
		method, path string
		body         string
		auth         bool
		status       int
		ctype        string
		want         string // exact body
	}{
		{"no list on /v1/sandbox", "GET", "/v1/sandbox", "", true, 404, textType, hono404},
		{"/v1/sandbox needs auth first", "GET", "/v1/sandbox", "", false, 401, "application/json", unauth},
		{"list on its own path", "GET", localbridge.ListPath, "", true, 200, "application/json", "[]"},
		{"list path needs auth", "GET", localbridge.ListPath, "", false, 401, "application/json", unauth},
		{"list path wrong method", "POST", localbridge.ListPath, "", true, 404, textType, hono404},
		{"outside the API", "GET", "/nothing", "", true, 404, "text/plain;charset=UTF-8", "Not Found"},
		{"outside, health lookalike", "GET", "/health/", "", false, 404, "text/plain;charset=UTF-8", "Not Found"},
		{"outside, prefix lookalike", "GET", "/v1x", "", false, 404, "text/plain;charset=UTF-8", "Not Found"},
		{"bare prefix is the router's", "GET", "/v1", "", false, 404, textType, hono404},
		{"empty sandbox ID: auth, then 404", "POST", "/v1/sandbox/", "", false, 401, "application/json", unauth},
		{"openapi wrong method before auth", "POST", "/v1/openapi.json", "", false, 404, textType, hono404},
		{"pool stats", "GET", "/v1/pool/stats", "", true, 200, "application/json",
			`{"warm":0,"assigned":0,"total":0,"config":{"warmTarget":0,"refreshInterval":10000,"maxInstances":0,"scaleBatchSize":5},"maxInstances":null}`},
		{"pool prime", "POST", "/v1/pool/prime", "", true, 200, "application/json", `{"ok":true}`},
		{"pool shutdown", "POST", "/v1/pool/shutdown-prewarmed", "", true, 200, "application/json", `{"ok":true}`},
		{"pool auth is case-sensitive", "GET", "/v1/pool/stats", "", false, 401, "application/json", unauth},
		{"tunnel port word", "POST", sbx + "/tunnel/http", "", true, 400, "application/json", `{"error":"Invalid port","code":"invalid_request"}`},
		{"tunnel port 3000", "DELETE", sbx + "/tunnel/3000", "", true, 400, "application/json", `{"error":"Invalid port","code":"invalid_request"}`},
		{"tunnel name", "POST", sbx + "/tunnel/8080", `{"name":"A"}`, true, 400, "application/json",
			`{"error":"Tunnel name 'A' is not a valid DNS label. Use lowercase letters, digits, and internal hyphens only (no dots, no leading/trailing hyphens).","code":"invalid_request"}`},
		{"tunnel well-formed", "POST", sbx + "/tunnel/0x1f90", `{"name":"app"}`, true, 501, "application/json",
			`{"error":"the local bridge does not support tunnels","code":"not_supported"}`},
		{"mount without options", "POST", sbx + "/mount", `{"mountPath":"/m"}`, true, 400, "application/json", `{"error":"options must be an object","code":"invalid_request"}`},
		{"mount null", "POST", sbx + "/mount", `null`, true, 500, textType, "Internal Server Error"},
		{"mount well-formed", "POST", sbx + "/mount", `{"mountPath":"/m","binding":"B","options":{}}`, true, 501, "application/json",
			`{"error":"the local bridge does not support bucket mounts","code":"not_supported"}`},
		{"unmount root", "POST", sbx + "/unmount", `{"mountPath":"/a/%2e%2e"}`, true, 400, "application/json",
			`{"error":"mountPath must not resolve to / (filesystem root)","code":"invalid_request"}`},
		{"file without a path", "GET", sbx + "/file", "", true, 400, "application/json", `{"error":"file path must not be empty","code":"invalid_request"}`},
		{"exec body after a no-break space", "POST", sbx + "/exec", "\u00a0{\"argv\":[\"true\"]}", true, 400, "application/json", `{"error":"Invalid JSON body","code":"invalid_request"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			r := call(t, b, c.method, c.path, body, c.auth)
			if r.Status != c.status || r.Type != c.ctype || string(r.Body) != c.want {
				t.Fatalf("got %s, want %d %s %q", r, c.status, c.ctype, c.want)
			}
		})
	}

	// Session deletion: the fields in the SDK's order.
	if r := call(t, b, "POST", sbx+"/session", `{"id":"s1"}`, true); r.Status != 200 {
		t.Fatalf("session create: %s", r)
	}
	r := call(t, b, "DELETE", sbx+"/session/s1", nil, true)
	if r.Status != 200 || !strings.HasPrefix(string(r.Body), `{"success":true,"sessionId":"s1","timestamp":"`) {
		t.Fatalf("session delete: %s", r)
	}
	// The sandbox now has a container: the pool counts it, the list shows it.
	r = call(t, b, "GET", "/v1/pool/stats", nil, true)
	if !strings.HasPrefix(string(r.Body), `{"warm":0,"assigned":1,"total":1,`) {
		t.Fatalf("pool stats: %s", r)
	}
	var list []client.SandboxInfo
	r = call(t, b, "GET", localbridge.ListPath, nil, true)
	if json.Unmarshal(r.Body, &list) != nil || len(list) != 1 || list[0].ID != "routes" || !list[0].Running {
		t.Fatalf("list: %s", r)
	}
}
