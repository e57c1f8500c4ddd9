package localbridge_test

import (
	"os"
	"path/filepath"
	"testing"

	"sandscope/localbridge/bridgetest"
)

// TestWorkspaceIsReal runs `cd /workspace && pwd` through the bridge: with namespaces it prints
// /workspace and a file written there lands in the sandbox's workspace; without, the isolation
// report says why.
func TestWorkspaceIsReal(t *testing.T) {
	b := bridgetest.Start(t)
	iso := b.Server.Isolation()
	if !iso.Namespaces {
		if iso.Reason == "" {
			t.Fatal("no isolation and no reason given")
		}
		t.Logf("no namespaces on this machine: %s", iso.Reason)
		return
	}
	st := launch(t, b, "wsreal", map[string]any{"argv": []string{"sh", "-c", "cd /workspace && pwd && echo $HOME && echo hi > /workspace/made-inside"}})
	waitExit(t, b, "wsreal", st.ID)
	_, evs, _ := readSSE(t, b, "/v1/sandbox/wsreal/processes/"+st.ID+"/logs")
	var out string
	for _, e := range evs {
		if e.Type == "stdout" {
			out += string(e.bytes(t))
		}
	}
	if out != "/workspace\n/workspace\n" {
		t.Fatalf("output %q, want /workspace twice (pwd, HOME)", out)
	}
	if got, err := os.ReadFile(filepath.Join(b.Root, "wsreal", "workspace", "made-inside")); err != nil || string(got) != "hi\n" {
		t.Fatalf("file written at /workspace: %q %v", got, err)
	}
}
