package conformance

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"sandscope/localbridge/bridgetest"
)

// deliberate lists the rows where the local bridge differs on purpose, with the reason. Their
// answers are not compared.
var deliberate = map[string]string{
	"openapi json token query": "the local bridge serves its own OpenAPI document (the published one plus its extensions, marked as such, and its bridge ID in info)",
	"openapi json bearer":      "the local bridge serves its own OpenAPI document (the published one plus its extensions, marked as such, and its bridge ID in info)",
	"openapi html token query": "the local bridge's HTML page documents its own extensions",
	"openapi bare token query": "the local bridge's HTML page documents its own extensions",
	"GET /v1/sandbox list":     "listing sandboxes is a local bridge extension, kept on GET /v1/sandbox for older sandscope clients; the real bridge has no such route",
	"list extension path":      "listing sandboxes is a local bridge extension on its own path (announced in the OpenAPI document); the real bridge has no such route",
	"pool stats":               "the local bridge has no warm pool and says so (501 not_supported) instead of inventing statistics; authentication of /v1/pool/* is still compared",
	"pool prime":               "no warm pool locally (501 not_supported)",
	"pool shutdown prewarmed":  "no warm pool locally (501 not_supported)",
	"outside the API":          "outside /v1 and /health the deployer's own Worker answers (the bare bridge: 404 \"Not Found\", text/plain;charset=UTF-8); the local bridge has no such Worker and answers like the router (404 \"404 Not Found\")",
}

const sandbox = "conformance" // has a container: the setup launches processes in it
const nobody = "nobody"       // never touched: lookups answer "no assignment"

