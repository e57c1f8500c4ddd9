package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"sandscope/localbridge/bridgetest"
)

// The proxy between a client and the real local bridge: faults must cost no byte when the client
// resumes from its last cursor.

func bridgeCall(t *testing.T, b *bridgetest.Bridge, base, method, path, body string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("%s %s → %d %s", method, path, res.StatusCode, data)
	}
	return data
}

// followOnce reads one logs stream through the proxy: the stdout bytes of complete events, the
// cursor of the last complete event, and whether the terminal event arrived.
func followOnce(t *testing.T, b *bridgetest.Bridge, p *Proxy, path, since string) (out []byte, cursor string, ended bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	u := p.URL() + path + "?follow=true"
	if since != "" {
		u += "&since=" + url.QueryEscape(since)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+b.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("logs → %d", res.StatusCode)
	}
	cursor = since
	br := bufio.NewReader(res.Body)
	var pending []byte
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return out, cursor, false // cut mid-stream (or between events)
		}
		line = strings.TrimSuffix(line, "\n")
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			pending = []byte(d)
			continue
		}
		if line != "" || pending == nil {
			continue
		}
		var ev struct {
			Type, Cursor, Data string
		}
		if err := json.Unmarshal(pending, &ev); err != nil {
			t.Fatalf("bad event %q", pending)
		}
		pending = nil
		switch ev.Type {
		case "stdout":
			raw, err := base64.StdEncoding.DecodeString(ev.Data)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, raw...)
		case "terminal":
			return out, ev.Cursor, true
		case "truncated":
			t.Fatal("unexpected truncation")
		}
		cursor = ev.Cursor
	}
}

func TestBridgeLogsSurviveRandomCuts(t *testing.T) {
	b := bridgetest.Start(t)
	p := New(b.URL)
	t.Cleanup(p.Close)
	var st struct{ ID string }
	body := bridgeCall(t, b, p.URL(), "POST", "/v1/sandbox/faultlogs/processes",
		`{"argv":["sh","-c","i=0; while [ $i -lt 400 ]; do i=$((i+1)); echo line-$i-of-the-output; [ $((i%10)) = 0 ] && sleep 0.005; done; true"]}`)
	if err := json.Unmarshal(body, &st); err != nil || st.ID == "" {
		t.Fatalf("create: %s", body)
	}
	path := "/v1/sandbox/faultlogs/processes/" + st.ID + "/logs"
	var want bytes.Buffer
	for i := 1; i <= 400; i++ {
		want.WriteString("line-" + strconv.Itoa(i) + "-of-the-output\n")
	}
	// Small chunks (a sleep every 10 lines) so every event fits under the largest cut.
	// Wait for the whole output to exist, reading directly (no faults yet).
	var direct []byte
	for {
		out, _, ended := followOnce(t, b, p, path, "")
		if ended {
			direct = out
			break
		}
	}
	if !bytes.Equal(direct, want.Bytes()) {
		t.Fatalf("direct read differs: %d bytes vs %d", len(direct), want.Len())
	}
	rule := p.Add(Rule{Path: "/logs", Fault: CutAfterRandom(rand.New(rand.NewPCG(7, 7)), 3000)})
	var got []byte
	cursor := ""
	for attempt := 0; ; attempt++ {
		if attempt > 2000 {
			t.Fatal("never reached the end through the cuts")
		}
		out, next, ended := followOnce(t, b, p, path, cursor)
		got = append(got, out...)
		cursor = next
		if ended {
			break
		}
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("through cuts: %d bytes, want %d (first difference matters)", len(got), want.Len())
	}
	if rule.Hits() < 2 {
		t.Fatalf("only %d cut requests", rule.Hits())
	}
}

func TestBridgeTerminalSurvivesDrops(t *testing.T) {
	b := bridgetest.Start(t)
	p := New(b.URL)
	t.Cleanup(p.Close)
	var snap struct{ ID string }
	body := bridgeCall(t, b, p.URL(), "POST", "/v1/sandbox/faultterm/terminals",
		`{"argv":["sh","-c","i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo term-$i; sleep 0.005; done"]}`)
	if err := json.Unmarshal(body, &snap); err != nil || snap.ID == "" {
		t.Fatalf("create: %s", body)
	}
	wsBase := "ws" + strings.TrimPrefix(p.URL(), "http") + "/v1/sandbox/faultterm/terminals/" + snap.ID + "/connect"
	// Reference: one clean connection to the end.
	ref, _, code := readTerminal(t, b, wsBase, "")
	if code != 1000 || !bytes.Contains(ref, []byte("term-60")) {
		t.Fatalf("clean read: close %d, %q", code, ref)
	}
	// Drops after a few messages each time, with every close code a client must survive.
	codes := []int{1006, 1011, 1012, 1013}
	var got []byte
	cursor := ""
	for i := 0; ; i++ {
		if i > 500 {
			t.Fatal("never reached the exit through the drops")
		}
		r := p.Add(Rule{Path: "/connect", Times: 1, Fault: WSDrop(3+i%4, codes[i%len(codes)], "dropped")})
		out, next, code := readTerminal(t, b, wsBase, cursor)
		r.Remove()
		got = append(got, out...)
		cursor = next
		if code == 1000 {
			break
		}
		if code != codes[i%len(codes)] {
			t.Fatalf("drop %d: close %d", i, code)
		}
	}
	if !bytes.Equal(got, ref) {
		t.Fatalf("through drops got %q\nwant %q", got, ref)
	}

	// A rewritten byteLength is visible to the client as a mismatch.
	p.Add(Rule{Path: "/connect", Times: 1, Fault: WSBadByteLength(1, 1)})
	c := dialBridgeWS(t, b, wsBase)
	_, ready, _ := c.ReadMessage()
	_, hdr, _ := c.ReadMessage()
	_, data, err := c.ReadMessage()
	var m struct{ ByteLength int }
	if err != nil || json.Unmarshal(hdr, &m) != nil || m.ByteLength != len(data)+1 {
		t.Fatalf("ready %s header %s data %d bytes (%v)", ready, hdr, len(data), err)
	}
}

func dialBridgeWS(t *testing.T, b *bridgetest.Bridge, u string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, resp, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + b.Token}})
	if err != nil {
		t.Fatalf("dial: %v %v", err, resp)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	return c
}

// readTerminal reads one connection to its end, keeping the cursor of the last chunk whose bytes
// arrived. It returns the close code (1006 for a drop without a close frame).
func readTerminal(t *testing.T, b *bridgetest.Bridge, base, cursor string) ([]byte, string, int) {
	t.Helper()
	u := base
	if cursor != "" {
		u += "?cursor=" + url.QueryEscape(cursor)
	}
	c := dialBridgeWS(t, b, u)
	var out []byte
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return out, cursor, ce.Code
			}
			t.Fatalf("read: %v", err)
		}
		var m struct {
			Type, Cursor string
			ByteLength   int
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("control %q: %v", data, err)
		}
		switch m.Type {
		case "chunk":
			_, bin, err := c.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					return out, cursor, ce.Code // header without its bytes: not consumed
				}
				t.Fatal(err)
			}
			if len(bin) != m.ByteLength {
				t.Fatalf("byteLength %d, got %d", m.ByteLength, len(bin))
			}
			out = append(out, bin...)
			cursor = m.Cursor
		case "exit":
			cursor = m.Cursor
		case "truncated":
			t.Fatal("unexpected truncation")
		}
	}
}
