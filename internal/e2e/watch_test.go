package e2e_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
	"sandscope/internal/otlptest"
)

// TestWatchBinaryExportsAgainstServe: the real `sandscope watch` beside a real `sandscope serve`
// (found through serve.json, as any command finds it), exporting to an OTLP/HTTP receiver that
// decodes with the Collector's pdata: a process that exits 3 becomes a span saying so, the token
// is in no payload, and SIGTERM ends watch with status 0 (its drain is bounded at 3 s; the
// in-process test in internal/watch holds it to 5 s; here a loaded machine gets more).
func TestWatchBinaryExportsAgainstServe(t *testing.T) {
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	serve := e2e.StartServe(t, env, filepath.Join(dir, "state"))
	tok, err := os.ReadFile(serve.Disc.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	c, err := client.New(serve.Disc.URL, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.StartProcess(ctx, "wbox", client.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	recv := otlptest.Start(t)
	cmd := exec.Command(e2e.Binary(t), "watch", "--json")
	cmd.Env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	// watch lists the sandbox (the local bridge lists its sandboxes), then sees this one run and end
	time.Sleep(2 * time.Second)
	p, err := c.StartProcess(ctx, "wbox", client.ExecRequest{Argv: []string{"sh", "-c", "sleep 1; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	err = otlptest.WaitFor(60*time.Second, func() bool {
		for _, sp := range recv.Spans() {
			id, _ := sp.Attributes().Get("sandscope.run.id")
			state, _ := sp.Attributes().Get("sandscope.state")
			if id.Str() == p.ID && state.Str() == "EXITED 3" {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no span saying EXITED 3 for %s (%d bodies received)\nwatch said:\n%s", p.ID, recv.Bodies(), stderr.String())
	}
	if recv.Contains([]byte(token)) {
		t.Fatal("the bridge token is in a payload")
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch after SIGTERM: %v\n%s", err, stderr.String())
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("watch took %s to end after SIGTERM", d)
	}
}
