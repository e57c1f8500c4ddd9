package localbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

var startedFormat = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)

// runningBody matches GET /running's answer while incarnation n runs.
func runningBody(n int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`^\{"running":true,"incarnation":%d,"incarnationStarted":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"\}$`, n))
}

// startAt starts a bridge over root (extra options apply first).
func startAt(t *testing.T, root string, opts ...bridgetest.Option) *bridgetest.Bridge {
	t.Helper()
	return bridgetest.Start(t, append(opts, bridgetest.WithConfig(func(c *localbridge.Config) { c.Root = root }))...)
}

func closeBridge(t *testing.T, b *bridgetest.Bridge) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Server.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

type runningAnswer struct {
	Running            bool   `json:"running"`
	Incarnation        int    `json:"incarnation"`
	IncarnationStarted string `json:"incarnationStarted"`
}

func running(t *testing.T, b *bridgetest.Bridge, sb string) (runningAnswer, string) {
	t.Helper()
	r := call(t, b, "GET", "/v1/sandbox/"+sb+"/running", nil, true)
	var a runningAnswer
	if r.Status != 200 || json.Unmarshal(r.Body, &a) != nil {
		t.Fatalf("running: %s", r)
	}
	return a, string(r.Body)
}

func listSandboxes(t *testing.T, b *bridgetest.Bridge) map[string]client.SandboxInfo {
	t.Helper()
	r := call(t, b, "GET", localbridge.ListPath, nil, true)
	var list []client.SandboxInfo
	if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
		t.Fatalf("list: %s", r)
	}
	out := map[string]client.SandboxInfo{}
	for _, s := range list {
		out[s.ID] = s
	}
	return out
}

