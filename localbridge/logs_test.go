package localbridge_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// TestLogQueryMatrix: replay/follow parsing and semantics, and every cursor rule.
func TestLogQueryMatrix(t *testing.T) {
	b := bridgetest.Start(t)
	st := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "echo one; sleep 0.05; echo two >&2"}})
	waitExit(t, b, sb, st.ID)
	other := launch(t, b, sb, map[string]any{"argv": []string{"echo", "x"}})
	waitExit(t, b, sb, other.ID)
	base := "/v1/sandbox/" + sb + "/processes/" + st.ID + "/logs"

	_, all, err := readSSE(t, b, base)
	if err != nil || types(all) != "stdout,stderr,terminal" {
		t.Fatalf("default: %s %v", types(all), err)
	}
	for i, e := range all {
		if e.Cursor != cursorFor(st.ID, i+1) {
			t.Fatalf("event %d cursor %s, want %s", i, e.Cursor, cursorFor(st.ID, i+1))
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", e.Timestamp); err != nil {
			t.Fatalf("timestamp %q", e.Timestamp)
		}
	}
	cases := []struct {
		query string
		want  string // event types, or "500"
	}{
		{"", "stdout,stderr,terminal"},
		{"?replay=true&follow=false", "stdout,stderr,terminal"},
		{"?replay=1&follow=1", "stdout,stderr,terminal"},
		{"?follow=true", "stdout,stderr,terminal"}, // finished: follow behaves as false
		{"?replay=false", ""},
		{"?replay=yes", ""}, // anything but "true"/"1" is false
		{"?replay=TRUE", ""},
		{"?replay=false&follow=true", ""}, // finished: nothing live will come
		{"?since=" + all[0].Cursor, "stderr,terminal"},
		{"?since=" + all[1].Cursor + "&follow=true", "terminal"},
		{"?since=" + all[2].Cursor, ""},
		{"?since=" + all[0].Cursor + "&replay=false", ""},
		{"?since=", "500"},
		{"?since=not*valid", "500"},
		{"?since=" + all[0].Cursor + "A", "500"},
		{"?since=" + cursorFor(other.ID, 1), "500"}, // another store
		{"?since=" + cursorFor(st.ID, 4), "500"},    // from the future
		{"?since=" + cursorFor(st.ID, 0), "500"},
		{"?since=" + strings.TrimRight(cursorFor(st.ID, 1), "=") + "==", "500"},
		{"?since=bad&replay=false&follow=false", "500"}, // validated even when nothing is read
	}
	for _, c := range cases {
		code, evs, err := readSSE(t, b, base+c.query)
		if c.want == "500" {
			if code != 500 || evs[0].raw != "Internal Server Error" {
				t.Errorf("%s: got %d %q, want text 500", c.query, code, evs[0].raw)
			}
			continue
		}
		if code != 200 || err != nil || types(evs) != c.want {
			t.Errorf("%s: got %d %q (%v), want %q", c.query, code, types(evs), err, c.want)
		}
	}

	// Live: replay=false&follow=true sees only what comes after it connected.
	live := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "echo before; sleep 2; echo after"}})
	waitOutput(t, b, live.ID)
	_, evs, err := readSSE(t, b, "/v1/sandbox/"+sb+"/processes/"+live.ID+"/logs?replay=false&follow=true")
	if err != nil || types(evs) != "stdout,terminal" || string(evs[0].bytes(t)) != "after\n" {
		t.Fatalf("live: %s %v", types(evs), err)
	}
	// A non-follow snapshot of a running process ends cleanly without a terminal event.
	run := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "echo hi; sleep 30"}})
	waitOutput(t, b, run.ID)
	_, evs, err = readSSE(t, b, "/v1/sandbox/"+sb+"/processes/"+run.ID+"/logs")
	if err != nil || types(evs) != "stdout" {
		t.Fatalf("snapshot of running: %s %v", types(evs), err)
	}
}

