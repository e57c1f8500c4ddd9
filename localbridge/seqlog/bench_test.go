package seqlog

import "testing"

// BenchmarkAppend measures storing 256 KiB chunks under the process-log retention (1 MiB).
func BenchmarkAppend(b *testing.B) {
	chunk := make([]byte, 256<<10)
	l := New("s", 1<<20, 10000)
	b.SetBytes(int64(len(chunk)))
	for i := 0; i < b.N; i++ {
		l.Append(Stdout, chunk)
	}
}
