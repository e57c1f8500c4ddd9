package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"

	"sandscope/client"
)

// tui is the real binary running under a 160×48 pseudo-terminal, its output drained (and
// searched for a marker) so it never blocks on a full terminal.
type tui struct {
	cmd    *exec.Cmd
	pty    *os.File
	start  time.Time
	done   chan struct{}
	mu     sync.Mutex
	marker []byte
	tail   []byte // enough of the output to find the marker across reads
	seenAt time.Time
	seen   chan struct{}
	bytes  int64
	recent []byte // the latest output

	stopped bool
}

// forget drops the output so far: waitFor looks at what comes after.
func (t *tui) forget() {
	t.mu.Lock()
	t.recent = t.recent[:0]
	t.mu.Unlock()
}

// waitFor waits until the output since the last forget contains marker.
func (t *tui) waitFor(marker string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		t.mu.Lock()
		ok := bytes.Contains(t.recent, []byte(marker))
		t.mu.Unlock()
		if ok {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = os.WriteFile(filepath.Join(os.TempDir(), "sandscope-bench-tui.out"), t.recent, 0o600)
	return fmt.Errorf("the TUI did not draw %q within %v (its output is in %s)", marker, limit, filepath.Join(os.TempDir(), "sandscope-bench-tui.out"))
}

func (e *env) startTUI(xdgDir, marker string, args ...string) (*tui, error) {
	return e.startTUIWith(e.bin, xdgDir, marker, args...)
}

// startTUIWith starts the TUI of binary bin (another build than the bench's, for --against).
func (e *env) startTUIWith(bin, xdgDir, marker string, args ...string) (*tui, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = e.cleanEnv(xdgDir)
	t := &tui{cmd: cmd, done: make(chan struct{}), marker: []byte(marker), seen: make(chan struct{})}
	t.start = time.Now()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 160, Rows: 48})
	if err != nil {
		return nil, fmt.Errorf("start the TUI: %w", err)
	}
	t.pty = f
	go t.drain()
	return t, nil
}

func (t *tui) drain() {
	defer close(t.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := t.pty.Read(buf)
		if n > 0 {
			now := time.Now()
			t.answer(buf[:n])
			t.mu.Lock()
			t.bytes += int64(n)
			t.recent = append(t.recent, buf[:n]...)
			if len(t.recent) > 1<<20 {
				t.recent = append(t.recent[:0], t.recent[len(t.recent)-64<<10:]...)
			}
			if t.seenAt.IsZero() {
				t.tail = append(t.tail, buf[:n]...)
				if bytes.Contains(t.tail, t.marker) {
					t.seenAt = now
					close(t.seen)
				} else if len(t.tail) > 4096 {
					t.tail = append(t.tail[:0], t.tail[len(t.tail)-len(t.marker):]...)
				}
			}
			t.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// answer replies to the queries a terminal answers at start-up (the background colour, the
// cursor position), as a dark terminal would: without replies the TUI waits for them.
func (t *tui) answer(p []byte) {
	if bytes.Contains(p, []byte("\x1b]11;?")) {
		_, _ = t.pty.Write([]byte("\x1b]11;rgb:0000/0000/0000\x1b\\"))
	}
	if bytes.Contains(p, []byte("\x1b[6n")) {
		_, _ = t.pty.Write([]byte("\x1b[1;1R"))
	}
}

// openSelected opens the sandbox under the sandboxes screen's cursor (enter) and waits for its
// screen; the sandbox is then watched closely and its running processes captured.
func (t *tui) openSelected() error {
	t.forget()
	_, _ = t.pty.Write([]byte("\r"))
	if err := t.waitFor("Terminals (", 5*time.Second); err != nil {
		return fmt.Errorf("open the sandbox: %w", err)
	}
	return nil
}

// waitSeen waits for the marker and returns the time from start to the output that held it.
func (t *tui) waitSeen(limit time.Duration) (time.Duration, error) {
	select {
	case <-t.seen:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.seenAt.Sub(t.start), nil
	case <-t.done:
		return 0, fmt.Errorf("the TUI ended before drawing %q", t.marker)
	case <-time.After(limit):
		return 0, fmt.Errorf("the TUI did not draw %q within %v", t.marker, limit)
	}
}

func (t *tui) output() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bytes
}

// stop quits with q (the way a user does), and kills the TUI if it does not end.
func (t *tui) stop() {
	if t.stopped {
		return
	}
	t.stopped = true
	_, _ = t.pty.Write([]byte("q"))
	select {
	case <-t.done:
	case <-time.After(3 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.done
	}
	_ = t.cmd.Wait()
	t.pty.Close()
}

// cpuTime is the CPU the process has used so far (all threads, nanosecond resolution).
func cpuTime(pid int) (time.Duration, error) {
	cpu, _, err := schedStat(pid)
	return cpu, err
}

// schedStat is the CPU time of all threads of process pid so far, and how many times they were
// put on a CPU (each a wake-up, or a preemption's return).
func schedStat(pid int) (time.Duration, int64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0, err
	}
	var total, runs int64
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) > 2 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			n, _ := strconv.ParseInt(f[2], 10, 64)
			total, runs = total+v, runs+n
		}
	}
	return time.Duration(total), runs, nil
}

