package localbridge

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The Linux side of isolate.go: the namespace probe and setup, the subreaper, and the wait for the
// bridge's end of the status pipe to close.

// selfExe is the executable the supervisor is started from: this very program, test binaries too.
func selfExe() string { return "/proc/self/exe" }

func probeIsolation() Isolation {
	dir, err := os.MkdirTemp("", "sandscope-probe-")
	if err != nil {
		return Isolation{Reason: "probe: " + err.Error()}
	}
	defer os.RemoveAll(dir)
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{initArg0, "probe", dir, "/workspace", "--", "/bin/true", "true"}, Dir: dir}
	cmd.SysProcAttr = nsAttr()
	var out strings.Builder
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		return Isolation{Reason: "namespaces unavailable: " + unwrapExecErr(err).Error()}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return Isolation{Reason: "namespace probe did not finish"}
	}
	if err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = err.Error()
		}
		return Isolation{Reason: "namespaces unavailable: " + msg}
	}
	return Isolation{Namespaces: true}
}

// nsAttr is the clone setup of an isolated supervisor: new mount and PID namespaces, and a user
// namespace mapping root inside to the bridge's user when the bridge is not root.
func nsAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID}
	if os.Geteuid() != 0 {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	return a
}

// addNamespaces adds nsAttr's namespaces to a supervisor's clone setup.
func addNamespaces(a *syscall.SysProcAttr) {
	ns := nsAttr()
	a.Cloneflags |= ns.Cloneflags
	a.UidMappings = ns.UidMappings
	a.GidMappings = ns.GidMappings
}

// becomeSubreaper makes a plain supervisor the reaper of orphans below it, so it waits for them and
// plainTree finds them.
func becomeSubreaper() {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sandscope: subreaper: %v\n", err)
	}
}

// plainTree lists what a plain supervisor kills when the bridge is gone: its descendants (orphans
// included, as it is their subreaper).
func plainTree() []int { return descendants(os.Getpid()) }

// waitReaderGone returns once the read end of the status pipe is closed: poll says POLLERR on the
// write end.
func waitReaderGone(status *os.File) {
	fd := int(status.Fd())
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: 0}}
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			return
		}
	}
}

// enterSandboxRoot builds a root whose top-level directories are bind mounts of the host's, with
// workspace mounted at /workspace and a /proc of the new PID namespace, and pivots into it. It
// runs in a fresh mount namespace (so nothing here is seen outside).
func enterSandboxRoot(workspace string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// A tmpfs becomes the root first, so the host's tree can be bound from /oldroot without the
	// new root appearing inside it.
	const base = "/tmp"
	if err := unix.Mount("tmpfs", base, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs: %w", err)
	}
	for _, d := range []string{"newroot", "oldroot"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.PivotRoot(base, filepath.Join(base, "oldroot")); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	entries, err := os.ReadDir("/oldroot")
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if name == "workspace" || name == "proc" {
			continue
		}
		src, dst := "/oldroot/"+name, "/newroot/"+name
		fi, err := os.Lstat(src)
		if err != nil {
			continue
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err == nil {
				_ = os.Symlink(target, dst)
			}
			continue
		case fi.IsDir():
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
		default:
			f, err := os.Create(dst)
			if err != nil {
				return err
			}
			f.Close()
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", name, err)
		}
	}
	if err := os.Mkdir("/newroot/workspace", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("/oldroot"+workspace, "/newroot/workspace", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind /workspace: %w", err)
	}
	if err := os.Mkdir("/newroot/proc", 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", "/newroot/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		// a container may forbid a fresh /proc: the host's shows more PIDs but works
		if err := unix.Mount("/oldroot/proc", "/newroot/proc", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("proc: %w", err)
		}
	}
	if err := unix.Mount("/newroot", "/newroot", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind new root: %w", err)
	}
	if err := os.Mkdir("/newroot/.oldroot", 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot("/newroot", "/newroot/.oldroot"); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	_ = os.Remove("/.oldroot")
	return nil
}
