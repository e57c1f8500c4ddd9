package localbridge

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The macOS side of isolate.go. macOS has no mount, PID or user namespaces and no child subreaper,
// so every supervisor runs in plain mode: processes run in the host's file system, /workspace is
// only a label for the sandbox directory (Isolation says so), and the supervisor kills what it
// started when the bridge is gone, as it does on Linux when namespaces are unavailable.

// selfExe is the executable the supervisor is started from (macOS has no /proc/self/exe).
func selfExe() string {
	exe, _ := os.Executable() // "" on error: the start then fails with "exec: no command"
	return exe
}

func probeIsolation() Isolation {
	return Isolation{Reason: "macOS has no mount or PID namespaces"}
}

// addNamespaces is never called on macOS: Isolation.Namespaces is never true here.
func addNamespaces(*syscall.SysProcAttr) {}

// enterSandboxRoot is only reached in namespace modes, which macOS never uses.
func enterSandboxRoot(string) error {
	return errors.New("macOS has no mount namespaces")
}

// becomeSubreaper does nothing: macOS has no child subreaper, so orphans of the command are
// re-parented to launchd and the supervisor waits only for the command itself. The bridge still
// waits for the command's process group to empty (groupAlive), and plainTree finds orphans by their
// process group and session.
func becomeSubreaper() {}

// plainTree lists what the supervisor kills when the bridge is gone: without a subreaper, orphans
// are no longer its descendants, but they stay in its process group (processes) or its session
// (terminals), which treePIDs covers.
func plainTree() []int { return treePIDs(os.Getpid()) }

// waitReaderGone returns once the bridge is gone: the read end of the status pipe closed (kqueue
// reports EV_EOF on the write end) or the bridge process, the supervisor's parent, exited. poll(2)
// is not used as on Linux: macOS implements it over kqueue and watches nothing for a descriptor
// polled for no events. A parent check every few seconds backs both up.
func waitReaderGone(status *os.File) {
	bridge := os.Getppid()
	fd := int(status.Fd())
	kq, err := unix.Kqueue()
	watching := err == nil
	if watching {
		defer unix.Close(kq)
	}
	changes := []unix.Kevent_t{
		{Ident: uint64(fd), Filter: unix.EVFILT_WRITE, Flags: unix.EV_ADD | unix.EV_CLEAR},
		{Ident: uint64(bridge), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD, Fflags: unix.NOTE_EXIT},
	}
	events := make([]unix.Kevent_t, len(changes))
	for {
		if os.Getppid() != bridge {
			return
		}
		if !watching {
			time.Sleep(time.Second)
			continue
		}
		timeout := unix.NsecToTimespec(int64(5 * time.Second))
		n, err := unix.Kevent(kq, changes, events, &timeout)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			watching = false // from now on, the parent check alone
			continue
		}
		changes = nil
		for _, ev := range events[:n] {
			switch {
			case ev.Filter == unix.EVFILT_PROC && (ev.Flags&unix.EV_ERROR == 0 || ev.Data == int64(unix.ESRCH)):
				return // the bridge exited, or had already exited when the watch was set
			case ev.Filter == unix.EVFILT_WRITE && ev.Flags&unix.EV_ERROR == 0 && ev.Flags&unix.EV_EOF != 0:
				return // the read end is closed
			}
		}
	}
}
