package localbridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Retention of a process log, as on the real bridge.
const (
	DefaultProcessLogBytes  = 1 << 20
	DefaultProcessLogEvents = 10000
	maxFinishedProcesses    = 64
)

// Config configures a Server.
type Config struct {
	Root             string // directory holding one folder per sandbox
	Listen           string // address to listen on (default 127.0.0.1:0)
	Token            string // required bearer token; never logged
	AllowNonLoopback bool   // binding a non-loopback address needs this

	// IdleSleep stops a sandbox's incarnation after this long with nothing running and no
	// allocating request (like the platform's sleepAfter). Zero disables idle sleep.
	IdleSleep time.Duration
	// ProcessLogBytes and ProcessLogEvents bound each process log (defaults 1 MiB and 10,000, as
	// on the real bridge).
	ProcessLogBytes  int
	ProcessLogEvents int
	// ProcessReadSize is the largest pipe read that becomes one log event (default 256 KiB). The
	// real bridge's chunking is whatever its pipe reads return; tests lower it to get many small
	// events.
	ProcessReadSize int
	// Logf receives diagnostics (never the token). Nil discards them.
	Logf func(format string, args ...any)

	// Dialect is the bridge API served: DialectPreview ("" means it) or DialectStable (see
	// stable.go: exec, pty, session, allocation on every sandbox request).
	Dialect string
	// StableFakeCompletionAfter (stable dialect): an /exec stream still open after this long ends
	// with the exit-code-less completion ({"exit_code":0}) while its process runs on, as a 0.12
	// container's complete without exitCode does. Zero never does.
	StableFakeCompletionAfter time.Duration
}

// Server is a local bridge. Create it with New, then Start it or mount Handler yourself.
type Server struct {
	cfg     Config
	root    string
	id      string // persistent identity (<root>/bridge-id)
	openapi []byte

	mu        sync.Mutex
	sandboxes map[string]*sandbox
	allocs    map[string]int // container allocations caused, by sandbox ID (see Allocations)
	closed    bool

	capacity atomic.Bool
	// closing is set when Close begins: from then on the bridge answers nothing (every request's
	// connection is dropped), as a bridge process that went away would, so no lookup can report the
	// incarnations Close is ending as gone.
	closing atomic.Bool
	procWG  sync.WaitGroup // process supervisors

	ctx    context.Context
	cancel context.CancelFunc

	ln      net.Listener
	httpSrv *http.Server
	url     string
	serveWG sync.WaitGroup
}

// sandbox is one sandbox ID: its directory and its current incarnation (nil when stopped). Its
// incarnation count and times persist in <dir>/sandbox.json (persist.go).
type sandbox struct {
	id         string
	dir        string
	workspace  string
	createdAt  time.Time
	lastActive time.Time
	cur        *incarnation
	count      int // incarnations so far
}

// incarnation is one container life of a sandbox: its own process and terminal tables.
type incarnation struct {
	number    int
	started   time.Time // when this container life began
	sandbox   string
	workspace string
	terms     *terminalTable
	server    *Server

	mu        sync.Mutex
	procs     map[string]*process
	endedFlag bool
	stableRT  *stableRuntime // stable dialect state (sessions, PTYs, open exec streams)
}

