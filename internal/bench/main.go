// Command bench measures every performance budget of sandscope against a baseline taken in the
// same run and prints one table. scripts/bench runs it; see PERFORMANCE.md for what each row means.
//
//	go run ./internal/bench [--quick] [--only 1,8,12] [-v]
//	go run ./internal/bench --against REV [--scenario quiet,capture] [--rounds 3] [--window 20s]
//
// With --against it measures no budget: it compares the TUI built from another revision with this
// tree's, side by side on one bridge (against.go).
//
// It builds sandscope, starts a local bridge on loopback, drives the real binary (against that
// bridge, under a pseudo-terminal where a screen is involved) and the Go benchmarks that measure
// components from the inside, and ends with the line "N passed, M failed". Rows that cannot be
// measured (a command that does not exist yet, a missing tool) say so and count as neither.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
)

// Result of one row.
const (
	pass    = "pass"
	fail    = "FAIL"
	notMeas = "not measurable"
)

// row is one line of the table.
type row struct {
	fig      string // figure number, "8b"
	name     string
	value    string // what was measured
	baseline string // what it is compared with, measured in the same run
	ratio    string
	budget   string
	result   string // pass, fail or notMeas
	note     string // why not measurable, or what failed
}

// env is what every figure may use.
type env struct {
	quick   bool
	verbose bool
	repo    string // repository root
	tmp     string
	bin     string // the sandscope binary
	curl    string // "" when curl is missing

	br       *localbridge.Server
	url      string
	token    string
	tokFile  string
	hdrFile  string // curl header file (the token never goes into argv)
	c        *client.Client
	testBins map[string]string

	// set by figure 1 and reused by figure 3: the replayed stream and curl's time for it
	replayProc  client.Process
	replayBytes int64
	curlReplay  time.Duration
}

func main() {
	quick := flag.Bool("quick", false, "smaller streams and fewer repetitions: about a minute")
	only := flag.String("only", "", "comma-separated figure numbers to run (default: all)")
	verbose := flag.Bool("v", false, "show each measurement's raw output")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process (the in-process figures: 3) to this file")
	against := flag.String("against", "", "instead of the budgets: run the TUI built from this revision and the TUI of this tree side by side and compare their CPU")
	scenario := flag.String("scenario", "", "with --against: comma-separated scenarios (quiet, capture; default both)")
	rounds := flag.Int("rounds", 3, "with --against: windows per leg (each scenario runs twice: old build started first, then new)")
	window := flag.Duration("window", 20*time.Second, "with --against: length of each window")
	probe := flag.String("scale-probe", "", "(internal) measure the record in this directory for figure 13 and exit")
	probeRuns := flag.Int("scale-runs", 0, "(internal) the runs the probed record holds")
	crash := flag.String("scale-crash", "", "(internal) hold the record in this directory open until killed (figure 13j)")
	unclean := flag.String("unclean-probe", "", "(internal) time the open of the record a killed run left in this directory (figure 13j) and exit")
	overBudget := flag.String("over-budget-probe", "", "(internal) time the open of the record in this directory with the default budget (figure 13k) and exit")
	flag.Parse()
	switch {
	case *probe != "":
		os.Exit(scaleProbe(*probe, *probeRuns))
	case *crash != "":
		os.Exit(scaleCrash(*crash, *probeRuns))
	case *unclean != "":
		os.Exit(uncleanProbe(*unclean))
	case *overBudget != "":
		os.Exit(overBudgetProbe(*overBudget))
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	loadStart := loadAvg()
	e, err := setup(*quick, *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	defer e.close()
	if *against != "" {
		var names []string
		if *scenario != "" {
			names = strings.Split(*scenario, ",")
		}
		err := runAgainst(e, os.Stdout, *against, names, *rounds, *window)
		e.close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		return
	}

	var rows []row
	for _, f := range figures {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), f.num) || *only == "" && alone[f.num] {
			continue
		}
		t := time.Now()
		e.logf("figure %s: %s", f.num, f.name)
		rs, err := f.run(e)
		if err != nil {
			rs = append(rs, row{fig: f.num, name: f.name, result: fail, note: err.Error()})
		}
		e.logf("figure %s done in %v", f.num, time.Since(t).Round(time.Millisecond))
		rows = append(rows, rs...)
	}
	code := printTable(os.Stdout, rows, *quick, time.Since(start), loadStart+" → "+loadAvg())
	e.close()
	pprof.StopCPUProfile()
	os.Exit(code)
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func setup(quick, verbose bool) (*env, error) {
	repo, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(repo, "go.mod")); err != nil {
		return nil, fmt.Errorf("run from the repository root (scripts/bench does): %w", err)
	}
	tmp, err := os.MkdirTemp("", "sandscope-bench-")
	if err != nil {
		return nil, err
	}
	e := &env{quick: quick, verbose: verbose, repo: repo, tmp: tmp, testBins: map[string]string{}}
	e.bin = filepath.Join(tmp, "sandscope")
	fmt.Fprintln(os.Stderr, "bench: building sandscope")
	if out, err := exec.Command("go", "build", "-o", e.bin, ".").CombinedOutput(); err != nil {
		e.close()
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	if p, err := exec.LookPath("curl"); err == nil {
		e.curl = p
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		e.close()
		return nil, err
	}
	e.token = hex.EncodeToString(tok)
	root := filepath.Join(tmp, "root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		e.close()
		return nil, err
	}
	// Retention above the largest replayed stream, so a replay holds every byte.
	e.br, err = localbridge.New(localbridge.Config{Root: root, Token: e.token,
		ProcessLogBytes: 320 << 20, ProcessLogEvents: 10_000_000})
	if err == nil {
		err = e.br.Start()
	}
	if err != nil {
		e.close()
		return nil, fmt.Errorf("bridge: %w", err)
	}
	e.url = e.br.URL()
	e.tokFile = filepath.Join(tmp, "token")
	e.hdrFile = filepath.Join(tmp, "curl-headers")
	if err := os.WriteFile(e.tokFile, []byte(e.token), 0o600); err != nil {
		e.close()
		return nil, err
	}
	if err := os.WriteFile(e.hdrFile, []byte("Authorization: Bearer "+e.token+"\n"), 0o600); err != nil {
		e.close()
		return nil, err
	}
	e.c, err = client.New(e.url, client.WithToken(e.token))
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// bridge is a local bridge on loopback with what a command needs to reach it.
type bridge struct {
	srv     *localbridge.Server
	url     string
	tokFile string
	hdrFile string
	c       *client.Client
}

// newBridge starts a local bridge of its own under dir (figures that count the sandboxes on a
// screen use one, so earlier figures' sandboxes are not listed).
func (e *env) newBridge(dir string) (*bridge, error) {
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tok)
	if err := os.MkdirAll(filepath.Join(dir, "root"), 0o700); err != nil {
		return nil, err
	}
	srv, err := localbridge.New(localbridge.Config{Root: filepath.Join(dir, "root"), Token: token})
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	b := &bridge{srv: srv, url: srv.URL(), tokFile: filepath.Join(dir, "token"), hdrFile: filepath.Join(dir, "curl-headers")}
	if err := os.WriteFile(b.tokFile, []byte(token), 0o600); err != nil {
		b.close()
		return nil, err
	}
	if err := os.WriteFile(b.hdrFile, []byte("Authorization: Bearer "+token+"\n"), 0o600); err != nil {
		b.close()
		return nil, err
	}
	if b.c, err = client.New(b.url, client.WithToken(token)); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *bridge) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.srv.Close(ctx)
}

