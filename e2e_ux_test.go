package main

// End-to-end checks of issue-level user experience: what a person sees on screen or in exit codes.

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

// TestE2EKeysTypedTogether types jj as one write (as fast typing, key repeat or a busy machine
// deliver it): the cursor moves two rows, and enter opens the third sandbox.
func TestE2EKeysTypedTogether(t *testing.T) {
	tmuxPath := needTmux(t)
	b, c := e2eBridge(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range []string{"keysb", "keysc"} {
		if _, err := c.StartProcess(ctx, id, client.ExecRequest{Argv: []string{"true"}}); err != nil {
			t.Fatalf("create sandbox %s: %v", id, err)
		}
	}
	dir := t.TempDir()
	s := launchTUI(t, tmuxPath, dir, tuiEnv(t, dir), "--url", b.URL, "--token-file", tokenFile(t, b))
	sc := s.waitFor("three sandboxes", "Sandboxes (3)", "e2e", "keysb", "keysc")
	// the rows in screen order
	var order []string
	for _, l := range lines(sc) {
		for _, id := range []string{"e2e", "keysb", "keysc"} {
			if strings.Contains(l, " "+id+" ") || strings.HasSuffix(strings.TrimSpace(l), id) || strings.Contains(l, "▸ "+id) {
				order = append(order, id)
			}
		}
	}
	if len(order) != 3 {
		t.Fatalf("could not read the row order (%v) from:\n%s", order, sc)
	}
	s.typeText("jj")
	s.keys("Enter")
	s.waitFor("the third sandbox opened", "Sandbox "+order[2])
}