// validSandboxID is the bridge's sandbox ID rule: 1–128 of [a-z2-7] (lower-case base32). Every
// request checks it: a loop, not a regexp.
func validSandboxID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// isIDToken reports whether id is 1–128 of [a-zA-Z0-9._-] (session and terminal IDs).
func isIDToken(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// New checks cfg and prepares a server. It starts nothing; call Start or use Handler.
func New(cfg Config) (*Server, error) {
	if cfg.Token == "" {
		return nil, errors.New("localbridge: a token is required")
	}
	if cfg.Root == "" {
		return nil, errors.New("localbridge: a root directory is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.ProcessLogBytes <= 0 {
		cfg.ProcessLogBytes = DefaultProcessLogBytes
	}
	if cfg.ProcessLogEvents <= 0 {
		cfg.ProcessLogEvents = DefaultProcessLogEvents
	}
	if cfg.IdleSleep < 0 {
		return nil, errors.New("localbridge: idle sleep must not be negative")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("localbridge: root: %w", err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("localbridge: root: %w", err)
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, fmt.Errorf("localbridge: root: %w", err)
	}
	id, err := loadBridgeID(root)
	if err != nil {
		return nil, err
	}
	if cfg.Dialect == "" {
		cfg.Dialect = DialectPreview
	}
	if err := CheckDialect(cfg.Dialect); err != nil {
		return nil, fmt.Errorf("localbridge: dialect %w", err)
	}
	var doc []byte
	if cfg.Dialect == DialectStable {
		doc, err = stableOpenAPIDocument(id)
	} else {
		doc, err = openAPIDocument(id)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, root: root, id: id, openapi: doc, sandboxes: map[string]*sandbox{}, ctx: ctx, cancel: cancel}
	s.loadSandboxes()
	// The namespace probe starts a process (a few tens of milliseconds, more on a busy machine):
	// it runs in the background, and the first process or terminal started waits for its answer.
	go DetectIsolation()
	if cfg.IdleSleep > 0 {
		go s.idleLoop()
	}
	return s, nil
}

// Isolation says how this bridge isolates its processes and terminals (waiting for the probe if it
// still runs).
func (s *Server) Isolation() Isolation { return DetectIsolation() }

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// Start listens on the configured address and serves in the background. A non-loopback address
// is refused unless AllowNonLoopback is set.
func (s *Server) Start() error {
	host, _, err := net.SplitHostPort(s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("localbridge: listen address %q: %w", s.cfg.Listen, err)
	}
	if !isLoopbackHost(host) && !s.cfg.AllowNonLoopback {
		return fmt.Errorf("localbridge: refusing to listen on non-loopback address %q without AllowNonLoopback", s.cfg.Listen)
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("localbridge: listen: %w", err)
	}
	s.mu.Lock()
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          nil,
	}
	srv := s.httpSrv
	s.mu.Unlock()
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logf("localbridge: serve: %v", err)
		}
	}()
	return nil
}

// URL is the base URL the server listens on (empty before Start).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Handler is the bridge as an http.Handler (the Host check assumes loopback names unless Start
// recorded a listen address).
func (s *Server) Handler() http.Handler { return s }

// Close stops serving and ends every incarnation: every process group is killed and every PTY
// closed, and Close waits for them (until ctx ends).
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.closing.Store(true)
	srv := s.httpSrv
	var incs []*incarnation
	for _, sb := range s.sandboxes {
		if sb.cur != nil {
			incs = append(incs, sb.cur)
			sb.cur = nil
			s.saveStateLocked(sb)
		}
	}
	s.mu.Unlock()
	for _, inc := range incs {
		inc.end(false)
	}
	s.cancel() // aborts open requests' contexts (log streams)
	var firstErr error
	if srv != nil {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		cancel()
	}
	done := make(chan struct{})
	go func() { s.procWG.Wait(); s.serveWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		firstErr = fmt.Errorf("localbridge: close: %w", ctx.Err())
	}
	return firstErr
}

// SetCapacityExceeded makes allocating calls answer 503 capacity_exceeded (a full pool) while on.
func (s *Server) SetCapacityExceeded(on bool) { s.capacity.Store(on) }

// StopSandbox ends the sandbox's current incarnation as idle sleep would: every process and
// terminal is killed, and lookups answer as when no container is assigned. The workspace stays.
func (s *Server) StopSandbox(id string) error {
	if !validSandboxID(id) {
		return fmt.Errorf("stop sandbox %q: invalid sandbox ID", id)
	}
	s.mu.Lock()
	sb := s.sandboxes[id]
	var inc *incarnation
	if sb != nil {
		inc, sb.cur = sb.cur, nil
		if inc != nil {
			s.saveStateLocked(sb)
		}
	}
	s.mu.Unlock()
	if inc != nil {
		inc.end(false)
	}
	return nil
}

