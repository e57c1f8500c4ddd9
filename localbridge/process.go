package localbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sandscope/localbridge/seqlog"
)

// process is one launched argv: its process group, its log and its status.
type process struct {
	id        string
	inc       *incarnation
	pid       int // also the process group ID (Setpgid)
	command   []string
	cwd       string // as the bridge shows it (/workspace/…)
	startedAt time.Time
	log       *seqlog.Log

	mu        sync.Mutex
	state     string // running, exited, error
	endedAt   time.Time
	exit      *exitJSON
	errInfo   *errorJSON
	timedOut  bool
	groupGone bool
}

type exitJSON struct {
	Code     int  `json:"code"`
	Signal   int  `json:"signal,omitempty"`
	TimedOut bool `json:"timedOut"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// processJSON is ProcessStatus plus the incarnation extension.
type processJSON struct {
	ID          string     `json:"id"`
	PID         int        `json:"pid"`
	Command     []string   `json:"command"`
	Cwd         string     `json:"cwd"`
	State       string     `json:"state"`
	StartedAt   string     `json:"startedAt"`
	EndedAt     string     `json:"endedAt,omitempty"`
	Exit        *exitJSON  `json:"exit,omitempty"`
	Error       *errorJSON `json:"error,omitempty"`
	Incarnation int        `json:"incarnation"`
}

// finalEvent is the payload of a process log's terminal event.
type finalEvent struct {
	state string
	exit  *exitJSON
	err   *errorJSON
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (p *process) status() processJSON {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := processJSON{ID: p.id, PID: p.pid, Command: p.command, Cwd: p.cwd, State: p.state,
		StartedAt: isoTime(p.startedAt), Incarnation: p.inc.number}
	if p.state != "running" {
		st.EndedAt = isoTime(p.endedAt)
		if p.exit != nil {
			e := *p.exit
			st.Exit = &e
		}
		if p.errInfo != nil {
			e := *p.errInfo
			st.Error = &e
		}
	}
	return st
}

func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == "running"
}

// signalGroup sends sig to the whole process group while it exists.
func (p *process) signalGroup(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groupGone {
		return
	}
	_ = syscall.Kill(-p.pid, sig)
}

// abort ends the process with its incarnation: open log streams fail, the group is killed.
func (p *process) abort(reason error) {
	p.log.Abort(reason)
	p.signalGroup(syscall.SIGKILL)
}

func (inc *incarnation) getProcess(id string) *process {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	return inc.procs[id]
}

// runningProcesses counts the incarnation's running processes.
func (inc *incarnation) runningProcesses() (running int) {
	inc.mu.Lock()
	procs := make([]*process, 0, len(inc.procs))
	for _, p := range inc.procs {
		procs = append(procs, p)
	}
	inc.mu.Unlock()
	for _, p := range procs {
		if p.running() {
			running++
		}
	}
	return running
}

func (inc *incarnation) listProcesses() []processJSON {
	inc.mu.Lock()
	procs := make([]*process, 0, len(inc.procs))
	for _, p := range inc.procs {
		procs = append(procs, p)
	}
	inc.mu.Unlock()
	sort.Slice(procs, func(i, j int) bool { return procs[i].startedAt.Before(procs[j].startedAt) })
	out := make([]processJSON, 0, len(procs))
	for _, p := range procs {
		out = append(out, p.status())
	}
	return out
}

// evictFinished keeps at most maxFinishedProcesses finished processes (oldest by endedAt go).
func (inc *incarnation) evictFinished() {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	type fin struct {
		id    string
		ended time.Time
	}
	var done []fin
	for id, p := range inc.procs {
		p.mu.Lock()
		if p.state != "running" {
			done = append(done, fin{id, p.endedAt})
		}
		p.mu.Unlock()
	}
	if len(done) <= maxFinishedProcesses {
		return
	}
	sort.Slice(done, func(i, j int) bool { return done[i].ended.Before(done[j].ended) })
	for _, f := range done[:len(done)-maxFinishedProcesses] {
		delete(inc.procs, f.id)
	}
}

// resolveWorkspacePath applies the bridge's rule: relative paths are joined to /workspace, the
// result normalised, and it must be /workspace or below. It returns the normalised path.
func resolveWorkspacePath(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		p = "/workspace/" + p
	}
	c := filepath.Clean(p)
	if c == "/workspace" || strings.HasPrefix(c, "/workspace/") {
		return c, true
	}
	return "", false
}

// confine maps a normalised /workspace path into the sandbox workspace and checks that symlinks do
// not lead out of it: the deepest existing ancestor is resolved and must stay inside.
func confine(workspace, virt string) (string, bool) {
	real := filepath.Join(workspace, strings.TrimPrefix(virt, "/workspace"))
	wsReal, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return "", false
	}
	probe := real
	for {
		if _, err := os.Lstat(probe); err == nil {
			break
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			return "", false
		}
		probe = parent
	}
	resolved, err := filepath.EvalSymlinks(probe)
	if err != nil {
		return "", false
	}
	if resolved != wsReal && !strings.HasPrefix(resolved, wsReal+string(filepath.Separator)) {
		return "", false
	}
	return real, true
}

// badEnvEntry finds an overlay entry no environment can hold: an empty name, a name with '=' or
// NUL, or a value with NUL.
func badEnvEntry(overlay map[string]string) (key string, bad bool) {
	for k, v := range overlay {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return k, true
		}
	}
	return "", false
}

// childEnv is the base environment of launched processes: enough to run tools, nothing of the
// bridge's own secrets.
func childEnv(home, cwd string, overlay map[string]string) []string {
	env := map[string]string{
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME": home,
		"LANG": "C.UTF-8",
		"PWD":  cwd,
	}
	if v := os.Getenv("PATH"); v != "" {
		env["PATH"] = v
	}
	for _, k := range []string{"LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range overlay {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// handleCreateProcess: POST /v1/sandbox/{id}/processes (allocate).
func (s *Server) handleCreateProcess(w http.ResponseWriter, r *http.Request, id string, allocate func() *incarnation) {
	inc := allocate()
	if inc == nil {
		return
	}
	body, err := readLimited(r, maxJSONBody)
	if err != nil || !json.Valid(body) {
		writeError(w, http.StatusBadRequest, "Invalid JSON body", "invalid_request")
		return
	}
	trimmed := bytes.TrimSpace(body)
	if bytes.Equal(trimmed, []byte("null")) {
		// The real route reads body.argv of null and throws.
		writeInternalError(w)
		return
	}
	var fields map[string]json.RawMessage
	if trimmed[0] == '{' {
		_ = json.Unmarshal(trimmed, &fields)
	}
	var items []json.RawMessage
	if raw, ok := fields["argv"]; !ok || json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		writeError(w, http.StatusBadRequest, "argv must be a non-empty array", "invalid_request")
		return
	}
	argv := make([]string, len(items))
	for i, it := range items {
		if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &argv[i]) != nil {
			writeError(w, http.StatusBadRequest, "argv items must be strings", "invalid_request")
			return
		}
	}
	if argv[0] == "" {
		writeError(w, http.StatusBadRequest, "argv executable must be non-empty", "invalid_request")
		return
	}
	var timeout float64
	if raw, ok := fields["timeout"]; ok {
		t, err := strconv.ParseFloat(string(raw), 64)
		if raw[0] == '"' || raw[0] == 'n' || raw[0] == 't' || raw[0] == 'f' || raw[0] == '[' || raw[0] == '{' ||
			err != nil || math.IsInf(t, 0) || math.IsNaN(t) || t <= 0 {
			writeError(w, http.StatusBadRequest, "timeout must be a positive finite number", "invalid_request")
			return
		}
		timeout = t
	}
	cwd := "/workspace"
	if raw, ok := fields["cwd"]; ok && len(raw) > 0 && raw[0] == '"' {
		var c string
		_ = json.Unmarshal(raw, &c)
		resolved, ok := resolveWorkspacePath(c)
		if !ok {
			writeError(w, http.StatusForbidden, "cwd must resolve to a location within /workspace", "invalid_request")
			return
		}
		if _, ok := confine(inc.workspace, resolved); !ok {
			// A symlink inside the workspace may not lead out of it either.
			writeError(w, http.StatusForbidden, "cwd must resolve to a location within /workspace", "invalid_request")
			return
		}
		cwd = resolved
	}
	var env map[string]string
	if raw, ok := fields["env"]; ok {
		var m map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
			writeError(w, http.StatusBadRequest, "env must be an object of strings", "invalid_request")
			return
		}
		env = make(map[string]string, len(m))
		for k, v := range m {
			var sv string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &sv) != nil {
				writeError(w, http.StatusBadRequest, "env must be an object of strings", "invalid_request")
				return
			}
			env[k] = sv
		}
	}
	p, err := s.launch(inc, argv, cwd, env, timeout)
	if err != nil {
		writeError(w, http.StatusBadGateway, "process launch failed: "+err.Error(), "process_error")
		return
	}
	writeJSON(w, http.StatusOK, p.status())
}

// launch starts argv in its own process group inside the incarnation.
func (s *Server) launch(inc *incarnation, argv []string, cwd string, overlay map[string]string, timeoutMS float64) (*process, error) {
	if timeoutMS > 0 && timeoutMS < 1 {
		return nil, errors.New("timeout must be at least 1 ms")
	}
	if _, bad := badEnvEntry(overlay); bad {
		return nil, errors.New("invalid environment variable name or value")
	}
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return nil, errors.New("argv must not contain NUL bytes")
		}
	}
	dir, ok := confine(inc.workspace, cwd)
	if !ok {
		return nil, errors.New("cwd escapes the workspace")
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, errors.New("ENOENT: no such file or directory, cwd " + cwd)
	} else if !fi.IsDir() {
		return nil, errors.New("ENOTDIR: not a directory, cwd " + cwd)
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		lp, err := lookPathIn(path, overlay)
		if err != nil {
			return nil, errors.New("executable not found: " + argv[0])
		}
		path = lp
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	growPipe(outR)
	growPipe(errR)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, err
	}
	iso := DetectIsolation()
	home, pwd := inc.workspace, dir
	if iso.Namespaces {
		home, pwd = "/workspace", cwd
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Dir:         dir,
		Env:         childEnv(home, pwd, overlay),
		Stdin:       devnull,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	statusR, closeStatusW, err := iso.supervised(cmd, inc.workspace, pwd)
	if err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW, devnull} {
			f.Close()
		}
		return nil, err
	}
	interrupted := errors.New("Sandbox operation process.start was interrupted because the runtime changed")
	inc.mu.Lock()
	ended := inc.endedFlag
	inc.mu.Unlock()
	if ended {
		closeStatusW()
		for _, f := range []*os.File{outR, outW, errR, errW, devnull, statusR.f} {
			f.Close()
		}
		return nil, interrupted
	}
	err = startChild(cmd, cmd.Start, iso.pdeathsig())
	closeStatusW()
	outW.Close()
	errW.Close()
	devnull.Close()
	if err == nil {
		// Wait for the supervisor: once it is ready, a signal to the group reaches the command and
		// cannot kill the supervisor half-started.
		if err = statusR.ready(); err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}
	if err != nil {
		outR.Close()
		errR.Close()
		statusR.f.Close()
		return nil, err
	}
	id := newUUID()
	p := &process{id: id, inc: inc, pid: cmd.Process.Pid, command: argv, cwd: cwd, startedAt: time.Now(),
		log: seqlog.New(id, s.cfg.ProcessLogBytes, s.cfg.ProcessLogEvents), state: "running"}
	inc.mu.Lock()
	if inc.endedFlag {
		// the incarnation ended while the process started: it ends with it
		inc.mu.Unlock()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		outR.Close()
		errR.Close()
		statusR.f.Close()
		return nil, interrupted
	}
	inc.procs[id] = p
	s.procWG.Add(1)
	inc.mu.Unlock()
	go s.supervise(p, cmd, outR, errR, statusR, timeoutMS)
	return p, nil
}

// lookPathIn resolves a bare command name against PATH (the overlay's PATH when it sets one).
func lookPathIn(name string, overlay map[string]string) (string, error) {
	pathEnv := os.Getenv("PATH")
	if v, ok := overlay["PATH"]; ok {
		pathEnv = v
	}
	if pathEnv == "" {
		pathEnv = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue
		}
		cand := filepath.Join(dir, name)
		if fi, err := os.Stat(cand); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", exec.ErrNotFound
}

// supervise pumps the pipes into the log, applies the timeout, and records the ending once the
// root exited, the whole group is gone and the pipes are drained.
func (s *Server) supervise(p *process, cmd *exec.Cmd, outR, errR *os.File, statusR *statusPipe, timeoutMS float64) {
	defer s.procWG.Done()
	var pumps sync.WaitGroup
	pump := func(f *os.File, kind seqlog.Kind) {
		defer pumps.Done()
		size := s.cfg.ProcessReadSize
		if size <= 0 {
			size = 256 << 10
		}
		buf := make([]byte, size)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				p.log.Append(kind, buf[:n])
			}
			if err != nil {
				return
			}
		}
	}
	pumps.Add(2)
	go pump(outR, seqlog.Stdout)
	go pump(errR, seqlog.Stderr)

	finished := make(chan struct{})
	if timeoutMS > 0 {
		d := time.Duration(timeoutMS * float64(time.Millisecond))
		t := time.AfterFunc(d, func() {
			p.mu.Lock()
			p.timedOut = true
			p.mu.Unlock()
			p.signalGroup(syscall.SIGTERM)
			select {
			case <-finished:
			case <-time.After(time.Second):
				p.signalGroup(syscall.SIGKILL)
			}
		})
		defer t.Stop()
	}
	defer close(finished)

	_ = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	// the supervisor reports the command's own ending; without a report (the supervisor itself
	// was killed, e.g. by SIGKILL to the group) its wait status stands
	st := statusR.result()

	// The process stays running until every member of its group is gone.
	var groupErr error
	delay := 2 * time.Millisecond
	for {
		alive, err := groupAlive(p.pid)
		if err != nil {
			groupErr = err
			break
		}
		if !alive {
			break
		}
		time.Sleep(delay)
		if delay < 100*time.Millisecond {
			delay *= 2
		}
	}
	p.mu.Lock()
	p.groupGone = true
	p.mu.Unlock()

	// Drain what the group wrote. A process that left the group may still hold a pipe open; give
	// it a moment, then stop reading.
	drained := make(chan struct{})
	go func() { pumps.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()

	p.mu.Lock()
	p.endedAt = time.Now()
	var fe finalEvent
	if groupErr != nil {
		p.state = "error"
		p.errInfo = &errorJSON{Code: "PROCESS_GROUP_CHECK_FAILED", Message: groupErr.Error()}
		fe = finalEvent{state: "error", err: p.errInfo}
	} else {
		ex := &exitJSON{TimedOut: p.timedOut}
		switch {
		case st.ok && st.failure != "":
			ex.Code = 127
		case st.ok:
			ex.Code, ex.Signal = st.code, st.signal
		case ws.Signaled():
			ex.Signal = int(ws.Signal())
			ex.Code = 128 + ex.Signal
		default:
			ex.Code = ws.ExitStatus()
		}
		p.state = "exited"
		p.exit = ex
		fe = finalEvent{state: "exited", exit: ex}
	}
	p.mu.Unlock()
	p.log.Finish(fe)
	p.inc.evictFinished()
}

// groupAlive reports whether process group pgid still has a live (non-zombie) member.
func groupAlive(pgid int) (bool, error) {
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false, nil
	}
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false, err
	}
	// kill also succeeds for zombies no one reaps yet; look at the process table when we can.
	live, ok := liveGroupMembers(pgid)
	if !ok {
		return true, nil
	}
	return live, nil
}

// liveGroupMembers looks for a member of pgid that is not a zombie. ok is false when the process
// table cannot be read.
func liveGroupMembers(pgid int) (live, ok bool) {
	ok = eachProc(func(pi procInfo) bool {
		live = pi.pgrp == pgid && pi.state != 'Z' && pi.state != 'X'
		return !live
	})
	return live, ok
}

// handleListProcesses: GET /processes (lookup).
func (s *Server) handleListProcesses(w http.ResponseWriter, inc *incarnation) {
	if inc == nil {
		writeJSON(w, http.StatusOK, []processJSON{})
		return
	}
	writeJSON(w, http.StatusOK, inc.listProcesses())
}

func decodePathParam(raw string) string {
	if v, err := url.PathUnescape(raw); err == nil {
		return v
	}
	return raw
}

func (s *Server) findProcess(w http.ResponseWriter, inc *incarnation, rawID string) *process {
	var p *process
	if inc != nil {
		p = inc.getProcess(decodePathParam(rawID))
	}
	if p == nil {
		writeError(w, http.StatusNotFound, "Process not found", "not_found")
	}
	return p
}

// handleGetProcess: GET /processes/{pid} (lookup).
func (s *Server) handleGetProcess(w http.ResponseWriter, inc *incarnation, rawID string) {
	if p := s.findProcess(w, inc, rawID); p != nil {
		writeJSON(w, http.StatusOK, p.status())
	}
}

// handleKill: POST /processes/{pid}/kill (lookup). The body counts only with a Content-Type.
func (s *Server) handleKill(w http.ResponseWriter, r *http.Request, inc *incarnation, rawID string) {
	p := s.findProcess(w, inc, rawID)
	if p == nil {
		return
	}
	sig := 15
	if r.Header.Get("Content-Type") != "" {
		body, err := readLimited(r, maxJSONBody)
		if err != nil || !json.Valid(body) {
			writeError(w, http.StatusBadRequest, "Invalid JSON body", "invalid_request")
			return
		}
		body = bytes.TrimSpace(body)
		var fields map[string]json.RawMessage
		if body[0] != '{' || json.Unmarshal(body, &fields) != nil {
			writeError(w, http.StatusBadRequest, "Request body must be an object", "invalid_request")
			return
		}
		if raw, ok := fields["signal"]; ok {
			f, err := strconv.ParseFloat(string(raw), 64)
			if err != nil || raw[0] == '"' || f != math.Trunc(f) || f < 1 || f > 64 {
				writeError(w, http.StatusBadRequest, "signal must be an integer between 1 and 64", "invalid_request")
				return
			}
			sig = int(f)
		}
	}
	p.mu.Lock()
	state := p.state
	p.mu.Unlock()
	switch state {
	case "error":
		writeInternalError(w)
		return
	case "running":
		p.signalGroup(syscall.Signal(sig))
	}
	w.WriteHeader(http.StatusNoContent)
}

// readLimited reads the request body up to limit bytes (more is an error).
func readLimited(r *http.Request, limit int64) ([]byte, error) {
	b, err := readAtMost(r, limit)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errors.New("body too large")
	}
	return b, nil
}
