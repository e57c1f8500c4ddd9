package localbridge

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The Linux side of the process table (read from /proc), the parent-death signal and pipe sizes.

// eachProc calls yield with every process in /proc until it returns false. ok is false when /proc
// cannot be read.
func eachProc(yield func(procInfo) bool) (ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false
	}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if pi, ok := readProcStat(pid); ok && !yield(pi) {
			break
		}
	}
	return true
}

// readProcStat parses /proc/<pid>/stat. The command name may contain spaces and parentheses, so
// fields are taken after the last ')'.
func readProcStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return procInfo{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0]=state f[1]=ppid f[2]=pgrp f[3]=session
	if len(f) < 4 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	sess, err3 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, pgrp: pgrp, session: sess, state: f[0][0]}, true
}

// growPipe raises a pipe's capacity (best effort) so a fast writer is read in large chunks, which
// keeps the event count, and so the per-event cost, low.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20)
	})
}

// setPdeathsig sets the signal the kernel sends a child when the thread that forked it exits.
func setPdeathsig(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
