package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sandscope/client"
)

type figure struct {
	num, name string
	run       func(*env) ([]row, error)
}

var figures = []figure{
	{"1", "logs -f, replay", figLogsReplay},
	{"2", "logs --all -f, 20 busy processes", figLogsAll},
	{"3", "TUI log view ingest, replay", figViewIngest},
	{"4", "log view frame, 1M vs 1k lines", figFrame},
	{"5", "following 1 GiB in the log view", figSoak},
	{"6", "key-to-frame, 20 streams followed", figTwenty},
	{"7", "keystroke echo through the bridge", figEcho},
	{"8", "terminal pane", figPane},
	{"9", "start to first frame", figStartup},
	{"10", "idle CPU of the TUI", figIdle},
	{"11", "the record's cost", figRecord},
	{"12", "local bridge SSE vs a pipe", figSSE},
	{"13", "a record of 10,000 runs", figScale},
	{"14", "the record on disk", figRecordDisk},
	{"11b", "TUI background capture (also in 11)", func(e *env) ([]row, error) { r, err := figCapture(e); return []row{r}, err }},
	{"13i", "watcher requests of 200 known sandboxes (also in 13)", func(e *env) ([]row, error) { return e.watchRateRows() }},
}

// alone are the parts of another figure that also run on their own, only when named in --only.
var alone = map[string]bool{"11b": true, "13i": true}

const benchSandbox = "bench"

// pipelineRuns is how many times a row whose two sides are separate process pipelines (1, 2, 3,
// 11b, 12) is measured: the median decides, so one run disturbed by the machine's other work
// does not.
const pipelineRuns = 3

const producerLine = "sandscope benchmark line 0123456789abcdefghijklmnopqrstuvwxyz"

// producer writes size bytes of realistic lines as fast as it can.
func producer(size int64) []string {
	return []string{"sh", "-c", "yes '" + producerLine + "' | head -c " + strconv.FormatInt(size, 10)}
}

// alternate runs the two sides of pair i, baseline first in even pairs and second in odd ones:
// run second after a sync, the same command was 1.0-7.4 % slower (figure 11a), which fell on one
// side alone while the order was fixed. Both run whatever the first returns.
func alternate(i int, baseline, measured func() error) error {
	if i%2 == 1 {
		err := measured()
		return errors.Join(baseline(), err)
	}
	err := baseline()
	return errors.Join(err, measured())
}

// timeRun runs cmd and returns how long it took.
func timeRun(cmd *exec.Cmd) (time.Duration, error) {
	var stderr bytes.Buffer
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t)
	if err != nil {
		return d, fmt.Errorf("%s: %v %s", filepath.Base(cmd.Path), err, lastLines(stderr.String(), 3))
	}
	return d, nil
}

func (e *env) curlCmd(url string) *exec.Cmd {
	return exec.Command(e.curl, "-sSN", "-H", "@"+e.hdrFile, "-o", os.DevNull, url)
}

func (e *env) logsURL(sandbox, id string) string {
	return e.url + "/v1/sandbox/" + sandbox + "/processes/" + id + "/logs?replay=true&follow=true"
}

// Figure 1: `sandscope logs -f` consuming a finished process's whole retained stream, against
// `curl -N` to /dev/null on the same URL, alternating; the ratio is the median of the pairs.
func figLogsReplay(e *env) ([]row, error) {
	name := "logs -f, replay"
	size := pick(e, int64(128<<20), int64(256<<20))
	pairs := pick(e, 3, 5)
	name += fmt.Sprintf(" of %d MiB", size>>20)
	if e.curl == "" {
		return []row{{fig: "1", name: name, budget: "≤ 1.25×", result: notMeas, note: "curl not installed"}}, nil
	}
	ctx := context.Background()
	p, err := e.c.StartProcess(ctx, benchSandbox, client.ExecRequest{Argv: producer(size)})
	if err != nil {
		return nil, fmt.Errorf("start producer: %w", err)
	}
	if err := e.waitEnded(benchSandbox, p.ID, 5*time.Minute); err != nil {
		return nil, err
	}
	// sandscope must deliver every byte for the time to mean anything
	var cnt countWriter
	check := e.sandscopeCmd("logs", benchSandbox, p.ID, "-f")
	check.Stdout = &cnt
	if _, err := timeRun(check); err != nil || cnt.load() != size {
		return nil, fmt.Errorf("sandscope logs -f delivered %d of %d bytes (%v)", cnt.load(), size, err)
	}
	url := e.logsURL(benchSandbox, p.ID)
	var ratios []float64
	var tc, ts []time.Duration
	for i := 0; i < pairs; i++ {
		settleDisk()
		var c, s time.Duration
		curl := func() (err error) { c, err = timeRun(e.curlCmd(url)); return err }
		logs := func() (err error) { s, err = timeRun(e.sandscopeCmd("logs", benchSandbox, p.ID, "-f")); return err }
		if err := alternate(i, curl, logs); err != nil {
			return nil, err
		}
		tc, ts = append(tc, c), append(ts, s)
		ratios = append(ratios, s.Seconds()/c.Seconds())
	}
	e.replayProc, e.replayBytes, e.curlReplay = p, size, medianDur(tc)
	r := median(ratios)
	return []row{{fig: "1", name: name,
		value:    fmt.Sprintf("%.2f s (%.0f MB/s)", medianDur(ts).Seconds(), mbps(size, medianDur(ts))),
		baseline: fmt.Sprintf("curl -N %.2f s", e.curlReplay.Seconds()),
		ratio:    f2(r) + fmt.Sprintf("× (median of %d)", pairs), budget: "≤ 1.25×", result: verdict(r <= 1.25)}}, nil
}

