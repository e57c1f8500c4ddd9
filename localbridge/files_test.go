package localbridge_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"sandscope/localbridge/bridgetest"
)

func errorCode(body []byte) string {
	var e struct{ Code string }
	_ = json.Unmarshal(body, &e)
	return e.Code
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
