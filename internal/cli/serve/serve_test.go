package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/internal/cli/cmdutil"
	"sandscope/localbridge"
)

// syncBuf is a bytes.Buffer safe for the serve goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestServeCommand(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("SANDBOX_API_KEY", "")
	g := &cmdutil.Factory{}
	cmd := NewCmdServe(g)
	var out, errOut syncBuf
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, cmd, &serveOptions{listen: "127.0.0.1:0", root: filepath.Join(state, "root")})
	}()
	disc := filepath.Join(state, "sandscope", "serve.json")
	var d localbridge.Discovery
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if d, err = localbridge.ReadDiscovery(disc); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no discovery file: %v\n%s", err, errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	tok, err := os.ReadFile(d.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	// Output: URL, where the token is, a curl example reading the file, never the token.
	time.Sleep(50 * time.Millisecond)
	printed := out.String() + errOut.String()
	if !strings.Contains(printed, d.URL) || !strings.Contains(printed, "$(cat "+d.TokenFile+")") || strings.Contains(printed, token) {
		t.Fatalf("serve output:\n%s", printed)
	}
	req, _ := http.NewRequest("GET", d.URL+"/v1/sandbox", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != "[]" {
		t.Fatalf("list: %d %s", res.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	if _, err := os.Stat(disc); !os.IsNotExist(err) {
		t.Fatalf("discovery file left behind: %v", err)
	}
}