func parseStarted(t *testing.T, s string) time.Time {
	t.Helper()
	if !startedFormat.MatchString(s) {
		t.Fatalf("incarnationStarted %q is not RFC 3339 UTC with nanoseconds", s)
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestRestartKeepsBridgeAndSandboxes: a bridge restarted over the same root keeps its ID, lists
// its sandboxes as stopped, answers their old process IDs 404, and continues the numbering.
func TestRestartKeepsBridgeAndSandboxes(t *testing.T) {
	root := t.TempDir()
	const sbx = "persisted"
	b1 := startAt(t, root)
	id := b1.Server.ID()
	if !regexp.MustCompile(`^[a-z2-7]{26}$`).MatchString(id) {
		t.Fatalf("bridge ID %q", id)
	}
	if got, err := localbridge.ReadBridgeID(root); err != nil || got != id {
		t.Fatalf("ReadBridgeID = %q, %v; want %q", got, err, id)
	}
	if fi, err := os.Stat(filepath.Join(root, "bridge-id")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("bridge-id: %v %v", fi, err)
	}
	launch(t, b1, sbx, map[string]any{"argv": []string{"sleep", "30"}})
	if r := call(t, b1, "POST", "/v1/sandbox/"+sbx+"/replace", nil, true); r.Status != 200 {
		t.Fatalf("replace: %s", r)
	}
	old := launch(t, b1, sbx, map[string]any{"argv": []string{"sleep", "30"}})
	if old.Incarnation != 2 {
		t.Fatalf("incarnation %d, want 2", old.Incarnation)
	}
	before, _ := running(t, b1, sbx)
	started2 := parseStarted(t, before.IncarnationStarted)
	if l := listSandboxes(t, b1)[sbx]; l.Incarnation != 2 || !l.IncarnationStarted.Equal(started2) {
		t.Fatalf("list entry %+v, want incarnation 2 started %v", l, started2)
	}
	created := listSandboxes(t, b1)[sbx].CreatedAt
	closeBridge(t, b1)

	var st struct {
		Incarnations int       `json:"incarnations"`
		CreatedAt    time.Time `json:"createdAt"`
	}
	if data, err := os.ReadFile(filepath.Join(root, sbx, "sandbox.json")); err != nil || json.Unmarshal(data, &st) != nil || st.Incarnations != 2 {
		t.Fatalf("sandbox.json: %q %v", data, err)
	}

	b2 := startAt(t, root)
	if b2.Server.ID() != id {
		t.Fatalf("ID after restart %q, want %q", b2.Server.ID(), id)
	}
	l, ok := listSandboxes(t, b2)[sbx]
	if !ok || l.Running || l.Incarnation != 0 || !l.IncarnationStarted.IsZero() || !l.CreatedAt.Equal(created) {
		t.Fatalf("after restart: %+v (listed %v), want stopped, created %v", l, ok, created)
	}
	if _, body := running(t, b2, sbx); body != `{"running":false}` {
		t.Fatalf("running after restart: %s", body)
	}
	if r := call(t, b2, "GET", "/v1/sandbox/"+sbx+"/processes", nil, true); r.Status != 200 || string(r.Body) != "[]" {
		t.Fatalf("process list after restart: %s", r)
	}
	if r := call(t, b2, "GET", "/v1/sandbox/"+sbx+"/processes/"+old.ID, nil, true); r.Status != 404 ||
		string(r.Body) != `{"error":"Process not found","code":"not_found"}` {
		t.Fatalf("old process after restart: %s", r)
	}
	p := launch(t, b2, sbx, map[string]any{"argv": []string{"sleep", "30"}})
	if p.Incarnation != 3 {
		t.Fatalf("first process after restart in incarnation %d, want 3", p.Incarnation)
	}
	now, _ := running(t, b2, sbx)
	if !now.Running || now.Incarnation != 3 || !parseStarted(t, now.IncarnationStarted).After(started2) {
		t.Fatalf("running after restart %+v, want incarnation 3 started after %v", now, started2)
	}

	// Delete removes the directory: the next restart does not list it.
	if r := call(t, b2, "DELETE", "/v1/sandbox/"+sbx, nil, true); r.Status != 204 {
		t.Fatalf("delete: %s", r)
	}
	closeBridge(t, b2)
	if _, err := os.Stat(filepath.Join(root, sbx)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sandbox directory after delete: %v", err)
	}
	b3 := startAt(t, root)
	if _, ok := listSandboxes(t, b3)[sbx]; ok || b3.Server.ID() != id {
		t.Fatalf("deleted sandbox listed again (or ID changed: %q)", b3.Server.ID())
	}
}

// TestBridgeIDRace: bridges starting over one fresh root at once agree on one ID.
func TestBridgeIDRace(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, err := localbridge.New(localbridge.Config{Root: root, Token: "t0ken"})
			if err != nil {
				errs[i] = err
				return
			}
			ids[i] = s.ID()
			_ = s.Close(context.Background())
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] || ids[0] == "" {
			t.Fatalf("bridge %d: %q %v (bridge 0: %q)", i, ids[i], errs[i], ids[0])
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != "bridge-id" {
		t.Fatalf("root holds %v, want only bridge-id", entries)
	}
}

// TestReadBridgeID: the root is resolved as New resolves it; a missing ID says so.
func TestReadBridgeID(t *testing.T) {
	dir := t.TempDir()
	if _, err := localbridge.ReadBridgeID(filepath.Join(dir, "never")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing root: %v", err)
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := localbridge.ReadBridgeID(root); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "bridge-id") {
		t.Fatalf("no bridge-id: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	s, err := localbridge.New(localbridge.Config{Root: link, Token: "t0ken"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for _, r := range []string{root, link} {
		if got, err := localbridge.ReadBridgeID(r); err != nil || got != s.ID() {
			t.Fatalf("ReadBridgeID(%s) = %q, %v; want %q", r, got, err, s.ID())
		}
	}
	// A damaged identity is reported, never silently replaced.
	if err := os.WriteFile(filepath.Join(root, "bridge-id"), []byte("../x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := localbridge.ReadBridgeID(root); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("malformed bridge-id: %v", err)
	}
	if _, err := localbridge.New(localbridge.Config{Root: root, Token: "t0ken"}); err == nil {
		t.Fatal("New accepted a malformed bridge-id")
	}
}

// TestStrayAndDamagedState: New registers only sandbox directories, and a damaged sandbox.json
// is logged and counted from 0 instead of stopping the bridge.
func TestStrayAndDamagedState(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if content == "/" {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mk("serve.json", `{"url":"http://127.0.0.1:1"}`)
	mk("notes/readme", "not a sandbox")                // no workspace
	mk("UPPER/workspace", "/")                         // not a sandbox ID
	mk("plain", "a file")                              // matches the ID pattern, not a directory
	mk("workspace/x", "")                              // no workspace inside
	mk("old/workspace", "/")                           // an older version: no sandbox.json
	mk("bad/workspace", "/")                           // damaged state
	mk("bad/sandbox.json", "{not json")                //
	mk("neg/workspace", "/")                           // impossible count
	mk("neg/sandbox.json", `{"incarnations":-5}`)      //
	mk("big/workspace", "/")                           // oversized state
	mk("big/sandbox.json", strings.Repeat(" ", 1<<20)) //
	mk("good/workspace", "/")
	mk("good/sandbox.json", `{"incarnations":7,"createdAt":"2026-01-02T03:04:05Z","lastActiveAt":"2026-01-03T00:00:00Z"}`)
	if err := os.Symlink(filepath.Join(root, "good"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	oldTime := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "old"), oldTime, oldTime); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	b := startAt(t, root, bridgetest.WithConfig(func(c *localbridge.Config) {
		c.Logf = func(format string, args ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
	}))
	list := listSandboxes(t, b)
	var ids []string
	for id, s := range list {
		ids = append(ids, id)
		if s.Running {
			t.Errorf("%s listed as running", id)
		}
	}
	if got := strings.Join(sortStrings(ids), ","); got != "bad,big,good,neg,old" {
		t.Fatalf("listed %s, want bad,big,good,neg,old", got)
	}
	if !list["old"].CreatedAt.Equal(oldTime) {
		t.Errorf("old created %v, want the directory's mtime %v", list["old"].CreatedAt, oldTime)
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC); !list["good"].CreatedAt.Equal(want) {
		t.Errorf("good created %v, want %v", list["good"].CreatedAt, want)
	}
	mu.Lock()
	joined := strings.Join(logs, "\n")
	mu.Unlock()
	for _, id := range []string{"bad", "neg", "big"} {
		if !strings.Contains(joined, "sandbox "+id+": sandbox.json") {
			t.Errorf("no log line for %s's damaged sandbox.json in:\n%s", id, joined)
		}
	}
	for sbx, want := range map[string]int{"old": 1, "bad": 1, "neg": 1, "good": 8} {
		if p := launch(t, b, sbx, map[string]any{"argv": []string{"true"}}); p.Incarnation != want {
			t.Errorf("%s: first process in incarnation %d, want %d", sbx, p.Incarnation, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(root, "bad", "sandbox.json")); err != nil || !strings.Contains(string(data), `"incarnations":1`) {
		t.Errorf("bad's sandbox.json after a new incarnation: %q %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "serve.json")); err != nil || string(data) != `{"url":"http://127.0.0.1:1"}` {
		t.Errorf("serve.json touched: %q %v", data, err)
	}
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// TestOpenAPIAnnouncesBridgeID: both dialects announce the ID where the client reads it.
func TestOpenAPIAnnouncesBridgeID(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name    string
		opts    []bridgetest.Option
		dialect client.Dialect
	}{
		{"preview", nil, client.DialectPreview},
		{"stable", []bridgetest.Option{bridgetest.WithDialect(localbridge.DialectStable)}, client.DialectStable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startAt(t, root, tc.opts...)
			r := call(t, b, "GET", "/v1/openapi.json", nil, true)
			caps, err := client.ParseCapabilities(r.Body)
			if err != nil || caps.BridgeID != b.Server.ID() || caps.BridgeID == "" || caps.Dialect != tc.dialect || !caps.Local ||
				caps.ListPath != localbridge.ListPath || !caps.Features().SandboxList {
				t.Fatalf("capabilities %+v, %v; want bridge ID %q", caps, err, b.Server.ID())
			}
			closeBridge(t, b)
		})
	}
	// The preview document marks the start time as an extension beside the incarnation.
	b := startAt(t, root)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(call(t, b, "GET", "/v1/openapi.json", nil, true).Body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{"RunningResponse", "SandboxInfo"} {
		if p := doc.Components.Schemas[schema].Properties["incarnationStarted"]; p["x-sandscope-extension"] != true || p["format"] != "date-time" {
			t.Errorf("%s.incarnationStarted: %v", schema, p)
		}
	}
}
