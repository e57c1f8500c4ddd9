// Package localbridge is sandscope's embedded default: a faithful local implementation of the
// Cloudflare Sandbox bridge API (1.0 preview dialect) over real local processes and PTYs, with
// sandboxes as directories and explicit container incarnations.
//
// It must behave like the real bridge byte for byte where clients can see it (routes, validation
// messages, status codes, SSE framing, cursors, WebSocket protocol and close codes), bind loopback
// unless told otherwise, always require its token, and never let a path escape a sandbox workspace.
// Extensions beyond the real API are marked as such in the OpenAPI document it serves.
//
// Use: New(Config) then Start (or mount Handler), URL, and Close(ctx), which ends every process
// group and PTY. Tests start one with localbridge/bridgetest. Each sandbox is <Root>/<id>/workspace,
// which plays /workspace; it survives stop and replace (unlike a real new container) and is removed
// by DELETE /v1/sandbox/{id}.
//
// A restart over the same root is the same bridge: <Root>/bridge-id holds its identity (ID,
// ReadBridgeID), and <Root>/<id>/sandbox.json each sandbox's incarnation count and times, so New
// lists the sandboxes already there as stopped and their next container life continues the
// numbering. Processes and terminals do not survive: their IDs answer 404 as after a stop.
//
// Extensions (marked "x-sandscope-extension" in /v1/openapi.json):
//   - GET /v1/x-sandscope/sandboxes (ListPath) lists sandboxes (the JSON of client.SandboxInfo),
//     announced as the GET operation "listSandboxes"; the preview dialect also answers the list on
//     GET /v1/sandbox for older sandscope clients (the stable dialect answers that as the
//     published stable bridge does: text 404);
//   - POST /v1/sandbox/{id}/stop ends the incarnation as idle sleep would (204); lookups then
//     answer as with no assignment; the next allocating call starts incarnation n+1;
//   - POST /v1/sandbox/{id}/replace starts a new incarnation at once (200 {"running":true,
//     "incarnation":n}); old IDs answer 404, open log streams are aborted, terminal sockets close
//     with 1012;
//   - status JSON of processes, terminals and /running carries an integer "incarnation";
//     /running and the sandbox list also carry "incarnationStarted" (RFC 3339, UTC, nanoseconds);
//   - info["x-sandscope-bridge-id"] announces the bridge's identity.
//
// Not supported: bucket mounts, tunnels and (preview dialect) the warm pool routes answer
// 501 {"error":"the local bridge does not support …","code":"not_supported"} (after the same ID
// check, auth and pool allocation as the real routes; on the stable dialect also after the real
// routes' request checks, port and tunnel name, mount and unmount bodies, with their answers).
// The stable dialect answers the pool routes as a pool without warm containers: its statistics in
// the published shape, prime and shutdown-prewarmed {"ok":true}. Outside /v1 and /health it
// answers as the published bridge with no Worker of its own: 404 "Not Found". A Host header that is neither a loopback
// name nor the listen address is refused with 421 {"code":"host_not_allowed"} (DNS rebinding).
// Process launch bodies are limited to 1 MiB of JSON.
//
// Test hooks: StopSandbox, ReplaceSandbox and SetCapacityExceeded (allocating calls then answer
// 503 capacity_exceeded with the pool's message).
package localbridge
