package localbridge

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The macOS side of the process table (sysctl kern.proc.all; macOS has no /proc), the
// parent-death signal and pipe sizes.

// eachProc calls yield with every process until it returns false. ok is false when the process
// table cannot be read.
func eachProc(yield func(procInfo) bool) (ok bool) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return false
	}
	for i := range kps {
		kp := &kps[i]
		pi := procInfo{pid: int(kp.Proc.P_pid), ppid: int(kp.Eproc.Ppid), pgrp: int(kp.Eproc.Pgid), state: procState(kp.Proc.P_stat)}
		if sid, err := unix.Getsid(pi.pid); err == nil {
			pi.session = sid
		}
		if !yield(pi) {
			break
		}
	}
	return true
}

// procState maps p_stat (sys/proc.h: SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5) to the letters
// of /proc/<pid>/stat that the callers look at.
func procState(s int8) byte {
	switch s {
	case 3:
		return 'S'
	case 4:
		return 'T'
	case 5:
		return 'Z'
	}
	return 'R'
}

// growPipe leaves the pipe's size as it is: macOS has no F_SETPIPE_SZ.
func growPipe(*os.File) {}

// setPdeathsig does nothing: macOS has no parent-death signal. Isolation never asks for one there
// (it is none without namespaces); the supervisor watches for the bridge's end instead.
func setPdeathsig(*syscall.SysProcAttr, syscall.Signal) {}