// ReplaceSandbox ends the current incarnation as a container replacement would (open log
// streams aborted, terminal sockets closed 1012) and starts the next one under the same ID.
func (s *Server) ReplaceSandbox(id string) error {
	if !validSandboxID(id) {
		return fmt.Errorf("replace sandbox %q: invalid sandbox ID", id)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("replace sandbox: server closed")
	}
	sb, err := s.sandboxLocked(id)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("replace sandbox %s: %w", id, err)
	}
	old := sb.cur
	sb.cur = nil
	s.mu.Unlock()
	if old != nil {
		old.end(true)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb.cur == nil && !s.closed {
		s.startIncarnationLocked(sb)
	}
	return nil
}

// sandboxLocked returns the sandbox record, creating it (and its workspace) on first use.
func (s *Server) sandboxLocked(id string) (*sandbox, error) {
	if sb := s.sandboxes[id]; sb != nil {
		return sb, nil
	}
	dir := filepath.Join(s.root, id)
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	now := time.Now()
	sb := &sandbox{id: id, dir: dir, workspace: ws, createdAt: now, lastActive: now}
	s.sandboxes[id] = sb
	return sb, nil
}

func (s *Server) startIncarnationLocked(sb *sandbox) *incarnation {
	if s.stable() && sb.count > 0 {
		s.freshWorkspace(sb) // a stable container comes back empty (stable.go)
	}
	sb.count++
	now := time.Now()
	inc := &incarnation{number: sb.count, started: now, sandbox: sb.id, workspace: sb.workspace,
		server: s, procs: map[string]*process{}}
	inc.terms = newTerminalTable(inc)
	sb.cur = inc
	sb.lastActive = now
	s.saveStateLocked(sb)
	s.logf("localbridge: sandbox %s: incarnation %d started", sb.id, inc.number)
	return inc
}

// lookupIncarnation returns the sandbox's current incarnation, or nil when none (lookup mode:
// never creates one).
func (s *Server) lookupIncarnation(sandbox string) *incarnation {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.sandboxes[sandbox]; sb != nil {
		return sb.cur
	}
	return nil
}

// allocError is a pool failure as the bridge reports it.
type allocError struct {
	status    int
	code, msg string
}

func (e *allocError) Error() string { return e.msg }

// writeAllocError writes an allocateIncarnation error as the bridge would.
func writeAllocError(w http.ResponseWriter, err error) {
	var ae *allocError
	if errors.As(err, &ae) {
		writeError(w, ae.status, ae.msg, ae.code)
		return
	}
	writeError(w, http.StatusBadGateway, "pool error: "+err.Error(), "pool_error")
}

func capacityError() error {
	return &allocError{status: http.StatusServiceUnavailable, code: "capacity_exceeded",
		msg: "Cannot start container: instance limit reached (1/1). All container slots are in use. Wait for existing containers to stop."}
}

// allocateIncarnation returns the current incarnation, creating a new one when there is none
// (allocate mode). Errors are *allocError values (capacity, pool failure).
func (s *Server) allocateIncarnation(sandbox string) (*incarnation, error) {
	if s.capacity.Load() {
		return nil, capacityError()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &allocError{status: http.StatusBadGateway, code: "pool_error", msg: "pool error: Failed to start container"}
	}
	sb, err := s.sandboxLocked(sandbox)
	if err != nil {
		return nil, &allocError{status: http.StatusBadGateway, code: "pool_error", msg: "pool error: " + err.Error()}
	}
	if !s.stable() { // the stable dialect counts every sandbox request instead
		if s.allocs == nil {
			s.allocs = map[string]int{}
		}
		s.allocs[sandbox]++
	}
	sb.lastActive = time.Now()
	if sb.cur != nil {
		return sb.cur, nil
	}
	return s.startIncarnationLocked(sb), nil
}