func TestConformance(t *testing.T) {
	dir := needHarness(t)
	ctx := context.Background()

	b := bridgetest.Start(t)
	hc := &http.Client{Timeout: 30 * time.Second}
	auth := map[string]string{"Authorization": "Bearer " + b.Token}
	must := func(r Request) Response {
		t.Helper()
		res, err := Send(ctx, hc, b.URL, r)
		if err != nil {
			t.Fatalf("setup %s: %v", r.Name, err)
		}
		if res.Status != 200 {
			t.Fatalf("setup %s: %d %s", r.Name, res.Status, res.Body)
		}
		return res
	}
	str := func(s string) *string { return &s }

	// Setup on the local bridge: an exited process with stdout, stderr and exit 3; a running one
	// without output; a running terminal.
	exited := must(Request{Name: "launch exited", Method: "POST", Path: "/v1/sandbox/" + sandbox + "/processes", Headers: auth,
		Body: str(`{"argv":["sh","-c","printf 'hello\\n'; printf 'oops\\n' >&2; printf 'bye'; exit 3"]}`)})
	exitedID := jsonField(t, exited.Body, "id")
	running := must(Request{Name: "launch running", Method: "POST", Path: "/v1/sandbox/" + sandbox + "/processes", Headers: auth,
		Body: str(`{"argv":["sleep","600"]}`)})
	runningID := jsonField(t, running.Body, "id")
	term := must(Request{Name: "create terminal", Method: "POST", Path: "/v1/sandbox/" + sandbox + "/terminals", Headers: auth,
		Body: str(`{"argv":["sh"]}`)})
	termID := jsonField(t, term.Body, "id")

	deadline := time.Now().Add(15 * time.Second)
	var exitedStatus Response
	for {
		exitedStatus = must(Request{Name: "status", Path: "/v1/sandbox/" + sandbox + "/processes/" + exitedID, Headers: auth})
		if jsonField(t, exitedStatus.Body, "state") == "exited" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s did not exit: %s", exitedID, exitedStatus.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	list := must(Request{Name: "list", Path: "/v1/sandbox/" + sandbox + "/processes", Headers: auth})
	exitedLog := must(Request{Name: "log", Path: "/v1/sandbox/" + sandbox + "/processes/" + exitedID + "/logs", Headers: auth})
	events := sseEvents(t, exitedLog.Body)
	if len(events) < 2 {
		t.Fatalf("exited process log has %d events: %q", len(events), exitedLog.Body)
	}
	cursors := []string{}
	for _, ev := range events {
		var m map[string]any
		_ = json.Unmarshal(ev, &m)
		if c, ok := m["cursor"].(string); ok {
			cursors = append(cursors, c)
		}
	}
	termStatus := must(Request{Name: "terminal", Path: "/v1/sandbox/" + sandbox + "/terminals/" + termID, Headers: auth})

	// The harness's container knows the same things, in the local bridge's list order.
	var listed []json.RawMessage
	if err := json.Unmarshal([]byte(list.Body), &listed); err != nil {
		t.Fatalf("list: %v", err)
	}
	script := Script{Assigned: []string{sandbox}}
	for _, raw := range listed {
		id := jsonField(t, string(raw), "id")
		switch id {
		case exitedID:
			script.Processes = append(script.Processes, ScriptedProcess{Status: stripIncarnation(t, exitedStatus.Body), Events: events})
		case runningID:
			script.Processes = append(script.Processes, ScriptedProcess{Status: stripIncarnation(t, string(raw)), Events: []json.RawMessage{}})
		default:
			t.Fatalf("unexpected process %s in the list", id)
		}
	}
	script.Terminals = []json.RawMessage{stripIncarnation(t, termStatus.Body)}
	script.Exec = json.RawMessage(`{"id":"11111111-2222-4333-8444-555555555555","pid":4242,"command":[],"cwd":"/workspace","state":"running","startedAt":"2026-08-14T10:00:00.000Z"}`)
	script.CreateTerminal = json.RawMessage(`{"id":"66666666-7777-4888-9999-000000000000","pid":77,"command":[],"cwd":"/workspace","status":"running"}`)

	vars := map[string]string{
		"{exited}":    exitedID,
		"{running}":   runningID,
		"{term}":      termID,
		"{c1}":        cursors[0],
		"{clast}":     cursors[len(cursors)-1],
		"{cforeign}":  cursorFor("6f1c2a9e-3d4b-4e8f-9a1b-2c3d4e5f6a7b", 1),
		"{cfuture}":   cursorFor(exitedID, len(cursors)+5),
		"{czero}":     cursorFor(exitedID, 0),
		"{cpadded}":   cursors[0] + "==",
		"{exitedPct}": fmt.Sprintf("%%%02X", exitedID[0]) + exitedID[1:],
		"{token}":     b.Token,
	}
	rows := table()
	for i := range rows {
		rows[i].Path = expand(rows[i].Path, vars)
		for k, v := range rows[i].Headers {
			rows[i].Headers[k] = expand(v, vars)
		}
	}

	published, err := RunHarness(ctx, dir, Input{Token: b.Token, Script: script, Requests: rows})
	if err != nil {
		t.Fatal(err)
	}
	type pair struct {
		Request   Request  `json:"request"`
		Published Response `json:"published"`
		Local     Response `json:"local"`
	}
	var dump []pair
	differences := 0
	statuses := map[int]int{}
	for i, row := range rows {
		local, err := Send(ctx, hc, b.URL, row)
		if err != nil {
			t.Errorf("%s: local bridge: %v", row.Name, err)
			continue
		}
		d := Diff(Normalize(published[i]), Normalize(local))
		dump = append(dump, pair{row, published[i], local})
		statuses[published[i].Status]++
		reason, isDeliberate := deliberate[row.Name]
		switch {
		case isDeliberate:
			if d == "" {
				t.Logf("%s: listed as a deliberate difference (%s) but the answers agree now; the entry can go", row.Name, reason)
			}
		case d != "":
			differences++
			t.Errorf("%s (%s %s): %s", row.Name, methodOf(row), redact(row.Path, b.Token), redact(d, b.Token))
		}
	}
	if path := os.Getenv("SANDSCOPE_CONFORMANCE_DUMP"); path != "" {
		data, err := json.MarshalIndent(dump, "", "  ")
		if err == nil {
			err = os.WriteFile(path, []byte(redact(string(data), b.Token)), 0o600)
		}
		if err != nil {
			t.Errorf("dump: %v", err)
		}
	}
	t.Logf("%d rows compared, %d unexpected differences, %d deliberate; published statuses %v",
		len(rows), differences, len(deliberate), statuses)
	// The table must exercise more than one kind of answer (a harness that answers everything
	// with one status would compare nothing).
	if len(statuses) < 6 {
		t.Errorf("the published bridge gave only statuses %v: the harness is not exercising the routes", statuses)
	}
}

func methodOf(r Request) string {
	if r.Method == "" {
		return "GET"
	}
	return r.Method
}

func redact(s, token string) string { return strings.ReplaceAll(s, token, "<token>") }

func expand(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

// cursorFor builds a process log cursor in the bridge's documented format.
func cursorFor(storeID string, seq int) string {
	inner := "v1." + base64.RawURLEncoding.EncodeToString([]byte(storeID)) + "." + fmt.Sprint(seq)
	return base64.RawURLEncoding.EncodeToString([]byte(inner))
}

func jsonField(t *testing.T, body, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON object: %q: %v", body, err)
	}
	s, _ := m[field].(string)
	return s
}

func stripIncarnation(t *testing.T, body string) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON object: %q: %v", body, err)
	}
	delete(m, "incarnation")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sseEvents(t *testing.T, body string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "data: "); ok {
			if !json.Valid([]byte(rest)) {
				t.Fatalf("SSE data is not JSON: %q", rest)
			}
			out = append(out, json.RawMessage(rest))
		} else if line != "" {
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// table is the differential table. Placeholders in paths and headers: {exited} {running} {term}
// {c1} {clast} {cforeign} {cfuture} {czero} {cpadded} {exitedPct} {token}.
func table() []Request {
	var rows []Request
	bearer := map[string]string{"Authorization": "Bearer {token}"}
	with := func(h map[string]string, extra ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			out[extra[i]] = extra[i+1]
		}
		return out
	}
	add := func(name, method, path string, headers map[string]string, body ...string) {
		r := Request{Name: name, Method: method, Path: path, Headers: headers}
		if len(body) > 0 {
			b := body[0]
			r.Body = &b
		}
		rows = append(rows, r)
	}
	sb := "/v1/sandbox/" + sandbox
	nb := "/v1/sandbox/" + nobody
	jsonCT := map[string]string{"Authorization": "Bearer {token}", "Content-Type": "application/json"}

	// Meta routes and authentication variants.
	add("health", "GET", "/health", nil)
	add("openapi no auth", "GET", "/v1/openapi.json", nil)
	add("openapi json token query", "GET", "/v1/openapi.json?token={token}", nil)
	add("openapi json bearer", "GET", "/v1/openapi.json", bearer)
	add("openapi lowercase bearer", "GET", "/v1/openapi.json", map[string]string{"Authorization": "bearer {token}"})
	add("openapi wrong token query", "GET", "/v1/openapi.json?token=wrong", nil)
	add("openapi html token query", "GET", "/v1/openapi.html?token={token}", nil)
	add("openapi bare token query", "GET", "/v1/openapi?token={token}", nil)
	add("create sandbox no auth", "POST", "/v1/sandbox", nil)
	add("pool stats no auth", "GET", "/v1/pool/stats", nil)
	add("pool stats lowercase bearer", "GET", "/v1/pool/stats", map[string]string{"Authorization": "bearer {token}"})
	add("pool stats token query", "GET", "/v1/pool/stats?token={token}", nil)
	add("pool stats", "GET", "/v1/pool/stats", bearer)
	add("pool prime", "POST", "/v1/pool/prime", bearer)
	add("pool shutdown prewarmed", "POST", "/v1/pool/shutdown-prewarmed", bearer)
	add("pool prime wrong method", "GET", "/v1/pool/prime", bearer)
	add("pool unknown", "GET", "/v1/pool/nope", bearer)
	add("v1 root", "GET", "/v1", bearer)
	add("v1 slash", "GET", "/v1/", bearer)
	add("outside the API", "GET", "/nope", nil)
	add("sandbox no auth", "GET", sb+"/processes", nil)
	add("sandbox wrong token", "GET", sb+"/processes", map[string]string{"Authorization": "Bearer wrong"})
	add("sandbox lowercase bearer", "GET", sb+"/running", map[string]string{"Authorization": "bearer {token}"})
	add("sandbox uppercase bearer", "GET", sb+"/running", map[string]string{"Authorization": "BEARER {token}"})
	add("sandbox bearer two spaces", "GET", sb+"/running", map[string]string{"Authorization": "Bearer  {token}"})
	add("sandbox basic scheme", "GET", sb+"/running", map[string]string{"Authorization": "Basic {token}"})
	add("sandbox token query", "GET", sb+"/running?token={token}", nil)
	add("sandbox bare token header", "GET", sb+"/running", map[string]string{"Authorization": "{token}"})

	// Sandbox ID format (checked before auth).
	for _, id := range []string{"BAD", "has-dash", "under_score", "digit0", "digit1", "digit8", "digit9", strings.Repeat("a", 129), "%61bc"} {
		add("bad id "+id, "GET", "/v1/sandbox/"+id+"/processes", nil)
	}
	add("longest id", "GET", "/v1/sandbox/"+strings.Repeat("a", 128)+"/running", bearer)
	add("empty id", "GET", "/v1/sandbox//processes", bearer)

	// Lookups without an assignment.
	add("nobody running", "GET", nb+"/running", bearer)
	add("nobody processes", "GET", nb+"/processes", bearer)
	add("nobody terminals", "GET", nb+"/terminals", bearer)
	add("nobody process", "GET", nb+"/processes/abc", bearer)
	add("nobody logs", "GET", nb+"/processes/abc/logs", bearer)
	add("nobody kill", "POST", nb+"/processes/abc/kill", bearer)
	add("nobody terminal", "GET", nb+"/terminals/abc", bearer)
	add("nobody terminal bad id", "GET", nb+"/terminals/a..b", bearer)
	add("nobody connect", "GET", nb+"/terminals/abc/connect", with(bearer, "Upgrade", "websocket"))
	add("nobody interrupt", "POST", nb+"/terminals/abc/interrupt", bearer)
	add("nobody terminate", "POST", nb+"/terminals/abc/terminate", bearer)
	add("delete unknown sandbox", "DELETE", "/v1/sandbox/neverseen", bearer)
	add("post on sandbox", "POST", sb, bearer)
	add("get on sandbox", "GET", sb, bearer)

	// The scripted sandbox: lists and lookups.
	add("running", "GET", sb+"/running", bearer)
	add("processes", "GET", sb+"/processes", bearer)
	add("process exited", "GET", sb+"/processes/{exited}", bearer)
	add("process running", "GET", sb+"/processes/{running}", bearer)
	add("process percent-encoded id", "GET", sb+"/processes/{exitedPct}", bearer)
	add("process unknown", "GET", sb+"/processes/nope", bearer)
	add("terminals", "GET", sb+"/terminals", bearer)
	add("terminal", "GET", sb+"/terminals/{term}", bearer)
	add("terminal unknown", "GET", sb+"/terminals/nope", bearer)
	add("terminal bad id dots", "GET", sb+"/terminals/a..b", bearer)
	add("terminal bad id space", "GET", sb+"/terminals/a%20b", bearer)
	add("terminal id too long", "GET", sb+"/terminals/"+strings.Repeat("t", 129), bearer)

	// Unknown routes, wrong methods, trailing slashes.
	add("processes trailing slash", "GET", sb+"/processes/", bearer)
	add("process trailing slash", "GET", sb+"/processes/{exited}/", bearer)
	add("logs trailing slash", "GET", sb+"/processes/{exited}/logs/", bearer)
	add("put processes", "PUT", sb+"/processes", bearer)
	add("delete process", "DELETE", sb+"/processes/{exited}", bearer)
	add("get kill", "GET", sb+"/processes/{exited}/kill", bearer)
	add("process interrupt alias", "POST", sb+"/processes/{exited}/interrupt", bearer)
	add("process terminate alias", "POST", sb+"/processes/{exited}/terminate", bearer)
	add("stable exec route", "POST", sb+"/exec", jsonCT, `{"argv":["true"]}`)
	add("stable pty route", "GET", sb+"/pty", bearer)
	add("stable session route", "POST", sb+"/session", bearer)
	add("terminal resize route", "POST", sb+"/terminals/{term}/resize", bearer)
	add("get terminal interrupt", "GET", sb+"/terminals/{term}/interrupt", bearer)
	add("unknown sandbox route", "GET", sb+"/whatever", bearer)
	add("GET /v1/sandbox list", "GET", "/v1/sandbox", bearer)
	add("list extension path", "GET", "/v1/x-sandscope/sandboxes", bearer)
	add("openapi POST no auth", "POST", "/v1/openapi.json", nil)
	add("POST /v1/sandbox/ trailing no auth", "POST", "/v1/sandbox/", nil)
	add("GET /v1/sandbox/ trailing", "GET", "/v1/sandbox/", bearer)

	// Process create validation, in the bridge's order.
	pc := sb + "/processes"
	for _, c := range []struct{ name, body string }{
		{"not json", `argv=ls`},
		{"empty body", ``},
		{"null body", `null`},
		{"string body", `"ls"`},
		{"array body", `["ls"]`},
		{"no argv", `{}`},
		{"argv string", `{"argv":"ls"}`},
		{"argv empty", `{"argv":[]}`},
		{"argv number item", `{"argv":[1]}`},
		{"argv later number", `{"argv":["ls",2]}`},
		{"argv empty executable", `{"argv":[""]}`},
		{"argv empty executable and number", `{"argv":["",1]}`},
		{"timeout zero", `{"argv":["true"],"timeout":0}`},
		{"timeout negative", `{"argv":["true"],"timeout":-5}`},
		{"timeout null", `{"argv":["true"],"timeout":null}`},
		{"timeout string", `{"argv":["true"],"timeout":"1000"}`},
		{"timeout huge exponent", `{"argv":["true"],"timeout":1e999}`},
		{"cwd outside", `{"argv":["true"],"cwd":"/etc"}`},
		{"cwd relative escape", `{"argv":["true"],"cwd":"../etc"}`},
		{"cwd sibling", `{"argv":["true"],"cwd":"/workspace2"}`},
		{"cwd escape after timeout error", `{"argv":["true"],"cwd":"/etc","timeout":0}`},
		{"env string", `{"argv":["true"],"env":"A=1"}`},
		{"env number value", `{"argv":["true"],"env":{"A":1}}`},
		{"env array", `{"argv":["true"],"env":["A=1"]}`},
		{"env null", `{"argv":["true"],"env":null}`},
		{"env error after cwd error", `{"argv":["true"],"cwd":"/etc","env":1}`},
	} {
		add("create process: "+c.name, "POST", pc, jsonCT, c.body)
	}
	add("create process: valid", "POST", pc, jsonCT, `{"argv":["sleep","30"]}`)
	add("create process: cwd number ignored", "POST", pc, jsonCT, `{"argv":["sleep","30"],"cwd":5}`)
	add("create process: unknown fields ignored", "POST", pc, jsonCT, `{"argv":["sleep","30"],"bogus":{"x":1}}`)
	add("create process: no content type", "POST", pc, bearer, `{"argv":["sleep","30"]}`)

	// Kill validation.
	kill := sb + "/processes/{exited}/kill"
	add("kill: no content type ignores body", "POST", kill, bearer, `garbage`)
	add("kill: no body", "POST", kill, bearer)
	add("kill: not json", "POST", kill, jsonCT, `garbage`)
	add("kill: empty json body", "POST", kill, jsonCT, ``)
	add("kill: array", "POST", kill, jsonCT, `[9]`)
	add("kill: null", "POST", kill, jsonCT, `null`)
	add("kill: no signal", "POST", kill, jsonCT, `{}`)
	add("kill: signal 0", "POST", kill, jsonCT, `{"signal":0}`)
	add("kill: signal 65", "POST", kill, jsonCT, `{"signal":65}`)
	add("kill: signal fraction", "POST", kill, jsonCT, `{"signal":1.5}`)
	add("kill: signal string", "POST", kill, jsonCT, `{"signal":"9"}`)
	add("kill: signal null", "POST", kill, jsonCT, `{"signal":null}`)
	add("kill: signal 64 on exited", "POST", kill, jsonCT, `{"signal":64}`)
	add("kill: text content type", "POST", kill, with(bearer, "Content-Type", "text/plain"), `{"signal":9}`)
	add("kill: unknown process", "POST", sb+"/processes/nope/kill", jsonCT, `{"signal":9}`)

	// Terminal create validation.
	tc := sb + "/terminals"
	for _, c := range []struct{ name, body string }{
		{"not json", `sh`},
		{"empty body", ``},
		{"null", `null`},
		{"array", `["sh"]`},
		{"string", `"sh"`},
		{"no argv", `{}`},
		{"argv empty", `{"argv":[]}`},
		{"argv string", `{"argv":"sh"}`},
		{"argv number", `{"argv":[1]}`},
		{"cwd number", `{"argv":["sh"],"cwd":1}`},
		{"env string", `{"argv":["sh"],"env":"A=1"}`},
		{"env array", `{"argv":["sh"],"env":[]}`},
		{"env null", `{"argv":["sh"],"env":null}`},
		{"env number value", `{"argv":["sh"],"env":{"A":1}}`},
		{"cols zero", `{"argv":["sh"],"cols":0}`},
		{"cols negative", `{"argv":["sh"],"cols":-1}`},
		{"cols fraction", `{"argv":["sh"],"cols":1.5}`},
		{"cols string", `{"argv":["sh"],"cols":"80"}`},
		{"cols null", `{"argv":["sh"],"cols":null}`},
		{"rows zero", `{"argv":["sh"],"rows":0}`},
		{"rows string", `{"argv":["sh"],"rows":"24"}`},
		{"cols before rows", `{"argv":["sh"],"cols":0,"rows":0}`},
		{"env before cols", `{"argv":["sh"],"env":1,"cols":0}`},
	} {
		add("create terminal: "+c.name, "POST", tc, jsonCT, c.body)
	}
	add("create terminal: valid", "POST", tc, jsonCT, `{"argv":["sh"],"cols":100,"rows":30}`)

	// Terminal routes.
	add("connect without upgrade", "GET", sb+"/terminals/{term}/connect", bearer)
	add("connect upgrade bad id", "GET", sb+"/terminals/a..b/connect", with(bearer, "Upgrade", "websocket"))
	add("connect upgrade cols zero", "GET", sb+"/terminals/{term}/connect?cols=0", with(bearer, "Upgrade", "websocket"))
	add("connect upgrade rows text", "GET", sb+"/terminals/{term}/connect?rows=abc", with(bearer, "Upgrade", "websocket"))
	add("connect upgrade unknown", "GET", sb+"/terminals/nope/connect", with(bearer, "Upgrade", "websocket"))
	add("interrupt bad id", "POST", sb+"/terminals/a..b/interrupt", bearer)
	add("interrupt unknown", "POST", sb+"/terminals/nope/interrupt", bearer)
	add("terminate bad id", "POST", sb+"/terminals/a..b/terminate", bearer)
	add("terminate unknown", "POST", sb+"/terminals/nope/terminate", bearer)

	// Files: validation only.
	add("file empty path", "GET", sb+"/file/", bearer)
	add("file outside workspace", "GET", sb+"/file/etc/passwd", bearer)
	add("put file outside workspace", "PUT", sb+"/file/etc/passwd", bearer, "x")

	// Logs: replay/follow parsing, cursors, SSE framing of the scripted log.
	logs := sb + "/processes/{exited}/logs"
	for _, q := range []string{
		"", "?replay=true", "?replay=1", "?replay=false", "?replay=0", "?replay=yes", "?replay=TRUE", "?replay=",
		"?follow=true", "?follow=1", "?follow=false", "?replay=false&follow=true", "?replay=false&follow=false",
		"?since={c1}", "?since={clast}", "?since={c1}&replay=false", "?since={c1}&follow=1",
		"?since=", "?since=garbage", "?since={cforeign}", "?since={cfuture}", "?since={czero}", "?since={cpadded}",
		"?since=v1.abc.1", "?since={c1}&since={clast}",
	} {
		add("logs exited"+q, "GET", logs+q, bearer)
	}
	add("logs running snapshot", "GET", sb+"/processes/{running}/logs", bearer)
	add("logs running no replay", "GET", sb+"/processes/{running}/logs?replay=false", bearer)
	add("logs running bad cursor", "GET", sb+"/processes/{running}/logs?since={c1}", bearer)
	add("logs unknown process", "GET", sb+"/processes/nope/logs", bearer)
	add("logs no auth", "GET", logs, nil)

	// A failed validation still allocates a container: afterwards the sandbox runs.
	add("allocate by failed create", "POST", "/v1/sandbox/fresh/processes", jsonCT, `{}`)
	add("running after failed create", "GET", "/v1/sandbox/fresh/running", bearer)
	add("processes after failed create", "GET", "/v1/sandbox/fresh/processes", bearer)

	// Delete: lookup only; afterwards the ID has no container.
	add("delete fresh", "DELETE", "/v1/sandbox/fresh", bearer)
	add("running after delete", "GET", "/v1/sandbox/fresh/running", bearer)
	return rows
}
