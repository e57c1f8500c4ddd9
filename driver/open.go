package driver

import (
	"context"
	"errors"
	"io"

	"sandscope/client"
	"sandscope/record"
)

// Options are what a driver may need beyond the client.
type Options struct {
	// Record keeps what the stable driver learns (its run index, markers, notices); nil keeps
	// them in memory for this process only.
	Record *record.Record
	// Notices receives the driver's one-line notices to the user ("this starts the container",
	// "a different container answers now"); nil discards them.
	Notices io.Writer
}

// Open reads the bridge's API document and returns the driver for the dialect it speaks. It is
// the only place that tells the dialects apart. A bridge that did not answer at all is an error
// (client.ErrNoAnswer); a bridge without a readable document gets the preview driver, as the
// client always assumed.
func Open(ctx context.Context, c *client.Client, opts Options) (Driver, error) {
	caps, err := c.Capabilities(ctx)
	if errors.Is(err, client.ErrNoAnswer) {
		return nil, err
	}
	if err == nil && caps.Dialect == client.DialectStable {
		return NewStable(c, caps, opts), nil
	}
	if err != nil {
		caps = client.Capabilities{}
	}
	return NewPreview(c, caps), nil
}
