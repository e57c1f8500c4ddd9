package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/keymap"
	"sandscope/record"
	"sandscope/record/recordtest"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/runs"
)

// screenKeys are typed into the all-runs screen's filter, a sandbox's name at a time (each
// keystroke measured), the filter cleared with esc between them.
var screenKeys = []string{record.Synthetic{}.SandboxName(42), "proc-00123", "agent --ta", record.Synthetic{}.SandboxName(7), "exited"}

// screenOpens is how many times measureRunsScreen opens the all-runs screen. The first opens
// after the record's start run beside what the start leaves behind (its garbage collected, the
// watcher's first polls spread over its interval): at 10,000 runs the first three or four took
// 1.5–6.7 ms, with more CPU than wall-clock time, and settled at 0.6–0.7 ms by the tenth, as at
// 1,000 runs (3,000 opens: 0.65 against 0.69 ms). The median of five fell among them by chance
// (13f between 1.0× and 2.9× of the smaller from run to run); the median of 21 is the screen's
// own cost. The first open is still its own figure, under the same limit.
const screenOpens = 21

// measureRunsScreen opens the record under dir as the TUI does (the record's background watcher
// tracking every known sandbox: the sandboxes screen has it track them at start), then opens the
// all-runs screen at 160×48 and times Init to its first frame, frames after moving the cursor,
// and filter keystrokes to their frame. It prints "step" lines as scaleProbe does, the frame and
// key times as their median and 99th percentile.
func measureRunsScreen(dir string, wantRuns int) error {
	rec, err := record.Open(record.Options{Dir: dir, Bridge: scaleBridge,
		Budget: record.Budget{MaxEvents: 1 << 30, MaxAge: 365 * 24 * time.Hour, CaptureTotal: 1 << 40}})
	if err != nil {
		return err
	}
	defer rec.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	known, err := rec.KnownSandboxes()
	if err != nil {
		return err
	}
	mgr := record.NewManager(ctx, rec, recordtest.IdleBridge{}, record.DefaultWatchBudget)
	defer mgr.Close()
	t := time.Now()
	mgr.Track(known...)
	fmt.Printf("step watch-start %.3f %d sandboxes\n", time.Since(t).Seconds()*1000, len(known))
	pal, err := themes.Builtin("dark")
	if err != nil {
		return err
	}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	state, err := os.MkdirTemp("", "sandscope-scale-ui-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	uctx := &common.Context{Width: 160, Height: 48, Styles: themes.New(pal, r), Keys: keymap.New(),
		BridgeLabel: scaleBridge, BridgeURL: scaleBridge, StateDir: state, CacheDir: filepath.Join(state, "cache"),
		Ctx: ctx, Record: rec, Watch: mgr}

	// Right after the start: the manager is reading every sandbox's history on a goroutine of its
	// own (about 60 ms each here), and a user opens the screen at once. Its first frame reads
	// what it shows and leaves the rest to the screen's own reads.
	tc := time.Now()
	cold := runs.New(uctx)
	cold.SetSize(160, 48)
	_ = cold.Init()
	v := cold.View()
	fmt.Printf("step runs-open-cold %.3f\n", time.Since(tc).Seconds()*1000)
	cold.Close()
	if !strings.Contains(v, "All runs (") {
		return fmt.Errorf("the all-runs screen's first frame right after the start has no title:\n%s", v)
	}

	// then every state in memory, as the manager's reads leave them (reading them here too)
	for _, sb := range known {
		rec.State(sb)
	}
	fmt.Printf("step watch-warm %.3f %d sandboxes\n", time.Since(t).Seconds()*1000, len(known))

	// SANDSCOPE_SCALE_PROFILE=FILE: a CPU profile of the screen's part (open, frames, keys; only
	// the open with SANDSCOPE_SCALE_PROFILE_OPEN=1)
	if f := os.Getenv("SANDSCOPE_SCALE_PROFILE"); f != "" {
		if out, err := os.Create(f); err == nil && pprof.StartCPUProfile(out) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	// opened screenOpens times, each after the last one's close, as a user opens it again:
	// runs-open is their median, runs-open-first the first
	var m *runs.Model
	var opens, openCPUs []float64
	for i := 0; i < screenOpens; i++ {
		if m != nil {
			m.Close()
		}
		cpu0 := processCPU()
		t = time.Now()
		m = runs.New(uctx)
		m.SetSize(160, 48)
		_ = m.Init() // its commands wait for changes and ticks: nothing the first frame needs
		v := m.View()
		opens = append(opens, time.Since(t).Seconds()*1000)
		openCPUs = append(openCPUs, (processCPU()-cpu0).Seconds()*1000)
		if i == 0 && os.Getenv("SANDSCOPE_SCALE_PROFILE_OPEN") != "" {
			pprof.StopCPUProfile()
		}
		if want := fmt.Sprintf("All runs (%d)", wantRuns); !strings.Contains(v, want) {
			m.Close()
			return fmt.Errorf("the all-runs screen's first frame has no %q:\n%s", want, v)
		}
	}
	defer m.Close()
	fmt.Printf("step runs-open-first %.3f\n", opens[0])
	fmt.Printf("step runs-open %.3f\n", median(opens))
	// the CPU the process spent meanwhile (the garbage collector's too): what a loaded machine's
	// wall-clock time hides
	fmt.Printf("step runs-open-cpu %.3f\n", median(openCPUs))

	var frames []float64
	down := tea.KeyMsg{Type: tea.KeyDown}
	for i := 0; i < 60; i++ {
		if i%20 == 19 {
			down = tea.KeyMsg{Type: tea.KeyPgDown}
		}
		m.Update(down)
		t := time.Now()
		_ = m.View()
		frames = append(frames, time.Since(t).Seconds()*1000)
	}
	var keys []float64
	for _, typed := range screenKeys {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'/'}})
		_ = m.View()
		for _, c := range typed {
			k := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{c}}
			if c == ' ' {
				k = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
			}
			t := time.Now()
			m.Update(k)
			_ = m.View()
			keys = append(keys, time.Since(t).Seconds()*1000)
		}
		m.Update(tea.KeyMsg{Type: tea.KeyEsc})
		_ = m.View()
	}
	fmt.Printf("step runs-frame %.3f p99 %.3f\n", median(frames), percentile(frames, 0.99))
	fmt.Printf("step runs-frame-p99 %.3f\n", percentile(frames, 0.99))
	fmt.Printf("step runs-key %.3f p99 %.3f\n", median(keys), percentile(keys, 0.99))
	fmt.Printf("step runs-key-p99 %.3f\n", percentile(keys, 0.99))
	return nil
}

