package common

import (
	"time"

	"sandscope/client"
	"sandscope/driver"
)

// TermConn is a live terminal connection: client.TermConn, the one type that preview terminals
// and stable PTYs share with the embedded pane and full-screen attach.
type TermConn = client.TermConn

// WatchHandle is a running sandbox watcher (driver.WatchHandle).
type WatchHandle = driver.WatchHandle

// CallTimeout bounds every one-shot bridge call made from the UI.
const CallTimeout = 30 * time.Second
