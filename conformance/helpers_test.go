package conformance

import (
	"context"
	"os"
	"testing"
)

// needHarness returns the harness folder with its node_modules installed, skipping the test when
// node or npm is missing (failing instead when CI is set).
func needHarness(t *testing.T) string {
	t.Helper()
	if err := CheckNode(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (CI is set: install Node.js 20+ and npm)", err)
		}
		t.Skipf("%v; skipping (set CI to make this a failure)", err)
	}
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if err := EnsureModules(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
