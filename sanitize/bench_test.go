package sanitize

import (
	"strings"
	"testing"
)

func benchInput() []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		switch i % 8 {
		case 0:
			sb.WriteString("\x1b[32mINFO\x1b[0m request served in 12ms path=/api/v1/items?page=3 status=200 bytes=5123\n")
		case 1:
			sb.WriteString("\x1b[1;31mERROR\x1b[0m\tconnection refused: dial tcp 127.0.0.1:5432 — retrying\n")
		default:
			sb.WriteString("2026-01-02T03:04:05Z worker-7 processed batch 1234 of 99999 items (ok=1234 failed=0) in 3.2s\n")
		}
	}
	return []byte(sb.String())
}

// BenchmarkStream measures sanitising realistic log output into lines (MB/s).
func BenchmarkStream(b *testing.B) {
	in := benchInput()
	s := NewStream(Options{MaxRunes: 4096})
	var lines []Line
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(in); off += 16384 {
			lines = s.Feed(lines[:0], in[off:min(off+16384, len(in))])
		}
	}
}
