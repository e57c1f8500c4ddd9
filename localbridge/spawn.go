package localbridge

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Children die with their bridge, even when the bridge is killed with SIGKILL: every child is
// started with a parent-death signal (PR_SET_PDEATHSIG, SysProcAttr.Pdeathsig). Linux sends that
// signal when the *thread* that forked the child exits, not when the process does, and the Go
// runtime forks on whichever OS thread the calling goroutine happens to run on and may retire idle
// threads. So every fork goes through one goroutine that locks itself to its OS thread and never
// returns: that thread lives exactly as long as the process, and the signal fires only when the
// bridge's process ends. Grandchildren are covered where the process runs in its own PID namespace
// (see isolate.go): the namespace's init is the direct child, and when it dies the kernel kills
// every process in the namespace.
//
// macOS has no parent-death signal (setPdeathsig does nothing there); its supervisors watch for the
// bridge's end themselves (isolate_darwin.go).

// spawnReq is one fork to run on the spawner thread.
type spawnReq struct {
	start func() error
	done  chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

// spawnLoop runs forks on one locked OS thread for the life of the process.
func spawnLoop(ch <-chan spawnReq) {
	runtime.LockOSThread()
	// Never unlocked and never returns: the thread must outlive every child it forked.
	for r := range ch {
		r.done <- r.start()
	}
}

// startChild starts cmd (through start, which calls cmd.Start or a wrapper such as pty.Start) on
// the spawner thread, with pdeathsig as its parent-death signal (0: none).
func startChild(cmd *exec.Cmd, start func() error, pdeathsig syscall.Signal) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setPdeathsig(cmd.SysProcAttr, pdeathsig)
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go spawnLoop(spawnCh)
	})
	done := make(chan error, 1)
	spawnCh <- spawnReq{start: start, done: done}
	return <-done
}
