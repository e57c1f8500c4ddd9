package client

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"testing"
)

// benchStream is an in-memory log stream shaped like the bridge's: 64 KiB chunks, base64 in JSON.
func benchStream(chunks int) []byte { return benchStreamOf(chunks, 64<<10) }

// benchStreamOf is benchStream with chunks of size bytes.
func benchStreamOf(chunks, size int) []byte {
	raw := bytes.Repeat([]byte("sandscope benchmark line 0123456789abcdefghijklmnopqrstuvwxyz\n"), size/62+1)[:size]
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

// BenchmarkFollowDecode measures what a follower's reader and loop do per output event of a
// replay: framing, decoding into recycled buffers, and the cursor's parse. Chunks of 8 KiB are the
// local bridge's usual event when it replays a fast producer's output.
func BenchmarkFollowDecode(b *testing.B) {
	for _, size := range []int{8 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			const total = 16 << 20
			stream := benchStreamOf(total/size, size)
			ring := newDataRing(16)
			b.SetBytes(total)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d := NewSSEDecoder(bytes.NewReader(stream))
				var last Cursor
				for {
					m, err, rerr := nextLogMessage(d, ring.get)
					if rerr == io.EOF {
						break
					}
					if err != nil || rerr != nil {
						b.Fatal(err, rerr)
					}
					cur := parseCursorAfter(m.Cursor, last)
					if !cur.Known || m.Time.IsZero() {
						b.Fatalf("event %+v", cur)
					}
					last = cur
					ring.put(m.Data)
				}
			}
		})
	}
}
