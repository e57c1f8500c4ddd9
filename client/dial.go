package client

import (
	"context"
	"net"
	"time"

	"sandscope/internal/quietio"
)

// bridgeDialer dials the bridge for the shared transport: its connections read without waking
// the Go runtime's monitor thread where the platform allows (quietio).
var bridgeDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

func dialBridge(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := bridgeDialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return quietio.Conn(c), nil
}
