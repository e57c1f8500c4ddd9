package reliability

// Security checks of the local bridge and of the client: authentication on every route, the Host
// check, path confinement, body limits, the loopback-only bind, and the token never leaving the
// places it must be (output, logs, argv, environment, URLs, error text).

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
)

// rawRequest sends one HTTP/1.1 request exactly as written (no client-side path cleaning) and
// returns the status and body.
func rawRequest(t *testing.T, addr, method, target, host string, hdr map[string]string, body []byte) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, target, host)
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if body != nil {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	if _, err := conn.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		// The server may answer before reading everything (a limit): a write error then is fine.
		go func() { _, _ = conn.Write(body) }()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(rb)
}

// routes lists one request per route of the local bridge, extensions included ({sb} = a sandbox,
// {pid}/{tid} = a real process and terminal in it).
var routes = []struct{ method, path string }{
	{"GET", "/v1/sandbox"}, {"GET", localbridge.ListPath}, {"POST", "/v1/sandbox"}, {"DELETE", "/v1/sandbox/{sb}"},
	{"GET", "/v1/sandbox/{sb}/running"},
	{"GET", "/v1/sandbox/{sb}/processes"}, {"POST", "/v1/sandbox/{sb}/processes"},
	{"GET", "/v1/sandbox/{sb}/processes/{pid}"}, {"GET", "/v1/sandbox/{sb}/processes/{pid}/logs"},
	{"POST", "/v1/sandbox/{sb}/processes/{pid}/kill"},
	{"GET", "/v1/sandbox/{sb}/terminals"}, {"POST", "/v1/sandbox/{sb}/terminals"},
	{"GET", "/v1/sandbox/{sb}/terminals/{tid}"}, {"GET", "/v1/sandbox/{sb}/terminals/{tid}/connect"},
	{"POST", "/v1/sandbox/{sb}/terminals/{tid}/interrupt"}, {"POST", "/v1/sandbox/{sb}/terminals/{tid}/terminate"},
	{"GET", "/v1/sandbox/{sb}/file/workspace/data"}, {"PUT", "/v1/sandbox/{sb}/file/workspace/x"},
	{"POST", "/v1/sandbox/{sb}/persist"}, {"POST", "/v1/sandbox/{sb}/hydrate"},
	{"POST", "/v1/sandbox/{sb}/mount"}, {"POST", "/v1/sandbox/{sb}/unmount"},
	{"POST", "/v1/sandbox/{sb}/tunnel/4000"}, {"DELETE", "/v1/sandbox/{sb}/tunnel/4000"},
	{"POST", "/v1/sandbox/{sb}/stop"}, {"POST", "/v1/sandbox/{sb}/replace"},
	{"GET", "/v1/sandbox/{sb}/no-such-route"},
	{"GET", "/v1/openapi.json"}, {"GET", "/v1/openapi.html"}, {"GET", "/v1/openapi"},
	{"GET", "/v1/pool/stats"}, {"POST", "/v1/pool/prime"}, {"POST", "/v1/pool/shutdown-prewarmed"},
}

