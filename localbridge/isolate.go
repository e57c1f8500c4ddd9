package localbridge

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every process and terminal of the local bridge starts under a small supervisor: the bridge's own
// executable run again as "sandscope-sandbox-init" (through /proc/self/exe, or os.Executable on
// macOS, so test binaries work too). Where the OS allows it, the supervisor runs in a private mount
// namespace and a private PID namespace (and, for a bridge that is not root, a user namespace that
// maps root inside to your user outside):
//
//   - /workspace is real: the supervisor builds a new root from bind mounts of the host's top-level
//     directories plus the sandbox's workspace at /workspace, and pivots into it. Paths, HOME and
//     the working directory a process sees are the ones the bridge reports.
//   - it is PID 1 of its namespace, so when it dies — SIGKILL of the group, or the kernel's
//     parent-death signal when the bridge dies — the kernel kills every process in the namespace,
//     grandchildren and double-forked daemons included.
//
// Without namespaces (a kernel or container that forbids them) the supervisor still runs, as a
// child subreaper: it notices the bridge's death on its status pipe and kills every descendant.
// Then /workspace is only a label, which Isolation reports and the serve banner and TUI show.
//
// macOS has neither namespaces nor a subreaper: every supervisor runs without namespaces, waits
// for the command alone, and finds orphans by process group and session when the bridge is gone
// (isolate_darwin.go). The bridge still keeps a process running until its group is empty.
//
// This is a private view, not a security boundary: the rest of the file system is the host's,
// writable with your user's rights.
//
// In both modes the supervisor waits for the command and for every process left behind in its
// namespace (or below it), then reports the command's ending on its status pipe. So a process is
// finished when its whole tree has ended and its output is drained — as on the real bridge, where
// state stays "running" until the process group is gone and stdout/stderr are drained
// (sandbox-execution's managed-process-supervisor): `sh -c 'sleep 300 & echo started'` runs for
// 300 s on both.

// initArg0 is argv[0] of the supervisor; the package's init runs it instead of the program.
const initArg0 = "sandscope-sandbox-init"

func init() {
	if len(os.Args) > 1 && os.Args[0] == initArg0 {
		os.Exit(sandboxInit(os.Args[1:]))
	}
}

// Isolation says how processes of the local bridge are isolated.
type Isolation struct {
	// Namespaces is true when processes run in private mount and PID namespaces with a real
	// /workspace.
	Namespaces bool
	// Reason says why not, when Namespaces is false.
	Reason string
}

// String is the one-line description the serve banner and the TUI show.
func (i Isolation) String() string {
	if i.Namespaces {
		return "private mount and PID namespaces: /workspace is the sandbox's workspace; the rest of the file system is the host's (not a security boundary)"
	}
	return "none: processes run in the host's namespaces and /workspace is only a label for the sandbox directory (" + i.Reason + ")"
}

var (
	isoOnce sync.Once
	isoSeen Isolation
	isoDone atomic.Bool // isoSeen is set
)

// DetectIsolation probes once per process whether namespaces can be used, by starting the
// supervisor in probe mode. SANDSCOPE_ISOLATION=none turns isolation off. Calls while the probe
// runs wait for it.
func DetectIsolation() Isolation {
	isoOnce.Do(func() {
		defer isoDone.Store(true)
		if os.Getenv("SANDSCOPE_ISOLATION") == "none" {
			isoSeen = Isolation{Reason: "turned off by SANDSCOPE_ISOLATION=none"}
			return
		}
		isoSeen = probeIsolation()
	})
	return isoSeen
}

// IsolationKnown returns the probe's answer without waiting; ok is false while it runs.
func IsolationKnown() (iso Isolation, ok bool) {
	if !isoDone.Load() {
		return Isolation{}, false
	}
	return DetectIsolation(), true
}

// supervised turns cmd (Path, Args, Dir, Env set for the host) into a supervised start. workspace
// is the sandbox's workspace on the host and inside the working directory the process sees. It
// returns the bridge's end of the status pipe (wait for ready after the start, read result after
// the supervisor exited); the write end goes to the child and closeAfterStart closes the bridge's
// copy of it.
func (i Isolation) supervised(cmd *exec.Cmd, workspace, inside string) (status *statusPipe, closeAfterStart func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	mode := "plain"
	if i.Namespaces {
		mode = "iso"
	}
	args := append([]string{initArg0, mode, workspace, inside, "--", cmd.Path}, cmd.Args...)
	cmd.Path = selfExe()
	cmd.Args = args
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if i.Namespaces {
		addNamespaces(cmd.SysProcAttr)
	}
	return &statusPipe{f: r}, func() { w.Close() }, nil
}

// pdeathsig is the parent-death signal of a supervisor: SIGKILL when it is PID 1 of a namespace
// (its death takes the namespace with it); none otherwise, because a plain supervisor must live
// long enough to kill its descendants when its status pipe says the bridge is gone.
func (i Isolation) pdeathsig() syscall.Signal {
	if i.Namespaces {
		return syscall.SIGKILL
	}
	return 0
}

// childStatus is the command's ending as its supervisor reported it.
type childStatus struct {
	ok      bool // a report arrived
	code    int
	signal  int
	failure string // the command could not be started
}

// statusPipe is the bridge's end of a supervisor's status pipe. The supervisor writes "ready"
// once its signal handlers are in place and the command runs (so a signal the bridge sends after
// the start can never kill the supervisor instead), then "exit CODE SIGNAL", or "fail MESSAGE"
// when the command could not start.
type statusPipe struct {
	f   *os.File
	buf []byte
}

