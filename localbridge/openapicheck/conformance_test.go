package openapicheck_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// drift is one documented way the real preview bridge's answers differ from its own OpenAPI
// document (BRIDGE.md A4/A5 and the appendix). The local bridge copies the real behaviour, so these
// answers are checked by hand in the behaviour tests and only these exact mismatches are excused
// here; every other response must validate.
type drift struct {
	why    string
	match  func(method, path string, status int, ctype string, body []byte) bool
	reason string // substring every validation error must contain ("" = any error of this response)
}

func errorCode(body []byte) string {
	var e struct{ Code string }
	_ = json.Unmarshal(body, &e)
	return e.Code
}

var drifts = []drift{
	{why: "ErrorResponse.code enum omits not_found, process_error and payload_too_large, which the bridge emits (A4)",
		match: func(_, _ string, _ int, _ string, body []byte) bool {
			c := errorCode(body)
			return c == "not_found" || c == "process_error" || c == "payload_too_large"
		}, reason: "at $.code"},
	{why: "Hono's text 404 Not Found / 500 Internal Server Error are not documented (A1, A4)",
		match: func(_, _ string, status int, ctype string, _ []byte) bool {
			return (status == 404 || status == 500) && ctype == "text/plain; charset=UTF-8"
		}},
	{why: "400 Invalid sandbox ID format comes from middleware on every sandbox route; most operations do not list 400 (A3)",
		match: func(_, _ string, status int, _ string, body []byte) bool {
			return status == 400 && strings.Contains(string(body), "Invalid sandbox ID format")
		}},
	{why: "TerminalSnapshot uses OpenAPI 3.0's `nullable`, which a 3.1 schema compiler refuses (BRIDGE.md appendix: exit.code nullable drift)",
		match: func(_, path string, status int, _ string, _ []byte) bool {
			return strings.Contains(path, "/terminals") && status == 200
		}, reason: "nullable"},
	{why: "PUT /file answers 413 payload_too_large, which the document does not list (A5)",
		match: func(method, path string, status int, _ string, _ []byte) bool {
			return method == "PUT" && strings.Contains(path, "/file/") && status == 413
		}},
	{why: "the pool answers 503 capacity_exceeded on allocating routes that do not list 503 (A3)",
		match: func(_, _ string, status int, _ string, body []byte) bool {
			return status == 503 && errorCode(body) == "capacity_exceeded"
		}},
}

type conformance struct {
	t       *testing.T
	b       *bridgetest.Bridge
	preview validator.Validator
	served  validator.Validator
	excused map[string]int
	checked int
}

func newValidator(t *testing.T, spec []byte) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatalf("openapi: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return v
}

// do sends a request and validates the response: real routes against the preview document,
// extensions (extension=true) against the document the local bridge serves.
func (c *conformance) do(extension bool, method, path string, body []byte, hdr ...string) resp {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.b.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.b.Token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if hdr == nil && body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	res.Body = io.NopCloser(bytes.NewReader(data))
	// The document declares /file/{path} as one segment while the route takes the rest of the
	// path; validate with the file path as one escaped segment.
	vpath := path
	if i := strings.Index(path, "/file/"); i >= 0 {
		rest, query, _ := strings.Cut(path[i+len("/file/"):], "?")
		vpath = path[:i] + "/file/" + strings.ReplaceAll(rest, "/", "%2F")
		if query != "" {
			vpath += "?" + query
		}
	}
	vreq, _ := http.NewRequest(method, "http://bridge.invalid"+vpath, nil)
	vreq.Header = req.Header.Clone()
	v := c.preview
	if extension {
		v = c.served
	}
	ok, verrs := v.ValidateHttpResponse(vreq, res)
	c.checked++
	ctype := res.Header.Get("Content-Type")
	if !ok {
		for _, d := range drifts {
			if !d.match(method, path, res.StatusCode, ctype, data) {
				continue
			}
			// Every error (every schema error when there are any) must be the excused kind.
			all := true
			for _, e := range verrs {
				if d.reason == "" {
					continue
				}
				if len(e.SchemaValidationErrors) == 0 {
					all = all && strings.Contains(e.Message+" "+e.Reason, d.reason)
				}
				for _, se := range e.SchemaValidationErrors {
					all = all && strings.Contains(se.Reason+" at "+se.FieldPath, d.reason)
				}
			}
			if all {
				c.excused[d.why]++
				ok = true
				break
			}
		}
	}
	if !ok {
		var msgs []string
		for _, e := range verrs {
			msgs = append(msgs, e.Message+": "+e.Reason)
			for _, se := range e.SchemaValidationErrors {
				msgs = append(msgs, "  "+se.Reason+" at "+se.FieldPath)
			}
		}
		c.t.Errorf("%s %s → %d %s %.200q does not validate:\n%s", method, path, res.StatusCode, ctype, data, strings.Join(msgs, "\n"))
	}
	return resp{Status: res.StatusCode, Type: ctype, Body: data, Header: res.Header}
}

