package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"sandscope/client"
)

// A side-by-side run (scripts/bench --against REV) compares the TUI built from another revision
// with the TUI built from this tree on the same bridge, the same processes and the same output,
// over the same windows of time. Figures 10 and 11b measure one TUI at a time against a baseline
// measured seconds before or after it; on a shared machine their ratios move by a third between
// runs of one tree, more than most single changes save. Two TUIs sampled at the same moments see
// the same machine: the same build on both sides reads within a few per cent.

// sideScenario is one workload both TUIs watch: the sandbox screen of one sandbox running 20
// processes started with argv.
type sideScenario struct {
	name, what string
	argv       []string
	captures   bool // the processes print: compare CPU per MB captured too
}

var sideScenarios = []sideScenario{
	{name: "quiet", what: "sandbox screen, 20 running processes that print nothing (8 captured at once)",
		argv: []string{"sleep", "3600"}},
	{name: "capture", what: "sandbox screen, 20 processes printing 100 KB/s each (figure 11b's; 8 captured at once)",
		argv: captureProducer, captures: true},
}

// sideTUI is one of the two TUIs of a side-by-side run.
type sideTUI struct {
	label string
	bin   string
	t     *tui
	state string // its state directory (the record is there)
	db    *sql.DB
}

// runAgainst builds rev, then runs each named scenario (all when none is named) in two legs of
// rounds windows of window each, printing one line per window and the median ratios to w.
func runAgainst(e *env, w io.Writer, rev string, names []string, rounds int, window time.Duration) error {
	if rounds < 1 || window < time.Second {
		return fmt.Errorf("--rounds must be at least 1 and --window at least 1s")
	}
	var run []sideScenario
	for _, s := range sideScenarios {
		if len(names) == 0 || slices.Contains(names, s.name) {
			run = append(run, s)
		}
	}
	if len(run) == 0 {
		return fmt.Errorf("no scenario named %q (there are quiet and capture)", strings.Join(names, ","))
	}
	old, desc, err := e.buildRev(rev)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "side by side: old = %s, new = this tree; 2 × %d windows of %v, both TUIs sampled at the same moments\n", desc, rounds, window)
	for _, s := range run {
		if err := e.sideBySide(w, s, old, rounds, window); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// buildRev builds sandscope as it was at rev (exported with git archive, so the working tree and
// its worktrees are left alone) and returns the binary and a description of the revision.
func (e *env) buildRev(rev string) (bin, desc string, err error) {
	out, err := exec.Command("git", "-C", e.repo, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("--against %s: not a commit of this repository", rev)
	}
	hash := strings.TrimSpace(string(out))
	desc = rev
	if !strings.HasPrefix(hash, rev) {
		desc = fmt.Sprintf("%s (%.12s)", rev, hash)
	}
	dir := filepath.Join(e.tmp, "against-src")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	tarball := filepath.Join(e.tmp, "against.tar")
	if out, err := exec.Command("git", "-C", e.repo, "archive", "-o", tarball, hash).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("git archive %s: %v %s", desc, err, out)
	}
	if out, err := exec.Command("tar", "-xf", tarball, "-C", dir).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("unpack %s: %v %s", desc, err, out)
	}
	bin = filepath.Join(e.tmp, "sandscope-against")
	e.logf("building sandscope at %s", desc)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build at %s: %v\n%s", desc, err, out)
	}
	return bin, desc, nil
}

// sideBySide runs one scenario twice, the old build started first and then the new one: which
// TUI starts first alone moved one build against itself by up to 12 % (quiet) and 4 % (capturing)
// in one leg, the same way window after window. The median is over the windows of both legs.
func (e *env) sideBySide(w io.Writer, s sideScenario, oldBin string, rounds int, window time.Duration) error {
	fmt.Fprintf(w, "\n%s: %s\n", s.name, s.what)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "window\told ms/s\twake-ups/s\tms per MB\tnew ms/s\twake-ups/s\tms per MB\tnew/old\tper MB\t")
	var ratios, perMBRatios []float64
	for leg, first := range []string{"old", "new"} {
		err := e.sideLeg(s, oldBin, first == "old", rounds, window, func(r int, old, cur sideSample) {
			ratio, perMB := cur.cpuPerSec/old.cpuPerSec, "-"
			ratios = append(ratios, ratio)
			if s.captures && old.mbPerSec > 0 && cur.mbPerSec > 0 {
				perMB = fmt.Sprintf("%.3f", cur.perMB()/old.perMB())
				perMBRatios = append(perMBRatios, cur.perMB()/old.perMB())
			}
			fmt.Fprintf(tw, "%d (%s first)\t%s\t%s\t%.3f\t%s\t\n", leg*rounds+r, first, old, cur, ratio, perMB)
		})
		if err != nil {
			return err
		}
	}
	medPerMB := "-"
	if len(perMBRatios) > 0 {
		medPerMB = fmt.Sprintf("%.3f", median(perMBRatios))
	}
	fmt.Fprintf(tw, "median\t\t\t\t\t\t\t%.3f\t%s\t\n", median(ratios), medPerMB)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "(load average %s)\n", loadAvg())
	return nil
}

