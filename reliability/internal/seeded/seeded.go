package seeded

import "math/rand/v2"

// HostilePrefix starts every chunk.
var HostilePrefix = []byte("\xff\xfe\x00\x1b]52;c;cHduZWQ=\x07\xc3\x28\x9b2J\r\n")

// Chunks returns n chunks of size bytes for seed.
func Chunks(seed uint64, n, size int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		c := make([]byte, size)
		for j := range c {
			c[j] = byte(rng.Uint32())
		}
		copy(c, HostilePrefix)
		out = append(out, c)
	}
	return out
}