// TestLogTruncation: passing the 1 MiB retention shows `truncated` (no cursor) at open, and an
// expired cursor is not an error.
func TestLogTruncation(t *testing.T) {
	b := bridgetest.Start(t)
	st := launch(t, b, sb, map[string]any{"argv": []string{"head", "-c", "3000000", "/dev/zero"}})
	waitExit(t, b, sb, st.ID)
	base := "/v1/sandbox/" + sb + "/processes/" + st.ID + "/logs"
	_, evs, err := readSSE(t, b, base)
	if err != nil || len(evs) < 3 || evs[0].Type != "truncated" || evs[len(evs)-1].Type != "terminal" {
		t.Fatalf("events %d %v: first %+v", len(evs), err, evs[0])
	}
	if strings.Contains(evs[0].raw, "cursor") || !strings.HasPrefix(evs[0].raw, `{"type":"truncated","timestamp":"`) {
		t.Fatalf("truncated event %s", evs[0].raw)
	}
	total := 0
	for _, e := range evs[1 : len(evs)-1] {
		total += len(e.bytes(t))
	}
	if total > 1<<20 || total < 1<<19 {
		t.Fatalf("retained %d bytes", total)
	}
	_, evs2, err := readSSE(t, b, base+"?since="+cursorFor(st.ID, 1))
	if err != nil || evs2[0].Type != "truncated" || evs2[1].Cursor != evs[1].Cursor {
		t.Fatalf("expired cursor: %v %s", err, types(evs2))
	}
}

// TestLogByteExactResume reads a fast 50 MB process's output (~67 MB of base64) over SSE while it
// is written, cutting the connection at random points and resuming with since=.
//
// With retention above the output size the reader cannot be overtaken, so the bytes must equal
// what the process wrote (tee'd to a workspace file) exactly once; any `truncated` fails the test
// with a clear message. With the real 1 MiB retention a writer this fast can overtake the reader
// on a busy machine; then every gap must be declared by a `truncated` event and every delivered
// byte must sit at its true offset (no loss between markers, no duplicate), and without any
// truncation the whole output must match exactly.
func TestLogByteExactResume(t *testing.T) {
	if testing.Short() {
		t.Skip("moves ~134 MB")
	}
	cmd := []string{"sh", "-c", "head -c 50000000 /dev/urandom | base64 | tee out.b64"}
	t.Run("retention above output", func(t *testing.T) {
		b := bridgetest.Start(t, bridgetest.WithProcessLogLimits(256<<20, 1<<20))
		st := launch(t, b, sb, map[string]any{"argv": cmd})
		segs, truncated, conns := followWithCuts(t, b, st.ID)
		file := readWorkspaceFile(t, b, "out.b64")
		if truncated > 0 {
			t.Fatalf("the reader was overtaken: %d truncated event(s); byte-exact delivery could not be checked", truncated)
		}
		h := sha256.New()
		n := 0
		for _, s := range segs {
			h.Write(s)
			n += len(s)
		}
		want := sha256.Sum256(file)
		if n != len(file) || hex.EncodeToString(h.Sum(nil)) != hex.EncodeToString(want[:]) {
			t.Fatalf("got %d bytes (sha %x), process wrote %d (sha %x)", n, h.Sum(nil), len(file), want)
		}
		t.Logf("%d bytes over %d connections, byte-exact", n, conns)
	})
	t.Run("real 1 MiB retention", func(t *testing.T) {
		b := bridgetest.Start(t)
		st := launch(t, b, sb, map[string]any{"argv": cmd})
		segs, truncated, conns := followWithCuts(t, b, st.ID)
		file := readWorkspaceFile(t, b, "out.b64")
		if len(segs) != truncated+1 {
			t.Fatalf("%d segments for %d truncated events", len(segs), truncated)
		}
		off, got := 0, 0
		for i, s := range segs {
			if len(s) == 0 {
				continue
			}
			at := off
			if i > 0 { // after a declared gap: find where the retained bytes resume
				probe := s[:min(len(s), 256)]
				k := bytes.Index(file[off:], probe)
				if k < 0 {
					t.Fatalf("segment %d (%d bytes) is not part of the output after offset %d", i, len(s), off)
				}
				at = off + k
			}
			if at+len(s) > len(file) || !bytes.Equal(file[at:at+len(s)], s) {
				t.Fatalf("segment %d (%d bytes at offset %d) differs from the output: bytes lost or duplicated without a truncated event", i, len(s), at)
			}
			off = at + len(s)
			got += len(s)
		}
		if off != len(file) {
			t.Fatalf("stream ended at offset %d of %d", off, len(file))
		}
		if truncated == 0 && got != len(file) {
			t.Fatalf("no truncation but %d of %d bytes", got, len(file))
		}
		t.Logf("%d of %d bytes over %d connections; %d declared gap(s) where the writer overtook the reader", got, len(file), conns, truncated)
	})
}

func readWorkspaceFile(t *testing.T, b *bridgetest.Bridge, name string) []byte {
	t.Helper()
	file, err := os.ReadFile(filepath.Join(b.Root, sb, "workspace", name))
	if err != nil {
		t.Fatal(err)
	}
	return file
}

