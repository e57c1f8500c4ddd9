package reliability

// The fault matrix: every row breaks a log follow (client.Follow) or a terminal attach
// (client.ConnectTerminal) one way, through faultproxy in front of the real local bridge, and states
// what the user must then see. Process output is seeded random bytes with hostile prefixes (invalid
// UTF-8, NUL, escapes, C1), so "byte-exact" also covers binary output.
//
// Each row logs one line "MATRIX|<transport>|<row>|<expected>|<observed>|<PASS or FAIL>", from
// which RELIABILITY.md's table is made.

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/faultproxy"
	"sandscope/localbridge"
)

var seedFlag = flag.Uint64("reliability.seed", 20261129, "base seed of the fault matrix (process output and fault offsets)")

type followRow struct {
	name, want string
	tweak      func(*localbridge.Config)
	opts       func(*client.FollowOptions)
	// faults installs proxy rules once the process runs (p is its launch status).
	faults func(e *env, rng *mrand.Rand, p client.Process)
	// at runs once, when at least atBytes bytes were delivered.
	at      func(e *env)
	atBytes int
	slow    time.Duration
	chunks  int
	pause   string

	final    client.LogEventKind
	must     []client.LogEventKind
	mustNot  []client.LogEventKind
	complete bool // the whole output, byte-exact (segments at Gap events when gaps are allowed)
	check    func(t *testing.T, r *followResult) string
}

func onLogs(f faultproxy.Fault, times int) faultproxy.Rule {
	return faultproxy.Rule{Path: "/logs", Times: times, Fault: f}
}