// end kills everything the incarnation runs: process groups (SIGKILL), their log streams
// (aborted), and terminals.
func (inc *incarnation) end(replaced bool) {
	inc.mu.Lock()
	if inc.endedFlag {
		inc.mu.Unlock()
		return
	}
	inc.endedFlag = true
	procs := make([]*process, 0, len(inc.procs))
	for _, p := range inc.procs {
		procs = append(procs, p)
	}
	inc.mu.Unlock()
	reason := errStopped
	if replaced {
		reason = errReplaced
	}
	for _, p := range procs {
		p.abort(reason)
	}
	inc.terms.shutdown(replaced)
	inc.server.logf("localbridge: sandbox %s: incarnation %d ended (replaced=%v)", inc.sandbox, inc.number, replaced)
}

var (
	errStopped  = errors.New("sandbox stopped")
	errReplaced = errors.New("runtime replaced")
)

// deleteSandbox destroys the sandbox's incarnation and workspace.
func (s *Server) deleteSandbox(id string) {
	s.mu.Lock()
	sb := s.sandboxes[id]
	delete(s.sandboxes, id)
	var inc *incarnation
	if sb != nil {
		inc, sb.cur = sb.cur, nil // under s.mu, like every other change of sb.cur
	}
	s.mu.Unlock()
	if sb == nil {
		return
	}
	if inc != nil {
		inc.end(false)
	}
	if err := os.RemoveAll(sb.dir); err != nil {
		s.logf("localbridge: delete sandbox %s: %v", id, err)
	}
}

// sandboxInfo is one entry of GET /v1/sandbox (an extension).
type sandboxInfo struct {
	ID                 string    `json:"id"`
	Running            bool      `json:"running"`
	Incarnation        int       `json:"incarnation,omitempty"`
	IncarnationStarted string    `json:"incarnationStarted,omitempty"` // see startedJSON
	Processes          int       `json:"processes"`
	Terminals          int       `json:"terminals"`
	CreatedAt          time.Time `json:"createdAt"`
	LastActiveAt       time.Time `json:"lastActiveAt"`
	Allocations        int       `json:"allocations"` // container allocations its requests caused (see Server.Allocations)
}

