package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
	"sandscope/localbridge/bridgetest"
)

// registryBridge is a bridge as a Worker with the sandbox registry shows itself: the bridge's own
// API plus one extension, the sandbox list, announced in its document — no other sandscope
// extension and no bridge identity of sandscope's local bridge. It is the local bridge behind a
// proxy that takes the rest out of /v1/openapi.json.
func registryBridge(t *testing.T) (*bridgetest.Bridge, string) {
	t.Helper()
	b := bridgetest.Start(t)
	up, err := url.Parse(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(up)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/openapi.json" {
			proxy.ServeHTTP(w, r)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, b.URL+r.URL.Path, nil)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var doc map[string]any
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &doc) != nil {
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(body)
			return
		}
		if info, ok := doc["info"].(map[string]any); ok {
			delete(info, "x-sandscope-bridge-id")
		}
		paths, _ := doc["paths"].(map[string]any)
		for p, item := range paths {
			m, _ := item.(map[string]any)
			if p == "/v1/x-sandscope/sandboxes" {
				continue
			}
			if m["x-sandscope-extension"] == true {
				delete(paths, p)
				continue
			}
			for op, v := range m {
				if o, ok := v.(map[string]any); ok && o["x-sandscope-extension"] == true {
					delete(m, op)
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	return b, srv.URL
}

// TestRegistrySandboxesAppearWithoutAdding: sandboxes an agent made through the bridge, behind
// sandscope's back, are listed by `ls` and on the Sandboxes screen of a bridge that announces the
// list (a Worker with the registry) — nobody added them.
func TestRegistrySandboxesAppearWithoutAdding(t *testing.T) {
	b, url := registryBridge(t)
	c, err := client.New(url, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if caps.Local || !caps.Features().SandboxList {
		t.Fatalf("the proxy does not look like a registry Worker: %+v", caps)
	}
	// an orchestrator's sandboxes, made straight through the bridge
	for _, id := range []string{"agentalpha", "agentbeta"} {
		if _, err := c.StartProcess(ctx, id, client.ExecRequest{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte(b.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := e2e.RunIn(t, env, "ls", "--url", url, "--token-file", tok)
	if code != 0 || !strings.Contains(out, "agentalpha") || !strings.Contains(out, "agentbeta") {
		t.Fatalf("ls (exit %d) does not list the registered sandboxes:\n%s", code, out)
	}

	tmuxPath := e2e.NeedTmux(t)
	s := e2e.LaunchTUI(t, tmuxPath, dir, env, "--url", url, "--token-file", tok)
	s.WaitFor("the registered sandboxes", "agentalpha", "agentbeta")
	s.QuitAndWait()
}
