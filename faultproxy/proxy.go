package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Proxy is a running fault-injecting reverse proxy. Its methods are safe for concurrent use.
type Proxy struct {
	target    *url.URL
	ln        net.Listener
	srv       *http.Server
	transport *http.Transport
	url       string
	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	rules    []*Rule
	all      []*Rule // every rule ever added, so Clear releases used-up rules' stalls too
	stats    Stats
	requests []Request // the most recent requests; requests[0] is number reqBase
	reqBase  int
	wsConns  map[*wsPair]struct{}
	wg       sync.WaitGroup // WebSocket relays
}

// Stats are the proxy's counters since it started.
type Stats struct {
	Requests   int64 // HTTP requests and WebSocket handshakes received
	WebSockets int64 // WebSocket connections relayed (handshake succeeded on both sides)
	Faults     int64 // faults applied
	BytesDown  int64 // response body bytes and server→client WebSocket payload bytes forwarded
	BytesUp    int64 // client→server WebSocket payload bytes forwarded (request bodies not counted)
	MsgsDown   int64 // server→client WebSocket messages forwarded
	MsgsUp     int64 // client→server WebSocket messages forwarded
}

// Request records one request the proxy received (headers are never recorded: they carry the
// token).
type Request struct {
	Method    string
	Path      string
	Query     string
	WebSocket bool
	Fault     string // the fault applied, "" when none
	Status    int    // status answered (0 if the connection failed before one)
}

// Rule scopes one fault. Zero-valued matchers match everything.
type Rule struct {
	Path       string         // substring the URL path must contain ("" = any)
	PathRegexp *regexp.Regexp // optional regexp the URL path must match
	Method     string         // optional method ("GET", "POST"…)
	Times      int            // apply to the next Times matching requests; 0 = until removed
	Fault      Fault

	st *ruleState
}

type ruleState struct {
	p       *Proxy
	hits    int
	removed chan struct{}
	gone    bool
}

// New starts a proxy to target (an http:// base URL) on 127.0.0.1 with a random port. Like
// httptest.NewServer it panics if it cannot listen or target is not an http URL; use Start to get
// an error instead.
func New(target string) *Proxy {
	p, err := Start(target)
	if err != nil {
		panic(fmt.Sprintf("faultproxy: %v", err))
	}
	return p
}

// Start is New returning an error instead of panicking.
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target %q: want an http(s) base URL", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	p := &Proxy{
		target: u,
		ln:     ln,
		url:    "http://" + ln.Addr().String(),
		closed: make(chan struct{}),
		transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     30 * time.Second,
		},
		wsConns: make(map[*wsPair]struct{}),
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's base URL (http://127.0.0.1:port); use it in place of the target's.
func (p *Proxy) URL() string { return p.url }

// Close stops the proxy: the listener, every open connection (WebSockets included) and every
// stall end.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() {
		close(p.closed)
		_ = p.srv.Close()
		p.mu.Lock()
		for w := range p.wsConns {
			w.kill()
		}
		p.mu.Unlock()
		p.wg.Wait()
		p.transport.CloseIdleConnections()
	})
}

// Add installs a rule and returns its handle.
func (p *Proxy) Add(r Rule) *Rule {
	r.st = &ruleState{p: p, removed: make(chan struct{})}
	rr := r
	p.mu.Lock()
	p.rules = append(p.rules, &rr)
	p.all = append(p.all, &rr)
	p.mu.Unlock()
	return &rr
}

// Clear removes every rule; stalls waiting on any rule resume.
func (p *Proxy) Clear() {
	p.mu.Lock()
	p.rules = nil
	for _, r := range p.all {
		r.st.markGoneLocked()
	}
	p.all = nil
	p.mu.Unlock()
}

// Remove uninstalls the rule; stalls it holds resume. Removing twice is harmless.
func (r *Rule) Remove() {
	if r == nil || r.st == nil {
		return
	}
	p := r.st.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.rules {
		if x == r {
			p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			break
		}
	}
	r.st.markGoneLocked()
}

func (s *ruleState) markGoneLocked() {
	if !s.gone {
		s.gone = true
		close(s.removed)
	}
}

// Hits is how many requests the rule has been applied to.
func (r *Rule) Hits() int {
	if r == nil || r.st == nil {
		return 0
	}
	r.st.p.mu.Lock()
	defer r.st.p.mu.Unlock()
	return r.st.hits
}

// Stats returns a snapshot of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// maxRecords bounds the request log so long soak runs stay small; the oldest half is dropped
// when it is full.
const maxRecords = 20000

// Requests returns the requests received so far (at most the latest 20,000), oldest first.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

func (p *Proxy) addStat(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

func (p *Proxy) setStatus(idx, status int) {
	p.mu.Lock()
	if i := idx - p.reqBase; i >= 0 && i < len(p.requests) {
		p.requests[i].Status = status
	}
	p.mu.Unlock()
}

// applied is the fault chosen for one request and the rule that supplied it.
type applied struct {
	fault   Fault
	removed <-chan struct{} // closed when the rule goes away
	active  bool
}

// pick records the request and takes a fault from the first matching rule with uses left.
func (p *Proxy) pick(r *http.Request, ws bool) (applied, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	var a applied
	for i, rule := range p.rules {
		if !rule.matches(r, ws) {
			continue
		}
		rule.st.hits++
		a = applied{fault: rule.Fault.resolve(), removed: rule.st.removed, active: true}
		if rule.Times > 0 && rule.st.hits >= rule.Times {
			// Used up: no further requests match, but an open-ended stall it started still
			// waits for Remove or Clear.
			p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
		}
		p.stats.Faults++
		break
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, WebSocket: ws}
	if a.active {
		rec.Fault = a.fault.String()
	}
	if len(p.requests) >= maxRecords {
		n := copy(p.requests, p.requests[maxRecords/2:])
		p.requests = p.requests[:n]
		p.reqBase += maxRecords / 2
	}
	p.requests = append(p.requests, rec)
	return a, p.reqBase + len(p.requests) - 1
}

func (r *Rule) matches(req *http.Request, ws bool) bool {
	if r.Method != "" && !strings.EqualFold(r.Method, req.Method) {
		return false
	}
	if r.Path != "" && !strings.Contains(req.URL.Path, r.Path) {
		return false
	}
	if r.PathRegexp != nil && !r.PathRegexp.MatchString(req.URL.Path) {
		return false
	}
	if ws {
		return r.Fault.forWebSocket()
	}
	return r.Fault.forHTTP()
}

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(strings.TrimSpace(r.Header.Get("Upgrade")), "websocket")
}

