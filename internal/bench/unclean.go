package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// uncleanOpenNotice is the part of the record's notice that says the last run did not close it.
const uncleanOpenNotice = "ended without closing the record"

// scaleCrash is what the bench binary does when started with -scale-crash DIR: open the record
// there as sandscope does, commit one event of this run (so the file's WAL holds frames no
// checkpoint took and the run is started, not ended), say "open" on stdout, and wait to be
// killed. Killed, it leaves the record as a sandscope killed while it had it open does.
func scaleCrash(dir string, runs int) int {
	r, err := record.Open(record.Options{Dir: dir, Bridge: scaleBridge, Budget: record.ScaleBudget()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale crash:", err)
		return 1
	}
	s := scaleSpec(runs)
	r.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: s.SandboxName(0),
		Time: time.Now(), Incarnation: client.Incarnation{Number: 1}}))
	if err := r.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "scale crash:", err)
		return 1
	}
	fmt.Println("open")
	select {} // until killed: the record is never closed
}

// uncleanProbe is what the bench binary does when started with -unclean-probe DIR: open the record
// a killed run left there, timed to the end of Open ("unclean-open"), and to the end of the
// writer's first commit ("unclean-ready": a large record's check, left by Open to the writer, comes
// before it), then close it. It fails when the record did not report the unclean end.
func uncleanProbe(dir string) int { return openProbe(dir, record.ScaleBudget(), uncleanOpenNotice) }

// overBudgetProbe is what the bench binary does when started with -over-budget-probe DIR: open
// the record there with the default budget (far less than it holds: the budget lowered, weeks
// away), timed as uncleanProbe times it, and close it while its pruning goes on.
func overBudgetProbe(dir string) int { return openProbe(dir, record.Budget{}, "") }

// openProbe opens the record in dir with budget, timed to the end of Open ("unclean-open") and
// of the writer's first commit ("unclean-ready"), then closes it; it fails when the record's
// notices lack notice.
func openProbe(dir string, budget record.Budget, notice string) int {
	t := time.Now()
	r, err := record.Open(record.Options{Dir: dir, Bridge: scaleBridge, Budget: budget})
	if err != nil {
		fmt.Fprintln(os.Stderr, "unclean probe:", err)
		return 1
	}
	opened := time.Since(t)
	r.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.SandboxStarted, Sandbox: "probe",
		Time: time.Now(), Incarnation: client.Incarnation{Number: 1}}))
	if err := r.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "unclean probe:", err)
		return 1
	}
	ready := time.Since(t)
	notices := r.Notices()
	if err := r.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "unclean probe:", err)
		return 1
	}
	if !strings.Contains(strings.Join(notices, "\n"), notice) {
		fmt.Fprintf(os.Stderr, "unclean probe: the record did not report the killed run (notices: %q)\n", notices)
		return 1
	}
	fmt.Printf("step unclean-open %.3f\n", opened.Seconds()*1000)
	fmt.Printf("step unclean-ready %.3f\n", ready.Seconds()*1000)
	return 0
}

// probeOverBudget times the open of the record in dir with the default budget (overBudgetProbe),
// in a process of its own: "unclean-open" and "unclean-ready" in ms. The record is pruned from then
// on: it runs last.
func (e *env) probeOverBudget(dir string) (open, ready float64, err error) {
	return e.runOpenProbe("-over-budget-probe", dir)
}

// probeUnclean kills a process holding the record in dir open (scaleCrash), then times the next
// open in a process of its own (uncleanProbe): its "unclean-open" and "unclean-ready" in ms.
func (e *env) probeUnclean(dir string, runs int) (open, ready float64, err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	crash := exec.Command(self, "-scale-crash", dir, "-scale-runs", strconv.Itoa(runs))
	crash.Stderr = os.Stderr
	out, err := crash.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := crash.Start(); err != nil {
		return 0, 0, fmt.Errorf("unclean open: %w", err)
	}
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- strings.TrimSpace(line)
	}()
	var line string
	select {
	case line = <-said:
	case <-time.After(2 * time.Minute):
	}
	_ = crash.Process.Signal(syscall.SIGKILL)
	_ = crash.Wait()
	if line != "open" {
		return 0, 0, fmt.Errorf("unclean open: the process to kill never had the record open (%q)", line)
	}
	return e.runOpenProbe("-unclean-probe", dir)
}

// runOpenProbe runs the bench binary with flag dir and reads the open's timings it prints.
func (e *env) runOpenProbe(flag, dir string) (open, ready float64, err error) {
	steps, out, err := e.runProbe(flag, dir)
	if err != nil {
		return 0, 0, err
	}
	o, ok1 := steps["unclean-open"]
	r, ok2 := steps["unclean-ready"]
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("%s: no timing in %q", flag, out)
	}
	return o, r, nil
}