// processCPU is the CPU time the process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p*float64(len(s)-1) + 0.5)
	return s[min(i, len(s)-1)]
}

// watchRate is what a record's watcher asked of a bridge over a window: the requests per second
// for the sandbox on screen and for all the others together (a plain count: their first polls
// are spread over one slow interval, so a window of one interval and a bit sees each once, and
// the first few twice), the shortest time between two polls of one background sandbox, the
// requests in the busiest second, and how many background sandboxes were polled at all.
//
// recurring and others are the older view, for sandboxes polled twice or more: each one's
// requests per poll over the mean time between its polls (when every sandbox was polled at
// start, this told the rate the polls recur at).
type watchRate struct {
	known        int
	focused, all float64
	minGap       time.Duration
	polled       int
	others       float64
	steady       float64 // others at the interval each was last polled after (the one in force)
	peak         int
	recurring    int
	window       time.Duration
}

// countingProxy passes requests on to a bridge and counts them: by second, for the sandbox on
// screen, and the times of each other sandbox's polls (its "running" request opens each).
type countingProxy struct {
	mu      sync.Mutex
	start   time.Time
	focus   string
	focused int
	all     int
	polls   map[string][]time.Time
	perSec  map[int]int
	counted bool
}

func (p *countingProxy) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		if p.counted {
			p.all++
			rest, _ := strings.CutPrefix(r.URL.Path, "/v1/sandbox/")
			sb, what, _ := strings.Cut(rest, "/")
			switch {
			case sb == p.focus:
				p.focused++
			case what == "running":
				p.polls[sb] = append(p.polls[sb], time.Now())
			}
			p.perSec[int(time.Since(p.start)/time.Second)]++
		}
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// rate is the result over the window so far.
func (p *countingProxy) rate(known int, window time.Duration) watchRate {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counted = false
	el := time.Since(p.start).Seconds()
	r := watchRate{known: known, focused: float64(p.focused) / el, all: float64(p.all-p.focused) / el, window: window}
	for _, ts := range p.polls {
		r.polled++
		for i := 1; i < len(ts); i++ {
			if g := ts[i].Sub(ts[i-1]); r.minGap == 0 || g < r.minGap {
				r.minGap = g
			}
		}
		if len(ts) < 2 {
			continue
		}
		r.recurring++
		gap := ts[len(ts)-1].Sub(ts[0]).Seconds() / float64(len(ts)-1)
		r.others += record.PollRequests / gap
		r.steady += record.PollRequests / ts[len(ts)-1].Sub(ts[len(ts)-2]).Seconds()
	}
	for _, v := range p.perSec {
		r.peak = max(r.peak, v)
	}
	return r
}

