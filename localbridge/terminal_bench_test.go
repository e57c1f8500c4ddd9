package localbridge

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/gorilla/websocket"
)

// Benchmarks compare the terminal path through the WebSocket with a bare PTY in the same run:
//
//	go test ./localbridge/ -run '^$' -bench 'BenchmarkTerminal' -benchtime 2000x
//
// Echo: one byte in, the same byte out, through `cat` on a raw PTY (ns/op = round trip).
// Bulk: MB/s of `head -c 8M /dev/zero` read to the end (the WebSocket side also decodes frames).

func benchHarness(b *testing.B) (*terminalTable, func(id string) *websocket.Conn) {
	inc := &incarnation{number: 1, sandbox: "bench", workspace: b.TempDir()}
	inc.terms = newTerminalTable(inc)
	srv := newSocketServer(inc)
	b.Cleanup(func() {
		inc.terms.shutdown(false)
		srv.Close()
	})
	dial := func(id string) *websocket.Conn {
		u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/connect/" + id
		c, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		return c
	}
	return inc.terms, dial
}

func BenchmarkTerminalEcho(b *testing.B) {
	const script = "stty raw -echo; echo go; exec cat"
	b.Run("direct-pty", func(b *testing.B) {
		cmd := exec.Command("sh", "-c", script)
		f, err := pty.Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = f.Close(); _ = cmd.Wait() }()
		buf := make([]byte, 64)
		var seen []byte
		for !bytes.Contains(seen, []byte("go")) {
			n, err := f.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			seen = append(seen, buf[:n]...)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := f.Write([]byte{'x'}); err != nil {
				b.Fatal(err)
			}
			if _, err := f.Read(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("websocket", func(b *testing.B) {
		terms, dial := benchHarness(b)
		term, err := terms.create(termSpec{argv: []string{"sh", "-c", script}})
		if err != nil {
			b.Fatal(err)
		}
		c := dial(term.id)
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		var seen []byte
		for !bytes.Contains(seen, []byte("go")) {
			mt, data, err := c.ReadMessage()
			if err != nil {
				b.Fatal(err)
			}
			if mt == websocket.BinaryMessage {
				seen = append(seen, data...)
			}
		}
		b.ResetTimer()
		for b.Loop() {
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			if err := c.WriteMessage(websocket.BinaryMessage, []byte{'x'}); err != nil {
				b.Fatal(err)
			}
			for {
				mt, _, err := c.ReadMessage()
				if err != nil {
					b.Fatal(err)
				}
				if mt == websocket.BinaryMessage {
					break
				}
			}
		}
	})
}

func BenchmarkTerminalBulk(b *testing.B) {
	const size = 8 << 20
	// The output starts when the reader sends one byte, so both sides read all of it.
	script := "stty raw -echo; head -c 1 >/dev/null; head -c 8388608 /dev/zero"
	b.Run("direct-pty", func(b *testing.B) {
		b.SetBytes(size)
		buf := make([]byte, 32<<10)
		for b.Loop() {
			cmd := exec.Command("sh", "-c", script)
			f, err := pty.Start(cmd)
			if err != nil {
				b.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // let stty run before the go byte
			_, _ = f.Write([]byte{'g'})
			total := 0
			for {
				n, err := f.Read(buf)
				total += n
				if err != nil {
					break
				}
			}
			_ = f.Close()
			_ = cmd.Wait()
			if total < size {
				b.Fatalf("read %d bytes", total)
			}
		}
	})
	b.Run("websocket", func(b *testing.B) {
		b.SetBytes(size)
		terms, dial := benchHarness(b)
		for b.Loop() {
			term, err := terms.create(termSpec{argv: []string{"sh", "-c", script}})
			if err != nil {
				b.Fatal(err)
			}
			c := dial(term.id)
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			time.Sleep(10 * time.Millisecond)
			_ = c.WriteMessage(websocket.BinaryMessage, []byte{'g'})
			total := 0
			for {
				mt, data, err := c.ReadMessage()
				if err != nil {
					break
				}
				if mt == websocket.BinaryMessage {
					total += len(data)
					continue
				}
				var m struct{ Type string }
				_ = json.Unmarshal(data, &m)
				if m.Type == "truncated" {
					b.Fatal("reader fell behind the log")
				}
			}
			if total < size {
				b.Fatalf("read %d bytes", total)
			}
		}
	})
}