var followMatrix = []followRow{
	{
		name: "binary + invalid UTF-8 output, no fault", want: "LIVE → ENDED (exit 0), byte-exact",
		final: client.Ended, complete: true, mustNot: []client.LogEventKind{client.Interrupted, client.Gap, client.SuspectEnd},
	},
	{
		name: "connection reset at random offsets (3×)", want: "INTERRUPTED → RECONNECTING → RESUMED → ENDED, byte-exact",
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.CutAfterRandom(rng, 40000), 3))
		},
		final: client.Ended, complete: true, must: []client.LogEventKind{client.Interrupted, client.Reconnecting, client.Resumed},
		mustNot: []client.LogEventKind{client.Gap},
	},
	{
		name: "stall with no bytes (held open)", want: "QUIET/INTERRUPTED (status says ended) → RESUMED → ENDED, byte-exact, no hang",
		opts: func(o *client.FollowOptions) { o.QuietAfter = 300 * time.Millisecond },
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.StallAfter(1+rng.Int64N(20000), 0), 1))
		},
		final: client.Ended, complete: true, must: []client.LogEventKind{client.Interrupted, client.Resumed},
	},
	{
		name: "bridge process restart (same address, empty state)", want: "INTERRUPTED → RECONNECTING → LOST, output a prefix, never ENDED",
		at: func(e *env) { _ = e.br.restart() }, atBytes: 8 << 10,
		final: client.Lost, must: []client.LogEventKind{client.Interrupted}, mustNot: []client.LogEventKind{client.Ended},
	},
	{
		name: "bridge gone for good", want: "INTERRUPTED → RECONNECTING ×n → FAILED (retry budget), output a prefix",
		opts: func(o *client.FollowOptions) { o.RetryBudget = 4 },
		at:   func(e *env) { e.br.stop() }, atBytes: 8 << 10,
		final: client.Failed, must: []client.LogEventKind{client.Interrupted, client.Reconnecting}, mustNot: []client.LogEventKind{client.Ended, client.Lost},
	},
	{
		name: "text 500 on resume (after a cut)", want: "INTERRUPTED → RESUMED → ENDED, byte-exact; no GAP marker (cursor numbers prove nothing is missing)",
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.CutAfterRandom(rng, 40000), 1))
			e.proxy.Add(onLogs(faultproxy.InternalError(), 2))
		},
		final: client.Ended, complete: true, must: []client.LogEventKind{client.Interrupted, client.Resumed},
		mustNot: []client.LogEventKind{client.Gap},
	},
	{
		name: "text 500 on resume after the log head was evicted", want: "INTERRUPTED → RESUMED → ENDED, byte-exact; no GAP marker (the evicted bytes were already shown)",
		tweak: func(c *localbridge.Config) { c.ProcessLogBytes = 16 << 10 },
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.CutAfter(45000+rng.Int64N(10000)), 1))
			e.proxy.Add(onLogs(faultproxy.InternalError(), 1))
		},
		final: client.Ended, complete: true, must: []client.LogEventKind{client.Interrupted, client.Resumed},
		mustNot: []client.LogEventKind{client.Gap},
	},
	{
		name: "JSON 502 pool_error on open and resume", want: "INTERRUPTED → RESUMED → ENDED, byte-exact",
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.PoolError("Failed to start container"), 1))
			e.proxy.Add(onLogs(faultproxy.CutAfterRandom(rng, 40000), 1))
			e.proxy.Add(onLogs(faultproxy.PoolError("Failed to start container"), 1))
		},
		final: client.Ended, complete: true, must: []client.LogEventKind{client.Interrupted, client.Resumed}, mustNot: []client.LogEventKind{client.Gap},
	},
	{
		name: "503 capacity_exceeded on resume", want: "INTERRUPTED → RESUMED → ENDED, byte-exact",
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.CutAfterRandom(rng, 40000), 1))
			e.proxy.Add(onLogs(faultproxy.CapacityExceeded(), 2))
		},
		final: client.Ended, complete: true, must: []client.LogEventKind{client.Interrupted, client.Resumed}, mustNot: []client.LogEventKind{client.Gap},
	},
	{
		name: "401 mid-session (token rotated)", want: "INTERRUPTED → FAILED (unauthorized, no retry storm), output a prefix, never ENDED",
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.CutAfter(4000+rng.Int64N(20000)), 1))
			e.proxy.Add(faultproxy.Rule{Path: "/v1/", Fault: faultproxy.Unauthorized()})
		},
		final: client.Failed, must: []client.LogEventKind{client.Interrupted}, mustNot: []client.LogEventKind{client.Ended, client.Lost},
		check: func(t *testing.T, r *followResult) string {
			if !errors.Is(r.final.Err, client.ErrUnauthorized) {
				return fmt.Sprintf("FAILED does not say unauthorized: %v", r.final.Err)
			}
			return ""
		},
	},
	{
		name: "malformed SSE data line", want: "INTERRUPTED (malformed event) → RESUMED → ENDED, byte-exact",
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.GarbleSSE(2+rng.IntN(10)), 1))
		},
		final: client.Ended, complete: true, must: []client.LogEventKind{client.Interrupted, client.Resumed}, mustNot: []client.LogEventKind{client.Gap},
	},
	{
		name: "forged terminal event exit 0 while running", want: "SUSPECT END → (keeps following) → ENDED, byte-exact",
		faults: func(e *env, rng *mrand.Rand, _ client.Process) {
			e.proxy.Add(onLogs(faultproxy.ForgedExit(3+rng.IntN(10), 0), 1))
		},
		final: client.Ended, complete: true, must: []client.LogEventKind{client.SuspectEnd}, mustNot: []client.LogEventKind{client.Gap},
	},
	{
		name: "sandbox stop mid-stream", want: "LOST (sandbox stopped), output a prefix, never ENDED",
		at: func(e *env) { _ = e.br.server().StopSandbox(e.sb) }, atBytes: 8 << 10,
		final: client.Lost, mustNot: []client.LogEventKind{client.Ended},
		check: func(t *testing.T, r *followResult) string {
			if l := r.final.Loss; l == nil || l.SandboxRunning == nil || *l.SandboxRunning {
				return fmt.Sprintf("loss evidence does not say stopped: %+v", r.final.Loss)
			}
			return ""
		},
	},
	{
		name: "sandbox replace mid-stream", want: "LOST (now incarnation 2, was 1; explicit), output a prefix, never ENDED",
		at: func(e *env) { _ = e.br.server().ReplaceSandbox(e.sb) }, atBytes: 8 << 10,
		final: client.Lost, mustNot: []client.LogEventKind{client.Ended},
		check: func(t *testing.T, r *followResult) string {
			l := r.final.Loss
			if l == nil || l.Incarnation != 2 || l.Previous != 1 || l.Inferred {
				return fmt.Sprintf("loss evidence is not 'incarnation 2, was 1, explicit': %+v", l)
			}
			return ""
		},
	},
	{
		name: "slow reader, small retention (16 KiB)", want: "ENDED; byte-exact, or GAP markers exactly where bytes are missing",
		tweak:  func(c *localbridge.Config) { c.ProcessLogBytes = 16 << 10 },
		chunks: 96, pause: "0.001", slow: 2 * time.Millisecond,
		final: client.Ended, complete: true,
	},
}