// TestSecurityAuthEveryRoute: every route but /health answers 401 without the right token, and
// with it answers something other than 401 (so the check is not vacuous).
func TestSecurityAuthEveryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := e.direct.StartProcess(ctx, e.sb, client.ExecRequest{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.direct.CreateTerminal(ctx, e.sb, client.TerminalRequest{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	addr := e.br.addr
	tok := e.br.token
	bad := map[string]map[string]string{
		"no token":             nil,
		"wrong token":          {"Authorization": "Bearer " + newToken(t)},
		"token with suffix":    {"Authorization": "Bearer " + tok + "x"},
		"token prefix":         {"Authorization": "Bearer " + tok[:len(tok)-1]},
		"no Bearer scheme":     {"Authorization": tok},
		"Basic scheme":         {"Authorization": "Basic " + tok},
		"token in X-Api-Key":   {"X-Api-Key": tok},
		"empty bearer":         {"Authorization": "Bearer "},
		"token in cookie":      {"Cookie": "token=" + tok},
		"two spaces":           {"Authorization": "Bearer  " + tok},
		"wrong token, upgrade": {"Authorization": "Bearer nope", "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="},
	}
	for _, rt := range routes {
		path := strings.NewReplacer("{sb}", e.sb, "{pid}", p.ID, "{tid}", term.ID).Replace(rt.path)
		for name, hdr := range bad {
			status, body := rawRequest(t, addr, rt.method, path, addr, hdr, nil)
			if status != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: status %d, want 401 (%.80q)", rt.method, rt.path, name, status, body)
			}
			if strings.Contains(body, tok) {
				t.Errorf("%s %s: the token is echoed in the answer", rt.method, rt.path)
			}
		}
		if !strings.HasPrefix(rt.path, "/v1/openapi") {
			status, _ := rawRequest(t, addr, rt.method, path+"?token="+tok, addr, nil, nil)
			if status != http.StatusUnauthorized {
				t.Errorf("%s %s?token=…: status %d, want 401 (query tokens only work on /v1/openapi*)", rt.method, rt.path, status)
			}
		}
		if rt.method == "POST" && (strings.HasSuffix(rt.path, "/stop") || strings.HasSuffix(rt.path, "/replace") || strings.HasSuffix(rt.path, "/terminate") || strings.HasSuffix(rt.path, "/kill")) {
			continue // would end the process and terminal the other rows need
		}
		if rt.method == "DELETE" && rt.path == "/v1/sandbox/{sb}" {
			continue
		}
		status, _ := rawRequest(t, addr, rt.method, path, addr, map[string]string{"Authorization": "Bearer " + tok}, nil)
		if status == http.StatusUnauthorized {
			t.Errorf("%s %s with the right token: 401", rt.method, rt.path)
		}
	}
	if status, body := rawRequest(t, addr, "GET", "/health", addr, nil, nil); status != http.StatusOK {
		t.Errorf("/health without a token: %d %q, want 200", status, body)
	}
}

// TestSecurityHostHeader: a foreign Host (DNS rebinding) is refused on every route, /health too,
// even with the right token; loopback names pass.
func TestSecurityHostHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	addr := e.br.addr
	_, port, _ := net.SplitHostPort(addr)
	auth := map[string]string{"Authorization": "Bearer " + e.br.token}
	foreign := []string{"evil.example", "evil.example:" + port, "localhost.evil.example", "127.0.0.1.nip.io:" + port,
		"attacker.com:80", "0x7f000001.evil", "[::1].evil.example", "%31%32%37.0.0.1"}
	for _, h := range foreign {
		for _, path := range []string{"/health", "/v1/sandbox", "/v1/sandbox/" + e.sb + "/processes", "/v1/openapi.json"} {
			status, _ := rawRequest(t, addr, "GET", path, h, auth, nil)
			if status < 400 || status == http.StatusNotFound && path == "/health" {
				t.Errorf("Host %q %s: status %d, want a refusal", h, path, status)
			}
		}
	}
	for _, h := range []string{addr, "localhost:" + port, "127.0.0.1", "[::1]:" + port} {
		if status, _ := rawRequest(t, addr, "GET", "/v1/sandbox/"+e.sb+"/processes", h, auth, nil); status != http.StatusOK {
			t.Errorf("Host %q: status %d, want 200", h, status)
		}
	}
}

// TestSecurityPathEscapes: file routes, process cwd and hydrate archives cannot reach outside the
// sandbox's workspace, by "..", percent-encoding or symlinks, for reading or writing.
func TestSecurityPathEscapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.direct.WriteFile(ctx, e.sb, "inside.txt", []byte("inside")); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(e.br.cfg.Root, e.sb, "workspace")
	if _, err := os.Stat(filepath.Join(ws, "inside.txt")); err != nil {
		t.Fatalf("workspace layout assumption broken: %v", err)
	}
	const secret = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"
	outsideDir := t.TempDir()
	for _, p := range []string{filepath.Join(e.br.cfg.Root, e.sb, "secret"), filepath.Join(e.br.cfg.Root, "secret"), filepath.Join(outsideDir, "secret")} {
		if err := os.WriteFile(p, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outsideDir, filepath.Join(ws, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outsideDir, "secret"), filepath.Join(ws, "linkfile")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outsideDir, "nothing-yet"), filepath.Join(ws, "dangling")); err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{"Authorization": "Bearer " + e.br.token}
	base := "/v1/sandbox/" + e.sb + "/file/"
	reads := []string{
		"../secret", "workspace/../secret", "workspace/../../secret", "%2e%2e/secret", "%2E%2E/%2E%2E/secret",
		"workspace/%2e%2e/secret", "..%2fsecret", "workspace%2f..%2f..%2fsecret", "%252e%252e/secret",
		"linkdir/secret", "workspace/linkdir/secret", "linkfile", "workspace/linkfile", "linkdir/../linkdir/secret",
		"..%5csecret", "workspace/./../secret", ".%2e/secret", "%2e./secret", "workspace/%00/../secret",
	}
	for _, p := range reads {
		status, body := rawRequest(t, e.br.addr, "GET", base+p, e.br.addr, auth, nil)
		if strings.Contains(body, secret) {
			t.Errorf("GET file %q leaked a file outside the workspace (status %d)", p, status)
		}
		if status == http.StatusOK {
			t.Errorf("GET file %q: 200, want a refusal or not-found", p)
		}
	}
	writes := []string{"../written", "%2e%2e/written", "workspace/../../written", "linkdir/written", "dangling", "workspace/linkdir/sub/written"}
	for _, p := range writes {
		status, _ := rawRequest(t, e.br.addr, "PUT", base+p, e.br.addr, auth, []byte("PWNED"))
		if status == http.StatusOK {
			t.Errorf("PUT file %q: 200, want a refusal", p)
		}
	}
	for _, p := range []string{filepath.Join(e.br.cfg.Root, e.sb, "written"), filepath.Join(e.br.cfg.Root, "written"),
		filepath.Join(outsideDir, "written"), filepath.Join(outsideDir, "nothing-yet"), filepath.Join(outsideDir, "sub")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("a write escaped the workspace: %s exists", p)
		}
	}
	// Process cwd outside /workspace.
	for _, cwd := range []string{"..", "../..", "/", "/etc", "/workspace/../..", "workspace/../../.."} {
		body := fmt.Sprintf(`{"argv":["pwd"],"cwd":%q}`, cwd)
		status, resp := rawRequest(t, e.br.addr, "POST", "/v1/sandbox/"+e.sb+"/processes", e.br.addr,
			map[string]string{"Authorization": "Bearer " + e.br.token, "Content-Type": "application/json"}, []byte(body))
		if status != http.StatusForbidden {
			t.Errorf("process cwd %q: status %d (%.100q), want 403", cwd, status, resp)
		}
	}
	// Hydrate archives with escaping entries.
	evil := []func(tw *tar.Writer){
		func(tw *tar.Writer) { tarFile(tw, "../written", "PWNED") },
		func(tw *tar.Writer) { tarFile(tw, "/abs-written", "PWNED"); tarFile(tw, "a/../../written", "PWNED") },
		func(tw *tar.Writer) {
			_ = tw.WriteHeader(&tar.Header{Name: "escape", Typeflag: tar.TypeSymlink, Linkname: outsideDir, Mode: 0o777})
			tarFile(tw, "escape/written", "PWNED")
		},
		func(tw *tar.Writer) {
			_ = tw.WriteHeader(&tar.Header{Name: "hl", Typeflag: tar.TypeLink, Linkname: filepath.Join(outsideDir, "secret"), Mode: 0o644})
		},
	}
	for i, build := range evil {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		build(tw)
		_ = tw.Close()
		status, _ := rawRequest(t, e.br.addr, "POST", "/v1/sandbox/"+e.sb+"/hydrate", e.br.addr, auth, buf.Bytes())
		t.Logf("hydrate archive %d: status %d", i, status)
		for _, p := range []string{filepath.Join(outsideDir, "written"), filepath.Join(e.br.cfg.Root, e.sb, "written"), filepath.Join(e.br.cfg.Root, "written")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("hydrate archive %d wrote outside the workspace: %s", i, p)
				_ = os.Remove(p)
			}
		}
		if b, err := os.ReadFile(filepath.Join(ws, "hl")); err == nil && string(b) == secret {
			t.Errorf("hydrate archive %d hard-linked a file from outside the workspace", i)
		}
	}
}

