package bridgetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"sandscope/localbridge"
)

// Bridge is a running local bridge.
type Bridge struct {
	URL    string // base URL, e.g. http://127.0.0.1:41234
	Token  string // bearer token
	Root   string // temporary sandbox root
	Server *localbridge.Server
}

// Option adjusts the bridge's configuration before it starts.
type Option func(*localbridge.Config)

// WithIdleSleep enables idle sleep after d.
func WithIdleSleep(d time.Duration) Option {
	return func(c *localbridge.Config) { c.IdleSleep = d }
}

// WithProcessLogLimits overrides the per-process log retention (bytes, events).
func WithProcessLogLimits(bytes, events int) Option {
	return func(c *localbridge.Config) { c.ProcessLogBytes, c.ProcessLogEvents = bytes, events }
}

// WithDialect makes the bridge speak a dialect (localbridge.DialectPreview or DialectStable).
func WithDialect(dialect string) Option {
	return func(c *localbridge.Config) { c.Dialect = dialect }
}

// WithConfig applies any change to the configuration (Listen is forced back to loopback).
func WithConfig(f func(*localbridge.Config)) Option { return Option(f) }

// Start starts a bridge on 127.0.0.1 with a temporary root and a random token; it is closed when
// the test ends.
func Start(t testing.TB, opts ...Option) *Bridge {
	t.Helper()
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		t.Fatalf("bridgetest: token: %v", err)
	}
	cfg := localbridge.Config{Root: t.TempDir(), Token: hex.EncodeToString(raw[:])}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.Listen = "127.0.0.1:0"
	cfg.AllowNonLoopback = false
	srv, err := localbridge.New(cfg)
	if err != nil {
		t.Fatalf("bridgetest: new: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("bridgetest: start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("bridgetest: close: %v", err)
		}
	})
	return &Bridge{URL: srv.URL(), Token: cfg.Token, Root: cfg.Root, Server: srv}
}