// countWriter counts what a command writes; load may be called while it runs.
type countWriter struct{ n atomic.Int64 }

// settleDisk writes out what earlier figures left dirty (figure 5 alone writes most of a GiB of
// log cache) before a timed pair: the record's fsync at a command's end otherwise waits for the
// file system's journal to commit that backlog, a cost of the bench's own history that only the
// side with a record pays (30 ms and more here, against 2 ms on a settled disk).
func settleDisk() { syscall.Sync() }

func (w *countWriter) Write(p []byte) (int, error) { w.n.Add(int64(len(p))); return len(p), nil }

func (w *countWriter) load() int64 { return w.n.Load() }

// Figure 2: `sandscope logs SANDBOX --all -f` over 20 finished busy processes against 20 parallel
// `curl -N` readers of the same streams. It runs as soon as the command has --all.
func figLogsAll(e *env) ([]row, error) {
	name := "logs --all -f, 20 busy processes"
	help, _ := e.sandscopeCmd("logs", "--help").CombinedOutput()
	if !bytes.Contains(help, []byte("--all")) {
		return []row{{fig: "2", name: name, budget: "≤ 1.5×", result: notMeas, note: "command missing (logs has no --all)"}}, nil
	}
	if e.curl == "" {
		return []row{{fig: "2", name: name, budget: "≤ 1.5×", result: notMeas, note: "curl not installed"}}, nil
	}
	const n = 20
	each := pick(e, int64(2<<20), int64(12<<20))
	sb := "benchall"
	ctx := context.Background()
	var ids []string
	for i := 0; i < n; i++ {
		p, err := e.c.StartProcess(ctx, sb, client.ExecRequest{Argv: producer(each)})
		if err != nil {
			return nil, fmt.Errorf("start producer %d: %w", i, err)
		}
		ids = append(ids, p.ID)
	}
	for _, id := range ids {
		if err := e.waitEnded(sb, id, 5*time.Minute); err != nil {
			return nil, err
		}
	}
	// sandscope must deliver every byte for the time to mean anything; the timed runs then write
	// to /dev/null as curl does (as figure 1's do), so neither side pays for a reader of its output
	var cnt countWriter
	check := e.sandscopeCmd("logs", sb, "--all", "-f")
	check.Stdout = &cnt
	if _, err := timeRun(check); err != nil {
		return nil, err
	}
	if cnt.load() < n*each {
		return nil, fmt.Errorf("logs --all -f printed %d bytes for %d bytes of output", cnt.load(), n*each)
	}
	var ratios []float64
	var tcs, tss []time.Duration
	for r := 0; r < pipelineRuns; r++ {
		t := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := timeRun(e.curlCmd(e.logsURL(sb, id))); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		tc := time.Since(t)
		close(errs)
		if err := <-errs; err != nil {
			return nil, err
		}
		ts, err := timeRun(e.sandscopeCmd("logs", sb, "--all", "-f"))
		if err != nil {
			return nil, err
		}
		tcs, tss = append(tcs, tc), append(tss, ts)
		ratios = append(ratios, ts.Seconds()/tc.Seconds())
	}
	r := median(ratios)
	return []row{{fig: "2", name: name + fmt.Sprintf(" (%d MiB each)", each>>20),
		value:    fmt.Sprintf("%.2f s", medianDur(tss).Seconds()),
		baseline: fmt.Sprintf("20× curl -N %.2f s", medianDur(tcs).Seconds()),
		ratio:    f2(r) + "× (median of 3)", budget: "≤ 1.5×", result: verdict(r <= 1.5)}}, nil
}

