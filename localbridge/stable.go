package localbridge

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Dialects the local bridge can speak.
const (
	DialectPreview = "v1-preview" // the 1.0 preview API (processes, terminals); the default
	DialectStable  = "stable"     // the stable 0.12 API (exec, pty, session): Part B of the protocol reference
)

// CheckDialect refuses a dialect the local bridge cannot speak ("" is not one: callers fill the
// default first). The error names the dialect and the ones there are; callers say where it came from.
func CheckDialect(dialect string) error {
	if dialect != DialectPreview && dialect != DialectStable {
		return fmt.Errorf("%q: want %s or %s", dialect, DialectPreview, DialectStable)
	}
	return nil
}

// DefaultRoot is where a local bridge of dialect keeps its sandboxes under stateDir when it is given
// no root: each dialect its own directory, since a sandbox of one is not one of the other.
func DefaultRoot(stateDir, dialect string) string {
	if dialect == DialectStable {
		return filepath.Join(stateDir, "sandboxes-stable")
	}
	return filepath.Join(stateDir, "sandboxes")
}

// openapiStable is the document a stable (0.12.10) bridge serves at /v1/openapi.json.
//
//go:embed openapi-stable.json
var openapiStable []byte

// stableRuntime is the stable dialect's state of one incarnation (one container life): its
// sessions and its PTYs (one per session), and the open /exec streams.
type stableRuntime struct {
	mu       sync.Mutex
	sessions map[string]*stableSession
	ptys     map[string]*terminal // by session ID ("sandbox-<uuid>" for session-less connections)
	streams  map[*execStream]struct{}
	uuid     string // the container UUID the default PTY session is named after
}

// stableSession is one session: its state directory (cwd and exported environment, kept between
// /exec calls the way the container's persistent session shell keeps them).
type stableSession struct {
	id  string
	dir string // host directory with the files "cwd" and "env"
}

// stable reports whether the server speaks the stable dialect.
func (s *Server) stable() bool { return s.cfg.Dialect == DialectStable }

// runtimeOf returns the incarnation's stable state, creating it on first use.
func (inc *incarnation) stableState() *stableRuntime {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.stableRT == nil {
		inc.stableRT = &stableRuntime{sessions: map[string]*stableSession{}, ptys: map[string]*terminal{},
			streams: map[*execStream]struct{}{}, uuid: newUUID()}
	}
	return inc.stableRT
}

// Allocations is how many container allocations the sandbox's requests caused: on the stable
// dialect every /v1/sandbox/{id} and /v1/sandbox/{id}/… request counts (as on a real stable
// bridge, where each one starts a container when none runs); on the preview dialect only the
// allocating routes do.
func (s *Server) Allocations(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allocs[id]
}

// TotalAllocations is the sum of Allocations over every sandbox ID ever seen.
func (s *Server) TotalAllocations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.allocs {
		n += v
	}
	return n
}

func (s *Server) countAllocation(id string) {
	s.mu.Lock()
	if s.allocs == nil {
		s.allocs = map[string]int{}
	}
	s.allocs[id]++
	s.mu.Unlock()
}

// freshWorkspace empties the sandbox's workspace and session state before its next incarnation
// starts: on stable, a slept or replaced sandbox comes back as a fresh container (empty
// /workspace, no sessions, no PTY). The preview dialect keeps the workspace (see doc.go).
func (s *Server) freshWorkspace(sb *sandbox) {
	for _, dir := range []string{sb.workspace, filepath.Join(sb.dir, ".sessions")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				s.logf("localbridge: sandbox %s: fresh workspace: %v", sb.id, err)
			}
		}
	}
}

// mintStableSandboxID is the stable bridge's ID: 16 random bytes as 26 lowercase base32 chars.
func mintStableSandboxID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// validStableSessionID is the bridge's Session-Id rule: 1–128 of [a-zA-Z0-9._-], no "..".
func validStableSessionID(id string) bool {
	return isIDToken(id) && !strings.Contains(id, "..")
}

// disableSessionToken is the SDK's reserved session ID.
const disableSessionToken = "__DISABLE_SESSION__"

