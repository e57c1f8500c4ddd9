package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the record's database driver

	"sandscope/client"
	"sandscope/record"
)

// captureProducer writes realistic lines at a steady pace (about 100 KB/s) until killed.
var captureProducer = []string{"sh", "-c",
	`while :; do yes 'capture benchmark line 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ' | head -c 50000; sleep 0.5; done`}

// figCapture: 11b. The TUI opens on a bridge where one known sandbox runs 20 chatty processes and
// captures their output in the background (at most MaxCaptures at once); its CPU over a window
// is divided by the bytes the record kept. The baseline is 20 `curl -N` readers of the same
// streams over the same window: their CPU per MB read.
func figCapture(e *env) (row, error) {
	r := row{fig: "11b", name: "TUI background capture, 20 running processes (8 at once)", budget: "≤ 2× curl's CPU per MB"}
	if e.curl == "" {
		r.result, r.note = notMeas, "curl not installed"
		return r, nil
	}
	ctx := context.Background()
	b, err := e.newBridge(filepath.Join(e.tmp, "bridge-capture"))
	if err != nil {
		return r, err
	}
	defer b.close()
	const sb = "capturebench"
	var ids []string
	for i := 0; i < 20; i++ {
		p, err := b.c.StartProcess(ctx, sb, client.ExecRequest{Argv: captureProducer})
		if err != nil {
			return r, fmt.Errorf("start a producer: %w", err)
		}
		ids = append(ids, p.ID)
	}
	defer b.killAll(sb)
	window := pick(e, 4*time.Second, 10*time.Second)

	// two process pipelines (the TUI, 20 curls) on a shared machine: three runs, the median ratio
	var ratios, perMBs, curlPerMBs, mbs []float64
	for i := 0; i < pipelineRuns; i++ {
		perMB, curlPerMB, got, note, err := e.captureOnce(b, sb, ids, window, filepath.Join(e.tmp, fmt.Sprintf("xdg-capture-%d", i)))
		if err != nil {
			return r, err
		}
		if note != "" {
			r.result, r.note = fail, note
			return r, nil
		}
		e.logf("11b run %d: %.1f ms per MB, curl %.1f ms per MB (%.2f×), load %s", i+1, perMB, curlPerMB, perMB/curlPerMB, loadAvg())
		ratios, perMBs, curlPerMBs, mbs = append(ratios, perMB/curlPerMB), append(perMBs, perMB), append(curlPerMBs, curlPerMB), append(mbs, got)
	}
	ratio := median(ratios)
	r.value = fmt.Sprintf("%.1f ms CPU per MB (%.1f MB captured)", median(perMBs), median(mbs))
	r.baseline = fmt.Sprintf("20× curl -N %.1f ms per MB", median(curlPerMBs))
	r.ratio = f2(ratio) + "× (median of 3)"
	r.result = verdict(ratio <= 2)
	return r, nil
}

// captureOnce measures 20 curl readers for the window, then the TUI capturing the same streams
// (a fresh state directory under xdg) for the window: CPU per MB for each, the MB the TUI
// captured, or a note saying why nothing could be measured.
func (e *env) captureOnce(b *bridge, sb string, ids []string, window time.Duration, xdg string) (perMB, curlPerMB, mb float64, note string, err error) {
	curlCPU, curlBytes, err := e.curlWindow(b, sb, ids, window)
	if err != nil {
		return 0, 0, 0, "", err
	}
	stateDir := filepath.Join(xdg, "state", "sandscope")
	if err := writeKnown(stateDir, b.url, []string{sb}); err != nil {
		return 0, 0, 0, "", err
	}
	t, err := e.startTUI(xdg, "Sandboxes (1)", "--url", b.url, "--token-file", b.tokFile)
	if err != nil {
		return 0, 0, 0, "", err
	}
	defer t.stop()
	if _, err := t.waitSeen(20 * time.Second); err != nil {
		return 0, 0, 0, "", err
	}
	// open the sandbox and wait for capture to begin
	if err := t.openSelected(); err != nil {
		return 0, 0, 0, "", err
	}
	if err := waitCaptured(stateDir, b.url, sb); errors.Is(err, errNotCaptured) {
		return 0, 0, 0, err.Error(), nil
	} else if err != nil {
		return 0, 0, 0, "", err
	}
	time.Sleep(time.Second)
	db, err := openRecordOf(stateDir, b.url)
	if err != nil {
		return 0, 0, 0, "", err
	}
	defer db.Close()
	// The window runs from one commit of captured output to another: the record commits output
	// in rounds, and bytes read between them would count a round's bytes or not by chance.
	pid := t.cmd.Process.Pid
	before, c0, runs0, err := atCommit(db, sb, pid)
	if err != nil {
		return 0, 0, 0, "", err
	}
	start := time.Now()
	if out := os.Getenv("SANDSCOPE_BENCH_PERF"); out != "" {
		// profile the TUI over the window: perf record -g into this file (11b's profile)
		p := exec.Command("perf", "record", "-F", "9999", "-g", "-p", strconv.Itoa(pid), "-o", out, "--", "sleep", strconv.Itoa(int(window.Seconds())))
		if err := p.Start(); err == nil {
			defer func() { _ = p.Wait() }()
		}
	}
	time.Sleep(window)
	after, c1, runs1, err := atCommit(db, sb, pid)
	took := time.Since(start)
	t.stop()
	if err != nil {
		return 0, 0, 0, "", err
	}
	e.logf("11b TUI: %.2f ms of CPU a second, %.0f wake-ups a second, %.2f MB a second captured over %.1f s",
		(c1-c0).Seconds()*1000/took.Seconds(), float64(runs1-runs0)/took.Seconds(), float64(after-before)/1e6/took.Seconds(), took.Seconds())
	got := after - before
	if got <= 0 {
		return 0, 0, 0, "the record captured nothing", nil
	}
	perMB = (c1 - c0).Seconds() * 1000 / (float64(got) / 1e6)
	curlPerMB = curlCPU.Seconds() * 1000 / (float64(curlBytes) / 1e6)
	return perMB, curlPerMB, float64(got) / 1e6, "", nil
}