// sideLeg runs one leg of a scenario: one bridge, its 20 processes, the two TUIs on the sandbox's
// screen (oldFirst: the old build starts and opens it first), then rounds windows in which both
// are sampled at the same moments, each handed to each.
func (e *env) sideLeg(s sideScenario, oldBin string, oldFirst bool, rounds int, window time.Duration, each func(r int, old, cur sideSample)) error {
	const sb = "sidebyside"
	order := "old-first"
	if !oldFirst {
		order = "new-first"
	}
	b, err := e.newBridge(filepath.Join(e.tmp, "bridge-"+s.name+"-"+order))
	if err != nil {
		return err
	}
	defer b.close()
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if _, err := b.c.StartProcess(ctx, sb, client.ExecRequest{Argv: s.argv}); err != nil {
			return fmt.Errorf("start a process: %w", err)
		}
	}
	defer b.killAll(sb)

	oldSide, newSide := &sideTUI{label: "old", bin: oldBin}, &sideTUI{label: "new", bin: e.bin}
	sides := []*sideTUI{oldSide, newSide}
	if !oldFirst {
		sides = []*sideTUI{newSide, oldSide}
	}
	for _, side := range sides {
		xdg := filepath.Join(e.tmp, "xdg-"+s.name+"-"+order+"-"+side.label)
		side.state = filepath.Join(xdg, "state", "sandscope")
		if err := writeKnown(side.state, b.url, []string{sb}); err != nil {
			return err
		}
		t, err := e.startTUIWith(side.bin, xdg, "Sandboxes (1)", "--url", b.url, "--token-file", b.tokFile)
		if err != nil {
			return fmt.Errorf("%s TUI: %w", side.label, err)
		}
		side.t = t
		defer t.stop()
	}
	for _, side := range sides {
		if _, err := side.t.waitSeen(20 * time.Second); err != nil {
			return fmt.Errorf("%s TUI: %w", side.label, err)
		}
		if err := side.t.openSelected(); err != nil {
			return fmt.Errorf("%s TUI: %w", side.label, err)
		}
	}
	if s.captures {
		for _, side := range sides {
			if err := waitCaptured(side.state, b.url, sb); err != nil {
				return fmt.Errorf("%s TUI: %w", side.label, err)
			}
			db, err := openRecordOf(side.state, b.url)
			if err != nil {
				return err
			}
			side.db = db
			defer db.Close()
		}
	}
	time.Sleep(5 * time.Second) // both past their first polls, redraws and captures' replay
	for r := 1; r <= rounds; r++ {
		got, err := e.sideWindow([]*sideTUI{oldSide, newSide}, sb, window)
		if err != nil {
			return err
		}
		each(r, got[0], got[1])
	}
	return nil
}

// sideSample is one TUI's use of the machine over a window.
type sideSample struct {
	cpuPerSec  float64 // ms of CPU a second
	wakePerSec float64 // times its threads were put on a CPU, a second
	mbPerSec   float64 // output captured, MB a second (0 when nothing is printed)
}

func (s sideSample) perMB() float64 { return s.cpuPerSec / s.mbPerSec }

// String is the sample's three columns of the table: ms of CPU a second, wake-ups a second, ms of
// CPU per MB captured ("-" when nothing was).
func (s sideSample) String() string {
	perMB := "-"
	if s.mbPerSec > 0 {
		perMB = fmt.Sprintf("%.2f", s.perMB())
	}
	return fmt.Sprintf("%.2f\t%.0f\t%s", s.cpuPerSec, s.wakePerSec, perMB)
}

// sideWindow samples both TUIs at the start and the end of one window. With captures, each
// TUI's window runs from one of its record's output commits to another (bytes are committed in
// rounds); the two windows then differ by up to a commit round, and each is divided by its own
// length.
func (e *env) sideWindow(sides []*sideTUI, sb string, window time.Duration) ([]sideSample, error) {
	type mark struct {
		at    time.Time
		cpu   time.Duration
		runs  int64
		bytes int64
	}
	sample := func(side *sideTUI) (mark, error) {
		pid := side.t.cmd.Process.Pid
		if side.db != nil {
			n, cpu, runs, err := atCommit(side.db, sb, pid)
			return mark{time.Now(), cpu, runs, n}, err
		}
		cpu, runs, err := schedStat(pid)
		return mark{at: time.Now(), cpu: cpu, runs: runs}, err
	}
	starts := make([]mark, len(sides))
	for i, side := range sides {
		m, err := sample(side)
		if err != nil {
			return nil, fmt.Errorf("%s TUI: %w", side.label, err)
		}
		starts[i] = m
	}
	time.Sleep(window)
	out := make([]sideSample, len(sides))
	for i, side := range sides {
		m, err := sample(side)
		if err != nil {
			return nil, fmt.Errorf("%s TUI: %w", side.label, err)
		}
		el := m.at.Sub(starts[i].at).Seconds()
		out[i] = sideSample{cpuPerSec: (m.cpu - starts[i].cpu).Seconds() * 1000 / el,
			wakePerSec: float64(m.runs-starts[i].runs) / el, mbPerSec: float64(m.bytes-starts[i].bytes) / 1e6 / el}
	}
	return out, nil
}

// errNotCaptured: the record held no output of the sandbox in time.
var errNotCaptured = errors.New("capture did not begin within 20 s")

// waitCaptured waits (20 s at most) until the record in stateDir holds output of sandbox sb.
func waitCaptured(stateDir, bridgeURL, sb string) error {
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		n, err := capturedBytes(stateDir, bridgeURL, sb)
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errNotCaptured
		}
	}
}
