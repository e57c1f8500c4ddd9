package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

const (
	wsWriteTimeout = 10 * time.Second
	wsReadLimit    = 64 << 20
)

// Handshake headers the dialer sets itself, and hop-by-hop headers that must not be forwarded.
var wsSkipHeaders = map[string]bool{
	"Upgrade": true, "Connection": true, "Sec-Websocket-Key": true, "Sec-Websocket-Version": true,
	"Sec-Websocket-Extensions": true, "Sec-Websocket-Protocol": true, "Keep-Alive": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
}

// wsPair is one relayed WebSocket: the client side and the upstream side.
type wsPair struct {
	client, up *websocket.Conn
	once       sync.Once
	dropping   atomic.Bool   // a drop fault is closing the pair: the relays leave the client socket alone
	upDone     chan struct{} // closed when the client→target relay ended
	ctx        context.Context
	cancel     context.CancelFunc // ends the pair's waits; called by kill
}

// linger waits (briefly) for the client to answer a close frame, so its TCP connection is not
// reset while it still has frames to read.
func (w *wsPair) linger() {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-w.upDone:
	case <-t.C:
	}
}

// drainClient half-closes the client's TCP connection after a close frame and reads whatever the
// client still sends until it hangs up (at most a second). Closing a socket with unread input makes
// the kernel answer with a reset, and a reset makes the peer discard data it has not read yet — the
// close frame included — so the client would see an abrupt drop instead of the code it was sent.
func (w *wsPair) drainClient() {
	nc := w.client.NetConn()
	if hc, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = hc.CloseWrite()
	}
	_ = nc.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.Copy(io.Discard, nc)
}

// kill closes both TCP connections without close frames.
func (w *wsPair) kill() {
	w.once.Do(func() {
		w.cancel()
		_ = w.client.NetConn().Close()
		_ = w.up.NetConn().Close()
	})
}

func (p *Proxy) wsTarget(r *http.Request) string {
	scheme := "ws"
	if p.target.Scheme == "https" {
		scheme = "wss"
	}
	u := scheme + "://" + p.target.Host + strings.TrimSuffix(p.target.EscapedPath(), "/") + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	return u
}

// serveWebSocket dials the target first, so a refused handshake (400, 404, 409…) reaches the
// client unchanged, then upgrades the client and relays frames in both directions.
func (p *Proxy) serveWebSocket(w http.ResponseWriter, r *http.Request, a applied, idx int) {
	hdr := http.Header{}
	for k, vs := range r.Header {
		if !wsSkipHeaders[http.CanonicalHeaderKey(k)] {
			hdr[k] = vs
		}
	}
	dialer := websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		Subprotocols:     websocket.Subprotocols(r),
		ReadBufferSize:   32 << 10,
		WriteBufferSize:  32 << 10,
	}
	up, resp, err := dialer.DialContext(r.Context(), p.wsTarget(r), hdr)
	if err != nil {
		if resp != nil {
			p.setStatus(idx, resp.StatusCode)
			for k, vs := range resp.Header {
				if !wsSkipHeaders[k] {
					w.Header()[k] = vs
				}
			}
			w.WriteHeader(resp.StatusCode)
			if resp.Body != nil {
				n, _ := io.Copy(w, resp.Body)
				p.addStat(func(s *Stats) { s.BytesDown += n })
				_ = resp.Body.Close()
			}
			return
		}
		p.setStatus(idx, http.StatusBadGateway)
		http.Error(w, "faultproxy: upstream WebSocket unreachable", http.StatusBadGateway)
		return
	}
	up.SetReadLimit(wsReadLimit)
	upgrader := websocket.Upgrader{
		ReadBufferSize:  32 << 10,
		WriteBufferSize: 32 << 10,
		CheckOrigin:     func(*http.Request) bool { return true },
	}
	if sp := up.Subprotocol(); sp != "" {
		upgrader.Subprotocols = []string{sp}
	}
	client, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		_ = up.Close()
		return
	}
	p.setStatus(idx, http.StatusSwitchingProtocols)
	client.SetReadLimit(wsReadLimit)
	// The request's context ends when the handler returns; the relay outlives it.
	ctx, cancel := context.WithCancel(context.Background())
	pair := &wsPair{client: client, up: up, upDone: make(chan struct{}), ctx: ctx, cancel: cancel}
	p.mu.Lock()
	select {
	case <-p.closed:
		p.mu.Unlock()
		pair.kill()
		return
	default:
	}
	p.wsConns[pair] = struct{}{}
	p.stats.WebSockets++
	p.wg.Add(2)
	p.mu.Unlock()

	go func() {
		defer p.wg.Done()
		defer close(pair.upDone)
		p.relayUp(pair)
	}()
	go func() {
		defer p.wg.Done()
		p.relayDown(pair, a)
		pair.kill()
		p.mu.Lock()
		delete(p.wsConns, pair)
		p.mu.Unlock()
	}()
}

