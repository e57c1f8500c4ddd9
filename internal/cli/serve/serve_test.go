package serve

import (
	"bytes"
	"context"
	"errors"
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
	cmd := NewCmdServe(g, nil)
	var out, errOut syncBuf
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	cmd.SetArgs([]string{"--root", filepath.Join(state, "root")})
	go func() { done <- cmd.ExecuteContext(ctx) }()
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

func TestServeOptions(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	tests := []struct {
		args    []string
		wantErr string
		check   func(*ServeOptions) bool
	}{
		{args: nil, check: func(o *ServeOptions) bool {
			return o.Listen == "127.0.0.1:0" && o.Dialect == localbridge.DialectPreview && o.Root == filepath.Join(o.StateDir, "sandboxes") && o.host == "127.0.0.1"
		}},
		{args: []string{"--dialect", "stable", "--stable-fake-completion", "2s"}, check: func(o *ServeOptions) bool {
			return o.Root == filepath.Join(o.StateDir, "sandboxes-stable") && o.FakeCompletion == 2*time.Second
		}},
		{args: []string{"--dialect", "", "--root", "/srv/boxes", "--listen", "localhost:7681"}, check: func(o *ServeOptions) bool {
			return o.Dialect == localbridge.DialectPreview && o.Root == "/srv/boxes" && o.host == "localhost"
		}},
		{args: []string{"--listen", "[::1]:0"}, check: func(o *ServeOptions) bool { return o.host == "::1" }},
		{args: []string{"--listen", "0.0.0.0:7681", "--allow-remote"}, check: func(o *ServeOptions) bool { return o.AllowRemote }},
		{args: []string{"--dialect", "v2"}, wantErr: `serve: --dialect "v2": want v1-preview or stable`},
		{args: []string{"--stable-fake-completion", "1s"}, wantErr: "serve: --stable-fake-completion needs --dialect stable"},
		{args: []string{"--idle-sleep", "-1s"}, wantErr: "serve: --idle-sleep must not be negative"},
		{args: []string{"--listen", "7681"}, wantErr: `serve: --listen "7681": address 7681: missing port in address`},
		{args: []string{"--listen", "0.0.0.0:7681"}, wantErr: "serve: --listen 0.0.0.0:7681 is not a loopback address: "},
	}
	for _, tt := range tests {
		var got *ServeOptions
		cmd := NewCmdServe(&cmdutil.Factory{}, func(o *ServeOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if tt.wantErr != "" {
			var ee *cmdutil.ExitError
			if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || !strings.HasPrefix(err.Error(), tt.wantErr) || got != nil {
				t.Errorf("%q: err %v, want exit 2 %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got == nil || !tt.check(got) {
			t.Errorf("%q: err %v, options %+v", tt.args, err, got)
		}
	}
}
