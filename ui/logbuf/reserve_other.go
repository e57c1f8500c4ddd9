//go:build !linux

package logbuf

import (
	"errors"
	"os"
)

// reserveSpace is not available here: raw files grow write by write.
func reserveSpace(*os.File, int64, int64) error {
	return errors.ErrUnsupported
}