func (e *env) close() {
	if e.br != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e.br.Close(ctx)
		cancel()
		e.br = nil
	}
	if e.tmp != "" {
		os.RemoveAll(e.tmp)
		e.tmp = ""
	}
}

// pick chooses the quick or the full value.
func pick[T any](e *env, quick, full T) T {
	if e.quick {
		return quick
	}
	return full
}

// sandscopeCmd runs the binary against the bench bridge with a clean environment of its own.
func (e *env) sandscopeCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, append([]string{"--url", e.url, "--token-file", e.tokFile}, args...)...)
	cmd.Env = e.cleanEnv(filepath.Join(e.tmp, "xdg-cmd"))
	return cmd
}

// cleanEnv is the environment without bridge settings, with XDG directories under dir.
func (e *env) cleanEnv(dir string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "SANDSCOPE_URL", k == "SANDBOX_API_KEY", strings.HasPrefix(k, "XDG_"), k == "TERM",
			k == "NO_COLOR", k == "GOMAXPROCS":
			continue
		}
		out = append(out, kv)
	}
	for _, d := range []string{"state", "config", "cache", "data", "runtime"} {
		_ = os.MkdirAll(filepath.Join(dir, d), 0o700)
	}
	return append(out,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "runtime"), "TERM=xterm-256color")
}

// waitEnded polls until the process is no longer running.
func (e *env) waitEnded(sandbox, id string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		st, err := e.c.GetProcess(ctx, sandbox, id)
		if err != nil {
			return fmt.Errorf("process %s: %w", id, err)
		}
		if st.State != "running" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %s still running after %v", id, limit)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// printTable writes the table and the closing line; it returns the exit code.
func printTable(w io.Writer, rows []row, quick bool, took time.Duration, load string) int {
	mode := "full"
	if quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "\nsandscope performance budgets (%s run, %d CPUs, %s, %v, load average %s)\n\n", mode, runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, took.Round(time.Second), load)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tfigure\tmeasured\tbaseline (same run)\tratio\tbudget\tresult")
	passed, failed, na := 0, 0, 0
	for _, r := range rows {
		res := r.result
		switch r.result {
		case pass:
			passed++
		case fail:
			failed++
		default:
			na++
		}
		if r.note != "" {
			res += ": " + r.note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.fig, r.name, dash(r.value), dash(r.baseline), dash(r.ratio), r.budget, res)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if na > 0 {
		fmt.Fprintf(w, "%d not measurable (see the rows above)\n", na)
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

// loadAvg is the 1-minute load average: on a shared machine it says how much to trust the times.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func verdict(ok bool) string {
	if ok {
		return pass
	}
	return fail
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianDur(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}

func mbps(bytes int64, d time.Duration) float64 { return float64(bytes) / 1e6 / d.Seconds() }