// curlWindow follows the processes' logs live with one curl each and returns the CPU the readers
// used, and the bytes of output they read (decoded from the events, as the TUI's side counts the
// bytes the record kept; the wire carries them base64-encoded, about 1.37 times as many), over
// the window. As on the TUI's side, the window begins a
// second after the readers started: neither side's start (a process start each for curl, 20 of
// them) nor the replay of what the bridge retained before it counts, only following live output.
func (e *env) curlWindow(b *bridge, sb string, ids []string, window time.Duration) (time.Duration, int64, error) {
	var mu sync.Mutex
	var cpu time.Duration
	var total int64
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(e.curl, "-sSN", "-H", "@"+b.hdrFile, b.url+"/v1/sandbox/"+sb+"/processes/"+id+"/logs?follow=true")
			var cnt outputCounter
			cmd.Stdout = &cnt
			if err := cmd.Start(); err != nil {
				errs <- err
				return
			}
			defer func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				_ = cmd.Wait()
			}()
			time.Sleep(time.Second)
			c0, err0 := cpuTime(cmd.Process.Pid)
			n0 := cnt.load()
			time.Sleep(window)
			c1, err1 := cpuTime(cmd.Process.Pid)
			n1 := cnt.load()
			if err := errors.Join(err0, err1); err != nil {
				errs <- fmt.Errorf("curl's CPU time: %w", err)
				return
			}
			mu.Lock()
			cpu += c1 - c0
			total += n1 - n0
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, err
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("curl read nothing from the capture producers")
	}
	return cpu, total, nil
}

// capturedBytes is what the record of bridgeURL holds of sandbox sb's processes' output, counting bytes
// later removed to keep its budget. It reads the record's captures table read-only, so the TUI
// that writes it is not disturbed.
func capturedBytes(stateDir, bridgeURL, sb string) (int64, error) {
	path := recordFileOf(stateDir, bridgeURL)
	if _, err := os.Stat(path); err != nil {
		return 0, nil // not created yet: nothing captured
	}
	db, err := openRecordOf(stateDir, bridgeURL)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return sandboxCaptured(db, sb)
}

// recordFileOf is the TUI's record file in stateDir. The record is named after the bridge's
// identity (its ID when it reports one, not its URL): the state directory is this run's own, so
// its one record file is the TUI's.
func recordFileOf(stateDir, bridgeURL string) string {
	if m, _ := filepath.Glob(filepath.Join(stateDir, "record", "*.db")); len(m) == 1 {
		return m[0]
	}
	return record.FileFor(filepath.Join(stateDir, "record"), bridgeURL)
}

func openRecordOf(stateDir, bridgeURL string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+recordFileOf(stateDir, bridgeURL)+"?_pragma=busy_timeout(5000)&mode=ro")
	if err != nil {
		return nil, fmt.Errorf("open the record: %w", err)
	}
	return db, nil
}

// sandboxCaptured is the output captured of sandbox sb's processes so far (kept or dropped).
func sandboxCaptured(db *sql.DB, sb string) (int64, error) {
	var n int64
	if err := db.QueryRow("SELECT COALESCE(SUM(bytes + dropped), 0) FROM captures WHERE sandbox = ?", sb).Scan(&n); err != nil {
		return 0, fmt.Errorf("captured output of %s: %w", sb, err)
	}
	return n, nil
}

// atCommit waits (5 s at most) for the record's next commit of captured output, then reads what
// it holds and the TUI's CPU time and wake-ups at once.
func atCommit(db *sql.DB, sb string, pid int) (bytes int64, cpu time.Duration, runs int64, err error) {
	was, err := sandboxCaptured(db, sb)
	if err != nil {
		return 0, 0, 0, err
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n, err := sandboxCaptured(db, sb)
		if err != nil {
			return 0, 0, 0, err
		}
		if n != was || time.Now().After(deadline) {
			cpu, runs, err := schedStat(pid)
			return n, cpu, runs, err
		}
	}
}

// outputCounter counts the bytes of process output in an SSE stream written to it: each event's
// decoded "data" field (the wire's base64 and framing are not output). load may be called while
// it runs.
type outputCounter struct {
	n    atomic.Int64
	line []byte
}

func (w *outputCounter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.line = append(w.line, p...)
			break
		}
		w.line = append(w.line, p[:i]...)
		p = p[i+1:]
		if payload, ok := bytes.CutPrefix(w.line, []byte("data:")); ok {
			var ev struct {
				Data []byte `json:"data"`
			}
			if json.Unmarshal(bytes.TrimSpace(payload), &ev) == nil {
				w.n.Add(int64(len(ev.Data)))
			}
		}
		w.line = w.line[:0]
	}
	return n, nil
}

func (w *outputCounter) load() int64 { return w.n.Load() }
