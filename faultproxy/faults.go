package faultproxy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

type faultKind int

const (
	kindCut faultKind = iota + 1
	kindStall
	kindRespond
	kindGarbleSSE
	kindInjectSSE
	kindWSDrop
	kindWSByteLength
	kindWSStall
)

// Fault is one way of breaking a request. Make one with the constructors in this file.
type Fault struct {
	kind  faultKind
	n     int64         // byte offset (cut, stall) or message/event count (SSE, WebSocket)
	d     time.Duration // stall length; 0 = until the rule is removed
	rnd   *lockedRand   // CutAfterRandom: n drawn per request in [0, max]
	max   int64
	code  int // status (Respond) or close code (WSDrop) or byteLength delta (WSBadByteLength)
	ctype string
	body  string
	// forgedExit makes InjectSSE build a terminal exit event carrying the last seen cursor.
	forgedExit bool
}

// String describes the fault for test logs and Request records.
func (f Fault) String() string {
	switch f.kind {
	case kindCut:
		if f.rnd != nil {
			return fmt.Sprintf("cut after random ≤%d bytes", f.max)
		}
		return fmt.Sprintf("cut after %d bytes", f.n)
	case kindStall:
		return fmt.Sprintf("stall after %d bytes for %v", f.n, f.d)
	case kindRespond:
		return fmt.Sprintf("respond %d", f.code)
	case kindGarbleSSE:
		return fmt.Sprintf("garble SSE data line %d", f.n)
	case kindInjectSSE:
		return fmt.Sprintf("inject SSE event after event %d", f.n)
	case kindWSDrop:
		return fmt.Sprintf("WebSocket drop %d after message %d", f.code, f.n)
	case kindWSByteLength:
		return fmt.Sprintf("WebSocket byteLength %+d after message %d", f.code, f.n)
	case kindWSStall:
		return fmt.Sprintf("WebSocket stall after message %d for %v", f.n, f.d)
	}
	return "no fault"
}

func (f Fault) forWebSocket() bool {
	return f.kind == kindWSDrop || f.kind == kindWSByteLength || f.kind == kindWSStall ||
		f.kind == kindRespond || (f.kind == kindStall && f.n < 0)
}

func (f Fault) forHTTP() bool {
	return f.kind != kindWSDrop && f.kind != kindWSByteLength && f.kind != kindWSStall
}

// CutAfter forwards the status, headers and the first n body bytes, then closes the client
// connection abruptly (no chunked terminator, short of any Content-Length).
func CutAfter(n int64) Fault { return Fault{kind: kindCut, n: max(n, 0)} }

// CutAfterRandom is CutAfter with n drawn from rng in [0, maxBytes] each time the fault is
// applied, for cut-anywhere loops. rng may be shared; draws are serialised.
func CutAfterRandom(rng *rand.Rand, maxBytes int64) Fault {
	return Fault{kind: kindCut, rnd: &lockedRand{r: rng}, max: max(maxBytes, 0)}
}

// Stall holds the request before anything is forwarded (no status, no headers) for d, then
// proxies it normally. d = 0 holds it until the rule is removed or the client gives up. It applies
// to WebSocket handshakes too.
func Stall(d time.Duration) Fault { return Fault{kind: kindStall, n: -1, d: d} }

// StallAfter forwards the headers and the first n body bytes, then stops forwarding for d before
// continuing. d = 0 holds the stream until the rule is removed or the client gives up.
func StallAfter(n int64, d time.Duration) Fault {
	return Fault{kind: kindStall, n: max(n, 0), d: d}
}

// Respond answers with a canned response instead of contacting the target.
func Respond(status int, contentType, body string) Fault {
	return Fault{kind: kindRespond, code: status, ctype: contentType, body: body}
}

// InternalError is the bridge's unwrapped failure: text 500 "Internal Server Error".
func InternalError() Fault {
	return Respond(http.StatusInternalServerError, "text/plain; charset=UTF-8", "Internal Server Error")
}

// PoolError is the bridge's 502 {"error":"pool error: msg","code":"pool_error"}.
func PoolError(msg string) Fault {
	return Respond(http.StatusBadGateway, "application/json", errorJSON("pool error: "+msg, "pool_error"))
}

// CapacityExceeded is the bridge's 503 capacity_exceeded answer of a full pool.
func CapacityExceeded() Fault {
	return Respond(http.StatusServiceUnavailable, "application/json", errorJSON(
		"Cannot start container: instance limit reached (1/1). All container slots are in use.", "capacity_exceeded"))
}

// Unauthorized is the bridge's 401 answer.
func Unauthorized() Fault {
	return Respond(http.StatusUnauthorized, "application/json", errorJSON("Unauthorized", "unauthorized"))
}

func errorJSON(msg, code string) string {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
	return string(b)
}

// GarbleSSE corrupts the JSON of the k-th "data:" line (1-based) of an event stream; the line
// stays one line and the stream continues.
func GarbleSSE(k int) Fault { return Fault{kind: kindGarbleSSE, n: int64(max(k, 1))} }

// InjectSSE sends "data: <eventJSON>" as an extra event right after the k-th event (k = 0: before
// the first), then ends the stream cleanly as if the server had finished.
func InjectSSE(k int, eventJSON string) Fault {
	return Fault{kind: kindInjectSSE, n: int64(max(k, 0)), body: eventJSON}
}

// ForgedExit is InjectSSE with a process "terminal" event reporting exit code code, stamped with
// the cursor of the last real event forwarded: the fabricated-completion failure.
func ForgedExit(k int, code int) Fault {
	return Fault{kind: kindInjectSSE, n: int64(max(k, 0)), code: code, forgedExit: true}
}

// WSDrop ends a WebSocket after the k-th server-to-client message (k = 0: right after the
// handshake): the client gets a close frame with code and reason, or for code 1006 its TCP
// connection is closed without one. The upstream connection is cut either way.
func WSDrop(k int, code int, reason string) Fault {
	return Fault{kind: kindWSDrop, n: int64(max(k, 0)), code: code, body: reason}
}

// WSBadByteLength adds delta to the byteLength of the first terminal chunk header forwarded after
// the k-th server message; the binary frame itself is forwarded unchanged.
func WSBadByteLength(k int, delta int) Fault {
	return Fault{kind: kindWSByteLength, n: int64(max(k, 0)), code: delta}
}

// WSStall stops forwarding server messages after the k-th for d (0 = until the rule is removed or
// either side closes); client messages keep flowing.
func WSStall(k int, d time.Duration) Fault {
	return Fault{kind: kindWSStall, n: int64(max(k, 0)), d: d}
}

type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) int64N(maxIncl int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.r == nil {
		return rand.Int64N(maxIncl + 1)
	}
	return l.r.Int64N(maxIncl + 1)
}

// resolve fixes per-application values (the random cut offset).
func (f Fault) resolve() Fault {
	if f.kind == kindCut && f.rnd != nil {
		f.n = f.rnd.int64N(f.max)
		f.rnd = nil
	}
	return f
}
