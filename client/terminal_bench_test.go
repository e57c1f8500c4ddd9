package client_test

// Keystroke-to-echo latency (not part of the default test run):
//
//	go test ./client -run '^$' -bench KeystrokeEcho -benchtime 2000x
//
// One byte is written and the benchmark waits for the PTY's echo of it, b.N times, through the
// local bridge's terminal WebSocket and, in the same run, straight to a local PTY running the same
// program. It reports p50/p99 of both and what the bridge path adds at p50.

import (
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/creack/pty"

	"sandscope/client"
	"sandscope/localbridge/bridgetest"
)

func quantile(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*q))]
}

func BenchmarkKeystrokeEcho(b *testing.B) {
	n := max(b.N, 50)
	keys := []byte("abcdefghijklmnopqrstuvwxyz")

	// Direct: a local PTY running cat; the line discipline echoes each byte.
	cmd := exec.Command("cat")
	ptmx, err := pty.Start(cmd)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); ptmx.Close() }()
	direct := make([]time.Duration, 0, n)
	buf := make([]byte, 64)
	for i := 0; i < n; i++ {
		k := keys[i%len(keys)]
		t0 := time.Now()
		if _, err := ptmx.Write([]byte{k}); err != nil {
			b.Fatal(err)
		}
		for got := false; !got; {
			m, err := ptmx.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range buf[:m] {
				got = got || c == k
			}
		}
		direct = append(direct, time.Since(t0))
	}

	// Through the local bridge: the same program in a bridge terminal, over the WebSocket.
	br := bridgetest.Start(b)
	c, _ := client.New(br.URL, client.WithToken(br.Token))
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tm, err := c.CreateTerminal(ctx, sb, client.TerminalRequest{Argv: []string{"cat"}})
	if err != nil {
		b.Fatal(err)
	}
	conn, err := c.ConnectTerminal(ctx, sb, tm.ID, client.ConnectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for ev := range conn.Events() {
		if ev.Kind == client.TermReady {
			break
		}
	}
	bridge := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		k := keys[i%len(keys)]
		t0 := time.Now()
		if _, err := conn.Write([]byte{k}); err != nil {
			b.Fatal(err)
		}
		for got := false; !got; {
			ev, ok := <-conn.Events()
			if !ok {
				b.Fatal("connection ended")
			}
			for _, c := range ev.Data {
				got = got || c == k
			}
		}
		bridge = append(bridge, time.Since(t0))
	}
	b.StopTimer()
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(quantile(direct, 0.5)), "direct-p50-µs")
	b.ReportMetric(us(quantile(direct, 0.99)), "direct-p99-µs")
	b.ReportMetric(us(quantile(bridge, 0.5)), "bridge-p50-µs")
	b.ReportMetric(us(quantile(bridge, 0.99)), "bridge-p99-µs")
	b.ReportMetric(us(quantile(bridge, 0.5)-quantile(direct, 0.5)), "added-p50-µs")
}
