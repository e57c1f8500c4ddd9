package reliability

// The stable fault matrix: runs under the in-sandbox recorder (client.Stable.Run) and stable PTYs
// (client.Stable.ConnectPTY) against the local bridge in the stable dialect, broken through
// faultproxy or the bridge's stable hooks. Rows log "MATRIX|stable-exec|…" and "MATRIX|stable-pty|…".

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/faultproxy"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// stableScript writes n lines of mixed text and invalid UTF-8, pausing between them, then exits
// with code.
func stableScript(n int, pause string, code int) (argv []string, wantOut []byte) {
	var b strings.Builder
	var want bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "printf 'line %d \\377\\n'; sleep %s; ", i, pause)
		fmt.Fprintf(&want, "line %d \xff\n", i)
	}
	fmt.Fprintf(&b, "exit %d", code)
	return []string{"sh", "-c", b.String()}, want.Bytes()
}

type stableRun struct {
	events  []string
	out     []byte
	res     client.RunResult
	rec     client.RunResult
	recErr  error
	retries int // probes that broke off and were repeated
}

// runAndRecover runs argv, calls at after the first output, collects the stream, then reads the
// recorder's files until the run is decided (or 20 s pass).
func runAndRecover(t *testing.T, s *client.Stable, sandbox string, argv []string, at func()) stableRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var r stableRun
	run, err := s.Run(ctx, sandbox, client.ExecOptions{Argv: argv})
	if err != nil {
		r.recErr = err
		return r
	}
	fired := false
	for ev := range run.Events() {
		switch {
		case ev.Result != nil:
			r.res = *ev.Result
			r.events = append(r.events, string(ev.Result.State))
		case ev.Kind == client.ExecStdout:
			r.out = append(r.out, ev.Text...)
			if len(r.events) == 0 || r.events[len(r.events)-1] != "DATA" {
				r.events = append(r.events, "DATA")
			}
			if !fired && at != nil {
				fired = true
				go at()
			}
		}
	}
	if r.res.State == client.RunConfirmed {
		r.rec = r.res
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		rec, err := s.Recover(ctx, sandbox, run.ID, run.Incarnation)
		if err != nil && errors.Is(err, client.ErrTransport) && time.Now().Before(deadline) {
			// A probe that broke off decides nothing: try again, as exec and logs -f do.
			r.retries++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			r.recErr = err
			break
		}
		r.rec = rec
		if rec.State != client.RunStillGoing || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.events = append(r.events, "recovered "+string(r.rec.State))
	return r
}

