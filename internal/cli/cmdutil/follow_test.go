package cmdutil

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// A stream-copying command runs on one core with a collector that waits for a heap five times
// what is live, unless the user chose either.
func TestStreamOnOneCoreSettings(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(100)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs); debug.SetGCPercent(gc) })

	for _, k := range []string{"GOGC", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Cleanup(func() { os.Setenv(k, v) })
			os.Unsetenv(k)
		}
	}
	StreamOnOneCore()
	if got := debug.SetGCPercent(100); got != streamGCPercent {
		t.Errorf("GC percent %d, want %d", got, streamGCPercent)
	}
	if got := runtime.GOMAXPROCS(procs); got != 1 {
		t.Errorf("GOMAXPROCS %d, want 1", got)
	}

	t.Setenv("GOGC", "50")
	t.Setenv("GOMAXPROCS", "2")
	debug.SetGCPercent(50)
	runtime.GOMAXPROCS(2)
	StreamOnOneCore()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GOGC=50 set by the user: GC percent %d", got)
	}
	if got := runtime.GOMAXPROCS(procs); got != 2 {
		t.Errorf("GOMAXPROCS=2 set by the user: %d", got)
	}
}