// TestOpenAPIConformance drives every route and validates each response with
// libopenapi-validator against openapi-v1-preview.json (extensions against the served document).
func TestOpenAPIConformance(t *testing.T) {
	b := bridgetest.Start(t)
	spec, err := os.ReadFile("../openapi-v1-preview.json")
	if err != nil {
		t.Fatal(err)
	}
	served := call(t, b, "GET", "/v1/openapi.json", nil, true)
	c := &conformance{t: t, b: b, preview: newValidator(t, spec), served: newValidator(t, served.Body), excused: map[string]int{}}
	j := func(s string) []byte { return []byte(s) }
	sbx := "/v1/sandbox/" + sb

	c.do(false, "GET", "/health", nil)
	c.do(false, "GET", "/v1/openapi.json", nil)
	c.do(false, "POST", "/v1/sandbox", nil)
	c.do(false, "GET", sbx+"/running", nil)
	c.do(false, "GET", sbx+"/processes", nil)
	c.do(false, "GET", sbx+"/processes/nope", nil)
	c.do(false, "GET", sbx+"/terminals", nil)
	c.do(false, "GET", "/v1/sandbox/BAD/running", nil)

	r := c.do(false, "POST", sbx+"/processes", j(`{"argv":["sh","-c","echo hi; echo err >&2; exit 2"],"env":{"A":"b"},"cwd":"/workspace","timeout":60000}`))
	var st procStatus
	_ = json.Unmarshal(r.Body, &st)
	waitExit(t, b, sb, st.ID)
	c.do(false, "GET", sbx+"/processes/"+st.ID, nil)
	c.do(false, "GET", sbx+"/processes", nil)
	c.do(false, "GET", sbx+"/processes/"+st.ID+"/logs", nil)
	c.do(false, "GET", sbx+"/processes/"+st.ID+"/logs?since=bad", nil)
	c.do(false, "GET", sbx+"/running", nil)
	r = c.do(false, "POST", sbx+"/processes", j(`{"argv":["sleep","30"]}`))
	_ = json.Unmarshal(r.Body, &st)
	c.do(false, "GET", sbx+"/processes/"+st.ID, nil)
	c.do(false, "POST", sbx+"/processes/"+st.ID+"/kill", j(`{"signal":99}`))
	c.do(false, "POST", sbx+"/processes/"+st.ID+"/kill", j(`{"signal":9}`))
	c.do(false, "POST", sbx+"/processes/nope/kill", nil)
	waitExit(t, b, sb, st.ID)
	c.do(false, "GET", sbx+"/processes/"+st.ID, nil)
	c.do(false, "POST", sbx+"/processes", j(`{"argv":[]}`))
	c.do(false, "POST", sbx+"/processes", j(`{"argv":["true"],"cwd":"/etc"}`))
	c.do(false, "POST", sbx+"/processes", j(`{"argv":["true"],"cwd":"missing"}`))
	c.do(false, "POST", sbx+"/processes", j(`null`))

	c.do(false, "PUT", sbx+"/file/workspace/dir/a.txt", j("hello"), "Content-Type", "application/octet-stream")
	c.do(false, "GET", sbx+"/file/workspace/dir/a.txt", nil)
	c.do(false, "GET", sbx+"/file/workspace/missing.txt", nil)
	c.do(false, "GET", sbx+"/file/etc/passwd", nil)
	c.do(false, "GET", sbx+"/file/", nil)
	c.do(false, "PUT", sbx+"/file/workspace/big", make([]byte, 32<<20+1), "Content-Type", "application/octet-stream")
	tarball := c.do(false, "POST", sbx+"/persist?excludes=nothing", nil)
	c.do(false, "POST", sbx+"/persist?excludes=../x", nil)
	c.do(false, "POST", sbx+"/hydrate", tarball.Body, "Content-Type", "application/octet-stream")
	c.do(false, "POST", sbx+"/hydrate", nil, "Content-Type", "application/octet-stream")
	c.do(false, "POST", sbx+"/hydrate", j("not a tar archive at all"), "Content-Type", "application/octet-stream")

	// Extensions and unsupported routes, against the served document.
	c.do(true, "GET", "/v1/sandbox", nil)
	c.do(true, "GET", localbridge.ListPath, nil)
	c.do(true, "POST", sbx+"/replace", nil)
	c.do(true, "POST", sbx+"/stop", nil)
	c.do(true, "POST", sbx+"/mount", j(`{"mountPath":"/mnt","options":{}}`))
	c.do(true, "POST", sbx+"/unmount", j(`{"mountPath":"/mnt"}`))
	c.do(true, "POST", sbx+"/tunnel/8080", nil)
	c.do(true, "DELETE", sbx+"/tunnel/8080", nil)
	c.do(true, "GET", "/v1/pool/stats", nil)
	c.do(true, "POST", "/v1/pool/prime", nil)
	c.do(true, "POST", "/v1/pool/shutdown-prewarmed", nil)
	c.do(false, "GET", sbx+"/running", nil)

	b.Server.SetCapacityExceeded(true)
	c.do(false, "POST", sbx+"/processes", j(`{"argv":["true"]}`))
	b.Server.SetCapacityExceeded(false)
	c.do(false, "DELETE", sbx, nil)

	// Every request without credentials answers the documented 401.
	for _, p := range []string{"/v1/openapi.json", "/v1/pool/stats", sbx + "/processes"} {
		req, _ := http.NewRequest("GET", b.URL+p, nil)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(data))
		vreq, _ := http.NewRequest("GET", "http://bridge.invalid"+p, nil)
		if ok, errs := c.preview.ValidateHttpResponse(vreq, res); !ok || res.StatusCode != 401 {
			t.Errorf("401 for %s: %d %v", p, res.StatusCode, errs)
		}
	}
	for why, n := range c.excused {
		t.Logf("excused %d× (%s)", n, why)
	}
	t.Logf("%d responses validated", c.checked)
}
