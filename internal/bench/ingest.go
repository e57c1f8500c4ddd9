package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/uiloop"
	"sandscope/keymap"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/logview"
)

// Figure 3: the TUI's log view following the same replayed stream as figure 1 (follower, decoding,
// sanitising, the disk-backed buffer, a 160×48 frame drawn 30 times a second) against `curl -N`
// reading that stream, in pairs (which side runs first alternating); the ratio is the median of
// the pairs'. Until the eighth pass the baseline was figure 1's curl time, measured a minute or
// more earlier: curl's side moved 0.15-0.22 s between runs and the ratio with it.
func figViewIngest(e *env) ([]row, error) {
	name := "TUI log view ingest, replay"
	if e.curl == "" {
		return []row{{fig: "3", name: name, budget: "≤ 1.5×", result: notMeas, note: "curl not installed"}}, nil
	}
	if e.replayBytes == 0 {
		if _, err := figLogsReplay(e); err != nil {
			return nil, fmt.Errorf("figure 1 first: %w", err)
		}
	}
	name += fmt.Sprintf(" of %d MiB", e.replayBytes>>20)
	var times, curls []time.Duration
	var ratios []float64
	url := e.logsURL(benchSandbox, e.replayProc.ID)
	pairs := pick(e, 3, 5)
	for i := 0; i < pairs; i++ {
		settleDisk()
		var d, c time.Duration
		var n int64
		curl := func() (err error) { c, err = timeRun(e.curlCmd(url)); return err }
		ingest := func() (err error) { d, n, err = e.ingestOnce(); return err }
		if err := alternate(i, curl, ingest); err != nil {
			return nil, err
		}
		if n != e.replayBytes {
			return nil, fmt.Errorf("the log view took in %d of %d bytes", n, e.replayBytes)
		}
		times, curls = append(times, d), append(curls, c)
		ratios = append(ratios, d.Seconds()/c.Seconds())
	}
	d := medianDur(times)
	r := median(ratios)
	return []row{{fig: "3", name: name,
		value:    fmt.Sprintf("%.2f s (%.0f MB/s)", d.Seconds(), mbps(e.replayBytes, d)),
		baseline: fmt.Sprintf("curl -N %.2f s", medianDur(curls).Seconds()),
		ratio:    fmt.Sprintf("%s× (median of %d pairs)", f2(r), pairs), budget: "≤ 1.5×", result: verdict(r <= 1.5)}}, nil
}

// ingestOnce runs a log view on the replayed process until its follower ends; it returns the time
// and the bytes the view holds then. The view follows through the driver as in the TUI: until the
// ninth pass a counting driver sat between them, a goroutine and a channel hop per event the TUI
// does not have (about 5 % of the ingest's time, 15 alternating pairs three times).
func (e *env) ingestOnce() (time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pal, err := themes.Builtin("dark")
	if err != nil {
		return 0, 0, err
	}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	dir := filepath.Join(e.tmp, "ingest")
	uctx := &common.Context{
		Width: 160, Height: 48, Styles: themes.New(pal, r), Keys: keymap.New(), Driver: driver.NewPreview(e.c, client.Capabilities{}),
		BridgeLabel: e.url, BridgeURL: e.url, Local: true,
		StateDir: dir, CacheDir: filepath.Join(dir, "cache"), Ctx: ctx,
	}
	m := logview.New(uctx, []common.LogTarget{{Sandbox: benchSandbox, Process: e.replayProc}}, logview.Options{})
	defer m.Close()
	m.SetSize(160, 48)
	l := uiloop.New(ctx, m)
	t := time.Now()
	l.Run(m.Init())
	if _, err := l.Until(time.Second/30, func(tea.Msg) bool { return m.Attached() == 0 }); err != nil {
		return 0, 0, fmt.Errorf("log view: %w", err)
	}
	return time.Since(t), m.Held(), nil
}
