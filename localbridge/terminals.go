package localbridge

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"sandscope/localbridge/seqlog"
)

// Terminal limits, as the real container has them.
const (
	maxRetainedTerminals = 25        // finished terminals kept per incarnation (oldest by creation dropped)
	termLogBytes         = 256 << 10 // PTY output log: bytes retained
	termLogEvents        = 10000     // PTY output log: events retained
	termDefaultCols      = 80
	termDefaultRows      = 24
	termKillGrace        = 500 * time.Millisecond // terminate: SIGTERM, then SIGKILL after this
	termReadBuf          = 32 << 10
)

// Terminal states as the bridge reports them.
const (
	termRunning = "running"
	termExited  = "exited"
	termError   = "error"
)

// termExit is TerminalSnapshot.exit: code is 128+n when killed by signal n.
type termExit struct {
	Code     int  `json:"code"`
	Signal   *int `json:"signal,omitempty"`
	TimedOut bool `json:"timedOut"`
}

// termFinal is the payload of the output log's terminal event.
type termFinal struct {
	exit *termExit
	err  *errorJSON
}

// termSnapshot is the TerminalSnapshot JSON plus the local bridge's explicit incarnation.
type termSnapshot struct {
	ID          string     `json:"id"`
	PID         int        `json:"pid"`
	Command     []string   `json:"command"`
	Cwd         string     `json:"cwd"`
	Status      string     `json:"status"`
	Exit        *termExit  `json:"exit,omitempty"`
	Error       *errorJSON `json:"error,omitempty"`
	Incarnation int        `json:"incarnation"`
}

// errRuntimeEnded is the failure of an operation on an incarnation that has ended.
var errRuntimeEnded = errors.New("Sandbox operation was interrupted because the runtime changed")

// terminalTable holds one incarnation's terminals.
type terminalTable struct {
	inc *incarnation

	mu      sync.Mutex
	terms   map[string]*terminal
	created uint64 // creation counter, orders terminals
	ended   bool
}

// newTerminalTable makes the terminal table of a new incarnation.
func newTerminalTable(inc *incarnation) *terminalTable {
	return &terminalTable{inc: inc, terms: make(map[string]*terminal)}
}

// counts reports how many terminals are running and how many are known.
func (t *terminalTable) counts() (running, total int) {
	if t == nil {
		return 0, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, term := range t.terms {
		if term.snapshot().Status == termRunning {
			running++
		}
	}
	return running, len(t.terms)
}

// get returns a terminal of this incarnation, or nil.
func (t *terminalTable) get(id string) *terminal {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil
	}
	return t.terms[id]
}

// list returns the terminals in creation order.
func (t *terminalTable) list() []*terminal {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil
	}
	out := make([]*terminal, 0, len(t.terms))
	for _, term := range t.terms {
		out = append(out, term)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// shutdown ends every terminal of the incarnation: PTYs killed, WebSockets closed with 1012
// "Runtime replaced" when replaced is true, else dropped as a container stop would.
func (t *terminalTable) shutdown(replaced bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return
	}
	t.ended = true
	terms := make([]*terminal, 0, len(t.terms))
	for _, term := range t.terms {
		terms = append(terms, term)
	}
	t.mu.Unlock()
	for _, term := range terms {
		term.kill(replaced)
	}
}

// prune drops the oldest finished terminals beyond the retention limit.
func (t *terminalTable) prune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	var finished []*terminal
	for _, term := range t.terms {
		if term.finished() {
			finished = append(finished, term)
		}
	}
	if len(finished) <= maxRetainedTerminals {
		return
	}
	sort.Slice(finished, func(i, j int) bool { return finished[i].order < finished[j].order })
	for _, term := range finished[:len(finished)-maxRetainedTerminals] {
		delete(t.terms, term.id)
	}
}

// termSpec is a validated create request.
type termSpec struct {
	argv       []string
	cwd        string // as requested ("" = workspace)
	env        map[string]string
	cols, rows int
}

