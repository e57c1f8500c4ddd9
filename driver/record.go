package driver

import (
	"context"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// ForRecord adapts a driver to the record's background watcher. Its follows are Background: on a
// bridge whose reads wake containers, the record captures only what the driver already receives.
func ForRecord(d Driver) record.Bridge { return recordBridge{d} }

type recordBridge struct{ d Driver }

func (r recordBridge) Watch(ctx context.Context, s string, o client.WatchOptions) (<-chan client.SandboxEvent, func(bool), func(time.Duration)) {
	h := r.d.Watch(ctx, s, o)
	return h.Events, h.SetFocused, h.SetSlow
}

func (r recordBridge) Follow(ctx context.Context, s, p string, o client.FollowOptions) <-chan client.LogEvent {
	return r.d.Follow(ctx, s, p, FollowOptions{FollowOptions: o, Background: true, capture: true})
}
