package runs

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"sandscope/record"
	"sandscope/record/recordtest"
	"sandscope/themes"
	"sandscope/ui/internal/uitest"
)

// benchScreen is the all-runs screen at 160×48 over a generated record of runs (50 a sandbox,
// as figure 13 of scripts/bench has them, with as few events as that allows), every sandbox
// tracked by a background watcher and read, the cursor moved down as the figure moves it.
func benchScreen(b *testing.B, runs int) *Model {
	b.Helper()
	dir := b.TempDir()
	const bridge = "http://bench.invalid"
	s := record.Synthetic{Sandboxes: runs / 50, Runs: runs, Events: 2*runs + runs/50, CaptureBytes: 256, End: uitest.T0}
	if err := record.WriteSynthetic(dir, bridge, s); err != nil {
		b.Fatal(err)
	}
	rec, err := record.Open(record.Options{Dir: dir, Bridge: bridge,
		Budget: record.Budget{MaxEvents: 1 << 30, MaxAge: 365 * 24 * time.Hour, CaptureTotal: 1 << 40}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rec.Close() })
	known, err := rec.KnownSandboxes()
	if err != nil {
		b.Fatal(err)
	}
	mgr := record.NewManager(context.Background(), rec, recordtest.IdleBridge{}, record.DefaultWatchBudget)
	b.Cleanup(mgr.Close)
	mgr.Track(known...)
	for _, sb := range known {
		rec.State(sb)
	}
	pal, err := themes.Builtin("dark")
	if err != nil {
		b.Fatal(err)
	}
	r := lipgloss.NewRenderer(nil)
	r.SetColorProfile(termenv.TrueColor)
	ctx := uitest.Context(b, nil, 160, 48)
	ctx.Styles = themes.New(pal, r)
	ctx.StateDir = filepath.Join(b.TempDir(), "state")
	ctx.Record, ctx.Watch = rec, mgr
	m := readAllNow(ctx, 160, 48)
	if got, want := m.list.Len(), runs; got != want {
		b.Fatalf("%d runs listed, want %d", got, want)
	}
	for i := 0; i < 60; i++ {
		k := tea.KeyMsg{Type: tea.KeyDown}
		if i >= 19 {
			k = tea.KeyMsg{Type: tea.KeyPgDown}
		}
		m.Update(k)
		_ = m.View()
	}
	return m
}

// processCPU is the CPU time the process has used so far (the garbage collector's too).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchFilters are typed into the filter, a keystroke at a time, as figure 13h types them.
var benchFilters = []string{record.Synthetic{}.SandboxName(42), "proc-00123", "agent --ta", record.Synthetic{}.SandboxName(7), "exited"}

// BenchmarkFilterKey is a filter keystroke to its frame on the all-runs screen (figure 13h of
// scripts/bench, in-process): an op types the figure's 46 keystrokes. ms/key is their median as
// the figure takes it, cpu-ms/key the median of the process's CPU time meanwhile (the garbage
// collector's too), update-ms/key the median of the part before the frame (the filter).
func BenchmarkFilterKey(b *testing.B) {
	for _, runs := range []int{1000, 10000} {
		b.Run(fmt.Sprint(runs), func(b *testing.B) {
			m := benchScreen(b, runs)
			var took, cpu, upd []time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for _, typed := range benchFilters {
					m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'/'}})
					_ = m.View()
					for _, c := range typed {
						k := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{c}}
						if c == ' ' {
							k = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
						}
						t, c := time.Now(), processCPU()
						m.Update(k)
						upd = append(upd, time.Since(t))
						_ = m.View()
						took = append(took, time.Since(t))
						cpu = append(cpu, processCPU()-c)
					}
					m.Update(tea.KeyMsg{Type: tea.KeyEsc})
					_ = m.View()
				}
			}
			b.ReportMetric(medianMs(took), "ms/key")
			b.ReportMetric(medianMs(cpu), "cpu-ms/key")
			b.ReportMetric(medianMs(upd), "update-ms/key")
		})
	}
}

func medianMs(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}

// BenchmarkRefresh is the all-runs screen's 1 s refresh over a generated record (as
// BenchmarkFilterKey's): ui-ms/refresh is its time on the UI goroutine (asking, then taking the
// answer), read-ms/refresh the command's, off it.
func BenchmarkRefresh(b *testing.B) {
	for _, runs := range []int{1000, 10000} {
		b.Run(fmt.Sprint(runs), func(b *testing.B) {
			m := benchScreen(b, runs)
			var ui, read time.Duration
			b.ResetTimer()
			for range b.N {
				t := time.Now()
				cmd := m.reloadLater()
				ui += time.Since(t)
				t = time.Now()
				msg := cmd()
				read += time.Since(t)
				t = time.Now()
				m.Update(msg)
				ui += time.Since(t)
			}
			b.ReportMetric(float64(ui.Microseconds())/1000/float64(b.N), "ui-ms/refresh")
			b.ReportMetric(float64(read.Microseconds())/1000/float64(b.N), "read-ms/refresh")
		})
	}
}

// BenchmarkOpen is the all-runs screen's open to its first frame (figure 13f of scripts/bench,
// in-process, after the first): an op makes the screen, runs Init and draws the first frame.
//
//	go test ./ui/runs -run '^$' -bench Open -benchtime 50x
func BenchmarkOpen(b *testing.B) {
	for _, runs := range []int{1000, 10000} {
		b.Run(fmt.Sprint(runs), func(b *testing.B) {
			m := benchScreen(b, runs)
			ctx := m.ctx
			m.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m := New(ctx)
				m.SetSize(160, 48)
				_ = m.Init()
				_ = m.View()
				m.Close()
			}
		})
	}
}
