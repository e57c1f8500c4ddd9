package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// stableDeliberate lists the stable rows where the local bridge differs on purpose. Each class
// is still checked: checkDeliberate says what both sides must answer.
var stableDeliberate = map[string]string{
	"openapi json":                "the local bridge serves the published document plus its extensions, marked as such, and its bridge ID in info: compared with those taken out (checkDeliberate)",
	"list extension path":         "the sandbox list is a local bridge extension on its own path; the published bridge has no such route",
	"list extension path no auth": "as \"list extension path\", behind the sandbox routes' auth",
	"pty upgrade":                 "a WebSocket handshake: the local bridge upgrades (the fake container of the harness cannot); the PTY protocol is covered by localbridge's tests",
	"pty upgrade session q":       "as \"pty upgrade\"",
}

// notSupportedPrefixes name the rows of well-formed tunnel and bucket mount requests: the
// published bridge passes them to the container (whose failure in the harness is a 502), the
// local bridge, which has neither, answers 501 not_supported after the same checks.
var notSupportedPrefixes = []string{"tunnel ok", "mount ok", "unmount ok"}

// deliberateReason is why a row's answers differ on purpose ("" when they must agree).
func deliberateReason(name string) string {
	if reason, ok := stableDeliberate[name]; ok {
		return reason
	}
	for _, p := range notSupportedPrefixes {
		if strings.HasPrefix(name, p) {
			return "well-formed; the local bridge has no tunnels or bucket mounts (501 not_supported after the published checks)"
		}
	}
	return ""
}

// checkDeliberate checks a deliberate row's answers against what the difference allows; "" when
// they are as expected.
func checkDeliberate(name string, pub, local Response) string {
	switch {
	case name == "openapi json":
		if pub.Status != 200 || local.Status != 200 {
			return fmt.Sprintf("status: published %d, local %d", pub.Status, local.Status)
		}
		stripped, err := stripExtensions([]byte(local.Body))
		if err != nil {
			return "local document: " + err.Error()
		}
		if string(stripped) != pub.Body {
			return fmt.Sprintf("local document without its extensions is not the published one (order included):\n%s", firstDifference(pub.Body, string(stripped)))
		}
	case name == "list extension path":
		if pub.Status != 404 || local.Status != 200 || !strings.HasPrefix(local.Body, "[") {
			return fmt.Sprintf("want published 404 and a local list, got %d and %d %q", pub.Status, local.Status, clip(local.Body))
		}
	case name == "list extension path no auth":
		if pub.Status != 404 || local.Status != 401 {
			return fmt.Sprintf("want published 404 and local 401, got %d and %d", pub.Status, local.Status)
		}
	case strings.HasPrefix(name, "pty upgrade"):
	default: // well-formed tunnel and mount requests
		if pub.Status != 502 {
			return fmt.Sprintf("the published bridge did not pass the request to the container: %d %s", pub.Status, pub.Body)
		}
		if local.Status != 501 || !strings.Contains(local.Body, `"code":"not_supported"`) {
			return fmt.Sprintf("local %d %s, want 501 not_supported", local.Status, local.Body)
		}
	}
	return ""
}

