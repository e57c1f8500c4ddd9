package main

import (
	"bytes"
	"crypto/sha256"
	"os/exec"
	"strings"
	"testing"
)

// The soak's "saved bytes equal the producer's output" check rests on the SHA-256 computed here
// matching what the shell producer really writes; run the producer directly on a small size.
func TestProducerOutputMatchesSum(t *testing.T) {
	for _, flood := range []bool{false, true} {
		for _, size := range []int64{1, 100, 64<<10 + 7, 300 << 10} {
			g, err := newGenerator(t.TempDir(), size, flood)
			if err != nil {
				t.Fatal(err)
			}
			script := strings.TrimPrefix(g.script(0), "sleep 0.3\n")
			out, err := exec.Command("sh", "-c", script).Output()
			if err != nil {
				t.Fatalf("flood=%v size=%d: producer: %v", flood, size, err)
			}
			if int64(len(out)) != size {
				t.Fatalf("flood=%v size=%d: producer wrote %d bytes", flood, size, len(out))
			}
			if sum := sha256.Sum256(out); !bytes.Equal(sum[:], g.sum) {
				t.Fatalf("flood=%v size=%d: producer output differs from the expected sum", flood, size)
			}
			if size > int64(len(g.first)) && !bytes.HasPrefix(out, []byte(g.first+"\n")) {
				t.Fatalf("flood=%v size=%d: output does not start with the first line", flood, size)
			}
		}
	}
}

func TestBlockIsWholeRealisticLines(t *testing.T) {
	b := makeBlock()
	if len(b) < 60<<10 || len(b) > 64<<10 || b[len(b)-1] != '\n' {
		t.Fatalf("block of %d bytes, last byte %q", len(b), b[len(b)-1])
	}
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if len(l) < 79 || len(l) > 199 {
			t.Fatalf("line %d has %d bytes: %q", i, len(l), l)
		}
	}
}