// Figure 4: one log view frame with 1,000,000 lines buffered against one with 1,000.
func figFrame(e *env) ([]row, error) {
	// Three runs in a full run, the median ratio deciding: the two sizes run one after the other,
	// and a single run on a shared machine moved by ±20 % between them.
	runs := pick(e, 1, pipelineRuns)
	var ratios, bigs, smalls []float64
	for i := 0; i < runs; i++ {
		res, err := e.goBench("./ui/logview", "^BenchmarkFrame$", pick(e, "300x", "2000x"))
		if err != nil {
			return nil, err
		}
		small, err := need(res, "BenchmarkFrame/lines=1000", "ns/op")
		if err != nil {
			return nil, err
		}
		big, err := need(res, "BenchmarkFrame/lines=1000000", "ns/op")
		if err != nil {
			return nil, err
		}
		ratios, bigs, smalls = append(ratios, big/small), append(bigs, big), append(smalls, small)
	}
	r := median(ratios)
	ratio := f2(r)
	if runs > 1 {
		ratio += fmt.Sprintf(" (median of %d)", runs)
	}
	return []row{{fig: "4", name: "log view frame, 1M vs 1k lines",
		value: fmt.Sprintf("%.0f µs", median(bigs)/1e3), baseline: fmt.Sprintf("1k lines %.0f µs", median(smalls)/1e3),
		ratio: ratio, budget: "≤ 1.2", result: verdict(r <= 1.2)}}, nil
}

// Figure 6: key-to-frame in the log view while 20 followed processes deliver output.
func figTwenty(e *env) ([]row, error) {
	res, err := e.goBench("./ui/logview", "^BenchmarkTwentyStreams$", pick(e, "200x", "1000x"))
	if err != nil {
		return nil, err
	}
	p50, err := need(res, "BenchmarkTwentyStreams", "key-to-frame-p50-ms")
	if err != nil {
		return nil, err
	}
	p99, err := need(res, "BenchmarkTwentyStreams", "key-to-frame-p99-ms")
	if err != nil {
		return nil, err
	}
	idle, err := need(res, "BenchmarkTwentyStreams", "quiet-key-to-frame-p50-ms")
	if err != nil {
		return nil, err
	}
	return []row{{fig: "6", name: "key-to-frame, 20 streams followed",
		value:    fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", p50, p99),
		baseline: fmt.Sprintf("no output p50 %.1f ms", idle),
		budget:   "p99 < 50 ms", result: verdict(p99 < 50)}}, nil
}

// Figure 7: keystroke echo through the local bridge's terminal WebSocket against a direct PTY.
func figEcho(e *env) ([]row, error) {
	res, err := e.goBench("./client", "^BenchmarkKeystrokeEcho$", pick(e, "300x", "2000x"))
	if err != nil {
		return nil, err
	}
	direct, err := need(res, "BenchmarkKeystrokeEcho", "direct-p50-µs")
	if err != nil {
		return nil, err
	}
	bridge, err := need(res, "BenchmarkKeystrokeEcho", "bridge-p50-µs")
	if err != nil {
		return nil, err
	}
	added := bridge - direct
	return []row{{fig: "7", name: "keystroke echo through the bridge (p50)",
		value: fmt.Sprintf("%.0f µs", bridge), baseline: fmt.Sprintf("direct PTY %.0f µs", direct),
		ratio: fmt.Sprintf("+%.0f µs", added), budget: "< +1 ms", result: verdict(added < 1000)}}, nil
}

