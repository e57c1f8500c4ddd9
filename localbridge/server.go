package localbridge

// Skeleton fixed so the process side and the terminal side can be built side by side. The owner of
// the process side fills this file in (and may split it); names used by terminals.go stay.

import (
	"context"
	"net/http"
)

// Config configures a Server.
type Config struct {
	Root             string // directory holding one folder per sandbox
	Listen           string // address to listen on (default 127.0.0.1:0)
	Token            string // required bearer token; never logged
	AllowNonLoopback bool   // binding a non-loopback address needs this
}

// Server is a running local bridge.
type Server struct {
	cfg Config
}

// incarnation is one container life of a sandbox: its own process and terminal tables. ctx is
// cancelled when the incarnation ends (stop or replace).
type incarnation struct {
	number    int
	sandbox   string
	workspace string // absolute path playing /workspace
	ctx       context.Context
	terms     *terminalTable
}

// lookupIncarnation returns the sandbox's current incarnation, or nil when none (lookup mode:
// never creates one).
func (s *Server) lookupIncarnation(sandbox string) *incarnation { return nil }

// allocateIncarnation returns the current incarnation, creating a new one when there is none
// (allocate mode).
func (s *Server) allocateIncarnation(sandbox string) (*incarnation, error) { return nil, nil }

// writeError writes the bridge's JSON error body {"error":msg,"code":code} with status.
func writeError(w http.ResponseWriter, status int, msg, code string) {}

// writeJSON writes v as application/json (no charset) with status.
func writeJSON(w http.ResponseWriter, status int, v any) {}

// writeNotFoundText writes Hono's text 404 ("404 Not Found", text/plain; charset=UTF-8).
func writeNotFoundText(w http.ResponseWriter) {}
