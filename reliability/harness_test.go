package reliability

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/faultproxy"
	"sandscope/localbridge"
	"sandscope/reliability/internal/seeded"
)

// caseTimeout bounds one matrix case: a follower or terminal connection that has not reached a final
// state by then is reported as hung. It is a hang detector, not a performance limit.
const caseTimeout = 20 * time.Second

// bridge is a local bridge this package started itself, so it can be restarted on the same address.
type bridge struct {
	t     testing.TB
	cfg   localbridge.Config
	mu    sync.Mutex
	srv   *localbridge.Server
	addr  string
	token string
}

func newToken(t testing.TB) string {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(raw[:])
}

// startBridge starts a local bridge on a random loopback port; it is closed when the test ends.
func startBridge(t testing.TB, tweak func(*localbridge.Config)) *bridge {
	t.Helper()
	b := &bridge{t: t, token: newToken(t)}
	b.cfg = localbridge.Config{Root: t.TempDir(), Token: b.token, Listen: "127.0.0.1:0"}
	if tweak != nil {
		tweak(&b.cfg)
	}
	b.token = b.cfg.Token
	if err := b.start(); err != nil {
		t.Fatalf("start bridge: %v", err)
	}
	t.Cleanup(func() { b.stop() })
	return b
}

func (b *bridge) start() error {
	cfg := b.cfg
	if b.addr != "" {
		cfg.Listen = b.addr
		cfg.Root = b.t.TempDir() // a restarted bridge is a new machine: no state survives
	}
	srv, err := localbridge.New(cfg)
	if err != nil {
		return err
	}
	var serr error
	for i := 0; i < 50; i++ { // the old listener's port may take a moment to be free
		if serr = srv.Start(); serr == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if serr != nil {
		_ = srv.Close(context.Background())
		return serr
	}
	b.mu.Lock()
	b.srv = srv
	b.addr = strings.TrimPrefix(srv.URL(), "http://")
	b.mu.Unlock()
	return nil
}

func (b *bridge) stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	}
}

// restart closes the bridge (every process and PTY dies with it) and starts a new one on the same
// address with an empty root, as a crashed and restarted bridge process would be.
func (b *bridge) restart() error {
	b.stop()
	return b.start()
}

func (b *bridge) server() *localbridge.Server {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srv
}

func (b *bridge) url() string { return "http://" + b.addr }

// env is one bridge, a fault proxy in front of it, and clients for both paths.
type env struct {
	t      testing.TB
	br     *bridge
	proxy  *faultproxy.Proxy
	c      *client.Client // through the proxy
	direct *client.Client // straight to the bridge (set-up and checks)
	sb     string
}

