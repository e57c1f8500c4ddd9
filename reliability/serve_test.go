package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
)

// lockedBuffer collects a child's output while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSecurityServeTokenHidden runs `sandscope serve` with a private
// state directory, and checks that the token it generates appears nowhere but its token file: not in
// its argv or environment (/proc/<pid>/cmdline, environ), not in what it prints, and not in the argv
// or environment of the processes it starts.
func TestSecurityServeTokenHidden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := e2e.Binary(t)
	state := filepath.Join(dir, "state")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "SANDBOX_API_KEY=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	disc := filepath.Join(state, "sandscope", "serve.json")
	var d struct {
		URL       string `json:"url"`
		TokenFile string `json:"tokenFile"`
		PID       int    `json:"pid"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(disc); err == nil && json.Unmarshal(b, &d) == nil && d.URL != "" {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("sandscope serve exited before announcing itself (%v)\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no discovery file %s after 30s\nstdout: %s\nstderr: %s", disc, stdout.String(), stderr.String())
		}
	}
	tokBytes, err := os.ReadFile(d.TokenFile)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	tok := strings.TrimSpace(string(tokBytes))
	if len(tok) < 16 {
		t.Fatalf("token too short to be a secret: %d bytes", len(tok))
	}
	if fi, err := os.Stat(d.TokenFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("token file mode %v: readable by others", fi.Mode().Perm())
	}
	c, err := client.New(d.URL, client.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		t.Fatalf("create sandbox through serve: %v", err)
	}
	p, err := c.StartProcess(ctx, sb, client.ExecRequest{Argv: []string{"sleep", "20"}})
	if err != nil {
		t.Fatal(err)
	}
	term, err := c.CreateTerminal(ctx, sb, client.TerminalRequest{Argv: []string{"sleep", "20"}})
	if err != nil {
		t.Fatal(err)
	}
	pids := append(descendants(cmd.Process.Pid), p.PID, term.PID)
	read := 0
	for _, pid := range pids {
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
			if err != nil {
				continue
			}
			read++
			if bytes.Contains(b, []byte(tok)) {
				t.Errorf("the token is in /proc/%d/%s", pid, f)
			}
		}
	}
	if read < 4 {
		t.Errorf("read only %d /proc entries", read)
	}
	_ = c.KillProcess(ctx, sb, p.ID, 9)
	_ = c.TerminateTerminal(ctx, sb, term.ID)
	if strings.Contains(stdout.String(), tok) || strings.Contains(stderr.String(), tok) {
		t.Errorf("sandscope serve printed the token")
	}
	if b, err := os.ReadFile(disc); err == nil && bytes.Contains(b, []byte(tok)) {
		t.Errorf("the discovery file holds the token itself")
	}
}
