package localbridge

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// appendBase64 (SIMD where the CPU has it) must write exactly what encoding/base64 writes, after
// whatever the buffer already holds, for every length around the SIMD block sizes.
func TestAppendBase64MatchesStd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 600; n++ {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		prefix := []byte(`data: {"data":"`)
		got := appendBase64(bytes.Clone(prefix), data)
		want := base64.StdEncoding.AppendEncode(bytes.Clone(prefix), data)
		if !bytes.Equal(got, want) {
			t.Fatalf("length %d: got %q want %q", n, got, want)
		}
	}
}
