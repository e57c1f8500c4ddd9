package openapicheck_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// TestStableServedDocument: the stable document is the published one in the published key order
// with the local extensions appended and marked; the client reads the dialect, the list path
// and the local bridge from it; the extensions' answers validate against it.
func TestStableServedDocument(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	r := call(t, b, "GET", "/v1/openapi.json", nil, true)
	if !bytes.HasPrefix(r.Body, []byte(`{"openapi":"3.1.0","info":{"title":`)) {
		t.Fatalf("document does not start as the published one: %.80s", r.Body)
	}
	caps, err := client.ParseCapabilities(r.Body)
	if err != nil || caps.Dialect != client.DialectStable || !caps.Local || caps.ListPath != localbridge.ListPath {
		t.Fatalf("capabilities %+v, %v", caps, err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if _, has := doc.Paths["/v1/sandbox"]["get"]; has {
		t.Fatal("the stable document announces GET /v1/sandbox, which the bridge does not answer")
	}
	for _, p := range []string{"/v1/sandbox/{id}/tunnel/{port}", "/v1/sandbox/{id}/mount"} {
		if !strings.Contains(string(doc.Paths[p]["post"]), `"501":{`) {
			t.Errorf("%s: no 501 answer documented", p)
		}
	}

	served := newValidator(t, r.Body)
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", localbridge.ListPath, "", 200},
		{"GET", "/v1/pool/stats", "", 200},
		{"POST", "/v1/pool/prime", "", 200},
		{"POST", "/v1/sandbox/docs/tunnel/8080", "", 501},
		{"POST", "/v1/sandbox/docs/tunnel/80", "", 400},
		{"POST", "/v1/sandbox/docs/mount", `{"mountPath":"/m","binding":"B","options":{}}`, 501},
		{"POST", "/v1/sandbox/docs/unmount", `{"mountPath":"/m"}`, 501},
		{"GET", localbridge.ListPath, "", 200}, // now listing "docs"
	} {
		req, _ := http.NewRequest(c.method, b.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+b.Token)
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Fatalf("%s %s: %d %s", c.method, c.path, res.StatusCode, data)
		}
		res.Body = io.NopCloser(bytes.NewReader(data))
		vreq, _ := http.NewRequest(c.method, "http://bridge.invalid"+c.path, nil)
		vreq.Header = req.Header.Clone()
		if ok, errs := served.ValidateHttpResponse(vreq, res); !ok {
			for _, e := range errs {
				t.Errorf("%s %s → %d %s: %s: %s", c.method, c.path, res.StatusCode, data, e.Message, e.Reason)
				for _, se := range e.SchemaValidationErrors {
					t.Errorf("  %s at %s", se.Reason, se.FieldPath)
				}
			}
		}
	}
}