// stripExtensions removes what the local bridge adds to the published OpenAPI document: its
// bridge ID in info and every member whose value is an object marked "x-sandscope-extension":
// true (path items, operations, responses, schemas). Key order is kept.
func stripExtensions(doc []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := stripValue(doc, &buf, true); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func stripValue(raw []byte, buf *bytes.Buffer, top bool) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return json.Compact(buf, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	open, _ := dec.Token()
	if open == json.Delim('[') {
		buf.WriteByte('[')
		for i := 0; dec.More(); i++ {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return err
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := stripValue(v, buf, false); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	buf.WriteByte('{')
	first := true
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		var marked struct {
			Ext bool `json:"x-sandscope-extension"`
		}
		if k == "x-sandscope-bridge-id" || (len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &marked) == nil && marked.Ext) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := marshalSorted(k)
		buf.Write(kb)
		buf.WriteByte(':')
		if err := stripValue(v, buf, false); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// firstDifference shows where two texts first differ.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("      published …%s\n      local     …%s", a[from:min(len(a), i+80)], b[from:min(len(b), i+80)])
}

var (
	reStableID  = regexp.MustCompile(`^[a-z2-7]{26}$`)
	reSessionMS = regexp.MustCompile(`session-\d{10,}`)
)

// normalizeStable is NormalizeOrdered (field order compared) plus the stable answers' variable parts: minted 26-char IDs and
// default session IDs (session-<epoch ms>).
func normalizeStable(r Response) Response {
	r = NormalizeOrdered(r)
	var m map[string]string
	if json.Unmarshal([]byte(r.Body), &m) == nil && reStableID.MatchString(m["id"]) {
		r.Body = `{"id":"<id26>"}`
	}
	r.Body = reSessionMS.ReplaceAllString(r.Body, "session-<ms>")
	return r
}

func TestStableConformance(t *testing.T) {
	dir := needHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	hc := &http.Client{Timeout: 30 * time.Second}
	rows := stableTable(b.Token)

	// The local bridge answers first; what its container did for each exec becomes the harness's
	// script, so the comparison is of the bridge layer (validation, quoting, framing, errors).
	local := make([]Response, len(rows))
	var script StableScript
	var execRows []int
	for i, row := range rows {
		res, err := Send(ctx, hc, b.URL, row)
		if err != nil {
			t.Fatalf("%s: local bridge: %v", row.Name, err)
		}
		local[i] = res
		if strings.HasSuffix(row.Path, "/exec") && res.Status == 200 {
			script.Execs = append(script.Execs, execFromSSE(t, row.Name, res.Body))
			execRows = append(execRows, i)
		}
	}
	script.Files = map[string]string{"/workspace/hello.txt": base64.StdEncoding.EncodeToString([]byte("hello file\n"))}

	ans, err := RunStableHarness(ctx, dir, b.Token, script, rows)
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[int]int{}
	differences, deliberateRows := 0, 0
	type pair struct {
		Request   Request  `json:"request"`
		Published Response `json:"published"`
		Local     Response `json:"local"`
	}
	var dump []pair
	for i, row := range rows {
		pub := ans.Responses[i]
		statuses[pub.Status]++
		dump = append(dump, pair{row, pub, local[i]})
		d := Diff(normalizeStable(pub), normalizeStable(local[i]))
		if reason := deliberateReason(row.Name); reason != "" {
			deliberateRows++
			if d == "" {
				t.Errorf("%s: listed as deliberate (%s) but the answers agree now", row.Name, reason)
			} else if bad := checkDeliberate(row.Name, pub, local[i]); bad != "" {
				t.Errorf("%s (deliberate: %s): %s", row.Name, reason, redact(bad, b.Token))
			}
			continue
		}
		if d != "" {
			differences++
			t.Errorf("%s (%s %s): %s", row.Name, methodOf(row), redact(row.Path, b.Token), redact(d, b.Token))
		}
	}
	if path := os.Getenv("SANDSCOPE_CONFORMANCE_DUMP"); path != "" {
		if data, err := json.MarshalIndent(dump, "", "  "); err == nil {
			_ = os.WriteFile(path, []byte(redact(string(data), b.Token)), 0o600)
		}
	}

	// The commands the published bridge built from each argv are the ones the local bridge runs.
	var streaming []StableCommand
	for _, c := range ans.Commands {
		if c.Stream { // not GET /running's probe
			streaming = append(streaming, c)
		}
	}
	if len(streaming) != len(execRows) {
		t.Fatalf("published bridge ran %d exec commands, local %d: %+v", len(streaming), len(execRows), streaming)
	}
	for k, i := range execRows {
		var body struct {
			Argv []json.RawMessage `json:"argv"`
		}
		_ = json.Unmarshal([]byte(*rows[i].Body), &body)
		want, err := localbridge.StableShellCommand(body.Argv)
		if err != nil || want != streaming[k].Command {
			t.Errorf("%s: published command %q, local %q (%v)", rows[i].Name, streaming[k].Command, want, err)
		}
	}
	// Allocation: the published pool was asked for a container exactly as often as the local
	// bridge counted.
	for id, n := range ans.Allocations {
		if got := b.Server.Allocations(id); got != n {
			t.Errorf("sandbox %s: published bridge allocated %d times, local counted %d", id, n, got)
		}
	}
	t.Logf("%d rows compared, %d unexpected differences, %d deliberate; published statuses %v; %d commands",
		len(rows), differences, deliberateRows, statuses, len(streaming))
	if len(statuses) < 6 {
		t.Errorf("the published bridge gave only statuses %v", statuses)
	}
}

// The exit-code-less completion and the container-side error endings look the same through both
// bridges: the published one maps a complete without exitCode to {"exit_code":0}.
func TestStableConformanceEndings(t *testing.T) {
	dir := needHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	hc := &http.Client{}
	auth := map[string]string{"Authorization": "Bearer " + b.Token}
	body := `{"argv":["sh","-c","echo started; sleep 30"]}`

	// Local: the fabricated completion while the process runs on.
	req, _ := http.NewRequestWithContext(ctx, "POST", b.URL+"/v1/sandbox/ends/exec", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.Token)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(res.Body)
	var head strings.Builder
	for !strings.HasSuffix(head.String(), "\n\n") {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("before first event: %v", err)
		}
		head.WriteString(l)
	}
	b.Server.CompleteWithoutExit("ends")
	var rest strings.Builder
	_, _ = bufio.NewReader(br).WriteTo(&rest)
	res.Body.Close()
	localFake := Response{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), CacheControl: res.Header.Get("Cache-Control"), Body: head.String() + rest.String()}

	errMsg := "Network connection lost."
	rej := "control connection lost"
	script := StableScript{Execs: []StableExec{
		{Output: []StableChunk{{"stdout", "started\n"}}, End: StableEnd{NoExitCode: true}},
		{Output: []StableChunk{{"stdout", "started\n"}}, End: StableEnd{Error: &errMsg}},
		{End: StableEnd{Reject: &rej}},
	}}
	rows := []Request{
		{Name: "no exit code", Method: "POST", Path: "/v1/sandbox/ends/exec", Headers: auth, Body: &body},
		{Name: "container error", Method: "POST", Path: "/v1/sandbox/ends/exec", Headers: auth, Body: &body},
		{Name: "transport error", Method: "POST", Path: "/v1/sandbox/ends/exec", Headers: auth, Body: &body},
	}
	ans, err := RunStableHarness(ctx, dir, b.Token, script, rows)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(normalizeStable(ans.Responses[0]), normalizeStable(localFake)); d != "" {
		t.Errorf("exit-code-less completion: %s", d)
	}
	if !strings.HasSuffix(ans.Responses[0].Body, "event: exit\ndata: {\"exit_code\":0}\n\n") {
		t.Errorf("published bridge: %q", ans.Responses[0].Body)
	}

	// Local: the container going away under the stream.
	req, _ = http.NewRequestWithContext(ctx, "POST", b.URL+"/v1/sandbox/ends/exec", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.Token)
	res, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br = bufio.NewReader(res.Body)
	head.Reset()
	for !strings.HasSuffix(head.String(), "\n\n") {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("before first event: %v", err)
		}
		head.WriteString(l)
	}
	if err := b.Server.ReplaceSandbox("ends"); err != nil {
		t.Fatal(err)
	}
	rest.Reset()
	_, _ = br.WriteTo(&rest)
	res.Body.Close()
	localLost := Response{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), CacheControl: res.Header.Get("Cache-Control"), Body: head.String() + rest.String()}
	if d := Diff(normalizeStable(ans.Responses[1]), normalizeStable(localLost)); d != "" {
		t.Errorf("container error ending: %s", d)
	}
	if want := "event: error\ndata: {\"error\":\"exec failed: control connection lost\",\"code\":\"exec_transport_error\"}\n\n"; ans.Responses[2].Body != want {
		t.Errorf("transport error ending: %q, want %q", ans.Responses[2].Body, want)
	}
}