// Figure 9: from exec to the first frame of the sandboxes screen, on the bench bridge and with the
// embedded bridge the TUI starts itself, against exec to exit of `sandscope --version`.
func figStartup(e *env) ([]row, error) {
	runs := pick(e, 3, 11)
	var base []time.Duration
	for i := 0; i < runs; i++ {
		cmd := exec.Command(e.bin, "--version")
		cmd.Env = e.cleanEnv(filepath.Join(e.tmp, "xdg-version"))
		d, err := timeRun(cmd)
		if err != nil {
			return nil, err
		}
		base = append(base, d)
	}
	b := medianDur(base)
	var rows []row
	for _, mode := range []struct {
		label, dir string
		args       []string
	}{
		{"9a", "xdg-start-remote", []string{"--url", e.url, "--token-file", e.tokFile}},
		{"9b", "xdg-start-embedded", nil},
	} {
		var ds []time.Duration
		for i := 0; i < runs; i++ {
			t, err := e.startTUI(filepath.Join(e.tmp, mode.dir), "Sandboxes (", mode.args...)
			if err != nil {
				return nil, err
			}
			d, err := t.waitSeen(10 * time.Second)
			t.stop()
			if err != nil {
				return nil, err
			}
			ds = append(ds, d)
		}
		d := medianDur(ds)
		name := "start to first frame, bridge already running"
		if mode.args == nil {
			name = "start to first frame, embedded bridge"
		}
		rows = append(rows, row{fig: mode.label, name: name, value: ms(d) + " (median)",
			baseline: "sandscope --version " + ms(b), ratio: fmt.Sprintf("+%s", ms(d-b)),
			budget: "≤ 150 ms", result: verdict(d <= 150*time.Millisecond)})
	}
	return rows, nil
}

// Figure 10: CPU the TUI uses while nothing happens, with 10 known sandboxes (5 processes
// running in one of them), on the sandboxes screen and on the sandbox screen of the busy one. It
// uses a bridge of its own, so the screen lists exactly those 10.
func figIdle(e *env) ([]row, error) {
	ctx := context.Background()
	b, err := e.newBridge(filepath.Join(e.tmp, "bridge-idle"))
	if err != nil {
		return nil, err
	}
	defer b.close()
	var ids []string
	for i := 0; i < 10; i++ {
		ids = append(ids, "idle"+string(rune('a'+i))+"bench")
	}
	for i := 0; i < 5; i++ {
		if _, err := b.c.StartProcess(ctx, ids[0], client.ExecRequest{Argv: []string{"sleep", "3600"}}); err != nil {
			return nil, fmt.Errorf("start a process: %w", err)
		}
	}
	defer b.killAll(ids[0])
	for _, id := range ids[1:] {
		if _, err := b.c.ListProcesses(ctx, id); err != nil { // makes the sandbox exist
			return nil, fmt.Errorf("sandbox %s: %w", id, err)
		}
	}
	xdg := filepath.Join(e.tmp, "xdg-idle")
	if err := writeKnown(filepath.Join(xdg, "state", "sandscope"), b.url, ids); err != nil {
		return nil, err
	}
	t, err := e.startTUI(xdg, "Sandboxes (10)", "--url", b.url, "--token-file", b.tokFile)
	if err != nil {
		return nil, err
	}
	defer t.stop()
	if _, err := t.waitSeen(10 * time.Second); err != nil {
		return nil, err
	}
	window := pick(e, 4*time.Second, 20*time.Second)
	measure := func() (float64, float64, error) {
		time.Sleep(pick(e, time.Second, 3*time.Second)) // let it settle
		c0, err := cpuTime(t.cmd.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		o0, t0 := t.output(), time.Now()
		time.Sleep(window)
		c1, err := cpuTime(t.cmd.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		el := time.Since(t0).Seconds()
		return (c1 - c0).Seconds() / el * 100, float64(t.output()-o0) / el, nil
	}
	list, listOut, err := measure()
	if err != nil {
		return nil, err
	}
	// open the busy sandbox: it sorts first
	if err := t.openSelected(); err != nil {
		return nil, err
	}
	busy, busyOut, err := measure()
	if err != nil {
		return nil, err
	}
	return []row{
		{fig: "10a", name: "idle CPU, sandboxes screen, 10 sandboxes", value: fmt.Sprintf("%.2f %% of a core", list),
			baseline: fmt.Sprintf("%.0f B/s to the terminal", listOut), budget: "≤ 0.5 %", result: verdict(list <= 0.5)},
		{fig: "10b", name: "idle CPU, sandbox screen, 5 processes running", value: fmt.Sprintf("%.2f %% of a core", busy),
			baseline: fmt.Sprintf("%.0f B/s to the terminal", busyOut), budget: "≤ 0.5 %", result: verdict(busy <= 0.5)},
	}, nil
}

func (b *bridge) killAll(sandbox string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ps, err := b.c.ListProcesses(ctx, sandbox)
	if err != nil {
		return
	}
	for _, p := range ps {
		if p.State == "running" {
			_ = b.c.KillProcess(ctx, sandbox, p.ID, 9)
		}
	}
}

// writeKnown stores the sandboxes the TUI remembers for bridgeURL, the way the sandboxes screen does.
func writeKnown(stateDir, bridgeURL string, ids []string) error {
	type known struct {
		ID      string    `json:"id"`
		Source  string    `json:"source"`
		AddedAt time.Time `json:"addedAt"`
	}
	f := struct {
		Version   int     `json:"version"`
		Bridge    string  `json:"bridge"`
		Sandboxes []known `json:"sandboxes"`
	}{Version: 1, Bridge: bridgeURL}
	for _, id := range ids {
		f.Sandboxes = append(f.Sandboxes, known{ID: id, Source: "added", AddedAt: time.Now()})
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(bridgeURL))
	path := filepath.Join(stateDir, "known", hex.EncodeToString(sum[:8])+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
