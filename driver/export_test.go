package driver

import "time"

// SetStableRecoverEvery shortens how often the stable driver reads the recorder's files (tests).
func SetStableRecoverEvery(d *Stable, every time.Duration) { d.recoverEvery = every }

// SetStableBufferCap shrinks a live run's buffer (tests).
func SetStableBufferCap(d *Stable, n int64) { d.bufferCap = n }
