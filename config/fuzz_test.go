package config

import (
	"io/fs"
	"testing"
)

// FuzzParse: no input makes the parser or Resolve panic.
// `go test ./config/` runs the seeds; `go test -fuzz FuzzParse ./config/` explores.
func FuzzParse(f *testing.F) {
	f.Add([]byte(full), uint16(0o644))
	f.Add([]byte("contexts:\n  - name: a\n    url: https://x.dev\n    token: tok-SECRET\n"), uint16(0o644))
	f.Add([]byte("contexts:\n  - name: a\n    url: https://x.dev\n    token: tok-SECRET\n"), uint16(0o600))
	f.Add([]byte("keys: &a\n  quit: *a\n"), uint16(0o644))
	f.Add([]byte("<<: {theme: dark}\n"), uint16(0o644))
	f.Add([]byte("logMemoryLines: 0x7fffffffffffffff\npollFast: -1s\n"), uint16(0o644))
	f.Add([]byte("\xff\xfe: [\n"), uint16(0o644))
	f.Fuzz(func(t *testing.T, data []byte, mode uint16) {
		c, err := Parse("/f.yaml", fsMode(mode), data)
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
		if err == nil {
			if _, err := c.Resolve(Flags{}, envMap(nil)); err != nil {
				_ = err // a file can be valid and still name nothing usable; only panics matter
			}
		}
	})
}

func fsMode(m uint16) fs.FileMode { return fs.FileMode(m & 0o777) }