// terminal is one PTY with its root process and output log.
type terminal struct {
	table   *terminalTable
	id      string
	order   uint64
	command []string
	cwdShow string // cwd as reported
	pid     int
	ptmx    *os.File
	log     *seqlog.Log
	done    chan struct{} // closed once the terminal completed (root exited and PTY at EOF)

	mu        sync.Mutex
	status    string
	exit      *termExit
	errInfo   *errorJSON
	ptyClosed bool
	killed    bool // the incarnation ended; no new connections
	conns     map[*termConn]struct{}
	killTimer *time.Timer

	// feedMu orders storing output with handing connections over from replay to live push.
	feedMu sync.Mutex
	live   map[*termConn]struct{} // connections fed directly by the PTY reader
}

// create starts a terminal in this incarnation.
func (t *terminalTable) create(spec termSpec) (*terminal, error) {
	t.mu.Lock()
	ended := t.ended
	t.mu.Unlock()
	if ended {
		return nil, errRuntimeEnded
	}
	if spec.argv[0] == "" {
		return nil, errors.New("argv executable must be non-empty")
	}
	dir, show := t.resolveCwd(spec.cwd)
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("cwd %s: %w", show, pathErrText(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("cwd %s: not a directory", show)
	}
	iso := t.inc.isolation()
	home, pwd := t.inc.workspace, dir
	if iso.Namespaces {
		home, pwd = "/workspace", show
	}
	env, err := terminalEnv(home, spec.env, pwd)
	if err != nil {
		return nil, err
	}
	cols, rows := spec.cols, spec.rows
	if cols == 0 {
		cols = termDefaultCols
	}
	if rows == 0 {
		rows = termDefaultRows
	}
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	// pty.StartWithSize makes the child a session leader with the PTY as controlling terminal, so
	// its pid is also its session and process-group ID.
	statusR, closeStatusW, err := iso.supervised(cmd, t.inc.workspace, pwd)
	if err != nil {
		return nil, fmt.Errorf("spawn %s: %w", spec.argv[0], err)
	}
	var ptmx *os.File
	err = startChild(cmd, func() (err error) {
		ptmx, err = pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
		return err
	}, iso.pdeathsig())
	closeStatusW()
	if err == nil {
		// once the supervisor is ready, a signal to the tree reaches the shell, not a half-started
		// supervisor
		if rerr := statusR.ready(); rerr != nil {
			_ = signalTree(cmd.Process.Pid, syscall.SIGKILL)
			_ = ptmx.Close()
			_ = cmd.Wait()
			statusR.f.Close()
			return nil, fmt.Errorf("spawn %s: %w", spec.argv[0], rerr)
		}
	}
	if err != nil {
		statusR.f.Close()
		return nil, fmt.Errorf("spawn %s: %w", spec.argv[0], unwrapExecErr(err))
	}
	id := newUUID()
	term := &terminal{
		table:   t,
		id:      id,
		command: append([]string(nil), spec.argv...),
		cwdShow: show,
		pid:     cmd.Process.Pid,
		ptmx:    ptmx,
		log:     seqlog.New(newUUID(), termLogBytes, termLogEvents),
		done:    make(chan struct{}),
		status:  termRunning,
		conns:   make(map[*termConn]struct{}),
		live:    make(map[*termConn]struct{}),
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		_ = signalTree(term.pid, syscall.SIGKILL)
		_ = ptmx.Close()
		_ = cmd.Wait()
		return nil, errRuntimeEnded
	}
	t.created++
	term.order = t.created
	t.terms[id] = term
	t.mu.Unlock()

	readDone := make(chan struct{})
	go term.readLoop(readDone)
	go term.waitLoop(cmd, statusR, readDone)
	return term, nil
}

// resolveCwd maps a requested terminal cwd to a host directory and the path to report. Terminal
// cwd is not confined (as on the real bridge), but "/workspace" and relative paths mean the
// sandbox workspace.
func (t *terminalTable) resolveCwd(cwd string) (dir, show string) {
	ws := t.inc.workspace
	switch {
	case cwd == "":
		return ws, "/workspace"
	case cwd == "/workspace" || strings.HasPrefix(cwd, "/workspace/"):
		rel := filepath.Clean("/" + strings.TrimPrefix(cwd, "/workspace"))
		return filepath.Join(ws, rel), filepath.Join("/workspace", rel)
	case filepath.IsAbs(cwd):
		return filepath.Clean(cwd), filepath.Clean(cwd)
	default:
		p := filepath.Join("/workspace", cwd)
		if p == "/workspace" || strings.HasPrefix(p, "/workspace/") {
			return filepath.Join(ws, strings.TrimPrefix(p, "/workspace")), p
		}
		return p, p
	}
}

// terminalEnv is the child's environment: the same small base processes get (nothing of the
// bridge's own environment beyond what tools need, so no secret of the host leaks in), the request's
// overlay, and TERM forced to xterm-256color.
func terminalEnv(home string, overlay map[string]string, dir string) ([]string, error) {
	if k, bad := badEnvEntry(overlay); bad {
		return nil, fmt.Errorf("invalid environment variable name %q", k)
	}
	merged := make(map[string]string, len(overlay)+1)
	for k, v := range overlay {
		merged[k] = v
	}
	merged["TERM"] = "xterm-256color"
	return childEnv(home, dir, merged), nil
}

// readLoop copies PTY output into the log until the PTY reaches EOF (every holder of the slave side
// is gone) or is closed.
func (term *terminal) readLoop(done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, termReadBuf)
	for {
		n, err := term.ptmx.Read(buf)
		if n > 0 {
			term.feed(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// feed stores one output chunk and pushes it to every live connection. Pushing never blocks: a
// connection whose queue is full is closed for backpressure and leaves the live set.
func (term *terminal) feed(p []byte) {
	data := append([]byte(nil), p...) // shared, read-only, by the log and every connection's queue
	term.feedMu.Lock()
	defer term.feedMu.Unlock()
	seq := term.log.AppendOwned(seqlog.Stdout, data)
	if seq == 0 || len(term.live) == 0 {
		return
	}
	f := chunkFrame(term.log, seq, data)
	for c := range term.live {
		if !c.enqueue(f) {
			delete(term.live, c)
		}
	}
}

// finishLog stores the terminal event and sends it to every live connection, which then close.
func (term *terminal) finishLog(final termFinal) {
	term.feedMu.Lock()
	defer term.feedMu.Unlock()
	seq := term.log.Finish(final)
	live := term.live
	term.live = map[*termConn]struct{}{}
	if seq == 0 {
		return // aborted: the incarnation's shutdown closes the connections
	}
	cursor := term.log.Cursor(seq)
	for c := range live {
		c.sendFinal(cursor, final)
	}
}

// waitLoop reaps the root process, waits for the PTY to reach EOF, then completes the terminal.
func (term *terminal) waitLoop(cmd *exec.Cmd, statusR *statusPipe, readDone <-chan struct{}) {
	werr := cmd.Wait()
	st := statusR.result()
	<-readDone
	var final termFinal
	var ee *exec.ExitError
	switch {
	case st.ok && st.failure == "":
		// the supervisor's report of the shell's own ending
		final.exit = &termExit{Code: st.code}
		if st.signal != 0 {
			sig := st.signal
			final.exit.Signal = &sig
		}
	case st.ok:
		final.err = &errorJSON{Code: "PTY_EXIT_FAILED", Message: st.failure}
	case werr == nil || errors.As(werr, &ee):
		final.exit = exitFromState(cmd.ProcessState)
	default:
		final.err = &errorJSON{Code: "PTY_EXIT_FAILED", Message: werr.Error()}
	}
	term.mu.Lock()
	if term.killTimer != nil {
		term.killTimer.Stop()
	}
	term.ptyClosed = true
	if final.err != nil {
		term.status = termError
		term.errInfo = final.err
	} else {
		term.status = termExited
		term.exit = final.exit
	}
	term.mu.Unlock()
	_ = term.ptmx.Close()
	term.finishLog(final)
	term.table.prune()
	close(term.done)
}

// exitFromState turns a wait status into the bridge's exit object.
func exitFromState(ps *os.ProcessState) *termExit {
	if ps == nil {
		return &termExit{Code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := int(ws.Signal())
		return &termExit{Code: 128 + sig, Signal: &sig}
	}
	return &termExit{Code: ps.ExitCode()}
}

// isDone reports whether the terminal completed.
func (term *terminal) isDone() bool {
	select {
	case <-term.done:
		return true
	default:
		return false
	}
}

// finished reports whether the terminal reached a final status (set just before done closes).
func (term *terminal) finished() bool {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.status != termRunning
}

// snapshot is the terminal's current TerminalSnapshot.
func (term *terminal) snapshot() termSnapshot {
	term.mu.Lock()
	defer term.mu.Unlock()
	s := termSnapshot{
		ID: term.id, PID: term.pid, Command: term.command, Cwd: term.cwdShow,
		Status: term.status, Incarnation: term.table.inc.number,
	}
	if term.exit != nil {
		e := *term.exit
		s.Exit = &e
	}
	if term.errInfo != nil {
		e := *term.errInfo
		s.Error = &e
	}
	return s
}

// interrupt sends SIGINT to the terminal's process tree; a no-op once it completed.
func (term *terminal) interrupt() error {
	if term.isDone() {
		return nil
	}
	return signalTree(term.pid, syscall.SIGINT)
}

// terminate sends SIGTERM to the tree, then SIGKILL after the grace period if it is still running.
func (term *terminal) terminate() error {
	if term.isDone() {
		return nil
	}
	err := signalTree(term.pid, syscall.SIGTERM)
	term.mu.Lock()
	if term.killTimer == nil && !term.ptyClosed {
		term.killTimer = time.AfterFunc(termKillGrace, func() {
			if !term.isDone() {
				_ = signalTree(term.pid, syscall.SIGKILL)
			}
		})
	}
	term.mu.Unlock()
	return err
}

// resize sets the PTY window size.
func (term *terminal) resize(cols, rows int) error {
	term.mu.Lock()
	defer term.mu.Unlock()
	if term.ptyClosed {
		return errPTYClosed
	}
	return pty.Setsize(term.ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
}

var errPTYClosed = errors.New("PTY is closed")

// write sends input bytes to the PTY; input after the PTY closed is dropped.
func (term *terminal) write(p []byte) {
	term.mu.Lock()
	closed := term.ptyClosed
	term.mu.Unlock()
	if closed {
		return
	}
	// Writes can block when the program does not read its input; the caller is one connection's
	// reader, so only that connection waits. Errors mean the PTY is going away.
	_, _ = term.ptmx.Write(p)
}

// kill ends the terminal with its incarnation: connections closed (1012 when replaced, else
// dropped), the process tree killed, the PTY closed and the log aborted.
func (term *terminal) kill(replaced bool) {
	term.mu.Lock()
	term.killed = true
	conns := make([]*termConn, 0, len(term.conns))
	for c := range term.conns {
		conns = append(conns, c)
	}
	term.mu.Unlock()
	for _, c := range conns {
		if replaced {
			c.closeWith(closeReplaced)
		} else {
			c.drop()
		}
	}
	if !term.isDone() {
		_ = signalTree(term.pid, syscall.SIGKILL)
	}
	term.log.Abort(errRuntimeEnded)
	// Closing the master unblocks the reader even if an escaped process still holds the slave.
	_ = term.ptmx.Close()
}

func (term *terminal) addConn(c *termConn) bool {
	term.mu.Lock()
	defer term.mu.Unlock()
	if term.killed {
		return false
	}
	term.conns[c] = struct{}{}
	return true
}

func (term *terminal) removeConn(c *termConn) {
	term.mu.Lock()
	delete(term.conns, c)
	term.mu.Unlock()
	term.feedMu.Lock()
	delete(term.live, c)
	term.feedMu.Unlock()
}

// pathErrText strips the host path from a stat error so messages name the requested cwd.
func pathErrText(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// unwrapExecErr shortens exec errors that would repeat the executable name.
func unwrapExecErr(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return pathErrText(err)
}