// execFromSSE turns a local /exec answer into the scripted exec that replays it.
func execFromSSE(t *testing.T, name, body string) StableExec {
	t.Helper()
	var ex StableExec
	var event string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data := line[6:]
			switch event {
			case "stdout", "stderr":
				raw, err := base64.StdEncoding.DecodeString(data)
				if err != nil {
					t.Fatalf("%s: bad base64 %q", name, data)
				}
				ex.Output = append(ex.Output, StableChunk{event, string(raw)})
			case "exit":
				var e struct {
					ExitCode int `json:"exit_code"`
				}
				_ = json.Unmarshal([]byte(data), &e)
				ex.End.ExitCode = &e.ExitCode
			case "error":
				var e struct{ Error string }
				_ = json.Unmarshal([]byte(data), &e)
				ex.End.Error = &e.Error
			}
		case line == "":
		default:
			t.Fatalf("%s: unexpected SSE line %q", name, line)
		}
	}
	return ex
}

// stableTable is the stable differential table, in order (sessions made by early rows are used
// by later ones).
func stableTable(token string) []Request {
	str := func(s string) *string { return &s }
	bearer := map[string]string{"Authorization": "Bearer " + token}
	with := func(kv ...string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + token}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	const sb = "/v1/sandbox/stablebox"
	exec := func(name, body string, h map[string]string) Request {
		if h == nil {
			h = bearer
		}
		return Request{Name: name, Method: "POST", Path: sb + "/exec", Headers: h, Body: str(body)}
	}
	rows := []Request{
		{Name: "health", Path: "/health"},
		{Name: "openapi json", Path: "/v1/openapi.json", Headers: bearer},
		{Name: "openapi no auth", Path: "/v1/openapi.json"},
		{Name: "mint id", Method: "POST", Path: "/v1/sandbox", Headers: bearer},
		{Name: "mint id no auth", Method: "POST", Path: "/v1/sandbox"},
		{Name: "GET /v1/sandbox list", Path: "/v1/sandbox", Headers: bearer},
		{Name: "bad id before auth", Path: "/v1/sandbox/BAD/running"},
		{Name: "no auth", Path: sb + "/running"},
		{Name: "lowercase bearer", Path: sb + "/running", Headers: map[string]string{"Authorization": "bearer " + token}},
		{Name: "token query refused", Path: sb + "/running?token=" + token},
		{Name: "running", Path: sb + "/running", Headers: bearer},
		{Name: "unknown subpath", Path: sb + "/processes", Headers: bearer},
		{Name: "trailing slash", Path: sb + "/running/", Headers: bearer},
		{Name: "wrong method exec", Path: sb + "/exec", Headers: bearer},
		{Name: "bare sandbox GET", Path: sb, Headers: bearer},
		exec("exec empty body", "", nil),
		exec("exec invalid json", "{", nil),
		exec("exec null body", "null", nil),
		exec("exec number body", "5", nil),
		exec("exec no argv", `{}`, nil),
		exec("exec empty argv", `{"argv":[]}`, nil),
		exec("exec argv string", `{"argv":"echo hi"}`, nil),
		exec("exec object item", `{"argv":["echo",{}]}`, nil),
		exec("exec empty array item", `{"argv":["echo",[]]}`, nil),
		exec("exec bad session", `{"argv":["true"]}`, with("Session-Id", "a..b")),
		exec("exec session too long", `{"argv":["true"]}`, with("Session-Id", strings.Repeat("s", 129))),
		exec("exec cwd escape", `{"argv":["true"]}`, nil),
		exec("exec simple", `{"argv":["echo","hello"]}`, nil),
		exec("exec exit code", `{"argv":["sh","-c","echo out; echo err >&2; exit 3"]}`, nil),
		exec("exec quoting", `{"argv":["printf","%s|","a b","it's","tab\there","new\nline","back\\slash","$HOME","*","ok@%+=:,./-"]}`, nil),
		exec("exec coerced items", `{"argv":["echo",5,true,null,1.5,["x","y"]]}`, nil),
		exec("exec invalid utf8", `{"argv":["printf","\\377\\376ok\\n"]}`, nil),
		exec("exec cwd", `{"argv":["pwd"],"cwd":"sub/.."}`, nil),
		exec("exec cwd relative", `{"argv":["true"],"cwd":""}`, nil),
		exec("exec timeout ignored", `{"argv":["true"],"timeout_ms":1}`, nil),
		exec("exec missing command", `{"argv":["definitely-not-a-command-xyz"]}`, nil),
		{Name: "session create", Method: "POST", Path: sb + "/session", Headers: bearer, Body: str(`{"id":"s1","env":{"A":"1"}}`)},
		{Name: "session create again", Method: "POST", Path: sb + "/session", Headers: bearer, Body: str(`{"id":"s1"}`)},
		{Name: "session create reserved", Method: "POST", Path: sb + "/session", Headers: bearer, Body: str(`{"id":"__DISABLE_SESSION__"}`)},
		{Name: "session create null", Method: "POST", Path: sb + "/session", Headers: bearer, Body: str(`null`)},
		{Name: "session create default id", Method: "POST", Path: sb + "/session", Headers: bearer},
		exec("exec in session", `{"argv":["sh","-c","printf 'one\\ntwo'"]}`, with("Session-Id", "s1")),
		exec("exec implicit session", `{"argv":["echo","hi"]}`, with("Session-Id", "implicit-1")),
		// after other rows: two default IDs made within one millisecond would be the same
		{Name: "session create not json", Method: "POST", Path: sb + "/session", Headers: bearer, Body: str(`hello`)},
		{Name: "session delete", Method: "DELETE", Path: sb + "/session/s1", Headers: bearer},
		{Name: "session delete unknown", Method: "DELETE", Path: sb + "/session/nope", Headers: bearer},
		{Name: "session delete implicit", Method: "DELETE", Path: sb + "/session/implicit-1", Headers: bearer},
		{Name: "pty no upgrade", Path: sb + "/pty", Headers: bearer},
		{Name: "pty bad cols", Path: sb + "/pty?cols=wide", Headers: with("Upgrade", "websocket")},
		{Name: "pty bad rows", Path: sb + "/pty?cols=80&rows=x1", Headers: with("Upgrade", "websocket")},
		{Name: "pty bad session header", Path: sb + "/pty", Headers: with("Upgrade", "websocket", "Session-Id", "../x")},
		{Name: "pty bad session query", Path: sb + "/pty?session=a..b", Headers: with("Upgrade", "websocket")},
		{Name: "file put", Method: "PUT", Path: sb + "/file/workspace/hello.txt", Headers: bearer, Body: str("hello file\n")},
		{Name: "file get", Path: sb + "/file/workspace/hello.txt", Headers: bearer},
		{Name: "file get missing", Path: sb + "/file/workspace/missing.txt", Headers: bearer},
		{Name: "file escape", Path: sb + "/file/etc/passwd", Headers: bearer},
		{Name: "file empty path", Path: sb + "/file/", Headers: bearer},
		{Name: "pool stats", Path: "/v1/pool/stats", Headers: bearer},
		{Name: "pool stats no auth", Path: "/v1/pool/stats"},
		{Name: "pool prime", Method: "POST", Path: "/v1/pool/prime", Headers: bearer},
		{Name: "delete sandbox", Method: "DELETE", Path: sb, Headers: bearer},
		{Name: "delete unknown sandbox", Method: "DELETE", Path: "/v1/sandbox/neverseen", Headers: bearer},
		{Name: "outside api", Path: "/nothing", Headers: bearer},
	}
	rows = append(rows, stableRouteRows(token)...)
	rows = append(rows, stableValidationRows(token)...)
	for i := range rows {
		if rows[i].Name == "exec cwd escape" {
			rows[i].Body = str(`{"argv":["true"],"cwd":"/etc"}`)
		}
	}
	return rows
}
