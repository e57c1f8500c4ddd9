package e2e_test

// The end-to-end tests: the real sandscope binary (built once for the whole package), driven in
// tmux or run as a command, against local bridges the tests control. They moved here from the
// root package so that they build against the binary only, never against package main's
// internals, and so `go test .` at the root runs its own tests alone.

import (
	"testing"

	"sandscope/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }
