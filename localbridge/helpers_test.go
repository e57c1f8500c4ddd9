package localbridge_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"sandscope/localbridge/bridgetest"
)

// hc is the test HTTP client; every call has a deadline.
var hc = &http.Client{Timeout: 60 * time.Second}

type resp = bridgetest.Response

// call performs one request. hdr holds extra headers; auth adds the bridge's bearer token.
func call(t testing.TB, b *bridgetest.Bridge, method, path string, body any, auth bool, hdr ...string) resp {
	t.Helper()
	return b.Call(t, method, path, body, auth, hdr...)
}

type procStatus struct {
	ID          string   `json:"id"`
	PID         int      `json:"pid"`
	Command     []string `json:"command"`
	Cwd         string   `json:"cwd"`
	State       string   `json:"state"`
	StartedAt   string   `json:"startedAt"`
	EndedAt     string   `json:"endedAt"`
	Incarnation int      `json:"incarnation"`
	Exit        *struct {
		Code     int  `json:"code"`
		Signal   int  `json:"signal"`
		TimedOut bool `json:"timedOut"`
	} `json:"exit"`
}

func launch(t testing.TB, b *bridgetest.Bridge, sb string, req map[string]any) procStatus {
	t.Helper()
	r := call(t, b, "POST", "/v1/sandbox/"+sb+"/processes", req, true)
	if r.Status != 200 {
		t.Fatalf("launch %v: %s", req, r)
	}
	var st procStatus
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Fatalf("launch: %v", err)
	}
	return st
}

func getProc(t testing.TB, b *bridgetest.Bridge, sb, id string) (procStatus, int) {
	t.Helper()
	r := call(t, b, "GET", "/v1/sandbox/"+sb+"/processes/"+id, nil, true)
	var st procStatus
	if r.Status == 200 {
		if err := json.Unmarshal(r.Body, &st); err != nil {
			t.Fatal(err)
		}
	}
	return st, r.Status
}

// waitExit polls until the process is no longer running.
func waitExit(t testing.TB, b *bridgetest.Bridge, sb, id string) procStatus {
	t.Helper()
	var st procStatus
	if err := json.Unmarshal(b.WaitExit(t, sb, id).Body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

type sseEvent struct {
	Type      string          `json:"type"`
	Cursor    string          `json:"cursor"`
	Timestamp string          `json:"timestamp"`
	Data      string          `json:"data"`
	State     string          `json:"state"`
	Exit      json.RawMessage `json:"exit"`
	raw       string
}

func (e sseEvent) bytes(t testing.TB) []byte {
	b, err := base64.StdEncoding.DecodeString(e.Data)
	if err != nil {
		t.Fatalf("event data: %v", err)
	}
	return b
}

// readSSE reads a whole logs response. It returns the events and the read error (nil = clean EOF).
func readSSE(t testing.TB, b *bridgetest.Bridge, path string) (int, []sseEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+b.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, []sseEvent{{raw: string(body)}}, nil
	}
	evs, err := parseSSE(res.Body, nil)
	return 200, evs, err
}

// parseSSE parses `data: {json}\n\n` frames strictly, calling each (when set) per event.
func parseSSE(r io.Reader, each func(sseEvent) bool) ([]sseEvent, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var out []sseEvent
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				return out, nil
			}
			return out, err
		}
		if !strings.HasPrefix(line, "data: ") {
			return out, fmt.Errorf("unexpected SSE line %q", line)
		}
		blank, err := br.ReadString('\n')
		if err != nil {
			return out, err
		}
		if blank != "\n" {
			return out, fmt.Errorf("missing blank line after event")
		}
		var ev sseEvent
		if err := json.Unmarshal([]byte(line[6:len(line)-1]), &ev); err != nil {
			return out, fmt.Errorf("event JSON: %w", err)
		}
		ev.raw = line[6 : len(line)-1]
		if each != nil {
			if !each(ev) {
				return out, nil
			}
		} else {
			out = append(out, ev)
		}
	}
}

func cursorFor(storeID string, seq int) string {
	inner := "v1." + base64.RawURLEncoding.EncodeToString([]byte(storeID)) + "." + fmt.Sprint(seq)
	return base64.RawURLEncoding.EncodeToString([]byte(inner))
}

func types(evs []sseEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Type)
	}
	return strings.Join(s, ",")
}
