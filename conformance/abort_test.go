package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"sandscope/localbridge/bridgetest"
)

// A followed log whose container goes away mid-stream: the published bridge errors the body (no
// SSE error event, no clean end); the local bridge must end the connection the same way when its
// sandbox is replaced.
func TestConformanceAbortedStream(t *testing.T) {
	dir := needHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := bridgetest.Start(t)
	hc := &http.Client{}
	auth := map[string]string{"Authorization": "Bearer " + b.Token}
	body := `{"argv":["sh","-c","echo started; exec sleep 600"]}`
	launched, err := Send(ctx, hc, b.URL, Request{Name: "launch", Method: "POST", Path: "/v1/sandbox/" + sandbox + "/processes", Headers: auth, Body: &body})
	if err != nil || launched.Status != 200 {
		t.Fatalf("launch: %v %+v", err, launched)
	}
	id := jsonField(t, launched.Body, "id")
	path := "/v1/sandbox/" + sandbox + "/processes/" + id + "/logs?follow=true"

	// Local: read the first event, replace the container, read to the end.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.Token)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	local := Response{Name: "aborted", Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), CacheControl: res.Header.Get("Cache-Control")}
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), "\n\n") {
		n, err := res.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended before its first event: %v (%q)", err, got.String())
		}
	}
	if err := b.Server.ReplaceSandbox(sandbox); err != nil {
		t.Fatalf("replace: %v", err)
	}
	rest, err := io.ReadAll(res.Body)
	got.Write(rest)
	local.BodyError = err != nil
	local.Body = got.String()

	events := sseEvents(t, local.Body)
	if len(events) != 1 {
		t.Fatalf("local stream had %d events: %q", len(events), local.Body)
	}
	var status map[string]any
	_ = json.Unmarshal([]byte(launched.Body), &status)
	delete(status, "incarnation")
	statusJSON, _ := json.Marshal(status)
	published, err := RunHarness(ctx, dir, Input{
		Token: b.Token,
		Script: Script{Assigned: []string{sandbox}, Processes: []ScriptedProcess{{
			Status: statusJSON, Events: events, StreamEnd: "abort",
		}}},
		Requests: []Request{{Name: "aborted", Path: path, Headers: auth}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !published[0].BodyError {
		t.Fatalf("the published bridge ended the stream cleanly: %+v", published[0])
	}
	if d := Diff(Normalize(published[0]), Normalize(local)); d != "" {
		t.Fatalf("aborted stream: %s", strings.ReplaceAll(d, b.Token, "<token>"))
	}
}