// line reads the next line, waiting until deadline. ok is false at EOF or on timeout.
func (p *statusPipe) line(deadline time.Time) (string, bool) {
	_ = p.f.SetReadDeadline(deadline)
	b := make([]byte, 512)
	for {
		if i := strings.IndexByte(string(p.buf), '\n'); i >= 0 {
			l := string(p.buf[:i])
			p.buf = p.buf[i+1:]
			return l, true
		}
		if len(p.buf) > 8192 {
			return "", false
		}
		n, err := p.f.Read(b)
		p.buf = append(p.buf, b[:n]...)
		if err != nil && n == 0 {
			return "", false
		}
	}
}

// ready waits for the supervisor's "ready"; an error carries its "fail" message or says it ended.
func (p *statusPipe) ready() error {
	l, ok := p.line(time.Now().Add(30 * time.Second))
	switch {
	case ok && l == "ready":
		return nil
	case ok && strings.HasPrefix(l, "fail "):
		return errors.New(strings.TrimPrefix(l, "fail "))
	}
	return errors.New("the sandbox supervisor ended before the command started")
}

// result reads the supervisor's final report, once it exited.
func (p *statusPipe) result() childStatus {
	defer p.f.Close()
	l, ok := p.line(time.Now().Add(2 * time.Second))
	if !ok {
		return childStatus{}
	}
	if msg, ok := strings.CutPrefix(l, "fail "); ok {
		return childStatus{ok: true, failure: msg}
	}
	f := strings.Fields(l)
	if len(f) != 3 || f[0] != "exit" {
		return childStatus{}
	}
	code, err1 := strconv.Atoi(f[1])
	sig, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return childStatus{}
	}
	return childStatus{ok: true, code: code, signal: sig}
}

// sandboxInit is the supervisor: args are MODE WORKSPACE INSIDE -- PATH ARGV...; its status pipe
// is fd 3.
func sandboxInit(args []string) int {
	if len(args) < 6 || args[3] != "--" {
		fmt.Fprintln(os.Stderr, "sandscope: sandbox init: bad arguments")
		return 125
	}
	mode, workspace, inside, path, argv := args[0], args[1], args[2], args[4], args[5:]
	var status *os.File
	if _, err := unix.FcntlInt(3, unix.F_GETFD, 0); err == nil {
		unix.CloseOnExec(3) // the command must not hold the status pipe
		status = os.NewFile(3, "status")
	}
	report := func(s string) {
		if status != nil {
			_, _ = status.WriteString(s + "\n")
		}
	}
	switch mode {
	case "iso", "probe":
		if err := enterSandboxRoot(workspace); err != nil {
			fmt.Fprintf(os.Stderr, "sandscope: isolation: %v\n", err)
			return 125
		}
		if mode == "probe" {
			if fi, err := os.Stat("/workspace"); err != nil || !fi.IsDir() {
				fmt.Fprintln(os.Stderr, "sandscope: isolation: /workspace missing after pivot")
				return 125
			}
			return 0
		}
	case "plain":
		becomeSubreaper()
	default:
		fmt.Fprintln(os.Stderr, "sandscope: sandbox init: unknown mode")
		return 125
	}
	if err := os.Chdir(inside); err != nil {
		report("fail " + oneLine(err.Error()))
		return 127
	}
	// Signals sent to the process group or tree reach the command directly; the supervisor only
	// needs to survive them (a handler, not SIG_IGN, so the command does not inherit "ignore").
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGTSTP,
		syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGCONT, syscall.SIGWINCH)
	go func() {
		for range sigs {
		}
	}()
	go watchBridge(status, mode == "iso")

	// syscall.ForkExec, not os.StartProcess: the supervisor waits with wait4 and needs no pidfd,
	// and os's first start probes pidfd support with a fork of its own.
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		report("fail " + oneLine(unwrapExecErr(err).Error()))
		return 127
	}
	report("ready")
	// Reap everything: the command, and every orphan that ends up here (PID 1 of the namespace,
	// or the subreaper). The report waits until nothing is left.
	var main unix.WaitStatus
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			break
		}
		if wpid == pid {
			main = ws
		}
	}
	switch {
	case main.Signaled():
		report(fmt.Sprintf("exit %d %d", 128+int(main.Signal()), int(main.Signal())))
	default:
		report(fmt.Sprintf("exit %d 0", main.ExitStatus()))
	}
	return 0
}

// watchBridge waits until the bridge is gone (the read end of the status pipe closed) and then
// kills everything the supervisor started.
func watchBridge(status *os.File, isolated bool) {
	if status == nil {
		return
	}
	waitReaderGone(status)
	if isolated {
		_ = unix.Kill(-1, unix.SIGKILL) // every process of the namespace but this one
	} else {
		for _, pid := range plainTree() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	os.Exit(137)
}

// descendants lists the live descendants of root.
func descendants(root int) []int {
	parent := map[int]int{}
	if !eachProc(func(pi procInfo) bool { parent[pi.pid] = pi.ppid; return true }) {
		return nil
	}
	var out []int
	for pid := range parent {
		p := parent[pid]
		for range 64 {
			if p == root {
				out = append(out, pid)
				break
			}
			next, ok := parent[p]
			if !ok || p <= 1 {
				break
			}
			p = next
		}
	}
	return out
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// isolation is how the incarnation's processes and terminals are isolated: the server's choice,
// or (an incarnation built without a server, in tests) what this machine allows.
func (inc *incarnation) isolation() Isolation {
	return DetectIsolation()
}