func tarFile(tw *tar.Writer, name, content string) {
	_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))})
	_, _ = tw.Write([]byte(content))
}

// TestSecurityOversizeBodies: bodies above the bridge's limits are refused without being stored.
func TestSecurityOversizeBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	auth := map[string]string{"Authorization": "Bearer " + e.br.token, "Content-Type": "application/json"}
	big := bytes.Repeat([]byte("A"), 32<<20+1)
	status, _ := rawRequest(t, e.br.addr, "PUT", "/v1/sandbox/"+e.sb+"/file/workspace/big", e.br.addr, auth, big)
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("PUT 32 MiB + 1: status %d, want 413", status)
	}
	if _, err := os.Stat(filepath.Join(e.br.cfg.Root, e.sb, "workspace", "big")); err == nil {
		t.Errorf("an oversize file was stored")
	}
	status, _ = rawRequest(t, e.br.addr, "POST", "/v1/sandbox/"+e.sb+"/hydrate", e.br.addr, auth, big)
	if status != http.StatusBadRequest {
		t.Errorf("hydrate 32 MiB + 1: status %d, want 400", status)
	}
	jsonBig := []byte(`{"argv":["true"],"pad":"` + strings.Repeat("A", 2<<20) + `"}`)
	for _, path := range []string{"/processes", "/terminals"} {
		status, _ := rawRequest(t, e.br.addr, "POST", "/v1/sandbox/"+e.sb+path, e.br.addr, auth, jsonBig)
		if status < 400 || status >= 500 {
			t.Errorf("POST %s with a 2 MiB body: status %d, want a 4xx refusal", path, status)
		}
	}
	// The exact limit is accepted (the refusal above is the limit, not a blanket failure).
	status, _ = rawRequest(t, e.br.addr, "PUT", "/v1/sandbox/"+e.sb+"/file/workspace/max", e.br.addr, auth, big[:32<<20])
	if status != http.StatusOK {
		t.Errorf("PUT exactly 32 MiB: status %d, want 200", status)
	}
}

