package client

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"testing"
)

// benchStream is an in-memory log stream shaped like the bridge's: 64 KiB chunks, base64 in JSON.
func benchStream(chunks int) []byte {
	raw := bytes.Repeat([]byte("sandscope benchmark line 0123456789abcdefghijklmnopqrstuvwxyz\n"), 64<<10/62+1)[:64<<10]
	var b bytes.Buffer
	enc := base64.StdEncoding.EncodeToString(raw)
	for i := 1; i <= chunks; i++ {
		fmt.Fprintf(&b, `data: {"type":"stdout","cursor":%q,"timestamp":"2026-08-14T10:00:00.010Z","data":%q}`+"\n\n", FormatCursor("6f1c2a9e-3d4b-4e8f-9a1b-2c3d4e5f6a7b", int64(i)), enc)
	}
	return b.Bytes()
}

// BenchmarkDecodeLogStream measures SSE framing plus event decoding, per raw output byte.
func BenchmarkDecodeLogStream(b *testing.B) {
	stream := benchStream(256)
	b.SetBytes(256 * 64 << 10)
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		d := NewSSEDecoder(bytes.NewReader(stream))
		for {
			ev, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if _, err := DecodeLogMessage(ev.Data); err != nil {
				b.Fatal(err)
			}
		}
	}
}