// measureWatchRate has a record's background watcher (the TUI's budget, through the driver the
// TUI uses) watch n sandboxes of a local bridge, one of them on screen, and counts the requests
// the bridge receives over window from the moment they are tracked.
func (e *env) measureWatchRate(b *bridge, n int, window time.Duration) (watchRate, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := make([]string, n)
	for i := range ids {
		// sandbox IDs are a-z and 2-7; listing its processes makes the sandbox exist
		ids[i] = fmt.Sprintf("watch%sof%s", letters(i), letters(n))
		if _, err := b.c.ListProcesses(ctx, ids[i]); err != nil {
			return watchRate{}, fmt.Errorf("sandbox %s: %w", ids[i], err)
		}
	}
	target, err := url.Parse(b.url)
	if err != nil {
		return watchRate{}, err
	}
	p := &countingProxy{perSec: map[int]int{}, polls: map[string][]time.Time{}, focus: ids[0]}
	srv := httptest.NewServer(p.wrap(httputil.NewSingleHostReverseProxy(target)))
	defer srv.Close()
	tok, err := os.ReadFile(b.tokFile)
	if err != nil {
		return watchRate{}, err
	}
	c, err := client.New(srv.URL, client.WithToken(strings.TrimSpace(string(tok))))
	if err != nil {
		return watchRate{}, err
	}
	dir, err := os.MkdirTemp(e.tmp, "watch-rate-")
	if err != nil {
		return watchRate{}, err
	}
	defer os.RemoveAll(dir)
	rec, err := record.Open(record.Options{Dir: dir, Bridge: srv.URL})
	if err != nil {
		return watchRate{}, err
	}
	defer rec.Close()
	mgr := record.NewManager(ctx, rec, driver.ForRecord(driver.NewPreview(c, client.Capabilities{})), record.DefaultWatchBudget)
	defer mgr.Close()
	p.mu.Lock()
	p.start, p.counted = time.Now(), true
	p.mu.Unlock()
	mgr.Track(ids...)
	mgr.Focus(ids[0])
	time.Sleep(window)
	return p.rate(n, window), nil
}

// letters writes n in the letters a to j.
func letters(n int) string {
	b := []byte(fmt.Sprintf("%03d", n))
	for i := range b {
		b[i] += 'a' - '0'
	}
	return string(b)
}

// watchRateRows measures 20 and 200 known sandboxes at once (each on its own proxy) over one slow
// interval of the larger and 5 s: every background sandbox is first polled within one interval
// and then once per interval.
func (e *env) watchRateRows() ([]row, error) {
	b, err := e.newBridge(filepath.Join(e.tmp, "bridge-watch"))
	if err != nil {
		return nil, err
	}
	defer b.close()
	sizes := []int{20, pick(e, 50, 200)}
	window := record.DefaultWatchBudget.SlowInterval(sizes[1]) + 5*time.Second
	res := make([]watchRate, len(sizes))
	errs := make([]error, len(sizes))
	var wg sync.WaitGroup
	for i, n := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = e.measureWatchRate(b, n, window)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	s, l := res[0], res[1]
	e.logf("13: watcher requests over %v: %d sandboxes %.2f + %.2f req/s (%d polled, each every ≥ %.1f s; peak %d in a second; polled twice or more: %d at %.2f req/s, last interval %.2f), %d sandboxes %.2f + %.2f req/s (%d polled, each every ≥ %.1f s; peak %d; polled twice or more: %d at %.2f req/s, last interval %.2f)",
		window.Round(time.Second), s.known, s.focused, s.all, s.polled, s.minGap.Seconds(), s.peak, s.recurring, s.others, s.steady,
		l.known, l.focused, l.all, l.polled, l.minGap.Seconds(), l.peak, l.recurring, l.others, l.steady)
	// every background sandbox polled within the window, none again sooner than the interval of
	// all, and the plain count within the budget
	ok := l.all <= 5*1.02 && l.focused <= 3*1.02 && l.polled == l.known-1 && s.polled == s.known-1
	for i, r := range res {
		ok = ok && r.minGap >= record.DefaultWatchBudget.SlowInterval(sizes[i])*98/100
	}
	return []row{{fig: "13i", name: fmt.Sprintf("watcher requests, %d known sandboxes (1 on screen), over %v", l.known, window.Round(time.Second)),
		value:    fmt.Sprintf("%.2f + %.2f req/s (each every ≥ %.1f s; peak %d in 1 s)", l.focused, l.all, l.minGap.Seconds(), l.peak),
		baseline: fmt.Sprintf("%d sandboxes %.2f + %.2f req/s", s.known, s.focused, s.all),
		ratio:    f2(l.all/max(s.all, 0.001)) + "× others", budget: "on screen ≤ 3 + others ≤ 5 req/s", result: verdict(ok)}}, nil
}
