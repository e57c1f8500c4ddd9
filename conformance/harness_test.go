package conformance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The harness alone must reproduce the protocol reference's "(verified)" facts; if a package
// update or a broken fake changed them, the differential test would compare against the wrong
// thing.
func TestHarnessReproducesVerifiedFacts(t *testing.T) {
	dir := needHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const pid = "6f1c2a9e-3d4b-4e8f-9a1b-2c3d4e5f6a7b"
	c1 := cursorFor(pid, 1)
	c2 := cursorFor(pid, 2)
	script := Script{
		Assigned: []string{"sb"},
		Processes: []ScriptedProcess{{
			Status: json.RawMessage(`{"id":"` + pid + `","pid":42,"command":["sh"],"cwd":"/workspace","state":"exited","startedAt":"2026-08-14T10:00:00.000Z","endedAt":"2026-08-14T10:00:01.000Z","exit":{"code":0,"timedOut":false}}`),
			Events: []json.RawMessage{
				json.RawMessage(`{"type":"stdout","cursor":"` + c1 + `","timestamp":"2026-08-14T10:00:00.010Z","data":"aGVsbG8K"}`),
				json.RawMessage(`{"type":"terminal","state":"exited","cursor":"` + c2 + `","timestamp":"2026-08-14T10:00:01.000Z","exit":{"code":0,"timedOut":false}}`),
			},
		}},
	}
	auth := map[string]string{"Authorization": "Bearer k"}
	reqs := []Request{
		{Name: "401", Path: "/v1/sandbox/sb/processes"},
		{Name: "bad id before auth", Path: "/v1/sandbox/Bad/processes"},
		{Name: "trailing slash", Path: "/v1/sandbox/sb/processes/", Headers: auth},
		{Name: "wrong method", Method: "PUT", Path: "/v1/sandbox/sb/processes", Headers: auth},
		{Name: "no assignment running", Path: "/v1/sandbox/zz/running", Headers: auth},
		{Name: "no assignment process", Path: "/v1/sandbox/zz/processes/x", Headers: auth},
		{Name: "token query on sandbox", Path: "/v1/sandbox/sb/running?token=k"},
		{Name: "token query on openapi", Path: "/v1/openapi.json?token=k"},
		{Name: "logs", Path: "/v1/sandbox/sb/processes/" + pid + "/logs", Headers: auth},
		{Name: "invalid cursor", Path: "/v1/sandbox/sb/processes/" + pid + "/logs?since=nope", Headers: auth},
		{Name: "health", Path: "/health"},
	}
	got, err := RunHarness(ctx, dir, Input{Token: "k", Script: script, Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status int
		ct     string
		body   string
	}{
		{401, "application/json", `{"error":"Unauthorized","code":"unauthorized"}`},
		{400, "application/json", `{"error":"Invalid sandbox ID format","code":"invalid_request"}`},
		{404, "text/plain; charset=UTF-8", "404 Not Found"},
		{404, "text/plain; charset=UTF-8", "404 Not Found"},
		{200, "application/json", `{"running":false}`},
		{404, "application/json", `{"error":"Process not found","code":"not_found"}`},
		{401, "application/json", `{"error":"Unauthorized","code":"unauthorized"}`},
		{200, "application/json", ""},
		{200, "text/event-stream", "data: {\"type\":\"stdout\",\"cursor\":\"" + c1 + "\",\"timestamp\":\"2026-08-14T10:00:00.010Z\",\"data\":\"aGVsbG8K\"}\n\n" +
			"data: {\"type\":\"terminal\",\"state\":\"exited\",\"cursor\":\"" + c2 + "\",\"timestamp\":\"2026-08-14T10:00:01.000Z\",\"exit\":{\"code\":0,\"timedOut\":false}}\n\n"},
		{500, "text/plain; charset=UTF-8", "Internal Server Error"},
		{200, "application/json", `{"ok":true}`},
	}
	for i, w := range want {
		g := got[i]
		if g.Status != w.status || g.ContentType != w.ct || (w.body != "" && g.Body != w.body) {
			t.Errorf("%s: got %d %q %q; want %d %q %q", reqs[i].Name, g.Status, g.ContentType, g.Body, w.status, w.ct, w.body)
		}
	}
	if got[8].CacheControl != "no-cache" {
		t.Errorf("SSE Cache-Control %q", got[8].CacheControl)
	}
	if !strings.Contains(got[7].Body, `"/v1/sandbox/{id}/processes"`) {
		t.Errorf("the OpenAPI document lacks the preview process routes")
	}
}

// NormalizeOrdered keeps key order (so a reordered body is a difference), replaces the variable
// parts as Normalize does, drops the local incarnation fields, and leaves non-JSON text alone.
func TestNormalizeOrdered(t *testing.T) {
	js := func(body string) Response {
		return NormalizeOrdered(Response{ContentType: "application/json", Body: body})
	}
	a := js(`{"success":true,"sessionId":"s1","timestamp":"2026-01-02T03:04:05.678Z"}`)
	b := js(`{"sessionId":"s1","success":true,"timestamp":"2026-01-02T03:04:05.678Z"}`)
	if Diff(a, b) == "" {
		t.Fatal("reordered keys compared equal")
	}
	if Diff(Normalize(a), Normalize(b)) != "" {
		t.Fatal("Normalize should ignore key order")
	}
	if want := `{"success":true,"sessionId":"s1","timestamp":"<time>"}`; a.Body != want {
		t.Fatalf("got %s, want %s", a.Body, want)
	}
	got := js(` {"id":"00000000-0000-4000-8000-000000000001","pid":42,"incarnation":3,"list":[{"b":null,"a":"x<y"}],"incarnationStarted":"t"} `).Body
	if want := `{"id":"<uuid>","pid":0,"list":[{"b":null,"a":"x<y"}]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	for _, text := range []string{`{"a":1}{"b":2}`, `{"a":`, `404 Not Found`} {
		if got := js(text).Body; got != text {
			t.Errorf("%q became %q", text, got)
		}
	}
	sse := NormalizeOrdered(Response{ContentType: "text/event-stream", Body: "event: exit\ndata: {\"exit_code\":0, \"z\":1}\n\n"})
	if sse.Body != "event: exit\ndata: {\"exit_code\":0,\"z\":1}\n\n" {
		t.Fatalf("sse: %q", sse.Body)
	}
}
