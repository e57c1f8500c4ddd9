//go:build !linux

package fileio

import "os"

// WriteAtv writes bufs one after another at off in f, gathered into one buffer first (one write
// call, as with pwritev; many small buffers would otherwise cost a call each).
func WriteAtv(f *os.File, bufs [][]byte, off int64) error {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	all := make([]byte, 0, n)
	for _, b := range bufs {
		all = append(all, b...)
	}
	_, err := f.WriteAt(all, off)
	return err
}
