package record

import (
	"testing"

	"sandscope/client"
)

// A generated sandbox is one a bridge could hold: its name is a sandbox ID, and no two share one.
func TestSyntheticSandboxNamesAreSandboxIDs(t *testing.T) {
	var s Synthetic
	seen := map[string]int{}
	for i := 0; i < 20_000; i++ {
		name := s.SandboxName(i)
		if !client.ValidSandboxID(name) {
			t.Fatalf("sandbox %d is named %q, not a sandbox ID", i, name)
		}
		if j, dup := seen[name]; dup {
			t.Fatalf("sandboxes %d and %d are both %q", j, i, name)
		}
		seen[name] = i
	}
	if got := s.SandboxName(42); got != "scaleaaabq" {
		t.Fatalf("sandbox 42 is %q", got)
	}
}
