// Package faultproxy is a programmable fault-injecting reverse proxy for sandscope's tests: it
// sits between a bridge client and a bridge (usually the local bridge) on 127.0.0.1 and, on
// command, breaks the traffic the ways real networks and the real platform break it, so tests can
// check that nothing is lost, duplicated or reported as success when it was not.
//
// Without rules it is transparent: plain HTTP, Server-Sent Events (flushed through as they
// arrive, never buffered) and WebSockets (upgraded on both sides, then relayed frame by frame).
//
//	p := faultproxy.New(bridgeURL) // listens on 127.0.0.1:0; Start returns an error instead of panicking
//	defer p.Close()
//	c := client.New(p.URL(), …)
//
//	// The next request whose path contains "/logs" is cut after 100 body bytes (abrupt close,
//	// no chunked terminator).
//	r := p.Add(faultproxy.Rule{Path: "/logs", Times: 1, Fault: faultproxy.CutAfter(100)})
//	… r.Hits() == 1 …
//
// A Rule says where (Path substring and/or PathRegexp, optional Method), what (one Fault) and how
// often (Times: the next N matching requests; 0 = every matching request until removed with
// Rule.Remove or Proxy.Clear). Rules are tried in the order added; the first rule that matches
// and still has uses takes the request, and a rule only matches requests its fault applies to
// (WebSocket faults match only WebSocket upgrades, the others only plain HTTP, canned responses
// and Stall both). Rules can be added and removed at any time, also while streams are open.
//
// Faults:
//   - CutAfter(n), CutAfterRandom(rng, max): forward n body bytes, then close the connection.
//   - Stall(d), StallAfter(n, d): hold the response (before headers, or after n body bytes) for
//     d; d = 0 holds it until the rule is removed, the client gives up or the proxy closes.
//   - Respond(status, contentType, body) and the bridge's canned failures: InternalError (text
//     500), PoolError (502 pool_error), CapacityExceeded (503), Unauthorized (401).
//   - GarbleSSE(k): the k-th "data:" line's JSON is corrupted.
//   - InjectSSE(k, json), ForgedExit(k, code): after the k-th event a forged event is sent and
//     the stream then ends cleanly (the "fabricated completion" failure).
//   - WSDrop(k, code, reason): after the k-th server message the client's socket is closed with
//     that close code (1006 = TCP closed without a close frame) and the upstream socket is cut.
//   - WSBadByteLength(k, delta): the first chunk header after k server messages announces
//     byteLength+delta.
//   - WSStall(k, d): server messages stop being forwarded after the k-th, for d (0 = until removed).
//
// Counters (Stats, Requests, Rule.Hits) let tests assert what happened on the wire.
//
// It is test tooling: it must never listen beyond loopback, never be used in the product's own
// request path, and never log or record request headers (they carry the bridge token).
package faultproxy
