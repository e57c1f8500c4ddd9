//go:build !race

package quietio

import (
	"syscall"
	"unsafe"
)

// once makes the read or write system call trap on fd with b, again when a signal interrupts it.
func once(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		r, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != syscall.EINTR {
			return int(r), e
		}
	}
}