// serveStable dispatches /v1/sandbox/{id}{rest} in the stable dialect, after the ID check and
// auth. Every request allocates first (the pool middleware matches every sandbox path), then the
// route validates; unknown paths answer Hono's text 404 after allocating.
func (s *Server) serveStable(w http.ResponseWriter, r *http.Request, method, id, rest string) {
	// Local extensions that are test controls, not container calls: never counted.
	switch {
	case rest == "/stop" && method == http.MethodPost:
		_ = s.StopSandbox(id)
		w.WriteHeader(http.StatusNoContent)
		return
	case rest == "/replace" && method == http.MethodPost:
		if err := s.ReplaceSandbox(id); err != nil {
			writeError(w, http.StatusBadGateway, "pool error: "+err.Error(), "pool_error")
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.countAllocation(id)
	inc, err := s.allocateIncarnation(id)
	if err != nil {
		writeAllocError(w, err)
		return
	}
	seg := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case rest == "":
		if method == http.MethodDelete {
			s.deleteSandbox(id)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeNotFoundText(w)
	case rest == "/running" && method == http.MethodGet:
		// The real route runs exec("true"): the container it starts answers.
		writeJSON(w, http.StatusOK, map[string]bool{"running": true})
	case rest == "/exec" && method == http.MethodPost:
		s.handleStableExec(w, r, inc)
	case rest == "/pty" && method == http.MethodGet:
		s.handleStablePTY(w, r, inc)
	case rest == "/session" && method == http.MethodPost:
		s.handleStableSessionCreate(w, r, inc)
	case seg[0] == "session" && len(seg) == 2 && seg[1] != "" && method == http.MethodDelete:
		s.handleStableSessionDelete(w, inc, decodePathParam(seg[1]))
	case seg[0] == "file" && (method == http.MethodGet || method == http.MethodPut):
		// "/file" alone matches the router's "/file/*" too: an empty path
		s.handleStableFile(w, r, method, id, strings.TrimPrefix(strings.TrimPrefix(rest, "/file"), "/"), inc)
	case rest == "/persist" && method == http.MethodPost:
		s.handlePersist(w, r, func() *incarnation { return inc })
	case rest == "/hydrate" && method == http.MethodPost:
		s.handleHydrate(w, r, func() *incarnation { return inc })
	case rest == "/mount" && method == http.MethodPost:
		handleStableMount(w, r)
	case rest == "/unmount" && method == http.MethodPost:
		handleStableUnmount(w, r)
	case seg[0] == "tunnel" && len(seg) == 2 && seg[1] != "" && (method == http.MethodPost || method == http.MethodDelete):
		handleStableTunnel(w, r, method, seg[1])
	default:
		writeNotFoundText(w)
	}
}

// handleStableFile: files as on the preview, except that a missing file answers 200 and then
// aborts the body (the 0.12 container reports the error inside its stream).
func (s *Server) handleStableFile(w http.ResponseWriter, r *http.Request, method, id, rawPath string, inc *incarnation) {
	if method == http.MethodGet {
		if rel := decodeURIPath(rawPath); rel != "" {
			if virt, ok := resolveWorkspacePath("/" + rel); ok && !strings.ContainsRune(virt, 0) {
				if real, ok := confine(inc.workspace, virt); ok {
					if _, err := os.Stat(real); errors.Is(err, fs.ErrNotExist) {
						w.Header().Set("Content-Type", "application/octet-stream")
						w.WriteHeader(http.StatusOK)
						_ = http.NewResponseController(w).Flush()
						panic(http.ErrAbortHandler)
					}
				}
			}
		}
	}
	s.handleFile(w, r, method, id, rawPath, func() *incarnation { return inc })
}

// handleStableSessionCreate: POST /session, body optional {"id"?, "cwd"?, "env"?}.
func (s *Server) handleStableSessionCreate(w http.ResponseWriter, r *http.Request, inc *incarnation) {
	body, err := readLimited(r, maxJSONBody)
	if err != nil {
		body = nil
	}
	var opts struct {
		ID  json.RawMessage `json:"id"`
		Cwd json.RawMessage `json:"cwd"`
		Env json.RawMessage `json:"env"`
	}
	trimmed := trimJSONSpace(body)
	if json.Valid(trimmed) && len(trimmed) > 0 {
		if bytes.Equal(trimmed, []byte("null")) {
			writeInternalError(w) // body.cwd of null throws
			return
		}
		if trimmed[0] == '{' {
			_ = json.Unmarshal(trimmed, &opts)
		}
	}
	var id string
	if len(opts.ID) > 0 && opts.ID[0] == '"' {
		_ = json.Unmarshal(opts.ID, &id)
	}
	if id == "" {
		id = "session-" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	}
	if id == disableSessionToken {
		writeError(w, http.StatusBadGateway, "session create failed: Session ID '"+disableSessionToken+"' is reserved for internal use", "session_error")
		return
	}
	cwd := ""
	if len(opts.Cwd) > 0 && opts.Cwd[0] == '"' {
		_ = json.Unmarshal(opts.Cwd, &cwd)
	}
	env := map[string]string{}
	if len(opts.Env) > 0 && opts.Env[0] == '{' {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(opts.Env, &m)
		for k, v := range m {
			var sv string
			if json.Unmarshal(v, &sv) == nil {
				env[k] = sv
			}
		}
	}
	rt := inc.stableState()
	rt.mu.Lock()
	_, exists := rt.sessions[id]
	rt.mu.Unlock()
	if exists {
		writeError(w, http.StatusBadGateway, "session create failed: Session '"+id+"' already exists", "session_error")
		return
	}
	if _, err := s.stableSession(inc, id, cwd, env); err != nil {
		writeError(w, http.StatusBadGateway, "session create failed: "+err.Error(), "session_error")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id})
}

// handleStableSessionDelete: DELETE /session/{sid} → 200 {"success":true,"sessionId","timestamp"}.
func (s *Server) handleStableSessionDelete(w http.ResponseWriter, inc *incarnation, sid string) {
	rt := inc.stableState()
	rt.mu.Lock()
	sess := rt.sessions[sid]
	delete(rt.sessions, sid)
	term := rt.ptys[sid]
	delete(rt.ptys, sid)
	rt.mu.Unlock()
	if sess == nil {
		writeError(w, http.StatusBadGateway, "session delete failed: Session '"+sid+"' not found", "session_error")
		return
	}
	if term != nil {
		_ = term.terminate()
	}
	_ = os.RemoveAll(sess.dir)
	// the SDK's deleteSession builds {success, sessionId, timestamp} in that order
	writeJSON(w, http.StatusOK, struct {
		Success   bool   `json:"success"`
		SessionID string `json:"sessionId"`
		Timestamp string `json:"timestamp"`
	}{true, sid, isoTime(time.Now())})
}

// stableSession returns the session, creating it (with cwd and env as its starting state) when it
// does not exist: sessions are also created implicitly by first use.
func (s *Server) stableSession(inc *incarnation, id, cwd string, env map[string]string) (*stableSession, error) {
	rt := inc.stableState()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if sess := rt.sessions[id]; sess != nil {
		return sess, nil
	}
	dir := filepath.Join(filepath.Dir(inc.workspace), ".sessions", fmt.Sprintf("%d", inc.number), sessionDirName(id))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session state: %w", err)
	}
	start := inc.workspace
	if cwd != "" {
		if virt, ok := resolveWorkspacePath(cwd); ok {
			if real, ok := confine(inc.workspace, virt); ok {
				start = real
			}
		}
	}
	var envFile strings.Builder
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) || !shellNamePattern.MatchString(k) {
			continue
		}
		envFile.WriteString("export " + k + "=" + shellQuoteStable(v) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "cwd"), []byte(start+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("session state: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(envFile.String()), 0o600); err != nil {
		return nil, fmt.Errorf("session state: %w", err)
	}
	sess := &stableSession{id: id, dir: dir}
	rt.sessions[id] = sess
	return sess, nil
}

var shellNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// sessionDirName maps a session ID to a file name (IDs may hold anything at creation).
func sessionDirName(id string) string {
	if isIDToken(id) && id != "." && id != ".." {
		return "s-" + id
	}
	return "x-" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(id))
}

// stablePoolStats is GET /v1/pool/stats as the stable bridge's WarmPool writes it (getStats, keys
// in its order). The local bridge keeps no warm containers: every container is one assigned to a
// sandbox ID, and no instance limit is known.
type stablePoolStats struct {
	Warm         int              `json:"warm"`
	Assigned     int              `json:"assigned"`
	Total        int              `json:"total"`
	Config       stablePoolConfig `json:"config"`
	MaxInstances *int             `json:"maxInstances"`
}

// stablePoolConfig is the pool configuration the bridge pushes on every request (parsePoolConfig
// of unset WARM_POOL_* variables: the defaults).
type stablePoolConfig struct {
	WarmTarget      int `json:"warmTarget"`
	RefreshInterval int `json:"refreshInterval"`
	MaxInstances    int `json:"maxInstances"`
	ScaleBatchSize  int `json:"scaleBatchSize"`
}

// serveStablePool answers /v1/pool/* (after auth) as the stable bridge does for a pool with no
// warm target: the statistics, and prime and shutdown-prewarmed as the no-ops they are there.
func (s *Server) serveStablePool(w http.ResponseWriter, p, method string) {
	switch {
	case p == "/v1/pool/stats" && method == http.MethodGet:
		s.mu.Lock()
		assigned := 0
		for _, sb := range s.sandboxes {
			if sb.cur != nil {
				assigned++
			}
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, stablePoolStats{Assigned: assigned, Total: assigned,
			Config: stablePoolConfig{RefreshInterval: 10000, ScaleBatchSize: 5}})
	case (p == "/v1/pool/prime" || p == "/v1/pool/shutdown-prewarmed") && method == http.MethodPost:
		writeJSON(w, http.StatusOK, struct {
			OK bool `json:"ok"`
		}{true})
	default:
		writeNotFoundText(w)
	}
}