// Figure 8: the embedded terminal pane digesting a flood of plain and of coloured output, and
// key-to-frame while it floods.
func figPane(e *env) ([]row, error) {
	size := pick(e, 12_000_000, 64<<20)
	res, err := e.goBench("./ui/termpane", "^BenchmarkCat64MiB$", "1x", "-termpane.size="+strconv.Itoa(size))
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, c := range []struct{ sub, label string }{{"plain", "8a"}, {"coloured", "8b"}} {
		name := "BenchmarkCat64MiB/" + c.sub
		rate, err := need(res, name, "MB/s")
		if err != nil {
			return nil, err
		}
		exact, err := need(res, name, "exact-MB/s")
		if err != nil {
			return nil, err
		}
		r := row{fig: c.label, name: fmt.Sprintf("terminal pane, %s cat of %d MB", c.sub, size/1e6),
			value: fmt.Sprintf("%.1f MB/s", rate), baseline: fmt.Sprintf("exact emulation %.1f MB/s", exact),
			ratio: fmt.Sprintf("%.0f×", rate/exact)}
		if c.sub == "coloured" {
			r.budget, r.result = "≥ 20 MB/s", verdict(rate >= 20)
		} else {
			r.budget, r.result = "≥ 20 MB/s", verdict(rate >= 20)
		}
		rows = append(rows, r)
	}
	p50, err := need(res, "BenchmarkCat64MiB/coloured", "key-to-frame-p50-ms")
	if err != nil {
		return nil, err
	}
	p99, err := need(res, "BenchmarkCat64MiB/coloured", "key-to-frame-p99-ms")
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{fig: "8c", name: "terminal pane, key-to-frame while coloured output floods",
		value: fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", p50, p99), budget: "p99 < 50 ms", result: verdict(p99 < 50)})
	return rows, nil
}

// Figure 12: the local bridge delivering output as SSE against reading it from a pipe. Both sides
// are process pipelines: the benchmark runs pipelineRuns times and the median ratio decides. The
// baseline column also shows bare SSE (the same output as base64 events on loopback TCP, with no
// HTTP and nothing retained; see BenchmarkSSEThroughput): what SSE itself leaves of the pipe.
func figSSE(e *env) ([]row, error) {
	cases := []struct{ sub, label, what string }{
		{"urandom-base64", "12a", "realistic output (base64 lines)"},
		{"zero", "12b", "/dev/zero output"},
	}
	sse := make([][]float64, len(cases))
	pipe := make([][]float64, len(cases))
	ratio := make([][]float64, len(cases))
	bare := make([][]float64, len(cases))
	for run := 0; run < pipelineRuns; run++ {
		res, err := e.goBench("./localbridge", "^BenchmarkSSEThroughput$/^(urandom-base64|zero)$", pick(e, "1x", "2x"))
		if err != nil {
			return nil, err
		}
		for i, c := range cases {
			name := "BenchmarkSSEThroughput/" + c.sub
			s, err := need(res, name, "sse-MB/s")
			if err != nil {
				return nil, err
			}
			p, err := need(res, name, "pipe-MB/s")
			if err != nil {
				return nil, err
			}
			bs, err := need(res, name, "bare-MB/s")
			if err != nil {
				return nil, err
			}
			sse[i], pipe[i], ratio[i] = append(sse[i], s), append(pipe[i], p), append(ratio[i], s/p)
			bare[i] = append(bare[i], bs/p)
		}
		e.logf("12 run %d: ratios %.2f, %.2f (bare SSE %.2f, %.2f), load %s", run+1, ratio[0][run], ratio[1][run], bare[0][run], bare[1][run], loadAvg())
	}
	var rows []row
	for i, c := range cases {
		r := median(ratio[i])
		rows = append(rows, row{fig: c.label, name: "local bridge SSE, " + c.what,
			value: fmt.Sprintf("%.0f MB/s", median(sse[i])), baseline: fmt.Sprintf("pipe %.0f MB/s; bare SSE %.2f of it", median(pipe[i]), median(bare[i])),
			ratio: f2(r) + " (median of 3)", budget: "≥ 0.5", result: verdict(r >= 0.5)})
	}
	return rows, nil
}

var soakMetric = regexp.MustCompile(`(?m)^metric (\S+) (\S+)$`)

// Figure 5: the whole path (bridge → follower → log view → disk-backed buffer) following 1 GiB
// (a quick run follows 128 MiB): peak RSS, then the time for the key that scrolls back to the
// first line to produce its frame.
func figSoak(e *env) ([]row, error) {
	size := pick(e, int64(256<<20), int64(1<<30))
	bin := filepath.Join(e.tmp, "viewsoak")
	if out, err := exec.Command("go", "build", "-o", bin, "./ui/logview/internal/soak").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the soak: %v %s", err, out)
	}
	// -flood: the producer writes as fast as it can, the hardest case for memory; what the
	// follower misses the bridge drops (gaps), and scroll-back goes to the first line it saw
	cmd := exec.Command(bin, "-size", strconv.FormatInt(size, 10), "-dir", e.tmp, "-metrics", "-flood")
	cmd.Env = e.cleanEnv(filepath.Join(e.tmp, "xdg-soak"))
	out, err := cmd.CombinedOutput()
	if e.verbose {
		fmt.Fprintf(os.Stderr, "%s\n", out)
	}
	m := map[string]float64{}
	for _, g := range soakMetric.FindAllStringSubmatch(string(out), -1) {
		v, perr := strconv.ParseFloat(g[2], 64)
		if perr == nil {
			m[g[1]] = v
		}
	}
	rss, ok1 := m["peak-rss-mib"]
	back, ok2 := m["scrollback-ms"]
	frame, ok3 := m["frame-ms"]
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("soak: %v: %s", err, lastLines(string(out), 4))
	}
	note := ""
	if err != nil {
		note = lastLines(string(out), 1)
	}
	label := fmt.Sprintf("%d MiB", size>>20)
	if size >= 1<<30 {
		label = fmt.Sprintf("%d GiB", size>>30)
	}
	return []row{
		{fig: "5a", name: "peak RSS following " + label + " in the log view",
			value: fmt.Sprintf("%.0f MiB", rss), baseline: fmt.Sprintf("%.0f MiB followed at %.0f MB/s, %.0f gaps", m["followed-bytes"]/(1<<20), m["mbps"], m["gaps"]),
			budget: "< 150 MiB", result: verdict(rss < 150 && err == nil), note: note},
		{fig: "5b", name: "scroll back to the first line of " + label,
			value: fmt.Sprintf("%.1f ms", back), baseline: fmt.Sprintf("a frame at the tail %.1f ms", frame),
			ratio: f2(back / max(frame, 0.001)), budget: "< 50 ms", result: verdict(back < 50 && err == nil)},
	}, nil
}

