// Package localbridge is sandscope's embedded default: a faithful local implementation of the
// Cloudflare Sandbox bridge API (1.0 preview dialect) over real local processes and PTYs, with
// sandboxes as directories and explicit container incarnations.
//
// It must behave like the real bridge byte for byte where clients can see it (routes, validation
// messages, status codes, SSE framing, cursors, WebSocket protocol and close codes), bind loopback
// unless told otherwise, always require its token, and never let a path escape a sandbox workspace.
// Extensions beyond the real API are marked as such in the OpenAPI document it serves.
package localbridge
