// Package conformance checks sandscope's local bridge against the published Cloudflare Sandbox
// bridge, differentially: the same table of HTTP requests goes to the local bridge and to the real
// bridge request handler of @cloudflare/sandbox@0.13.0-next.751.1, loaded in Node by the harness in
// harness/ (a stand-in for the `cloudflare:workers` module and fake Durable Object namespaces whose
// Sandbox stub answers from a script), and status, content type and body are compared after
// normalising IDs and timestamps.
//
// The script given to the harness is built from what the local bridge itself reported for the same
// processes and terminals (their status and log events), so what is compared is the bridge layer:
// routing, authentication, validation order and messages, error mapping, query parsing and SSE
// framing. Container behaviour (process semantics, cursor arithmetic) is covered by the local
// bridge's own tests.
//
// `go test ./conformance/` runs `npm ci` in this folder when node_modules is missing (the
// package is a devDependency; none of its code is committed). Without node and npm the test skips,
// unless CI is set, where it fails. The package must never talk to anything but loopback and the
// Node child it starts.
package conformance