func newEnv(t testing.TB, tweak func(*localbridge.Config)) *env {
	t.Helper()
	br := startBridge(t, tweak)
	p, err := faultproxy.Start(br.url())
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(p.Close)
	c, err := client.New(p.URL(), client.WithToken(br.token), client.WithRequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	d, err := client.New(br.url(), client.WithToken(br.token), client.WithRequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sb, err := d.CreateSandbox(ctx)
	if err != nil {
		t.Fatalf("create sandbox: %v", err)
	}
	return &env{t: t, br: br, proxy: p, c: c, direct: d, sb: sb}
}

// source is deterministic process output: n chunks of size bytes drawn from a seeded generator, with
// hostile bytes (invalid UTF-8, NUL, escape sequences, C1 controls) at the start of every chunk.
type source struct {
	seed   uint64
	chunks [][]byte
}

func newSource(seed uint64, n, size int) *source {
	return &source{seed: seed, chunks: seeded.Chunks(seed, n, size)}
}

func (s *source) all() []byte { return bytes.Join(s.chunks, nil) }

// split returns what goes to stdout (even chunks) and to stderr (odd chunks).
func (s *source) split() (stdout, stderr []byte) {
	for i, c := range s.chunks {
		if i%2 == 0 {
			stdout = append(stdout, c...)
		} else {
			stderr = append(stderr, c...)
		}
	}
	return
}

// script is a shell loop that writes chunk i of the file "data" with one write each, even chunks to
// stdout and odd ones to stderr (or all to stdout when mixed is false), pausing between chunks so
// faults land mid-stream.
func (s *source) script(mixed bool, pause string) string {
	size := len(s.chunks[0])
	odd := fmt.Sprintf("dd if=data bs=%d skip=$i count=1 2>/dev/null", size)
	if mixed {
		odd = "{ " + odd + "; } 1>&2"
	}
	return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do if [ $((i %% 2)) -eq 0 ]; then dd if=data bs=%d skip=$i count=1 2>/dev/null; else %s; fi; i=$((i+1)); sleep %s; done`,
		len(s.chunks), size, odd, pause)
}

func (e *env) writeData(s *source) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.direct.WriteFile(ctx, e.sb, "data", s.all()); err != nil {
		e.t.Fatalf("write data: %v", err)
	}
}

// startProcess writes the source into the workspace and launches the chunk writer.
func (e *env) startProcess(s *source, pause string) client.Process {
	e.t.Helper()
	e.writeData(s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := e.direct.StartProcess(ctx, e.sb, client.ExecRequest{Argv: []string{"sh", "-c", s.script(true, pause)}})
	if err != nil {
		e.t.Fatalf("start process: %v", err)
	}
	return p
}

// startTerminal writes the source and starts a terminal that prints it raw (no output processing,
// so the PTY passes the bytes through unchanged) and exits 0.
func (e *env) startTerminal(s *source, pause string) client.Terminal {
	e.t.Helper()
	e.writeData(s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	script := "stty raw -echo; " + s.script(false, pause) + "; exit 0"
	term, err := e.direct.CreateTerminal(ctx, e.sb, client.TerminalRequest{Argv: []string{"sh", "-c", script}, Cwd: "/workspace"})
	if err != nil {
		e.t.Fatalf("create terminal: %v", err)
	}
	return term
}

// followResult is everything a follower delivered.
type followResult struct {
	events []client.LogEvent // Data events without their bytes
	out    [2][]byte         // stdout, stderr
	gapsAt [2][]int          // offsets into out where a Gap event was seen
	final  *client.LogEvent
	hung   bool
}

func (r *followResult) kinds() []client.LogEventKind {
	var ks []client.LogEventKind
	for _, ev := range r.events {
		if ev.Kind == client.Data && len(ks) > 0 && ks[len(ks)-1] == client.Data {
			continue
		}
		ks = append(ks, ev.Kind)
	}
	return ks
}

func (r *followResult) saw(k client.LogEventKind) bool {
	for _, ev := range r.events {
		if ev.Kind == k {
			return true
		}
	}
	return false
}

func (r *followResult) summary() string {
	var b strings.Builder
	for i, k := range r.kinds() {
		if i > 0 {
			b.WriteString(" → ")
		}
		b.WriteString(strings.ToUpper(k.String()))
	}
	if r.hung {
		b.WriteString(" → HUNG")
	}
	return b.String()
}

// collect drains a follower until it ends or caseTimeout passes. onData runs after every Data event
// with the total bytes delivered; slow, when set, is slept after every event (a slow reader).
func collectFollow(f *client.Follower, cancel context.CancelFunc, onData func(total int), slow time.Duration) *followResult {
	return collectFollowWithin(f, cancel, onData, slow, caseTimeout)
}

// collectFollowWithin is collectFollow with its own hang limit.
func collectFollowWithin(f *client.Follower, cancel context.CancelFunc, onData func(total int), slow, limit time.Duration) *followResult {
	r := &followResult{}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	total := 0
	for {
		select {
		case ev, ok := <-f.Events():
			if !ok {
				return r
			}
			if ev.Kind == client.Data {
				r.out[ev.Stream] = append(r.out[ev.Stream], ev.Data...)
				total += len(ev.Data)
				ev.Data = nil
			}
			if ev.Kind == client.Gap {
				r.gapsAt[0] = append(r.gapsAt[0], len(r.out[0]))
				r.gapsAt[1] = append(r.gapsAt[1], len(r.out[1]))
			}
			r.events = append(r.events, ev)
			if ev.Kind == client.Ended || ev.Kind == client.Lost || ev.Kind == client.Failed {
				e := ev
				r.final = &e
			}
			if ev.Kind == client.Data && onData != nil {
				onData(total)
			}
			if slow > 0 {
				time.Sleep(slow)
			}
		case <-timer.C:
			r.hung = true
			cancel()
			for range f.Events() {
			}
			return r
		}
	}
}

// termResult is everything a terminal connection delivered.
type termResult struct {
	events []client.TermEvent
	out    []byte
	gapsAt []int
	final  *client.TermEvent
	hung   bool
}

func (r *termResult) saw(k client.TermEventKind) bool {
	for _, ev := range r.events {
		if ev.Kind == k {
			return true
		}
	}
	return false
}

func (r *termResult) summary() string {
	var b strings.Builder
	var last client.TermEventKind = -1
	for _, ev := range r.events {
		if ev.Kind == client.TermOutput && last == client.TermOutput {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" → ")
		}
		b.WriteString(strings.ToUpper(ev.Kind.String()))
		if ev.Kind == client.TermInterrupted && ev.CloseCode != 0 {
			fmt.Fprintf(&b, "(%d)", ev.CloseCode)
		}
		last = ev.Kind
	}
	if r.hung {
		b.WriteString(" → HUNG")
	}
	return b.String()
}

func isTermFinal(ev client.TermEvent) bool {
	switch ev.Kind {
	case client.TermExited, client.TermLost, client.TermFailed:
		return true
	case client.TermError:
		return ev.CloseCode != 0
	}
	return false
}

func collectTerm(tc *client.TerminalConn, onData func(total int), slow, limit time.Duration) *termResult {
	r := &termResult{}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-tc.Events():
			if !ok {
				return r
			}
			if ev.Kind == client.TermOutput {
				r.out = append(r.out, ev.Data...)
				ev.Data = nil
			}
			if ev.Kind == client.TermGap {
				r.gapsAt = append(r.gapsAt, len(r.out))
			}
			r.events = append(r.events, ev)
			if isTermFinal(ev) {
				e := ev
				r.final = &e
			}
			if ev.Kind == client.TermOutput && onData != nil {
				onData(len(r.out))
			}
			if slow > 0 {
				time.Sleep(slow)
			}
		case <-timer.C:
			r.hung = true
			_ = tc.Close()
			return r
		}
	}
}

// checkSegments verifies that got is want with nothing invented, duplicated or reordered: got split
// at the gap offsets gives segments that occur in want in order, and without gaps got is exactly want
// (complete) or a prefix of it (when the stream ended early). It returns a description of the first
// difference, or "".
func checkSegments(got, want []byte, gaps []int, complete bool) string {
	if len(gaps) == 0 {
		if complete && !bytes.Equal(got, want) {
			return describeDiff(got, want)
		}
		if !bytes.HasPrefix(want, got) {
			return "not a prefix of the source: " + describeDiff(got, want)
		}
		return ""
	}
	pos, start := 0, 0
	for i, end := range append(gaps, len(got)) {
		seg := got[start:end]
		start = end
		if len(seg) == 0 {
			continue
		}
		if i == 0 {
			if !bytes.HasPrefix(want, seg) {
				return "bytes before the first gap are not the start of the source"
			}
			pos = len(seg)
			continue
		}
		j := bytes.Index(want[pos:], seg)
		if j < 0 {
			return fmt.Sprintf("segment %d (%d bytes) after a gap does not occur in the rest of the source", i, len(seg))
		}
		pos += j + len(seg)
	}
	if complete && pos != len(want) {
		return fmt.Sprintf("stream ended at source offset %d of %d", pos, len(want))
	}
	return ""
}

func describeDiff(got, want []byte) string {
	n := min(len(got), len(want))
	i := 0
	for i < n && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("got %d bytes, want %d; first difference at offset %d", len(got), len(want), i)
}
