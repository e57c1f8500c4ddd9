//go:build soak

package reliability

// The soak: many followers and attached terminals through a chaos TCP layer and the fault proxy for
// minutes, a random fault every second, then a byte-exact comparison of every stream with its source
// and a check that goroutines and heap came back to their baseline.
//
//	go test -tags soak -run '^TestSoak$' -timeout 20m -v ./reliability/ -soak.duration=5m
//
// It is bounded (counts and duration are flags) and loopback only. Output comes from cmd/soakgen,
// built by the test and run inside the sandbox (one process per stream, no fork per chunk).

import (
	"context"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/faultproxy"
)

var (
	soakDuration  = flag.Duration("soak.duration", 5*time.Minute, "how long the soak runs")
	soakFollowers = flag.Int("soak.followers", 20, "log followers")
	soakTerminals = flag.Int("soak.terminals", 5, "attached terminals")
	soakSeed      = flag.Uint64("soak.seed", 20261129, "seed of output and faults")
)

// chaos is a TCP relay that can reset any live connection (RST), the way a network path dies under
// a stream that is already open.
type chaos struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[*chaosConn]struct{}
	wg     sync.WaitGroup
}

type chaosConn struct {
	client, up net.Conn
	born       time.Time
	once       sync.Once
}

func (c *chaosConn) kill(rst bool) {
	c.once.Do(func() {
		if rst {
			if tc, ok := c.client.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
		}
		_ = c.client.Close()
		_ = c.up.Close()
	})
}

func startChaos(t *testing.T, target string) *chaos {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &chaos{ln: ln, target: target, conns: map[*chaosConn]struct{}{}}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			cl, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				_ = cl.Close()
				continue
			}
			cc := &chaosConn{client: cl, up: up, born: time.Now()}
			c.mu.Lock()
			c.conns[cc] = struct{}{}
			c.mu.Unlock()
			c.wg.Add(2)
			go func() { defer c.wg.Done(); _, _ = io.Copy(up, cl); cc.kill(false); c.drop(cc) }()
			go func() { defer c.wg.Done(); _, _ = io.Copy(cl, up); cc.kill(false); c.drop(cc) }()
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *chaos) drop(cc *chaosConn) {
	c.mu.Lock()
	delete(c.conns, cc)
	c.mu.Unlock()
}

// resetRandom resets one connection older than minAge (a stream, not a short request).
func (c *chaos) resetRandom(rng *mrand.Rand, minAge time.Duration) bool {
	c.mu.Lock()
	var live []*chaosConn
	for cc := range c.conns {
		if time.Since(cc.born) >= minAge {
			live = append(live, cc)
		}
	}
	c.mu.Unlock()
	if len(live) == 0 {
		return false
	}
	sort.Slice(live, func(i, j int) bool { return live[i].born.Before(live[j].born) })
	live[rng.IntN(len(live))].kill(true)
	return true
}