// stableBehindProxy starts a stable-dialect local bridge and a fault proxy in front of it, and
// returns the stable client that talks through the proxy.
func stableBehindProxy(t *testing.T) (*bridgetest.Bridge, *faultproxy.Proxy, *client.Stable) {
	t.Helper()
	b := bridgetest.Start(t, bridgetest.WithDialect(localbridge.DialectStable))
	proxy := faultproxy.New(b.URL)
	t.Cleanup(proxy.Close)
	c, err := client.New(proxy.URL(), client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	return b, proxy, client.NewStable(c)
}

func TestFaultMatrixStableExec(t *testing.T) {
	t.Parallel()
	b, proxy, s := stableBehindProxy(t)
	argv, want := stableScript(6, "0.1", 3)
	wantText := bytes.ReplaceAll(want, []byte{0xff}, []byte("\uFFFD"))
	type row struct {
		name, want string
		sandbox    string
		argv       []string // default: the shared script
		faults     func()
		at         func()
		check      func(r stableRun) []string
	}
	confirmed := func(code int, exact bool) func(r stableRun) []string {
		return func(r stableRun) []string {
			var p []string
			if r.rec.State != client.RunConfirmed || r.rec.Code != code {
				p = append(p, fmt.Sprintf("final %s %d, want EXITED %d", r.rec.State, r.rec.Code, code))
			}
			if exact && r.rec.State == client.RunConfirmed && r.res.State != client.RunConfirmed && !bytes.Equal(r.rec.RecoveredOut, want) {
				p = append(p, fmt.Sprintf("recovered output not byte-exact: %q", r.rec.RecoveredOut))
			}
			if !bytes.HasPrefix(wantText, r.out) {
				p = append(p, fmt.Sprintf("streamed text is not a prefix of the output: %q", r.out))
			}
			return p
		}
	}
	rows := []row{
		{name: "invalid UTF-8 output, no fault", want: "EXITED 3 (trailer); stream text with U+FFFD, files byte-exact",
			sandbox: "nofault", check: func(r stableRun) []string {
				p := confirmed(3, false)(r)
				if r.res.State != client.RunConfirmed || !bytes.Equal(r.out, wantText) {
					p = append(p, fmt.Sprintf("stream %s, text %q", r.res.State, r.out))
				}
				if rec, err := s.Recover(context.Background(), "nofault", "nope", ""); err != nil || rec.State != client.RunLost {
					p = append(p, fmt.Sprintf("unknown run: %+v %v", rec, err))
				}
				return p
			}},
		{name: "connection cut mid-stream (proxy)", want: "INTERRUPTED → recovered EXITED 3, byte-exact; never EXITED from the stream",
			sandbox: "cut", faults: func() { proxy.Add(faultproxy.Rule{Path: "/exec", Times: 1, Fault: faultproxy.CutAfter(200)}) },
			check: func(r stableRun) []string {
				p := confirmed(3, true)(r)
				if r.res.State != client.RunInterrupted {
					p = append(p, "stream ended "+string(r.res.State)+", want INTERRUPTED")
				}
				return p
			}},
		{name: "body stalled 1.5 s (proxy), then resumed", want: "DATA → (stall) → EXITED 3 from the trailer; nothing lost",
			sandbox: "stall", faults: func() {
				proxy.Add(faultproxy.Rule{Path: "/exec", Times: 1, Fault: faultproxy.StallAfter(100, 1500*time.Millisecond)})
			},
			check: func(r stableRun) []string {
				p := confirmed(3, false)(r)
				if r.res.State != client.RunConfirmed || !bytes.Equal(r.out, wantText) {
					// why it ended so: the read error or the evidence (a rare INTERRUPTED under load)
					p = append(p, fmt.Sprintf("stream %s, text %q (%s; %s)", r.res.State, r.out, r.res.Message, r.res.Evidence))
				}
				return p
			}},
		{name: "recorder killed (SIGKILL) mid-run", want: "INTERRUPTED → ENDED without status: exit code unknown (never EXITED)",
			sandbox: "killed", argv: []string{"sh", "-c", "echo started; sleep 3; echo killme; exit 3"},
			at: func() {
				time.Sleep(150 * time.Millisecond)
				b.Server.CutExecStreams("killed")
				// The recorder's own bash (its command line names sandscope-run before the command).
				killRecorder(t, "killme")
			},
			check: func(r stableRun) []string {
				if r.rec.State != client.RunUnconfirmed || r.rec.State == client.RunConfirmed {
					return []string{fmt.Sprintf("final %s %d, want UNCONFIRMED (no status)", r.rec.State, r.rec.Code)}
				}
				return nil
			}},
		{name: "exit-code-less completion while running ({\"exit_code\":0})", want: "UNCONFIRMED (reported 0) → recovered EXITED 3, byte-exact; never EXITED 0",
			sandbox: "fake", at: func() { b.Server.CompleteWithoutExit("fake") },
			check: func(r stableRun) []string {
				p := confirmed(3, true)(r)
				if r.res.State != client.RunUnconfirmed || r.res.Code != 0 {
					// why it ended so: the read error or the evidence (a rare ending seen under load)
					p = append(p, fmt.Sprintf("stream ended %s %d (%s; %s), want UNCONFIRMED 0", r.res.State, r.res.Code, r.res.Message, r.res.Evidence))
				}
				return p
			}},
		{name: "cut by the bridge (Worker–client)", want: "INTERRUPTED → recovered EXITED 3, byte-exact",
			sandbox: "bridgecut", at: func() { b.Server.CutExecStreams("bridgecut") },
			check: func(r stableRun) []string {
				p := confirmed(3, true)(r)
				if r.res.State != client.RunInterrupted {
					p = append(p, "stream ended "+string(r.res.State)+", want INTERRUPTED")
				}
				return p
			}},
		{name: "container replaced mid-run", want: "ERROR exec_error → LOST (inferred: files and marker gone)",
			sandbox: "replaced", at: func() { _ = b.Server.ReplaceSandbox("replaced") },
			check: func(r stableRun) []string {
				var p []string
				if r.res.State != client.RunErrored || r.res.ErrCode != "exec_error" {
					p = append(p, fmt.Sprintf("stream ended %s %s (%s)", r.res.State, r.res.ErrCode, r.res.Message))
				}
				if r.rec.State != client.RunLost || !r.rec.Inferred {
					p = append(p, fmt.Sprintf("final %s, want LOST inferred", r.rec.State))
				}
				return p
			}},
		{name: "container slept (stopped) mid-run", want: "ERROR exec_error → LOST (inferred)",
			sandbox: "slept", at: func() { _ = b.Server.StopSandbox("slept") },
			check: func(r stableRun) []string {
				var p []string
				if r.res.State != client.RunErrored {
					p = append(p, fmt.Sprintf("stream ended %s (%s)", r.res.State, r.res.Message))
				}
				if r.rec.State != client.RunLost || !r.rec.Inferred {
					p = append(p, fmt.Sprintf("final %s, want LOST inferred", r.rec.State))
				}
				return p
			}},
		{name: "503 capacity_exceeded on launch", want: "no run (typed capacity error), nothing invented",
			sandbox: "capacity", faults: func() { b.Server.SetCapacityExceeded(true) },
			check: func(r stableRun) []string {
				b.Server.SetCapacityExceeded(false)
				if r.recErr == nil || !strings.Contains(r.recErr.Error(), "capacity") {
					return []string{fmt.Sprintf("launch error %v, want capacity_exceeded", r.recErr)}
				}
				return nil
			}},
	}
	for _, row := range rows {
		proxy.Clear()
		if row.faults != nil {
			row.faults()
		}
		rowArgv := argv
		if row.argv != nil {
			rowArgv = row.argv
		}
		r := runAndRecover(t, s, row.sandbox, rowArgv, row.at)
		probs := row.check(r)
		if strings.Contains(strings.Join(r.events, " ")+r.rec.Evidence+r.res.Message, b.Token) {
			probs = append(probs, "token in an event")
		}
		got := strings.Join(r.events, " → ")
		if r.retries > 0 {
			t.Logf("%s: %d recovery probes broke off and were repeated", row.name, r.retries)
		}
		if r.recErr != nil {
			got = "error: " + r.recErr.Error()
		}
		reportRow(t, "stable-exec", row.name, row.want, got, probs, *seedFlag)
	}
}

func TestFaultMatrixStablePTY(t *testing.T) {
	t.Parallel()
	b, proxy, s := stableBehindProxy(t)
	type row struct {
		name, want string
		sandbox    string
		setup      func()
		run        func(p *client.PTYConn) (kinds []string, probs []string)
	}
	collect := func(p *client.PTYConn, until func(ev client.TermEvent, out string) bool, limit time.Duration) (kinds []string, out string, last client.TermEvent, timedOut bool) {
		var sb strings.Builder
		timeout := time.After(limit)
		for {
			select {
			case ev, ok := <-p.Events():
				if !ok {
					return kinds, sb.String(), last, false
				}
				k := strings.ToUpper(ev.Kind.String())
				if len(kinds) == 0 || kinds[len(kinds)-1] != k {
					kinds = append(kinds, k)
				}
				sb.Write(ev.Data)
				last = ev
				if until(ev, sb.String()) {
					return kinds, sb.String(), last, false
				}
			case <-timeout:
				return kinds, sb.String(), last, true
			}
		}
	}
	final := func(ev client.TermEvent, _ string) bool {
		return ev.Kind == client.TermEnded || ev.Kind == client.TermFailed || ev.Kind == client.TermExited
	}
	rows := []row{
		{name: "shell exits (no exit message on stable)", sandbox: "ptyexit", want: "READY → OUTPUT → ENDED (exit code unknown); never EXITED 0",
			run: func(p *client.PTYConn) ([]string, []string) {
				_, _ = p.Write([]byte("echo hi-$((1+1)); exit 3\n"))
				k, out, last, to := collect(p, final, 15*time.Second)
				var probs []string
				if to || last.Kind != client.TermEnded || !strings.Contains(out, "hi-2") {
					probs = append(probs, fmt.Sprintf("final %v (timeout %v), output %q", last.Kind, to, out))
				}
				return k, probs
			}},
		{name: "connection dropped mid-session (proxy, 1006)", sandbox: "ptydrop", want: "INTERRUPTED → RECONNECTING → REPLAYED (whole buffer, said) → ENDED",
			setup: func() { proxy.Add(faultproxy.Rule{Path: "/pty", Times: 1, Fault: faultproxy.WSDrop(12, 1006, "")}) },
			run: func(p *client.PTYConn) ([]string, []string) {
				_, _ = p.Write([]byte("echo before-$((2*3))\n"))
				k0, _, _, _ := collect(p, func(_ client.TermEvent, out string) bool { return strings.Contains(out, "before-6") }, 10*time.Second)
				// Enough messages for the proxy's drop (after the 12th) to land while output flows.
				_, _ = p.Write([]byte("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo tick$i; sleep 0.05; done\n"))
				k, _, last, _ := collect(p, func(ev client.TermEvent, _ string) bool {
					return ev.Kind == client.TermReplayed || final(ev, "")
				}, 15*time.Second)
				k = append(k0, k...)
				var probs []string
				if last.Kind != client.TermReplayed || !strings.Contains(string(last.Data), "before-") {
					probs = append(probs, fmt.Sprintf("after the drop: %v %q, want REPLAYED with the earlier output", last.Kind, last.Data))
				}
				_, _ = p.Write([]byte("exit\n"))
				k2, _, last, _ := collect(p, final, 10*time.Second)
				if last.Kind != client.TermEnded {
					probs = append(probs, fmt.Sprintf("final %v, want ENDED", last.Kind))
				}
				return append(k, k2...), probs
			}},
		{name: "container replaced", sandbox: "ptyreplaced", want: "INTERRUPTED → RECONNECTING → READY in a new shell, said (ERROR: previous shell gone, inferred) → ENDED",
			run: func(p *client.PTYConn) ([]string, []string) {
				_, _ = p.Write([]byte("echo old-$((3*3))\n"))
				k1, _, _, _ := collect(p, func(_ client.TermEvent, out string) bool { return strings.Contains(out, "old-9") }, 10*time.Second)
				_ = b.Server.ReplaceSandbox("ptyreplaced")
				k2, _, last, _ := collect(p, func(ev client.TermEvent, _ string) bool {
					return ev.Kind == client.TermError || final(ev, "")
				}, 15*time.Second)
				var probs []string
				if last.Kind != client.TermError || !strings.Contains(last.Reason, "new shell") {
					probs = append(probs, fmt.Sprintf("after replacement: %v %q, want an ERROR naming the new shell", last.Kind, last.Reason))
				}
				_, _ = p.Write([]byte("exit\n"))
				k3, _, last, _ := collect(p, final, 10*time.Second)
				if last.Kind != client.TermEnded {
					probs = append(probs, fmt.Sprintf("final %v, want ENDED", last.Kind))
				}
				return append(append(k1, k2...), k3...), probs
			}},
	}
	for _, row := range rows {
		proxy.Clear()
		if row.setup != nil {
			row.setup()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		p, err := s.ConnectPTY(ctx, row.sandbox, client.PTYOptions{Cols: 80, Rows: 24, Probe: 300 * time.Millisecond})
		if err != nil {
			cancel()
			reportRow(t, "stable-pty", row.name, row.want, "connect: "+err.Error(), []string{err.Error()}, *seedFlag)
			continue
		}
		kinds, probs := row.run(p)
		p.Close()
		cancel()
		reportRow(t, "stable-pty", row.name, row.want, strings.Join(kinds, " → "), probs, *seedFlag)
	}
}

// killRecorder sends SIGKILL to the recorder bash whose command line holds word (its own argv
// names "sandscope-run" before the command; the command's processes do not).
func killRecorder(t *testing.T, word string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Errorf("kill recorder: %v", err)
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 3 && strings.HasSuffix(args[0], "bash") && args[3] == "sandscope-run" && strings.Contains(string(cmdline), word) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