// wait blocks for d (d = 0: until the rule is removed), or until the request or proxy ends. It
// reports whether to go on.
func (p *Proxy) wait(ctx context.Context, d time.Duration, removed <-chan struct{}) bool {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-removed:
		return true
	case <-ctx.Done():
		return false
	case <-p.closed:
		return false
	}
}

// ServeHTTP proxies one request, applying the fault its rule chose.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws := isWebSocket(r)
	a, idx := p.pick(r, ws)
	f := a.fault
	if a.active {
		switch {
		case f.kind == kindRespond:
			if f.ctype != "" {
				w.Header().Set("Content-Type", f.ctype)
			}
			w.WriteHeader(f.code)
			_, _ = io.WriteString(w, f.body)
			p.setStatus(idx, f.code)
			return
		case f.kind == kindStall && f.n < 0:
			if !p.wait(r.Context(), f.d, a.removed) {
				abort(w)
				return
			}
		}
	}
	if ws {
		p.serveWebSocket(w, r, a, idx)
		return
	}
	p.serveHTTP(w, r, a, idx)
}

var errCut = errors.New("faultproxy: connection cut")

func (p *Proxy) serveHTTP(rw http.ResponseWriter, r *http.Request, a applied, idx int) {
	// The request body is the transport's to read while the response is relayed. Without full
	// duplex, net/http's server drains and closes an unfinished request body when the response's
	// header is written, and the target answers as soon as it has the body's bytes: the
	// transport's last read (for EOF) could then meet the closed body, and it closes the
	// upstream connection for that write error, cutting a response nothing was meant to cut.
	_ = http.NewResponseController(rw).EnableFullDuplex()
	w := &lockedWriter{w: rw}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.target)
		},
		Transport:     p.transport,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.setStatus(idx, http.StatusBadGateway)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "faultproxy: upstream unreachable")
		},
		ModifyResponse: func(resp *http.Response) error {
			p.setStatus(idx, resp.StatusCode)
			body := &bodyReader{p: p, rc: resp.Body, w: w, ctx: r.Context(), limit: -1, stallAt: -1}
			if a.active {
				f := a.fault
				switch f.kind {
				case kindCut:
					body.limit = f.n
				case kindStall:
					body.stallAt, body.stallFor, body.removed = f.n, f.d, a.removed
				case kindGarbleSSE, kindInjectSSE:
					resp.Header.Del("Content-Length")
					resp.ContentLength = -1
					resp.Body = newSSERewriter(body, f)
					return nil
				}
			}
			resp.Body = body
			return nil
		},
	}
	rp.ServeHTTP(w, r)
}

// bodyReader forwards an upstream body, counting bytes, and applies byte-offset faults: a cut
// (flush what was forwarded, then fail so the client connection is aborted) or a stall.
type bodyReader struct {
	p     *Proxy
	rc    io.ReadCloser
	w     http.ResponseWriter
	ctx   context.Context
	n     int64
	limit int64 // cut after this many bytes; <0 = never

	stallAt  int64 // stall once this many bytes were forwarded; <0 = never
	stallFor time.Duration
	removed  <-chan struct{}
}

func (b *bodyReader) Read(buf []byte) (int, error) {
	if b.stallAt >= 0 && b.n >= b.stallAt {
		b.stallAt = -1
		flush(b.w)
		if !b.p.wait(b.ctx, b.stallFor, b.removed) {
			return 0, errCut
		}
	}
	if b.limit >= 0 {
		if b.n >= b.limit {
			flush(b.w)
			return 0, errCut
		}
		if rem := b.limit - b.n; int64(len(buf)) > rem {
			buf = buf[:rem]
		}
	}
	if b.stallAt >= 0 {
		if rem := b.stallAt - b.n; int64(len(buf)) > rem {
			buf = buf[:rem]
		}
	}
	n, err := b.rc.Read(buf)
	b.n += int64(n)
	if n > 0 {
		b.p.addStat(func(s *Stats) { s.BytesDown += int64(n) })
	}
	return n, err
}

func (b *bodyReader) Close() error { return b.rc.Close() }

func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
}

// abort closes the client connection without a response.
func abort(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = c.Close()
		return
	}
	panic(http.ErrAbortHandler) // net/http's own way to abort a response; it is recovered silently
}

// lockedWriter serialises writes and flushes: the reverse proxy flushes from a timer goroutine
// while body faults flush from the copying goroutine.
type lockedWriter struct {
	mu sync.Mutex
	w  http.ResponseWriter
}

func (l *lockedWriter) Header() http.Header { return l.w.Header() }

func (l *lockedWriter) WriteHeader(code int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.WriteHeader(code)
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = http.NewResponseController(l.w).Flush()
}
