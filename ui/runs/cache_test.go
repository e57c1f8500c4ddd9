package runs

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/components"
	"sandscope/ui/internal/uitest"
)

// TestKeptCellsAreWhatTheRowShowsNow: the cells each row keeps (which the filter and the column
// widths read) are what formatting it now gives, while the clock moves across the seconds,
// minutes and days the ages show, output is captured, runs appear and end and the watcher
// fails: a row kept from an earlier refresh is never stale.
func TestKeptCellsAreWhatTheRowShowsNow(t *testing.T) {
	ctx, rec := scene(t)
	clock := uitest.T0
	ctx.Now = func() time.Time { return clock }
	m := known(New(ctx))
	m.SetSize(160, 48)
	rng := rand.New(rand.NewSource(22))
	steps := []time.Duration{300 * time.Millisecond, time.Second, 7 * time.Second, 59 * time.Second, 13 * time.Minute, 5 * time.Hour, 30 * time.Hour}
	for step := 0; step < 300; step++ {
		clock = clock.Add(steps[rng.Intn(len(steps))])
		sb := []string{"shopweb", "nightly", "idle"}[rng.Intn(3)]
		switch rng.Intn(6) {
		case 0:
			id := fmt.Sprintf("run-%d", step)
			rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessAppeared, Sandbox: sb, Time: clock, Incarnation: client.Incarnation{Number: 1},
				Process: &client.Process{ID: id, Command: []string{"job", id}, State: "running", StartedAt: clock, Incarnation: 1}}))
		case 1:
			rec.CaptureData("shopweb", "c3d4e5f6-agent2", client.LogEvent{Kind: client.Data, Cursor: fmt.Sprint(step), Time: clock, Data: []byte("more\n")})
		case 2:
			rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.WatchError, Sandbox: sb, Time: clock, Err: fmt.Errorf("bridge down")}))
		case 3:
			rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.WatchRecovered, Sandbox: sb, Time: clock}))
		}
		if rng.Intn(3) == 0 {
			m.Update(changeMsg{owner: m, gen: m.gen, sbs: map[string]bool{sb: true}})
		}
		refreshNow(t, m)
		var fresh [][]string
		for r := range m.all.Read() {
			if r.e.Kind == record.Process {
				if o := rec.OutputOf(r.sandbox, r.e.ID); r.out != o {
					t.Fatalf("step %d, %s: output %+v, the record says %+v", step, r.e.ID, r.out, o)
				}
			}
			want := cells(r, clock)
			fresh = append(fresh, want)
			if !slices.Equal(r.cells, want) {
				t.Fatalf("step %d, %s %s: kept %q, now %q", step, r.sandbox, r.e.ID, r.cells, want)
			}
			if text := strings.ToLower(strings.Join(want, " ") + " " + string(r.e.Kind) + " " + r.e.ID); r.text != text {
				t.Fatalf("step %d, %s: filter text %q, now %q", step, r.e.ID, r.text, text)
			}
		}
		if got, want := m.natural, components.Natural(columns, fresh); !slices.Equal(got, want) {
			t.Fatalf("step %d: columns %+v, from the cells now %+v", step, got, want)
		}
		checkFrame(t, "moving clock", m.View(), 160, 48)
	}
}

func TestChangesAt(t *testing.T) {
	t0 := uitest.T0
	for _, d := range []time.Duration{0, 400 * time.Millisecond, 59*time.Second + 999*time.Millisecond, time.Minute, 59*time.Minute + 59*time.Second,
		time.Hour, 47*time.Hour + 59*time.Minute + 30*time.Second, 48 * time.Hour, 200 * time.Hour, -3 * time.Second} {
		now := t0.Add(d)
		at := changesAt(now, t0)
		if !at.After(now) {
			t.Errorf("%v: changes at %v, not after now", d, at.Sub(t0))
			continue
		}
		age := func(n time.Time) string { return common.Age(n.Sub(t0)) }
		// the same until just before, different at the change
		if before := at.Add(-time.Nanosecond); age(before) != age(now) {
			t.Errorf("%v: %q changes to %q before %v", d, age(now), age(before), at.Sub(t0))
		}
		if age(at) == age(now) {
			t.Errorf("%v: %q still at %v", d, age(now), at.Sub(t0))
		}
	}
}
