package localbridge

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// A terminal's "process tree" is everything started inside its PTY session: the root is a session
// leader (and process-group leader), interactive shells move jobs into their own process groups, and
// orphans are re-parented away from the root. So members are found by session ID, by process group
// and by parentage, read from /proc.

// procInfo is the part of /proc/<pid>/stat the tree walk needs.
type procInfo struct {
	pid, ppid, pgrp, session int
	state                    byte // R, S, D, Z (zombie), X (dead), …
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

// treePIDs lists the live processes that belong to root's terminal: its session, its process
// group and its descendants (root itself included while it exists, as its session leader).
func treePIDs(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	infos := make(map[int]procInfo, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 {
			continue
		}
		if pi, ok := readProcStat(pid); ok {
			infos[pid] = pi
		}
	}
	self := os.Getpid()
	member := func(pi procInfo) bool {
		if pi.session == root || pi.pgrp == root {
			return true
		}
		// Walk parents; bounded so a /proc race cannot loop forever.
		p := pi.ppid
		for range 64 {
			if p == root {
				return true
			}
			next, ok := infos[p]
			if !ok || p <= 1 {
				return false
			}
			p = next.ppid
		}
		return false
	}
	var out []int
	for pid, pi := range infos {
		if pid == self {
			continue
		}
		if member(pi) { // the root itself is its own session
			out = append(out, pid)
		}
	}
	return out
}

// signalTree sends sig to root's process group and to every other member of its tree. Processes
// that vanished meanwhile are ignored. It never signals pid 1 or sandscope itself.
func signalTree(root int, sig syscall.Signal) error {
	if root <= 1 || root == os.Getpid() {
		return errors.New("refusing to signal an invalid process")
	}
	var firstErr error
	note := func(err error) {
		if err != nil && !errors.Is(err, syscall.ESRCH) && firstErr == nil {
			firstErr = err
		}
	}
	note(syscall.Kill(-root, sig))
	for _, pid := range treePIDs(root) {
		note(syscall.Kill(pid, sig))
	}
	return firstErr
}
