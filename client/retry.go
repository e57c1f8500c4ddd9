package client

import (
	"context"
	"time"
)

// doubling is the n-th wait (n ≥ 1) of a sequence that starts at lo and doubles up to hi. Callers
// add their own jitter.
func doubling(lo, hi time.Duration, n int) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// sleepCtx waits for d unless ctx ends first; it reports whether the wait ran its course.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
