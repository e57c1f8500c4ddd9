package localbridge_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"sandscope/client"
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
	spec, err := os.ReadFile("openapi-v1-preview.json")
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

// TestFiles: read/write, decodeURI rules, escapes (.., encoded, symlinks), limits, archives.
func TestFiles(t *testing.T) {
	b := bridgetest.Start(t)
	sbx := "/v1/sandbox/" + sb
	if r := call(t, b, "PUT", sbx+"/file/workspace/a%20b%E2%9C%93.txt", "data", true); r.Status != 200 || string(r.Body) != `{"ok":true}` {
		t.Fatalf("put: %s", r)
	}
	if _, err := os.Stat(b.Root + "/" + sb + "/workspace/a b✓.txt"); err != nil {
		t.Fatalf("decoded name: %v", err)
	}
	if r := call(t, b, "GET", sbx+"/file/workspace/a%20b%E2%9C%93.txt", nil, true); r.Status != 200 || string(r.Body) != "data" || r.Type != "application/octet-stream" {
		t.Fatalf("get: %s", r)
	}
	// %2F stays literal (decodeURI), so this names a file called "x%2Fy".
	call(t, b, "PUT", sbx+"/file/workspace/x%2Fy", "z", true)
	if _, err := os.Stat(b.Root + "/" + sb + "/workspace/x%2Fy"); err != nil {
		t.Fatalf("%%2F decoded: %v", err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(outside+"/secret", []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, b.Root+"/"+sb+"/workspace/link"); err != nil {
		t.Fatal(err)
	}
	forbidden := `{"error":"path must resolve to a location within /workspace","code":"invalid_request"}`
	cases := []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/file/", 400, `{"error":"file path must not be empty","code":"invalid_request"}`},
		{"GET", "/file/etc/passwd", 403, forbidden},
		{"GET", "/file/workspace/../etc/passwd", 403, forbidden},
		{"GET", "/file/workspace/%2E%2E/etc/passwd", 403, forbidden},
		{"GET", "/file/workspace%2F..%2Fetc", 403, forbidden}, // %2F stays literal: "/workspace%2F.." is not below /workspace
		{"GET", "/file/workspace/a%2F..%2F..%2Fetc", 404, `{"error":"File not found: /workspace/a%2F..%2F..%2Fetc","code":"workspace_read_not_found"}`},
		{"GET", "/file/workspace/link/secret", 403, forbidden},
		{"PUT", "/file/workspace/link/new", 403, forbidden},
		{"GET", "/file/workspace/link", 403, forbidden},
		{"GET", "/file/workspace/nope", 404, `{"error":"File not found: /workspace/nope","code":"workspace_read_not_found"}`},
		{"GET", "/file/workspace", 502, `{"error":"read failed: EISDIR: illegal operation on a directory, read","code":"exec_transport_error"}`},
	}
	for _, c := range cases {
		if r := call(t, b, c.method, sbx+c.path, "x", true); r.Status != c.status || string(r.Body) != c.body {
			t.Errorf("%s %s: %s", c.method, c.path, r)
		}
	}
	if _, err := os.Stat(outside + "/new"); err == nil {
		t.Fatal("write escaped through a symlink")
	}
	r := call(t, b, "PUT", sbx+"/file/workspace/big", make([]byte, 32<<20+1), true)
	if r.Status != 413 || string(r.Body) != fmt.Sprintf(`{"error":"payload too large: %d bytes exceeds the 33554432-byte limit","code":"payload_too_large"}`, 32<<20+1) {
		t.Fatalf("413: %.200s", r)
	}
	// persist → hydrate round trip, excludes honoured.
	call(t, b, "PUT", sbx+"/file/workspace/keep/k.txt", "keep", true)
	call(t, b, "PUT", sbx+"/file/workspace/skip/s.txt", "skip", true)
	r = call(t, b, "POST", sbx+"/persist?excludes=skip,link", nil, true)
	if r.Status != 200 || r.Type != "application/octet-stream" {
		t.Fatalf("persist: %.200s", r)
	}
	names := map[string]bool{}
	tr := tar.NewReader(bytes.NewReader(r.Body))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names[h.Name] = true
	}
	if !names["keep/k.txt"] || names["skip/s.txt"] || names["link"] {
		t.Fatalf("archive entries %v", names)
	}
	if r := call(t, b, "POST", sbx+"/persist?excludes=a/../b", nil, true); r.Status != 400 || string(r.Body) != `{"error":"exclude paths must not contain \"..\"","code":"invalid_request"}` {
		t.Fatalf("excludes ..: %s", r)
	}
	if r := call(t, b, "POST", "/v1/sandbox/otherbox/hydrate", r.Body, true); r.Status != 400 {
		_ = r
	}
	if r := call(t, b, "POST", "/v1/sandbox/otherbox/hydrate", "", true); r.Status != 400 || string(r.Body) != `{"error":"Empty tar payload","code":"invalid_request"}` {
		t.Fatalf("empty hydrate: %s", r)
	}
	tarball := call(t, b, "POST", sbx+"/persist", nil, true)
	if r := call(t, b, "POST", "/v1/sandbox/otherbox/hydrate", tarball.Body, true); r.Status != 200 {
		t.Fatalf("hydrate: %s", r)
	}
	if got, err := os.ReadFile(b.Root + "/otherbox/workspace/keep/k.txt"); err != nil || string(got) != "keep" {
		t.Fatalf("hydrated file: %q %v", got, err)
	}
	// An archive entry that climbs out is refused.
	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	_ = tw.WriteHeader(&tar.Header{Name: "../escape.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg, ModTime: time.Now()})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	if r := call(t, b, "POST", "/v1/sandbox/otherbox/hydrate", evil.Bytes(), true); r.Status != 502 || errorCode(r.Body) != "workspace_archive_write_error" {
		t.Fatalf("escaping archive: %s", r)
	}
	if _, err := os.Stat(b.Root + "/otherbox/escape.txt"); err == nil {
		t.Fatal("archive escaped the workspace")
	}
	// DELETE destroys the workspace.
	if r := call(t, b, "DELETE", "/v1/sandbox/otherbox", nil, true); r.Status != 204 {
		t.Fatalf("delete: %s", r)
	}
	if _, err := os.Stat(b.Root + "/otherbox"); err == nil {
		t.Fatal("workspace survived DELETE")
	}
}