func TestFaultMatrixFollow(t *testing.T) {
	for i, row := range followMatrix {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			seed := *seedFlag + uint64(i)
			runFollowRow(t, row, seed)
		})
	}
}

func runFollowRow(t *testing.T, row followRow, seed uint64) {
	e := newEnv(t, row.tweak)
	chunks, pause := 48, "0.005"
	if row.chunks > 0 {
		chunks, pause = row.chunks, row.pause
	}
	src := newSource(seed, chunks, 1024)
	rng := mrand.New(mrand.NewPCG(seed, 7))
	p := e.startProcess(src, pause)
	if row.faults != nil {
		row.faults(e, rng, p)
	}
	opts := client.FollowOptions{QuietAfter: 2 * time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, RetryBudget: 20, Status: &p}
	if row.opts != nil {
		row.opts(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := e.c.Follow(ctx, e.sb, p.ID, opts)
	var once sync.Once
	onData := func(total int) {
		if row.at != nil && total >= row.atBytes {
			once.Do(func() { row.at(e) })
		}
	}
	r := collectFollow(f, cancel, onData, row.slow)
	wantOut, wantErr := src.split()
	problems := followProblems(t, row, r, wantOut, wantErr, e.br.token)
	reportRow(t, "follow", row.name, row.want, r.summary(), problems, seed)
}

func followProblems(t *testing.T, row followRow, r *followResult, wantOut, wantErr []byte, token string) []string {
	var probs []string
	if r.hung {
		probs = append(probs, fmt.Sprintf("no final state within %v (hang)", caseTimeout))
	}
	switch {
	case r.final == nil:
		probs = append(probs, "events closed without a final event")
	case r.final.Kind != row.final:
		probs = append(probs, fmt.Sprintf("final state %s, want %s (%s)", r.final.Kind, row.final, r.final.Reason))
	case r.final.Kind == client.Ended && (r.final.Status == nil || r.final.Status.Exit == nil || r.final.Status.Exit.Code != 0):
		probs = append(probs, fmt.Sprintf("ENDED without the confirmed exit 0: %+v", r.final.Status))
	}
	probs = append(probs, kindProblems(row.must, row.mustNot, r.saw)...)
	complete := row.complete && r.final != nil && r.final.Kind == client.Ended
	if d := checkSegments(r.out[0], wantOut, r.gapsAt[0], complete); d != "" {
		probs = append(probs, "stdout: "+d)
	}
	if d := checkSegments(r.out[1], wantErr, r.gapsAt[1], complete); d != "" {
		probs = append(probs, "stderr: "+d)
	}
	if tokenInEvents(r.events, func(ev client.LogEvent) (string, error) { return ev.Reason, ev.Err }, token) {
		probs = append(probs, "the token appears in an event's text")
	}
	if row.check != nil && r.final != nil && r.final.Kind == row.final {
		if s := row.check(t, r); s != "" {
			probs = append(probs, s)
		}
	}
	return probs
}

func reportRow(t *testing.T, transport, name, want, got string, probs []string, seed uint64) {
	t.Helper()
	verdict := "PASS"
	if len(probs) > 0 {
		verdict = "FAIL: " + strings.Join(probs, "; ")
	}
	t.Logf("MATRIX|%s|%s|%s|%s|%s", transport, name, want, got, verdict)
	if len(probs) > 0 {
		t.Errorf("seed %d: %s", seed, strings.Join(probs, "; "))
	}
}

// TestFaultMatrixFollowHugeEvent forges one SSE event carrying 16 MiB of output (a process writing
// 16 MiB at once would not produce one event) from a tiny bridge, through the proxy.
func TestFaultMatrixFollowHugeEvent(t *testing.T) {
	t.Parallel()
	const sb, pid = "hugeevent", "p1"
	payload := newSource(*seedFlag, 16, 1<<20).all()
	store := "store-" + pid
	h := http.NewServeMux()
	status := `{"id":"p1","pid":7,"command":["gen"],"cwd":"/workspace","state":"exited","startedAt":"2026-11-29T10:00:00.000Z","endedAt":"2026-11-29T10:00:01.000Z","exit":{"code":0,"timedOut":false}}`
	h.HandleFunc("GET /v1/sandbox/{sb}/processes/{pid}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(status))
	})
	h.HandleFunc("GET /v1/sandbox/{sb}/running", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"running":true}`))
	})
	h.HandleFunc("GET /v1/sandbox/{sb}/processes/{pid}/logs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		ev, _ := json.Marshal(map[string]any{"type": "stdout", "cursor": client.FormatCursor(store, 1),
			"timestamp": "2026-11-29T10:00:00.500Z", "data": base64.StdEncoding.EncodeToString(payload)})
		term, _ := json.Marshal(map[string]any{"type": "terminal", "state": "exited", "cursor": client.FormatCursor(store, 2),
			"timestamp": "2026-11-29T10:00:01.000Z", "exit": map[string]any{"code": 0, "timedOut": false}})
		if r.URL.Query().Get("since") == "" {
			_, _ = w.Write([]byte("data: " + string(ev) + "\n\n"))
		}
		_, _ = w.Write([]byte("data: " + string(term) + "\n\n"))
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	p := faultproxy.New(srv.URL)
	defer p.Close()
	c, err := client.New(p.URL(), client.WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := client.Process{ID: pid, State: "running"}
	f := c.Follow(ctx, sb, pid, client.FollowOptions{Status: &running, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	r := collectFollow(f, cancel, nil, 0)
	row := followRow{final: client.Ended, complete: true, mustNot: []client.LogEventKind{client.Interrupted, client.Gap}}
	probs := followProblems(t, row, r, payload, nil, "never-a-token")
	reportRow(t, "follow", "one SSE event of 16 MiB (forged)", "LIVE → ENDED, the 16 MiB byte-exact", r.summary(), probs, *seedFlag)
}

type termRow struct {
	name, want string
	// faults installs proxy rules before the connection opens; after runs right after it opened.
	faults  func(e *env, rng *mrand.Rand)
	after   func(e *env)
	at      func(e *env)
	atBytes int
	slow    time.Duration
	timeout time.Duration

	final    client.TermEventKind
	must     []client.TermEventKind
	mustNot  []client.TermEventKind
	complete bool
	check    func(r *termResult) string
}

func onConnect(f faultproxy.Fault, times int) faultproxy.Rule {
	return faultproxy.Rule{Path: "/connect", Times: times, Fault: f}
}

func dropRow(code int, reason string) termRow {
	return termRow{
		name: fmt.Sprintf("WebSocket close %d", code), want: fmt.Sprintf("INTERRUPTED(%d) → RECONNECTING → RESUMED → EXITED 0, byte-exact", code),
		faults: func(e *env, rng *mrand.Rand) {
			e.proxy.Add(onConnect(faultproxy.WSDrop(4+rng.IntN(26), code, reason), 1))
		},
		final: client.TermExited, complete: true, must: []client.TermEventKind{client.TermInterrupted, client.TermResumed},
		mustNot: []client.TermEventKind{client.TermGap},
		check: func(r *termResult) string {
			for _, ev := range r.events {
				if ev.Kind == client.TermInterrupted {
					if ev.CloseCode != code {
						return fmt.Sprintf("interrupted with close code %d, want %d", ev.CloseCode, code)
					}
					return ""
				}
			}
			return ""
		},
	}
}

var termMatrix = []termRow{
	{
		name: "binary + invalid UTF-8 output, no fault", want: "READY → output → EXITED 0, byte-exact",
		final: client.TermExited, complete: true, mustNot: []client.TermEventKind{client.TermInterrupted, client.TermGap},
	},
	{
		name: "connection reset at a random message (TCP cut, 1006)", want: "INTERRUPTED(1006) → RECONNECTING → RESUMED → EXITED 0, byte-exact",
		faults: func(e *env, rng *mrand.Rand) {
			e.proxy.Add(onConnect(faultproxy.WSDrop(4+rng.IntN(26), 1006, ""), 2))
		},
		final: client.TermExited, complete: true, must: []client.TermEventKind{client.TermInterrupted, client.TermResumed},
	},
	{
		name: "stall with no bytes (socket open, silent) while the terminal exits", want: "notices (status check or ping) → EXITED 0 or INTERRUPTED → RESUMED → EXITED 0; no hang",
		timeout: 5 * time.Second,
		faults: func(e *env, rng *mrand.Rand) {
			e.proxy.Add(onConnect(faultproxy.WSStall(4+rng.IntN(10), 0), 1))
		},
		final: client.TermExited, complete: true,
	},
	{
		name: "bridge process restart (same address, empty state)", want: "INTERRUPTED → RECONNECTING → LOST, output a prefix, never EXITED",
		at: func(e *env) { _ = e.br.restart() }, atBytes: 8 << 10,
		final: client.TermLost, must: []client.TermEventKind{client.TermInterrupted}, mustNot: []client.TermEventKind{client.TermExited},
	},
	{
		name: "text 500 on reconnect", want: "INTERRUPTED → RECONNECTING (refused twice) → RESUMED → EXITED 0, byte-exact",
		faults: func(e *env, rng *mrand.Rand) {
			e.proxy.Add(onConnect(faultproxy.WSDrop(4+rng.IntN(26), 1006, ""), 1))
			e.proxy.Add(onConnect(faultproxy.InternalError(), 2))
		},
		final: client.TermExited, complete: true, must: []client.TermEventKind{client.TermInterrupted, client.TermResumed},
	},
	{
		name: "JSON 502 on reconnect", want: "INTERRUPTED → RECONNECTING (refused twice) → RESUMED → EXITED 0, byte-exact",
		faults: func(e *env, rng *mrand.Rand) {
			e.proxy.Add(onConnect(faultproxy.WSDrop(4+rng.IntN(26), 1006, ""), 1))
			e.proxy.Add(onConnect(faultproxy.PoolError("Failed to start container"), 2))
		},
		final: client.TermExited, complete: true, must: []client.TermEventKind{client.TermInterrupted, client.TermResumed},
	},
	{
		name: "503 capacity_exceeded on reconnect", want: "INTERRUPTED → RECONNECTING (refused twice) → RESUMED → EXITED 0, byte-exact",
		faults: func(e *env, rng *mrand.Rand) {
			e.proxy.Add(onConnect(faultproxy.WSDrop(4+rng.IntN(26), 1006, ""), 1))
			e.proxy.Add(onConnect(faultproxy.CapacityExceeded(), 2))
		},
		final: client.TermExited, complete: true, must: []client.TermEventKind{client.TermInterrupted, client.TermResumed},
	},
	{
		name: "401 mid-session (token rotated)", want: "INTERRUPTED → FAILED (unauthorized), output a prefix, never EXITED",
		faults: func(e *env, rng *mrand.Rand) {
			e.proxy.Add(onConnect(faultproxy.WSDrop(4+rng.IntN(26), 1006, ""), 1))
		},
		after: func(e *env) { e.proxy.Add(faultproxy.Rule{Path: "/v1/", Fault: faultproxy.Unauthorized()}) },
		final: client.TermFailed, must: []client.TermEventKind{client.TermInterrupted}, mustNot: []client.TermEventKind{client.TermExited},
		check: func(r *termResult) string {
			if !errors.Is(r.final.Err, client.ErrUnauthorized) {
				return fmt.Sprintf("FAILED does not say unauthorized: %v", r.final.Err)
			}
			if r.final.Attempt > 1 {
				return fmt.Sprintf("kept retrying a rejected token %d times", r.final.Attempt)
			}
			return ""
		},
	},
	dropRow(1011, "Internal error"),
	dropRow(1012, "Runtime replaced"),
	dropRow(1013, "Terminal client backpressure"),
	{
		name: "chunk header with a wrong byteLength", want: "ERROR (protocol) → INTERRUPTED → RESUMED → EXITED 0, byte-exact",
		faults: func(e *env, rng *mrand.Rand) {
			e.proxy.Add(onConnect(faultproxy.WSBadByteLength(2+rng.IntN(20), 3), 1))
		},
		final: client.TermExited, complete: true, must: []client.TermEventKind{client.TermError, client.TermInterrupted, client.TermResumed},
	},
	{
		name: "sandbox stop mid-stream", want: "INTERRUPTED → LOST (sandbox stopped), output a prefix, never EXITED",
		at: func(e *env) { _ = e.br.server().StopSandbox(e.sb) }, atBytes: 8 << 10,
		final: client.TermLost, mustNot: []client.TermEventKind{client.TermExited},
		check: func(r *termResult) string {
			if l := r.final.Loss; l == nil || l.SandboxRunning == nil || *l.SandboxRunning {
				return fmt.Sprintf("loss evidence does not say stopped: %+v", r.final.Loss)
			}
			return ""
		},
	},
	{
		name: "sandbox replace mid-stream", want: "INTERRUPTED(1012) → LOST (incarnation 2, was 1), output a prefix, never EXITED",
		at: func(e *env) { _ = e.br.server().ReplaceSandbox(e.sb) }, atBytes: 8 << 10,
		final: client.TermLost, mustNot: []client.TermEventKind{client.TermExited},
		check: func(r *termResult) string {
			l := r.final.Loss
			if l == nil || l.Incarnation != 2 || l.Previous != 1 {
				return fmt.Sprintf("loss evidence is not 'incarnation 2, was 1': %+v", l)
			}
			return ""
		},
	},
	{
		name: "slow reader", want: "EXITED 0; byte-exact, or GAP markers exactly where bytes are missing",
		slow:  3 * time.Millisecond,
		final: client.TermExited, complete: true,
	},
}

func TestFaultMatrixTerminal(t *testing.T) {
	for i, row := range termMatrix {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			runTermRow(t, row, *seedFlag+1000+uint64(i))
		})
	}
}

func runTermRow(t *testing.T, row termRow, seed uint64) {
	e := newEnv(t, nil)
	src := newSource(seed, 32, 1024)
	rng := mrand.New(mrand.NewPCG(seed, 11))
	term := e.startTerminal(src, "0.01")
	if row.faults != nil {
		row.faults(e, rng)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tc, err := e.c.ConnectTerminal(ctx, e.sb, term.ID, client.ConnectOptions{Cols: 80, Rows: 24, RetryBudget: 10,
		DialTimeout: 3 * time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer tc.Close()
	if row.after != nil {
		row.after(e)
	}
	var once sync.Once
	onData := func(total int) {
		if row.at != nil && total >= row.atBytes {
			once.Do(func() { row.at(e) })
		}
	}
	r := collectTerm(tc, onData, row.slow, cmp.Or(row.timeout, caseTimeout))
	var probs []string
	if r.hung {
		probs = append(probs, "no final state (hang)")
	}
	switch {
	case r.final == nil:
		probs = append(probs, "events closed without a final event")
	case r.final.Kind != row.final:
		probs = append(probs, fmt.Sprintf("final state %s, want %s (%s)", r.final.Kind, row.final, r.final.Reason))
	case r.final.Kind == client.TermExited && (r.final.Exit == nil || r.final.Exit.Code != 0):
		probs = append(probs, fmt.Sprintf("EXITED without exit 0: %+v", r.final.Exit))
	}
	probs = append(probs, kindProblems(row.must, row.mustNot, r.saw)...)
	complete := row.complete && r.final != nil && r.final.Kind == client.TermExited
	if d := checkSegments(r.out, src.all(), r.gapsAt, complete); d != "" {
		probs = append(probs, "output: "+d)
	}
	if tokenInEvents(r.events, func(ev client.TermEvent) (string, error) { return ev.Reason, ev.Err }, e.br.token) {
		probs = append(probs, "the token appears in an event's text")
	}
	if row.check != nil && r.final != nil && r.final.Kind == row.final {
		if s := row.check(r); s != "" {
			probs = append(probs, s)
		}
	}
	reportRow(t, "terminal", row.name, row.want, r.summary(), probs, seed)
}

// kindProblems lists the event kinds a row requires but never saw, and those it forbids but saw.
func kindProblems[K fmt.Stringer](must, mustNot []K, saw func(K) bool) []string {
	var probs []string
	for _, k := range must {
		if !saw(k) {
			probs = append(probs, "never showed "+strings.ToUpper(k.String()))
		}
	}
	for _, k := range mustNot {
		if saw(k) {
			probs = append(probs, "showed "+strings.ToUpper(k.String()))
		}
	}
	return probs
}

// tokenInEvents reports whether token appears in any event's reason or error text.
func tokenInEvents[E any](events []E, text func(E) (string, error), token string) bool {
	for _, ev := range events {
		reason, err := text(ev)
		if err != nil {
			reason += " " + err.Error()
		}
		if strings.Contains(reason, token) {
			return true
		}
	}
	return false
}