func (s *Server) listSandboxes() []sandboxInfo {
	s.mu.Lock()
	type snap struct {
		sb  sandbox
		inc *incarnation
	}
	snaps := make([]snap, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		snaps = append(snaps, snap{*sb, sb.cur})
	}
	allocs := make(map[string]int, len(s.allocs))
	for k, v := range s.allocs {
		allocs[k] = v
	}
	s.mu.Unlock()
	out := make([]sandboxInfo, 0, len(snaps))
	for _, sn := range snaps {
		info := sandboxInfo{ID: sn.sb.id, CreatedAt: sn.sb.createdAt.UTC(), LastActiveAt: sn.sb.lastActive.UTC(), Allocations: allocs[sn.sb.id]}
		if sn.inc != nil {
			info.Running = true
			info.Incarnation = sn.inc.number
			info.IncarnationStarted = startedJSON(sn.inc.started)
			info.Processes = sn.inc.runningProcesses()
			info.Terminals, _ = sn.inc.terms.counts()
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// idleLoop stops incarnations with nothing running for IdleSleep.
func (s *Server) idleLoop() {
	tick := s.cfg.IdleSleep / 4
	if tick > time.Second {
		tick = time.Second
	}
	if tick < 10*time.Millisecond {
		tick = 10 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		type cand struct {
			id  string
			inc *incarnation
		}
		var cands []cand
		s.mu.Lock()
		for id, sb := range s.sandboxes {
			if sb.cur != nil {
				cands = append(cands, cand{id, sb.cur})
			}
		}
		s.mu.Unlock()
		// Counting takes the tables' own locks; never hold s.mu meanwhile.
		busy := map[string]bool{}
		for _, c := range cands {
			pr := c.inc.runningProcesses()
			tr, _ := c.inc.terms.counts()
			busy[c.id] = pr > 0 || tr > 0
		}
		now := time.Now()
		var idle []string
		s.mu.Lock()
		for _, c := range cands {
			sb := s.sandboxes[c.id]
			if sb == nil || sb.cur != c.inc {
				continue
			}
			if busy[c.id] {
				sb.lastActive = now
			} else if now.Sub(sb.lastActive) >= s.cfg.IdleSleep {
				idle = append(idle, c.id)
			}
		}
		s.mu.Unlock()
		for _, id := range idle {
			s.logf("localbridge: sandbox %s: idle, sleeping", id)
			_ = s.StopSandbox(id)
		}
	}
}

// ---- HTTP plumbing -----------------------------------------------------------------------

// writeError writes the bridge's JSON error body {"error":msg,"code":code} with status.
func writeError(w http.ResponseWriter, status int, msg, code string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
}

// writeJSON writes v as application/json (no charset) with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	// Like JSON.stringify: no HTML escaping of <, > and &.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeInternalError(w)
		return
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// writeNotFoundText writes Hono's text 404 ("404 Not Found", text/plain; charset=UTF-8).
func writeNotFoundText(w http.ResponseWriter) { writeText(w, http.StatusNotFound, "404 Not Found") }

// writeInternalError writes Hono's text 500 for an error a route did not catch.
func writeInternalError(w http.ResponseWriter) {
	writeText(w, http.StatusInternalServerError, "Internal Server Error")
}

func writeUnauthorized(w http.ResponseWriter) {
	writeError(w, http.StatusUnauthorized, "Unauthorized", "unauthorized")
}

func (s *Server) tokenMatches(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// authSandbox: "Bearer " prefix matched case-insensitively, header only.
func (s *Server) authSandbox(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return false
	}
	return s.tokenMatches(h[7:])
}

// authStrict: "Bearer " prefix matched exactly (pool and openapi routes).
func (s *Server) authStrict(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Bearer ") {
		return false
	}
	return s.tokenMatches(h[7:])
}

func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// hostAllowed guards against DNS rebinding: only loopback names and the listen address.
func (s *Server) hostAllowed(hostport string) bool {
	if hostport == "" {
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if isLoopbackHost(host) {
		return true
	}
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		if h, _, err := net.SplitHostPort(ln.Addr().String()); err == nil {
			lh := net.ParseIP(h)
			hip := net.ParseIP(strings.Trim(host, "[]"))
			// Rebinding needs a DNS name; an IP literal host names this machine directly.
			if hip != nil && lh != nil && (lh.Equal(hip) || lh.IsUnspecified()) {
				return true
			}
		}
	}
	if lh, _, err := net.SplitHostPort(s.cfg.Listen); err == nil && lh != "" && strings.EqualFold(lh, host) {
		return true
	}
	return false
}

// Request body limits: process and terminal JSON bodies, file writes, archives.
const (
	maxJSONBody   = 1 << 20
	maxPayload    = 32 << 20
	maxDrainCount = 256 << 20
)

func mintSandboxID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ServeHTTP routes a request the way the bridge's Hono app does. A closing bridge is gone: a
// request that reaches it gets no answer, and an answer that ends while it closes (a stream whose
// context Close cancelled) is cut, not ended cleanly.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.closing.Load() {
		panic(http.ErrAbortHandler)
	}
	s.route(w, r)
	if s.closing.Load() {
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "Host not allowed by the local bridge", "host_not_allowed")
		return
	}
	if r.Method == http.MethodPost || r.Header.Get("Upgrade") != "" {
		// Requests that may start a process or a terminal wait for the namespace probe here,
		// before they take a sandbox's incarnation (lookups never wait for it).
		DetectIsolation()
	}
	p := r.URL.EscapedPath()
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	switch {
	case p == "/health":
		if method != http.MethodGet {
			writeNotFoundText(w)
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	case p == ListPath:
		// the sandbox list (an extension), behind the sandbox routes' auth
		if !s.authSandbox(r) {
			writeUnauthorized(w)
			return
		}
		if method != http.MethodGet {
			writeNotFoundText(w)
			return
		}
		writeJSON(w, http.StatusOK, s.listSandboxes())
	case p == "/v1/openapi.json" || p == "/v1/openapi.html" || p == "/v1/openapi":
		if method != http.MethodGet {
			// the auth is middleware of the GET routes only: other methods meet the router's 404
			writeNotFoundText(w)
			return
		}
		if !s.authStrict(r) && !(r.URL.Query().Has("token") && s.tokenMatches(r.URL.Query().Get("token"))) {
			writeUnauthorized(w)
			return
		}
		if p == "/v1/openapi.json" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(s.openapi)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(openAPIHTML))
	case p == "/v1/pool" || strings.HasPrefix(p, "/v1/pool/"):
		if !s.authStrict(r) {
			writeUnauthorized(w)
			return
		}
		switch {
		case s.stable():
			s.serveStablePool(w, p, method)
		case p == "/v1/pool/stats" && method == http.MethodGet,
			p == "/v1/pool/prime" && method == http.MethodPost,
			p == "/v1/pool/shutdown-prewarmed" && method == http.MethodPost:
			writeNotSupported(w, "the warm pool")
		default:
			writeNotFoundText(w)
		}
	case p == "/v1/sandbox":
		if !s.authSandbox(r) {
			writeUnauthorized(w)
			return
		}
		switch method {
		case http.MethodPost:
			if s.stable() {
				writeJSON(w, http.StatusOK, map[string]string{"id": mintStableSandboxID()})
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"id": mintSandboxID()})
		case http.MethodGet:
			if s.stable() {
				// the published stable bridge has no such route (the list is on ListPath)
				writeNotFoundText(w)
				return
			}
			// kept on the preview dialect for older sandscope clients (also on ListPath)
			writeJSON(w, http.StatusOK, s.listSandboxes())
		default:
			writeNotFoundText(w)
		}
	case strings.HasPrefix(p, "/v1/sandbox/"):
		tail := p[len("/v1/sandbox/"):]
		id, rest := tail, ""
		if i := strings.IndexByte(tail, '/'); i >= 0 {
			id, rest = tail[:i], tail[i:]
		}
		if id == "" {
			// The "/v1/sandbox/*" middleware runs (no ID to check, then auth), but the router's
			// ":id" never matches an empty segment: text 404.
			if !s.authSandbox(r) {
				writeUnauthorized(w)
				return
			}
			writeNotFoundText(w)
			return
		}
		if !validSandboxID(id) {
			writeError(w, http.StatusBadRequest, "Invalid sandbox ID format", "invalid_request")
			return
		}
		if !s.authSandbox(r) {
			writeUnauthorized(w)
			return
		}
		s.serveSandbox(w, r, method, id, rest)
	case s.stable() && p != "/v1" && !strings.HasPrefix(p, "/v1/"):
		// Outside the API prefix and the health path the bridge hands the request to the
		// deployer's Worker; with none it answers new Response("Not Found", {status: 404}).
		w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
		w.Header().Set("Content-Length", "9")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("Not Found"))
	default:
		writeNotFoundText(w)
	}
}