// Figure 11: the record's cost. 11a: `sandscope logs -f` of figure 1's finished replay with the
// record (the default) and with --no-record, in pairs; the ratio is the median of the pairs'.
// The pairs alternate which side runs first (alternate: the same command on both sides, run
// second after a sync, was 1.0-7.4 % slower in 15 pairs three times, 0.97-1.01 alternating; it
// fell on the record's side alone while that always ran second). Fifteen pairs, because single
// pairs spread 0.85-1.25.
// 11b: the TUI capturing the output of 20 running processes in the background, CPU per MB
// captured, against 20 `curl -N` readers of the same streams.
func figRecord(e *env) ([]row, error) {
	a, err := figRecordLogs(e)
	if err != nil {
		a.result, a.note = fail, err.Error() // 11b still runs
	}
	b, err := figCapture(e)
	if err != nil {
		return nil, err
	}
	return []row{a, b}, nil
}

func figRecordLogs(e *env) (row, error) {
	a := row{fig: "11a", name: "logs -f with recording vs without", budget: "≤ 5 %", result: notMeas}
	help, _ := e.sandscopeCmd("logs", "--help").CombinedOutput()
	if !bytes.Contains(help, []byte("--no-record")) {
		a.note = "sandscope logs has no --no-record"
		return a, nil
	}
	p, size := e.replayProc, e.replayBytes
	if p.ID == "" {
		size = pick(e, int64(128<<20), int64(256<<20))
		var err error
		if p, err = e.c.StartProcess(context.Background(), benchSandbox, client.ExecRequest{Argv: producer(size)}); err != nil {
			return a, fmt.Errorf("start producer: %w", err)
		}
		if err := e.waitEnded(benchSandbox, p.ID, 5*time.Minute); err != nil {
			return a, err
		}
	}
	a.name += fmt.Sprintf(", replay of %d MiB", size>>20)
	if _, err := timeRun(e.sandscopeCmd("logs", benchSandbox, p.ID, "-f")); err != nil { // creates the record
		return a, err
	}
	var ratios []float64
	var on, off []time.Duration
	pairs := pick(e, 5, 15)
	for i := 0; i < pairs; i++ {
		settleDisk()
		var t0, t1 time.Duration
		if err := alternate(i, func() (err error) {
			t0, err = timeRun(e.sandscopeCmd("logs", benchSandbox, p.ID, "-f", "--no-record"))
			return err
		},
			func() (err error) { t1, err = timeRun(e.sandscopeCmd("logs", benchSandbox, p.ID, "-f")); return err }); err != nil {
			return a, err
		}
		off, on = append(off, t0), append(on, t1)
		ratios = append(ratios, t1.Seconds()/t0.Seconds())
	}
	r := median(ratios)
	a.value = fmt.Sprintf("%.2f s", medianDur(on).Seconds())
	a.baseline = fmt.Sprintf("--no-record %.2f s", medianDur(off).Seconds())
	a.ratio, a.result = fmt.Sprintf("%s× (median of %d pairs)", f2(r), pairs), verdict(r <= 1.05)
	return a, nil
}
