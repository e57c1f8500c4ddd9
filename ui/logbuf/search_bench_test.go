package logbuf

import (
	"context"
	"testing"
)

// BenchmarkSearch1M searches 1,000,000 lines (most of them spilled or built from raw bytes) for a
// string that is not there, and filters them.
func BenchmarkSearch1M(b *testing.B) {
	buf := fill(b, 1_000_000)
	defer buf.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if j, err := buf.Search(context.Background(), Query{Text: "NOT THERE", IgnoreCase: true}, 0, Forward); j != -1 || err != nil {
			b.Fatal(j, err)
		}
	}
}
