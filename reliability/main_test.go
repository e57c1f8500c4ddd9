package reliability

import (
	"testing"

	"sandscope/internal/e2e"
)

// TestMain runs the tests with private XDG directories and removes the sandscope binary the tests
// that run it built (once, shared: e2e.Binary).
func TestMain(m *testing.M) { e2e.Main(m) }