// followWithCuts follows a process log to its terminal event, dropping the connection after a
// random number of events and resuming with since=. It returns the data split at truncated
// markers, the number of markers, and the number of connections.
func followWithCuts(t *testing.T, b *bridgetest.Bridge, id string) (segs [][]byte, truncated, conns int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	base := b.URL + "/v1/sandbox/" + sb + "/processes/" + id + "/logs?follow=true"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cur := []byte{}
	since := ""
	done := false
	for !done {
		url := base
		if since != "" {
			url += "&since=" + since
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+b.Token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if res.StatusCode != 200 {
			t.Fatalf("logs: %d", res.StatusCode)
		}
		budget := rng.IntN(60) + 1 // events before this connection is cut
		perr := scanSSE(res.Body, func(typ, cursor string, data []byte) bool {
			switch typ {
			case "truncated":
				truncated++
				segs = append(segs, cur)
				cur = []byte{}
			case "stdout":
				cur = append(cur, data...)
				since = cursor
			case "terminal":
				done = true
				return false
			}
			budget--
			return budget > 0
		})
		res.Body.Close()
		if perr != nil {
			t.Fatalf("stream: %v", perr)
		}
		conns++
	}
	return append(segs, cur), truncated, conns
}

// nextSSEFrame reads one event's line (with its LF, appended to line) and the blank line after it.
// It returns io.EOF at a clean end between events.
func nextSSEFrame(br *bufio.Reader, line []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(line) == 0 {
				return nil, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	if blank, err := br.ReadByte(); err != nil || blank != '\n' {
		return nil, errors.New("missing blank line after event")
	}
	return line, nil
}

// scanSSE is a fast strict reader for the bridge's SSE framing: stdout/stderr events in the exact
// shape the bridge writes are decoded without a JSON pass; anything else goes through
// encoding/json.
func scanSSE(r io.Reader, each func(typ, cursor string, data []byte) bool) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var line []byte
	for {
		var err error
		if line, err = nextSSEFrame(br, line[:0]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if !bytes.HasPrefix(line, []byte("data: {")) || !bytes.HasSuffix(line, []byte("}\n")) {
			return fmt.Errorf("unexpected SSE line %.80q", line)
		}
		body := line[6 : len(line)-1]
		typ, cursor, data, ok := fastEvent(body)
		if !ok {
			var ev sseEvent
			if err := jsonUnmarshal(body, &ev); err != nil {
				return fmt.Errorf("event JSON: %w", err)
			}
			typ, cursor = ev.Type, ev.Cursor
			if ev.Data != "" {
				d, err := base64.StdEncoding.DecodeString(ev.Data)
				if err != nil {
					return err
				}
				data = d
			}
		}
		if !each(typ, cursor, data) {
			return nil
		}
	}
}

func fastEvent(b []byte) (typ, cursor string, data []byte, ok bool) {
	for _, k := range []string{"stdout", "stderr"} {
		p := `{"type":"` + k + `","cursor":"`
		if !bytes.HasPrefix(b, []byte(p)) {
			continue
		}
		rest := b[len(p):]
		i := bytes.IndexByte(rest, '"')
		if i < 0 {
			return
		}
		cursor = string(rest[:i])
		rest = rest[i:]
		j := bytes.Index(rest, []byte(`","data":"`))
		if j < 0 || !bytes.HasSuffix(rest, []byte(`"}`)) {
			return
		}
		enc := rest[j+len(`","data":"`) : len(rest)-2]
		data = make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
		n, err := base64.StdEncoding.Decode(data, enc)
		if err != nil {
			return
		}
		return k, cursor, data[:n], true
	}
	return
}

// TestStopReplace: stop answers like "no assignment"; replace makes a new incarnation, old IDs
// 404, open log streams are aborted (no clean end).
func TestStopReplace(t *testing.T) {
	b := bridgetest.Start(t)
	p1 := launch(t, b, sb, map[string]any{"argv": []string{"sh", "-c", "echo hi; sleep 30"}})
	if p1.Incarnation != 1 {
		t.Fatalf("incarnation %d", p1.Incarnation)
	}
	if r := call(t, b, "GET", "/v1/sandbox/"+sb+"/running", nil, true); !runningBody(1).Match(r.Body) {
		t.Fatalf("running: %s", r)
	}
	// An open follow stream is aborted by the stop.
	req, _ := http.NewRequest("GET", b.URL+"/v1/sandbox/"+sb+"/processes/"+p1.ID+"/logs?follow=true", nil)
	req.Header.Set("Authorization", "Bearer "+b.Token)
	res, err := hc.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("follow: %v", err)
	}
	defer res.Body.Close()
	first := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		n := 0
		err := scanSSE(res.Body, func(string, string, []byte) bool {
			if n++; n == 1 {
				close(first)
			}
			return true
		})
		if err == nil {
			err = fmt.Errorf("stream ended cleanly after %d events", n)
		}
		errc <- err
	}()
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("no output")
	}
	if err := b.Server.StopSandbox(sb); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("stream after stop: %v", err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/running", `{"running":false}`},
		{"GET", "/processes", `[]`},
		{"GET", "/processes/" + p1.ID, `{"error":"Process not found","code":"not_found"}`},
		{"GET", "/processes/" + p1.ID + "/logs", `{"error":"Process not found","code":"not_found"}`},
		{"POST", "/processes/" + p1.ID + "/kill", `{"error":"Process not found","code":"not_found"}`},
		{"GET", "/terminals", `[]`},
	} {
		if r := call(t, b, c.method, "/v1/sandbox/"+sb+c.path, nil, true); string(r.Body) != c.body {
			t.Errorf("after stop %s %s: %s", c.method, c.path, r)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall_alive(p1.PID) {
		if time.Now().After(deadline) {
			t.Fatal("stopped sandbox's process still alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The next allocating call starts incarnation 2.
	p2 := launch(t, b, sb, map[string]any{"argv": []string{"sleep", "30"}})
	if p2.Incarnation != 2 {
		t.Fatalf("incarnation after stop %d", p2.Incarnation)
	}
	// Replace over HTTP.
	r := call(t, b, "POST", "/v1/sandbox/"+sb+"/replace", nil, true)
	if r.Status != 200 || !runningBody(3).Match(r.Body) {
		t.Fatalf("replace: %s", r)
	}
	if _, code := getProc(t, b, sb, p2.ID); code != 404 {
		t.Fatalf("old process after replace: %d", code)
	}
	var list []map[string]any
	r = call(t, b, "GET", localbridge.ListPath, nil, true)
	if err := jsonUnmarshal(r.Body, &list); err != nil || len(list) != 1 || list[0]["incarnation"] != float64(3) || list[0]["running"] != true {
		t.Fatalf("list: %s", r)
	}
	if r := call(t, b, "POST", "/v1/sandbox/"+sb+"/stop", nil, true); r.Status != 204 {
		t.Fatalf("stop: %s", r)
	}
	if r := call(t, b, "GET", "/v1/sandbox/"+sb+"/running", nil, true); string(r.Body) != `{"running":false}` {
		t.Fatalf("running after stop: %s", r)
	}
}

func TestCapacityExceeded(t *testing.T) {
	b := bridgetest.Start(t)
	b.Server.SetCapacityExceeded(true)
	for _, c := range []struct{ method, path string }{
		{"POST", "/processes"}, {"POST", "/terminals"}, {"GET", "/file/workspace/x"}, {"POST", "/persist"},
	} {
		r := call(t, b, c.method, "/v1/sandbox/"+sb+c.path, `{"argv":["true"]}`, true)
		if r.Status != 503 || !strings.HasPrefix(string(r.Body), `{"error":"Cannot start container: instance limit reached (`) ||
			!strings.HasSuffix(string(r.Body), `","code":"capacity_exceeded"}`) {
			t.Errorf("%s %s: %s", c.method, c.path, r)
		}
	}
	if r := call(t, b, "GET", "/v1/sandbox/"+sb+"/running", nil, true); string(r.Body) != `{"running":false}` {
		t.Fatalf("lookup under capacity: %s", r)
	}
	b.Server.SetCapacityExceeded(false)
	launch(t, b, sb, map[string]any{"argv": []string{"true"}})
}

func TestIdleSleep(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.WithIdleSleep(150*time.Millisecond))
	st := launch(t, b, sb, map[string]any{"argv": []string{"sleep", "1.5"}})
	time.Sleep(400 * time.Millisecond)
	if _, code := getProc(t, b, sb, st.ID); code != 200 {
		t.Fatal("slept while a process was running")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := call(t, b, "GET", "/v1/sandbox/"+sb+"/running", nil, true)
		if string(r.Body) == `{"running":false}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never went idle")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitOutput polls a process's log until it has some output.
func waitOutput(t *testing.T, b *bridgetest.Bridge, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, evs, err := readSSE(t, b, "/v1/sandbox/"+sb+"/processes/"+id+"/logs"); err == nil && len(evs) > 0 && evs[0].Type == "stdout" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %s wrote nothing", id)
}
