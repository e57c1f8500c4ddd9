// Package recordtest has fakes for code that runs a record's background watcher (record.Manager)
// without a bridge: tests, and the benchmarks that measure what the record and the screens cost.
package recordtest

import (
	"context"
	"time"

	"sandscope/client"
)

// IdleBridge is a record.Bridge whose watchers never report and whose followers end at once: the
// manager lists and tracks the sandboxes, and what it knows comes from the record alone.
type IdleBridge struct{}

// Watch starts a watcher that reports nothing until ctx ends.
func (IdleBridge) Watch(ctx context.Context, _ string, _ client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	ch := make(chan client.SandboxEvent)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, func(bool) {}, func(time.Duration) {}
}

// Follow returns a stream that has ended.
func (IdleBridge) Follow(context.Context, string, string, client.FollowOptions) <-chan client.LogEvent {
	ch := make(chan client.LogEvent)
	close(ch)
	return ch
}