func (c *chaos) close() {
	_ = c.ln.Close()
	c.mu.Lock()
	for cc := range c.conns {
		cc.kill(false)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

type streamStat struct {
	name                       string
	bytes, want                int
	interrupted, resumed, gaps int
	suspect                    int
	final                      string
	exact                      bool
	problem                    string
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func TestSoak(t *testing.T) {
	dur := *soakDuration
	exe := filepath.Join(t.TempDir(), "soakgen")
	if out, err := exec.Command("go", "build", "-o", exe, "sandscope/reliability/cmd/soakgen").CombinedOutput(); err != nil {
		t.Fatalf("build soakgen: %v\n%s", err, out)
	}
	br := startBridge(t, nil)
	fp, err := faultproxy.Start(br.url())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fp.Close)
	ch := startChaos(t, strings.TrimPrefix(fp.URL(), "http://"))
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	c, err := client.New("http://"+ch.ln.Addr().String(), client.WithToken(br.token), client.WithRequestTimeout(5*time.Second),
		client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	direct, _ := client.New(br.url(), client.WithToken(br.token))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb, err := direct.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	baseG, baseHeap := runtime.NumGoroutine(), heapInUse()

	const size, pauseMS = 1024, 100
	chunks := int(dur / (pauseMS * time.Millisecond))
	gen := func(seed uint64, mixed bool) []string {
		m := "0"
		if mixed {
			m = "1"
		}
		return []string{strconv.FormatUint(seed, 10), strconv.Itoa(chunks), strconv.Itoa(size), strconv.Itoa(pauseMS), m}
	}
	type followJob struct {
		src *source
		p   client.Process
	}
	var follows []followJob
	for i := 0; i < *soakFollowers; i++ {
		seed := *soakSeed + uint64(i)
		p, err := direct.StartProcess(ctx, sb, client.ExecRequest{Argv: append([]string{exe}, gen(seed, true)...)})
		if err != nil {
			t.Fatalf("start generator %d: %v", i, err)
		}
		follows = append(follows, followJob{newSource(seed, chunks, size), p})
	}
	type termJob struct {
		src  *source
		term client.Terminal
	}
	var terms []termJob
	for i := 0; i < *soakTerminals; i++ {
		seed := *soakSeed + 500 + uint64(i)
		term, err := direct.CreateTerminal(ctx, sb, client.TerminalRequest{
			Argv: append([]string{"sh", "-c", `stty raw -echo; exec "$0" "$@"`, exe}, gen(seed, false)...)})
		if err != nil {
			t.Fatalf("create terminal %d: %v", i, err)
		}
		terms = append(terms, termJob{newSource(seed, chunks, size), term})
	}

	stats := make([]*streamStat, len(follows)+len(terms))
	var wg sync.WaitGroup
	var peakG int
	var peakMu sync.Mutex
	for i, job := range follows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fctx, fcancel := context.WithCancel(ctx)
			defer fcancel()
			f := c.Follow(fctx, sb, job.p.ID, client.FollowOptions{Status: &job.p, RetryBudget: 100,
				MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
			r := collectFollowWithin(f, fcancel, nil, 0, dur+2*time.Minute)
			st := &streamStat{name: fmt.Sprintf("follow %02d", i)}
			for _, ev := range r.events {
				switch ev.Kind {
				case client.Interrupted:
					st.interrupted++
				case client.Resumed:
					st.resumed++
				case client.Gap:
					st.gaps++
				case client.SuspectEnd:
					st.suspect++
				}
			}
			wantOut, wantErr := job.src.split()
			st.bytes, st.want = len(r.out[0])+len(r.out[1]), len(wantOut)+len(wantErr)
			st.final = "none"
			if r.final != nil {
				st.final = strings.ToUpper(r.final.Kind.String())
			}
			if r.hung {
				st.final += " (hung)"
			}
			d1 := checkSegments(r.out[0], wantOut, nil, true)
			d2 := checkSegments(r.out[1], wantErr, nil, true)
			st.exact = d1 == "" && d2 == "" && r.final != nil && r.final.Kind == client.Ended
			st.problem = strings.TrimSpace(d1 + " " + d2)
			stats[i] = st
		}()
	}
	for i, job := range terms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc, err := c.ConnectTerminal(ctx, sb, job.term.ID, client.ConnectOptions{RetryBudget: 100, DialTimeout: 5 * time.Second,
				MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
			st := &streamStat{name: fmt.Sprintf("terminal %d", i), want: len(job.src.all()), final: "none"}
			stats[len(follows)+i] = st
			if err != nil {
				st.problem = "connect: " + err.Error()
				return
			}
			defer tc.Close()
			r := collectTerm(tc, nil, 0, dur+2*time.Minute)
			for _, ev := range r.events {
				switch ev.Kind {
				case client.TermInterrupted:
					st.interrupted++
				case client.TermResumed:
					st.resumed++
				case client.TermGap:
					st.gaps++
				}
			}
			st.bytes = len(r.out)
			if r.final != nil {
				st.final = strings.ToUpper(r.final.Kind.String())
			}
			if r.hung {
				st.final += " (hung)"
			}
			d := checkSegments(r.out, job.src.all(), nil, true)
			st.exact = d == "" && r.final != nil && r.final.Kind == client.TermExited
			st.problem = d
			if d != "" {
				n := min(len(r.out), 48)
				st.problem += fmt.Sprintf(" (first bytes %q, want %q)", r.out[:n], job.src.all()[:48])
			}
		}()
	}

	// The fault loop: one random fault per second for the whole run.
	rng := mrand.New(mrand.NewPCG(*soakSeed, 99))
	faults := map[string]int{}
	logFaults := []struct {
		name string
		f    func() faultproxy.Fault
	}{
		{"logs: text 500", faultproxy.InternalError},
		{"logs: 502 pool_error", func() faultproxy.Fault { return faultproxy.PoolError("Failed to start container") }},
		{"logs: 503 capacity", faultproxy.CapacityExceeded},
		{"logs: garbled SSE line", func() faultproxy.Fault { return faultproxy.GarbleSSE(1 + rng.IntN(20)) }},
		{"logs: stall 2s", func() faultproxy.Fault { return faultproxy.StallAfter(rng.Int64N(4000), 2*time.Second) }},
		{"logs: forged exit 0", func() faultproxy.Fault { return faultproxy.ForgedExit(1+rng.IntN(20), 0) }},
		{"logs: cut at random offset", func() faultproxy.Fault { return faultproxy.CutAfterRandom(rng, 20000) }},
	}
	wsFaults := []struct {
		name string
		f    func() faultproxy.Fault
	}{
		{"ws: close 1006", func() faultproxy.Fault { return faultproxy.WSDrop(1+rng.IntN(30), 1006, "") }},
		{"ws: close 1011", func() faultproxy.Fault { return faultproxy.WSDrop(1+rng.IntN(30), 1011, "Internal error") }},
		{"ws: close 1012", func() faultproxy.Fault { return faultproxy.WSDrop(1+rng.IntN(30), 1012, "Runtime replaced") }},
		{"ws: close 1013", func() faultproxy.Fault {
			return faultproxy.WSDrop(1+rng.IntN(30), 1013, "Terminal client backpressure")
		}},
		{"ws: wrong byteLength", func() faultproxy.Fault { return faultproxy.WSBadByteLength(1+rng.IntN(30), 1+rng.IntN(5)) }},
		{"ws: text 500 on connect", faultproxy.InternalError},
		{"ws: 503 on connect", faultproxy.CapacityExceeded},
	}
	start := time.Now()
	tick := time.NewTicker(time.Second)
	for time.Since(start) < dur {
		<-tick.C
		switch k := rng.IntN(3); {
		case k == 0:
			if ch.resetRandom(rng, 500*time.Millisecond) {
				faults["tcp: reset a live connection"]++
			}
		case k == 1:
			lf := logFaults[rng.IntN(len(logFaults))]
			fp.Add(faultproxy.Rule{Path: "/logs", Times: 1, Fault: lf.f()})
			faults[lf.name]++
			ch.resetRandom(rng, 500*time.Millisecond)
		default:
			wf := wsFaults[rng.IntN(len(wsFaults))]
			fp.Add(faultproxy.Rule{Path: "/connect", Times: 1, Fault: wf.f()})
			faults[wf.name]++
			ch.resetRandom(rng, 500*time.Millisecond)
		}
		g := runtime.NumGoroutine()
		peakMu.Lock()
		peakG = max(peakG, g)
		peakMu.Unlock()
	}
	tick.Stop()
	peakHeap := heapInUse()
	fp.Clear()
	wg.Wait()
	elapsed := time.Since(start)

	// Settle: every stream has ended. Close the test's own idle connections and its relays (proxy
	// and chaos layer are test infrastructure), then let the bridge wind down.
	follows, terms = nil, nil
	retainedHeap := heapInUse() // the bridge still holds every finished stream's retained log
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := direct.DeleteSandbox(dctx, sb); err != nil {
		t.Errorf("delete sandbox: %v", err)
	}
	dcancel()
	tr.CloseIdleConnections()
	fp.Close()
	ch.close()
	var endG int
	for i := 0; i < 100; i++ {
		endG = runtime.NumGoroutine()
		if endG <= baseG+2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	endHeap := heapInUse()

	var b strings.Builder
	fmt.Fprintf(&b, "\nSOAK %d followers + %d terminals, %v, %d chunks × %d B each (seed %d)\n", *soakFollowers, *soakTerminals, elapsed.Round(time.Second), chunks, size, *soakSeed)
	fmt.Fprintf(&b, "| stream | bytes | source | interrupted | resumed | gaps | suspect end | final | byte-exact |\n|---|---|---|---|---|---|---|---|---|\n")
	exact := 0
	for _, st := range stats {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %s | %v |\n", st.name, st.bytes, st.want, st.interrupted, st.resumed, st.gaps, st.suspect, st.final, st.exact)
		if st.exact {
			exact++
		}
	}
	names := make([]string, 0, len(faults))
	total := 0
	for k, v := range faults {
		names = append(names, k)
		total += v
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "\n| fault | injected |\n|---|---|\n")
	for _, k := range names {
		fmt.Fprintf(&b, "| %s | %d |\n", k, faults[k])
	}
	ps := fp.Stats()
	fmt.Fprintf(&b, "| total | %d (proxy applied %d rule faults; %d requests, %d WebSockets) |\n", total, ps.Faults, ps.Requests, ps.WebSockets)
	fmt.Fprintf(&b, "\n| measure | baseline | peak (test buffers included) | streams ended, logs retained | sandbox deleted, settled |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| goroutines | %d | %d | – | %d |\n", baseG, peakG, endG)
	fmt.Fprintf(&b, "| heap in use (MiB) | %.1f | %.1f | %.1f | %.1f |\n", mib(baseHeap), mib(peakHeap), mib(retainedHeap), mib(endHeap))
	fmt.Fprintf(&b, "\nstreams byte-exact: %d/%d\n", exact, len(stats))
	t.Log(b.String())

	for _, st := range stats {
		if !st.exact {
			t.Errorf("%s: not byte-exact or not confirmed (%s; final %s)", st.name, st.problem, st.final)
		}
	}
	if endG > baseG+2 {
		var dump strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("goroutines did not settle: baseline %d, after %d\n%s", baseG, endG, dump.String())
	}
	if endHeap > 2*baseHeap+8<<20 {
		t.Errorf("heap did not settle: baseline %.1f MiB, after %.1f MiB", mib(baseHeap), mib(endHeap))
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
