package localbridge_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"sandscope/localbridge/bridgetest"
)

const sb = "testbox"

// TestRoutingAndAuth checks the bridge's routing quirks, auth variants and the Host check.
func TestRoutingAndAuth(t *testing.T) {
	b := bridgetest.Start(t)
	const notFound = "404 Not Found"
	const textType = "text/plain; charset=UTF-8"
	const unauth = `{"error":"Unauthorized","code":"unauthorized"}`
	cases := []struct {
		name         string
		method, path string
		hdr          []string
		auth         bool
		status       int
		ctype        string
		body         string // exact, or prefix when it ends in "*"
	}{
		{"health", "GET", "/health", nil, false, 200, "application/json", `{"ok":true}`},
		{"health wrong method", "POST", "/health", nil, false, 404, textType, notFound},
		{"outside /v1", "GET", "/nope", nil, true, 404, textType, notFound},
		{"unknown v1 path", "GET", "/v1/whatever", nil, true, 404, textType, notFound},
		{"bad sandbox id before auth", "GET", "/v1/sandbox/ABC/running", nil, false, 400, "application/json",
			`{"error":"Invalid sandbox ID format","code":"invalid_request"}`},
		{"bad id digits", "GET", "/v1/sandbox/ab1/running", nil, true, 400, "application/json", `{"error":"Invalid sandbox ID format"*`},
		{"bad id too long", "GET", "/v1/sandbox/" + strings.Repeat("a", 129) + "/running", nil, true, 400, "application/json", `{"error":"Invalid sandbox ID format"*`},
		{"no auth", "GET", "/v1/sandbox/" + sb + "/running", nil, false, 401, "application/json", unauth},
		{"wrong token", "GET", "/v1/sandbox/" + sb + "/running", []string{"Authorization", "Bearer nope"}, false, 401, "application/json", unauth},
		{"lowercase bearer on sandbox route", "GET", "/v1/sandbox/" + sb + "/running", []string{"Authorization", "bearer TOKEN"}, false, 200, "application/json", `{"running":false}`},
		{"query token not on sandbox routes", "GET", "/v1/sandbox/" + sb + "/running?token=TOKEN", nil, false, 401, "application/json", unauth},
		{"POST /v1/sandbox needs auth", "POST", "/v1/sandbox", nil, false, 401, "application/json", unauth},
		{"PUT /v1/sandbox", "PUT", "/v1/sandbox", nil, true, 404, textType, notFound},
		{"POST on sandbox root", "POST", "/v1/sandbox/" + sb, nil, true, 404, textType, notFound},
		{"trailing slash", "GET", "/v1/sandbox/" + sb + "/processes/", nil, true, 404, textType, notFound},
		{"trailing slash running", "GET", "/v1/sandbox/" + sb + "/running/", nil, true, 404, textType, notFound},
		{"no 405", "DELETE", "/v1/sandbox/" + sb + "/processes", nil, true, 404, textType, notFound},
		{"unmatched sub-path", "GET", "/v1/sandbox/" + sb + "/exec", nil, true, 404, textType, notFound},
		{"no process interrupt alias", "POST", "/v1/sandbox/" + sb + "/processes/x/interrupt", nil, true, 404, textType, notFound},
		{"openapi lowercase bearer", "GET", "/v1/openapi.json", []string{"Authorization", "bearer TOKEN"}, false, 401, "application/json", unauth},
		{"openapi bearer", "GET", "/v1/openapi.json", nil, true, 200, "application/json", `{*`},
		{"openapi query token", "GET", "/v1/openapi.json?token=TOKEN", nil, false, 200, "application/json", `{*`},
		{"openapi wrong query token", "GET", "/v1/openapi.json?token=x", nil, false, 401, "application/json", unauth},
		{"openapi html", "GET", "/v1/openapi", nil, true, 200, "text/html; charset=utf-8", `<!doctype html>*`},
		{"pool lowercase bearer", "GET", "/v1/pool/stats", []string{"Authorization", "bearer TOKEN"}, false, 401, "application/json", unauth},
		{"pool query token refused", "GET", "/v1/pool/stats?token=TOKEN", nil, false, 401, "application/json", unauth},
		{"pool not supported", "GET", "/v1/pool/stats", nil, true, 501, "application/json", `{"error":"the local bridge does not support the warm pool","code":"not_supported"}`},
		{"pool unknown", "GET", "/v1/pool/other", nil, true, 404, textType, notFound},
		{"host check", "GET", "/health", []string{"Host", "evil.example:80"}, false, 421, "application/json", `{"error":"Host not allowed by the local bridge","code":"host_not_allowed"}`},
		{"host localhost", "GET", "/health", []string{"Host", "localhost"}, false, 200, "application/json", `{"ok":true}`},
		{"delete unknown", "DELETE", "/v1/sandbox/neverseen", nil, true, 204, "", ""},
		{"mount", "POST", "/v1/sandbox/" + sb + "/mount", nil, true, 501, "application/json", `{"error":"the local bridge does not support bucket mounts","code":"not_supported"}`},
		{"tunnel", "POST", "/v1/sandbox/" + sb + "/tunnel/8080", nil, true, 501, "application/json", `{"error":"the local bridge does not support tunnels"*`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := append([]string(nil), c.hdr...)
			for i := range hdr {
				hdr[i] = strings.ReplaceAll(hdr[i], "TOKEN", b.Token)
			}
			path := strings.ReplaceAll(c.path, "TOKEN", b.Token)
			r := call(t, b, c.method, path, nil, c.auth, hdr...)
			if r.Status != c.status || r.Type != c.ctype {
				t.Fatalf("got %s, want %d %s", r, c.status, c.ctype)
			}
			if want, ok := strings.CutSuffix(c.body, "*"); ok {
				if !strings.HasPrefix(string(r.Body), want) {
					t.Fatalf("body %q, want prefix %q", r.Body, want)
				}
			} else if string(r.Body) != c.body {
				t.Fatalf("body %q, want %q", r.Body, c.body)
			}
		})
	}
}

