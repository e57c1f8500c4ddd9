package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/uiloop"
	"sandscope/keymap"
	"sandscope/localbridge"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/logview"
)

const (
	width, height = 160, 48
	frameEvery    = 33 * time.Millisecond
	sandboxID     = "local"
)

func main() {
	size := flag.Int64("size", 1<<30, "bytes the producer writes")
	budget := flag.Int64("budget", 150, "peak RSS budget in MiB")
	dir := flag.String("dir", os.TempDir(), "parent directory for the bridge root and the log cache")
	pause := flag.Float64("pause", 0.001, "seconds the producer sleeps after each 64 KiB block")
	limit := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	queue := flag.Int("queue", 0, "events the follower may queue (0: as many as the log view asks for); for experiments")
	metrics := flag.Bool("metrics", false, "also print machine-readable \"metric NAME VALUE\" lines (scripts/bench reads them)")
	flood := flag.Bool("flood", false, "producer writes as fast as it can (the bridge drops what the follower misses: gaps are expected and reported)")
	flag.Parse()
	if *size <= 0 || *budget <= 0 || *pause < 0 || *limit <= 0 || *queue < 0 {
		fmt.Fprintln(os.Stderr, "soak: -size, -budget and -timeout must be positive, -pause and -queue not negative")
		os.Exit(2)
	}
	if err := run(*size, *budget, *dir, *pause, *limit, *flood, *queue, *metrics); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(size, budget int64, parent string, pause float64, limit time.Duration, flood bool, queue int, metrics bool) error {
	work, err := os.MkdirTemp(parent, "sandscope-viewsoak-")
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	defer os.RemoveAll(work)
	root, cache := filepath.Join(work, "root"), filepath.Join(work, "cache")
	for _, d := range []string{root, cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("work dir: %w", err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	token := hex.EncodeToString(tok)
	srv, err := localbridge.New(localbridge.Config{Root: root, Token: token})
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		srv.Close(cctx)
	}()
	c, err := client.New(srv.URL(), client.WithToken(token))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}

	gen, err := newGenerator(work, size, flood)
	if err != nil {
		return err
	}
	tap := &tapBridge{Driver: driver.NewPreview(c, client.Capabilities{}), sum: sha256.New(), queue: queue}
	p, err := c.StartProcess(ctx, sandboxID, client.ExecRequest{Argv: []string{"sh", "-c", gen.script(pause)}})
	if err != nil {
		return fmt.Errorf("start producer: %w", err)
	}

	keys := keymap.New()
	pal, err := themes.Builtin("dark")
	if err != nil {
		return fmt.Errorf("theme: %w", err)
	}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor) // render styles as a colour terminal would
	uctx := &common.Context{
		Width: width, Height: height,
		Styles: themes.New(pal, r), Keys: keys, Driver: tap,
		BridgeLabel: srv.URL(), BridgeURL: srv.URL(), Local: true,
		StateDir: work, CacheDir: cache, Ctx: ctx,
	}
	m := logview.New(uctx, []common.LogTarget{{Sandbox: sandboxID, Process: p}}, logview.Options{})
	defer m.Close()
	m.SetSize(width, height)

	loop := uiloop.New(ctx, m)
	start := time.Now()
	loop.Run(m.Init())
	frames, err := loop.Until(frameEvery, func(tea.Msg) bool { return m.Attached() == 0 })
	elapsed := time.Since(start)
	if err != nil {
		return fmt.Errorf("following: %w (after %v, %d bytes)", err, elapsed.Round(time.Millisecond), tap.bytes())
	}
	hwm, err := procStatus("VmHWM")
	if err != nil {
		return err
	}
	rss, _ := procStatus("VmRSS")
	disk := dirSize(cache)
	followed, gaps, ended := tap.result()
	fmt.Printf("followed %d of %d bytes in %v (%.1f MB/s, %d frames rendered); gaps: %d; ending: %s\n",
		followed, size, elapsed.Round(time.Millisecond), float64(followed)/elapsed.Seconds()/1e6, frames, gaps, ended)
	fmt.Printf("peak RSS (VmHWM): %.1f MiB (budget %d MiB); RSS at end: %.1f MiB; buffer disk: %.1f MiB\n",
		mib(hwm), budget, mib(rss), mib(disk))

	var failed []string
	if ended != "ended" {
		failed = append(failed, "the follower did not confirm an ending: "+ended)
	}

	// a frame at the tail, for comparison with the scroll-back below
	t0 := time.Now()
	_ = m.View()
	tailFrame := time.Since(t0)
	// scroll-back: the top row of the view is the first line the process wrote; the key and the
	// frame that shows it are timed
	t0 = time.Now()
	loop.Update(tea.KeyMsg{Type: tea.KeyHome})
	view := m.View()
	back := time.Since(t0)
	fmt.Printf("scroll-back to the first line (key to frame): %v; a frame at the tail: %v\n", back, tailFrame)
	// row 0 is the title; the body's rows start with a two-column gutter
	rows := strings.Split(ansi.Strip(view), "\n")
	got := ""
	if len(rows) >= 2 {
		got = strings.TrimSpace(rows[1])
	}
	want := gen.first
	if fl := tap.firstLine(); fl != want {
		fmt.Printf("the follower's first line is %q: the bridge dropped the start before it was read\n", fl)
		want = fl
	}
	if got != want {
		failed = append(failed, fmt.Sprintf("top row after scrolling back = %q, want %q", got, want))
	} else {
		fmt.Printf("scroll-back top row = %q: ok\n", want)
	}

	// save through the view's dialog, as a user would: s, clear the default name, type a path, enter
	saved := filepath.Join(work, "saved.log")
	t := time.Now()
	loop.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'s'}})
	loop.Update(tea.KeyMsg{Type: tea.KeyCtrlU})
	loop.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(saved), Paste: true})
	loop.Update(tea.KeyMsg{Type: tea.KeyEnter})
	var status common.StatusMsg
	if _, err := loop.Until(frameEvery, func(msg tea.Msg) bool {
		st, ok := msg.(common.StatusMsg)
		if ok {
			status = st
		}
		return ok
	}); err != nil {
		failed = append(failed, "save: "+err.Error())
	} else if status.Level == common.Error {
		failed = append(failed, "save: "+status.Text)
	} else {
		sum, n, err := fileSum(saved)
		switch {
		case err != nil:
			failed = append(failed, "read saved file: "+err.Error())
		case n != followed || string(sum) != string(tap.sum.Sum(nil)):
			failed = append(failed, fmt.Sprintf("saved %d bytes that differ from the %d bytes followed", n, followed))
		default:
			fmt.Printf("save reproduces the %d bytes followed (sha256 equal) in %v: ok\n", n, time.Since(t).Round(time.Millisecond))
			if gaps == 0 {
				if n != size || string(sum) != string(gen.sum) {
					failed = append(failed, fmt.Sprintf("no gap, but the %d bytes saved differ from the producer's %d bytes", n, size))
				} else {
					fmt.Printf("saved bytes equal the producer's output (sha256 %x…): ok\n", gen.sum[:8])
				}
			}
		}
	}
	if h, err := procStatus("VmHWM"); err == nil && h > hwm {
		hwm = h
		fmt.Printf("peak RSS after scroll-back and save: %.1f MiB\n", mib(hwm))
	}
	if metrics {
		fmt.Printf("metric peak-rss-mib %.1f\n", mib(hwm))
		fmt.Printf("metric mbps %.1f\n", float64(followed)/elapsed.Seconds()/1e6)
		fmt.Printf("metric scrollback-ms %.3f\n", float64(back.Microseconds())/1000)
		fmt.Printf("metric frame-ms %.3f\n", float64(tailFrame.Microseconds())/1000)
		fmt.Printf("metric gaps %d\n", gaps)
		fmt.Printf("metric followed-bytes %d\n", followed)
	}
	if hwm >= budget<<20 {
		failed = append(failed, fmt.Sprintf("peak RSS %.1f MiB reaches the budget of %d MiB", mib(hwm), budget))
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// tapBridge is the client bridge with Follow observed: every event passes through unchanged (the
// channel has the follower's capacity, so the view still drains a flood in batches and no more
// events wait in memory than without the tap) while the data bytes are counted and hashed and gaps
// and the ending noted.
type tapBridge struct {
	driver.Driver
	mu    sync.Mutex
	sum   hash.Hash
	n     int64
	first []byte // the first line delivered
	queue int    // overrides the follower's queue capacity when positive
	gaps  int
	ended string
}

func (t *tapBridge) Follow(ctx context.Context, sandbox, process string, opts driver.FollowOptions) <-chan client.LogEvent {
	// the queue moves here: the follower itself gets room for one event, this channel gets the
	// capacity the follower would have had, so as many events wait as without the tap
	capacity := opts.Buffer
	if capacity <= 0 {
		capacity = 256 // client.FollowOptions' default
	}
	if t.queue > 0 {
		capacity = t.queue
	}
	opts.Buffer = 1
	in := t.Driver.Follow(ctx, sandbox, process, opts)
	out := make(chan client.LogEvent, capacity)
	go func() {
		defer close(out)
		for ev := range in {
			t.mu.Lock()
			switch ev.Kind {
			case client.Data:
				t.sum.Write(ev.Data)
				if t.n == 0 || (len(t.first) > 0 && t.first[len(t.first)-1] != '\n' && len(t.first) < 4096) {
					i := bytes.IndexByte(ev.Data, '\n')
					if i < 0 {
						i = len(ev.Data) - 1
					}
					t.first = append(t.first, ev.Data[:i+1]...)
				}
				t.n += int64(len(ev.Data))
			case client.Gap:
				t.gaps++
			case client.Ended:
				t.ended = "ended"
			case client.Lost:
				t.ended = "lost"
			case client.Failed:
				t.ended = "failed: " + ev.Reason
			}
			t.mu.Unlock()
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (t *tapBridge) bytes() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

func (t *tapBridge) firstLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSuffix(string(t.first), "\n")
}

func (t *tapBridge) result() (int64, int, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.ended
	if e == "" {
		e = "none"
	}
	return t.n, t.gaps, e
}

// generator is the producer: a shell loop writing the first line, then numbered 64 KiB blocks of
// realistic lines with a short sleep after each, cut at exactly size bytes. sum is the SHA-256 of
// that output, computed here from the same blocks.
type generator struct {
	first     string
	blockPath string
	blocks    int
	size      int64
	flood     bool
	sum       []byte
}

func newGenerator(dir string, size int64, flood bool) (*generator, error) {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	g := &generator{first: "sandscope soak first line " + hex.EncodeToString(nonce), size: size, flood: flood,
		blockPath: filepath.Join(dir, "block.txt")}
	block := makeBlock()
	if err := os.WriteFile(g.blockPath, block, 0o600); err != nil {
		return nil, fmt.Errorf("producer block: %w", err)
	}
	h := sha256.New()
	left := size
	put := func(b []byte) {
		n := min(int64(len(b)), left)
		h.Write(b[:n])
		left -= n
	}
	put([]byte(g.first + "\n"))
	for left > 0 {
		if !flood {
			put([]byte(blockHeader(g.blocks)))
		}
		put(block)
		g.blocks++
	}
	g.sum = h.Sum(nil)
	return g, nil
}

func blockHeader(i int) string { return "block " + strconv.Itoa(i) + " of the soak output\n" }

func (g *generator) script(pause float64) string {
	if g.flood { // yes repeats the block (its final newline is dropped by $(...) and added back by yes)
		return fmt.Sprintf(`sleep 0.3
{ printf '%%s\n' '%s'; yes "$(cat %s)"; } | head -c %d`, g.first, shellQuote(g.blockPath), g.size)
	}
	p := strconv.FormatFloat(pause, 'f', 4, 64)
	return fmt.Sprintf(`sleep 0.3
{ printf '%%s\n' '%s'
i=0
while [ $i -lt %d ]; do printf 'block %%d of the soak output\n' $i; cat %s; sleep %s; i=$((i+1)); done
} | head -c %d`, g.first, g.blocks, shellQuote(g.blockPath), p, g.size)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// makeBlock is about 64 KiB of whole lines of 80–200 bytes: build-log-like text, some coloured.
func makeBlock() []byte {
	r := mrand.New(mrand.NewPCG(7, 11))
	words := []string{"compiling", "src/worker/index.ts", "ok", "warning:", "unused", "variable", "fetch",
		"https://example.com/api/v1/items", "200", "took", "12ms", "retrying", "cache", "miss", "hit",
		"/workspace/node_modules/.pnpm", "test", "passed", "PASS", "FAIL", "bytes", "sandbox", "exec"}
	var b []byte
	for seq := 1; len(b) < 64<<10-256; seq++ {
		start := len(b)
		b = fmt.Appendf(b, "%06d ", seq)
		switch r.IntN(8) {
		case 0:
			b = append(b, "\x1b[32mINFO\x1b[0m "...)
		case 1:
			b = append(b, "\x1b[1;31mERROR\x1b[0m\t"...)
		}
		n := 80 + r.IntN(121)
		for len(b)-start < n-1 {
			b = append(b, words[r.IntN(len(words))]...)
			b = append(b, ' ')
		}
		b = append(b[:start+n-1], '\n')
	}
	return b
}

func fileSum(path string) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return h.Sum(nil), n, err
}

func procStatus(field string) (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", field, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, field+":") {
			if f := strings.Fields(l); len(f) >= 2 {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					return kb << 10, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("%s not found in /proc/self/status", field)
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