// TestSecurityLoopbackOnly: a non-loopback bind is refused unless explicitly allowed.
func TestSecurityLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"0.0.0.0:0", "[::]:0", ":0"} {
		srv, err := localbridge.New(localbridge.Config{Root: t.TempDir(), Token: newToken(t), Listen: listen})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err == nil {
			t.Errorf("listen %q without AllowNonLoopback: started, want a refusal", listen)
		}
		_ = srv.Close(context.Background())
	}
	for _, listen := range []string{"127.0.0.1:0", "localhost:0"} {
		srv, err := localbridge.New(localbridge.Config{Root: t.TempDir(), Token: newToken(t), Listen: listen})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Errorf("listen %q: %v", listen, err)
		}
		_ = srv.Close(context.Background())
	}
	srv, err := localbridge.New(localbridge.Config{Root: t.TempDir(), Token: newToken(t), Listen: "0.0.0.0:0", AllowNonLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Errorf("listen 0.0.0.0 with AllowNonLoopback: %v", err)
	}
	_ = srv.Close(context.Background())
	if _, err := localbridge.New(localbridge.Config{Root: t.TempDir(), Listen: "127.0.0.1:0"}); err == nil {
		t.Errorf("a bridge without a token was created")
	}
}

// TestSecurityTokenNeverLeaks: the token does not reach the argv or environment of any process or
// terminal the bridge starts (even with SANDBOX_API_KEY set in the bridge's own environment), the
// bridge's diagnostics, any URL the client requests, or any error text.
func TestSecurityTokenNeverLeaks(t *testing.T) {
	// Not parallel: it sets the process environment.
	tok := newToken(t)
	t.Setenv("SANDBOX_API_KEY", tok)
	var logMu sync.Mutex
	var logs bytes.Buffer
	e := newEnv(t, func(c *localbridge.Config) {
		c.Token = tok
		c.Logf = func(format string, args ...any) {
			logMu.Lock()
			fmt.Fprintf(&logs, format+"\n", args...)
			logMu.Unlock()
		}
	})
	e.br.token = tok
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A process that prints its environment and argv, and stays alive so /proc can be read.
	p, err := e.c.StartProcess(ctx, e.sb, client.ExecRequest{Argv: []string{"sh", "-c", "env; cat /proc/self/cmdline; echo; sleep 30"}, Env: map[string]string{"X": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.c.CreateTerminal(ctx, e.sb, client.TerminalRequest{Argv: []string{"sh", "-c", "env; sleep 30"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	f := e.c.Follow(ctx, e.sb, p.ID, client.FollowOptions{QuietAfter: 300 * time.Millisecond})
	for ev := range f.Events() {
		out.Write(ev.Data)
		if ev.Kind == client.Quiet {
			break
		}
	}
	tc, err := e.c.ConnectTerminal(ctx, e.sb, term.ID, client.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
collect:
	for {
		select {
		case ev, ok := <-tc.Events():
			if !ok {
				break collect
			}
			out.Write(ev.Data)
			if bytes.Contains(out.Bytes(), []byte("TERM=")) && bytes.Count(out.Bytes(), []byte("PWD=")) >= 2 {
				break collect
			}
		case <-deadline:
			break collect
		}
	}
	_ = tc.Close()
	if !bytes.Contains(out.Bytes(), []byte("PATH=")) {
		t.Fatalf("the processes' environment was not captured: %q", out.String())
	}
	if bytes.Contains(out.Bytes(), []byte(tok)) {
		t.Errorf("the token reached a sandbox process's environment or argv (output)")
	}
	// /proc of every process the bridge started, and their descendants.
	checked := 0
	for _, root := range []int{p.PID, term.PID} {
		for _, pid := range descendants(root) {
			for _, f := range []string{"cmdline", "environ"} {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
				if err != nil {
					continue
				}
				checked++
				if bytes.Contains(b, []byte(tok)) {
					t.Errorf("the token is in /proc/%d/%s", pid, f)
				}
			}
		}
	}
	if checked == 0 {
		t.Errorf("no /proc entries of the bridge's processes could be read")
	}
	// Error answers and the client's own errors.
	bad, _ := client.New(e.proxy.URL(), client.WithToken(tok+"-rotated"))
	if _, err := bad.ListProcesses(ctx, e.sb); err == nil || strings.Contains(err.Error(), tok) {
		t.Errorf("401 error text: %v", err)
	}
	gone, _ := client.New("http://127.0.0.1:1", client.WithToken(tok))
	if _, err := gone.ListProcesses(ctx, e.sb); err == nil || strings.Contains(err.Error(), tok) {
		t.Errorf("transport error text: %v", err)
	}
	if _, err := e.c.ConnectTerminal(ctx, e.sb, "nope", client.ConnectOptions{}); err == nil || strings.Contains(err.Error(), tok) {
		t.Errorf("terminal not-found error text: %v", err)
	}
	for _, r := range e.proxy.Requests() {
		if strings.Contains(r.Path+"?"+r.Query, tok) {
			t.Errorf("the token is in a request URL: %s", r.Path)
		}
	}
	_ = e.direct.KillProcess(ctx, e.sb, p.ID, 9)
	_ = e.direct.TerminateTerminal(ctx, e.sb, term.ID)
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), tok) {
		t.Errorf("the token is in the bridge's diagnostics")
	}
}

// descendants lists root and every process below it (from /proc/*/stat).
func descendants(root int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[pid] = pp
		}
	}
	out := []int{root}
	for changed := true; changed; {
		changed = false
		for pid, pp := range parent {
			if contains(out, pp) && !contains(out, pid) {
				out = append(out, pid)
				changed = true
			}
		}
	}
	return out
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
