package bridgetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// client is the HTTP client of Call; every call has a deadline.
var client = &http.Client{Timeout: 60 * time.Second}

// Response is one answer of the bridge, read whole.
type Response struct {
	Status int
	Type   string // Content-Type
	Body   []byte
	Header http.Header
}

func (r Response) String() string { return fmt.Sprintf("%d %s %q", r.Status, r.Type, r.Body) }

// Call performs one request and reads the answer whole. body is nil, a string, a []byte or a
// value sent as JSON; hdr holds extra headers as name, value pairs (Host sets the request's host);
// auth adds the bridge's bearer token.
func (b *Bridge) Call(t testing.TB, method, path string, body any, auth bool, hdr ...string) Response {
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
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return Response{Status: res.StatusCode, Type: res.Header.Get("Content-Type"), Body: data, Header: res.Header}
}

// WaitExit polls a process until it is no longer running and returns its last status answer.
func (b *Bridge) WaitExit(t testing.TB, sandbox, id string) Response {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r := b.Call(t, "GET", "/v1/sandbox/"+sandbox+"/processes/"+id, nil, true)
		if r.Status != 200 {
			t.Fatalf("get %s: status %d", id, r.Status)
		}
		var st struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal(r.Body, &st); err != nil {
			t.Fatal(err)
		}
		if st.State != "running" {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %s did not end", id)
	return Response{}
}
