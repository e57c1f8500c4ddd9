package localbridge_test

import (
	"bufio"
	"bytes"
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

type resp struct {
	Status int
	Type   string
	Body   []byte
	Header http.Header
}

func (r resp) String() string { return fmt.Sprintf("%d %s %q", r.Status, r.Type, r.Body) }

// call performs one request. hdr holds extra headers; auth adds the bridge's bearer token.
func call(t testing.TB, b *bridgetest.Bridge, method, path string, body any, auth bool, hdr ...string) resp {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+b.Token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp{Status: res.StatusCode, Type: res.Header.Get("Content-Type"), Body: data, Header: res.Header}
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
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, code := getProc(t, b, sb, id)
		if code != 200 {
			t.Fatalf("get %s: status %d", id, code)
		}
		if st.State != "running" {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %s did not end", id)
	return procStatus{}
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