func TestMintSandboxID(t *testing.T) {
	b := bridgetest.Start(t)
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		r := call(t, b, "POST", "/v1/sandbox", `{"ignored":true}`, true)
		var v struct{ ID string }
		if r.Status != 200 || json.Unmarshal(r.Body, &v) != nil || !regexp.MustCompile(`^[a-z2-7]{24}$`).MatchString(v.ID) {
			t.Fatalf("mint: %s", r)
		}
		if seen[v.ID] {
			t.Fatalf("duplicate id %s", v.ID)
		}
		seen[v.ID] = true
	}
}

// TestLookupWithoutAssignment: lookups never create an incarnation and answer like the real
// bridge when no container is assigned.
func TestLookupWithoutAssignment(t *testing.T) {
	b := bridgetest.Start(t)
	cases := []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/running", 200, `{"running":false}`},
		{"GET", "/processes", 200, `[]`},
		{"GET", "/processes/abc", 404, `{"error":"Process not found","code":"not_found"}`},
		{"GET", "/processes/abc/logs", 404, `{"error":"Process not found","code":"not_found"}`},
		{"POST", "/processes/abc/kill", 404, `{"error":"Process not found","code":"not_found"}`},
		{"GET", "/terminals", 200, `[]`},
		{"GET", "/terminals/abc", 404, `{"error":"Terminal not found","code":"not_found"}`},
		{"POST", "/terminals/abc/interrupt", 404, `{"error":"Terminal not found","code":"not_found"}`},
		{"DELETE", "", 204, ``},
	}
	for _, c := range cases {
		r := call(t, b, c.method, "/v1/sandbox/"+sb+c.path, nil, true)
		if r.Status != c.status || string(r.Body) != c.body {
			t.Errorf("%s %s: got %s, want %d %s", c.method, c.path, r, c.status, c.body)
		}
	}
	r := call(t, b, "GET", "/v1/sandbox", nil, true)
	if string(r.Body) != "[]" {
		t.Fatalf("lookups created a sandbox: %s", r)
	}
}