// writeNotSupported answers routes the local bridge does not implement (mounts, tunnels, the warm
// pool): 501 with code "not_supported".
func writeNotSupported(w http.ResponseWriter, what string) {
	writeError(w, http.StatusNotImplemented, "the local bridge does not support "+what, "not_supported")
}

// serveSandbox dispatches /v1/sandbox/{id}{rest} after the ID check and auth.
func (s *Server) serveSandbox(w http.ResponseWriter, r *http.Request, method, id, rest string) {
	if s.stable() {
		s.serveStable(w, r, method, id, rest)
		return
	}
	seg := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	allocate := func() *incarnation {
		inc, err := s.allocateIncarnation(id)
		if err != nil {
			writeAllocError(w, err)
			return nil
		}
		return inc
	}
	switch {
	case rest == "":
		if method == http.MethodDelete {
			s.deleteSandbox(id)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeNotFoundText(w)
	case rest == "/running" && method == http.MethodGet:
		s.writeRunning(w, id)
	case rest == "/processes":
		switch method {
		case http.MethodGet:
			s.handleListProcesses(w, s.lookupIncarnation(id))
		case http.MethodPost:
			s.handleCreateProcess(w, r, id, allocate)
		default:
			writeNotFoundText(w)
		}
	case seg[0] == "processes" && len(seg) == 2 && seg[1] != "" && method == http.MethodGet:
		s.handleGetProcess(w, s.lookupIncarnation(id), seg[1])
	case seg[0] == "processes" && len(seg) == 3 && seg[1] != "" && seg[2] == "logs" && method == http.MethodGet:
		s.handleLogs(w, r, s.lookupIncarnation(id), seg[1])
	case seg[0] == "processes" && len(seg) == 3 && seg[1] != "" && seg[2] == "kill" && method == http.MethodPost:
		s.handleKill(w, r, s.lookupIncarnation(id), seg[1])
	case seg[0] == "terminals":
		s.serveTerminals(w, r, id, strings.TrimPrefix(rest, "/terminals"))
	case seg[0] == "file" && len(seg) >= 2 && (method == http.MethodGet || method == http.MethodPut):
		s.handleFile(w, r, method, id, strings.TrimPrefix(rest, "/file/"), allocate)
	case rest == "/persist" && method == http.MethodPost:
		s.handlePersist(w, r, allocate)
	case rest == "/hydrate" && method == http.MethodPost:
		s.handleHydrate(w, r, allocate)
	case (rest == "/mount" || rest == "/unmount") && method == http.MethodPost:
		if allocate() == nil {
			return
		}
		writeNotSupported(w, "bucket mounts")
	case seg[0] == "tunnel" && len(seg) == 2 && seg[1] != "" && (method == http.MethodPost || method == http.MethodDelete):
		if allocate() == nil {
			return
		}
		writeNotSupported(w, "tunnels")
	case rest == "/stop" && method == http.MethodPost:
		_ = s.StopSandbox(id)
		w.WriteHeader(http.StatusNoContent)
	case rest == "/replace" && method == http.MethodPost:
		if err := s.ReplaceSandbox(id); err != nil {
			writeError(w, http.StatusBadGateway, "pool error: "+err.Error(), "pool_error")
			return
		}
		s.writeRunning(w, id)
	default:
		writeNotFoundText(w)
	}
}

// writeRunning answers with the sandbox's current state, as GET /running does.
func (s *Server) writeRunning(w http.ResponseWriter, id string) {
	if inc := s.lookupIncarnation(id); inc != nil {
		writeJSON(w, http.StatusOK, runningJSON{Running: true, Incarnation: inc.number, IncarnationStarted: startedJSON(inc.started)})
		return
	}
	writeJSON(w, http.StatusOK, runningJSON{Running: false})
}

// runningJSON answers GET /running; Incarnation and IncarnationStarted are extensions present only
// while a container is current.
type runningJSON struct {
	Running            bool   `json:"running"`
	Incarnation        int    `json:"incarnation,omitempty"`
	IncarnationStarted string `json:"incarnationStarted,omitempty"`
}

// startedJSON is an incarnation's start as served: RFC 3339 in UTC with all nine digits of
// nanoseconds (so two lives started in one second still differ).
func startedJSON(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
}
