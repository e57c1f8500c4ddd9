package localbridge

import (
	"errors"
	"os"
	"syscall"
)

// A terminal's "process tree" is everything started inside its PTY session: the root is a session
// leader (and process-group leader), interactive shells move jobs into their own process groups, and
// orphans are re-parented away from the root. So members are found by session ID, by process group
// and by parentage, read from the process table (eachProc).

// procInfo is the part of a process's status (/proc/<pid>/stat) the tree walk needs.
type procInfo struct {
	pid, ppid, pgrp, session int
	state                    byte // R, S, D, Z (zombie), X (dead), …
}

// treePIDs lists the live processes that belong to root's terminal: its session, its process
// group and its descendants (root itself included while it exists, as its session leader).
func treePIDs(root int) []int {
	infos := map[int]procInfo{}
	if !eachProc(func(pi procInfo) bool {
		if pi.pid > 1 {
			infos[pi.pid] = pi
		}
		return true
	}) {
		return nil
	}
	self := os.Getpid()
	member := func(pi procInfo) bool {
		if pi.session == root || pi.pgrp == root {
			return true
		}
		// Walk parents; bounded so a race with the process table cannot loop forever.
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
