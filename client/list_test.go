package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestListSandboxesPath: the list is asked for on the announced path, nothing is sent when none
// is announced, and a bridge whose document cannot be read is tried on the local bridge's path,
// then the older one.
func TestListSandboxesPath(t *testing.T) {
	const entry = `[{"id":"abc","running":true,"processes":0,"terminals":0,"createdAt":"2026-01-01T00:00:00Z","lastActiveAt":"2026-01-01T00:00:00Z"}]`
	for _, tc := range []struct {
		name     string
		doc      string // "" answers the document with a 500
		serves   map[string]bool
		want     []string // list requests, in order
		wantList bool
		unsupp   bool
	}{
		{name: "announced path",
			doc:    `{"paths":{"/v1/sandbox/{id}/exec":{},"/v1/x-sandscope/sandboxes":{"get":{"operationId":"listSandboxes","x-sandscope-extension":true}}}}`,
			serves: map[string]bool{"/v1/x-sandscope/sandboxes": true}, want: []string{"/v1/x-sandscope/sandboxes"}, wantList: true},
		{name: "older local bridge",
			doc:    `{"paths":{"/v1/sandbox/{id}/processes":{},"/v1/sandbox":{"get":{"operationId":"listSandboxes","x-sandscope-extension":true}}}}`,
			serves: map[string]bool{"/v1/sandbox": true}, want: []string{"/v1/sandbox"}, wantList: true},
		{name: "none announced",
			doc:    `{"paths":{"/v1/sandbox/{id}/exec":{}}}`,
			serves: map[string]bool{"/v1/sandbox": true, "/v1/x-sandscope/sandboxes": true}, want: nil, unsupp: true},
		{name: "unreadable document, new bridge",
			serves: map[string]bool{"/v1/x-sandscope/sandboxes": true}, want: []string{"/v1/x-sandscope/sandboxes"}, wantList: true},
		{name: "unreadable document, older bridge",
			serves: map[string]bool{"/v1/sandbox": true}, want: []string{"/v1/x-sandscope/sandboxes", "/v1/sandbox"}, wantList: true},
		{name: "unreadable document, no list",
			want: []string{"/v1/x-sandscope/sandboxes", "/v1/sandbox"}, unsupp: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/openapi.json" {
					if tc.doc == "" {
						http.Error(w, "Internal Server Error", 500)
						return
					}
					_, _ = io.WriteString(w, tc.doc)
					return
				}
				mu.Lock()
				got = append(got, r.Method+" "+r.URL.Path)
				mu.Unlock()
				if r.Method != http.MethodGet || !tc.serves[r.URL.Path] {
					w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
					w.WriteHeader(404)
					_, _ = io.WriteString(w, "404 Not Found")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, entry)
			}))
			defer srv.Close()
			c, err := New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			list, err := c.ListSandboxes(context.Background())
			if tc.wantList && (err != nil || len(list) != 1 || list[0].ID != "abc") {
				t.Fatalf("list %+v, %v", list, err)
			}
			if tc.unsupp && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("err %v, want ErrUnsupported", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != len(tc.want) {
				t.Fatalf("requests %v, want GET of %v", got, tc.want)
			}
			for i, p := range tc.want {
				if got[i] != "GET "+p {
					t.Fatalf("requests %v, want GET of %v", got, tc.want)
				}
			}
		})
	}
}