// relayUp forwards client messages to the target until either side ends.
func (p *Proxy) relayUp(pair *wsPair) {
	for {
		mt, data, err := pair.client.ReadMessage()
		if err != nil {
			if !pair.dropping.Load() && !forwardClose(pair.up, err) {
				pair.kill()
			}
			return
		}
		_ = pair.up.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
		if err := pair.up.WriteMessage(mt, data); err != nil {
			if !pair.dropping.Load() {
				pair.kill()
			}
			return
		}
		p.addStat(func(s *Stats) { s.BytesUp += int64(len(data)); s.MsgsUp++ })
	}
}

// relayDown forwards target messages to the client, applying the connection's fault.
func (p *Proxy) relayDown(pair *wsPair, a applied) {
	f := a.fault
	var count int64
	rewritePending := a.active && f.kind == kindWSByteLength
	// check runs before each message is read: faults that fire "after the k-th message".
	check := func() bool {
		if !a.active || count != f.n {
			return true
		}
		switch f.kind {
		case kindWSDrop:
			p.drop(pair, f.code, f.body)
			return false
		case kindWSStall:
			if !p.wait(pair.ctx, f.d, a.removed) {
				pair.kill()
				return false
			}
		}
		return true
	}
	for {
		if !check() {
			return
		}
		mt, data, err := pair.up.ReadMessage()
		if err != nil {
			if forwardClose(pair.client, err) {
				pair.linger()
			}
			return
		}
		if rewritePending && count >= f.n && mt == websocket.TextMessage {
			if out, ok := rewriteByteLength(data, f.code); ok {
				data = out
				rewritePending = false
			}
		}
		_ = pair.client.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
		if err := pair.client.WriteMessage(mt, data); err != nil {
			pair.kill()
			return
		}
		count++
		p.addStat(func(s *Stats) { s.BytesDown += int64(len(data)); s.MsgsDown++ })
	}
}

// drop ends the client's socket with code (1006: no close frame) and cuts the upstream.
func (p *Proxy) drop(pair *wsPair, code int, reason string) {
	pair.dropping.Store(true)
	_ = pair.up.NetConn().Close()
	if code != websocket.CloseAbnormalClosure && code != websocket.CloseNoStatusReceived {
		msg := websocket.FormatCloseMessage(code, reason)
		if pair.client.WriteControl(websocket.CloseMessage, msg, time.Now().Add(wsWriteTimeout)) == nil {
			pair.linger()
			pair.drainClient()
		}
	}
	pair.kill()
}

// forwardClose passes a close frame received from one side to the other, keeping its code and
// reason. It reports false for anything else (TCP loss, 1006), which the caller turns into an
// abrupt close.
func forwardClose(to *websocket.Conn, err error) bool {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code == websocket.CloseAbnormalClosure {
		return false
	}
	var msg []byte
	if ce.Code != websocket.CloseNoStatusReceived {
		msg = websocket.FormatCloseMessage(ce.Code, ce.Text)
	}
	return to.WriteControl(websocket.CloseMessage, msg, time.Now().Add(wsWriteTimeout)) == nil
}

// rewriteByteLength changes the byteLength of a terminal chunk header; other messages are left
// alone.
func rewriteByteLength(data []byte, delta int) ([]byte, bool) {
	if !bytes.Contains(data, []byte(`"chunk"`)) {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || string(m["type"]) != `"chunk"` {
		return nil, false
	}
	n, err := strconv.Atoi(string(m["byteLength"]))
	if err != nil {
		return nil, false
	}
	m["byteLength"] = json.RawMessage(strconv.Itoa(n + delta))
	out, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	return out, true
}
