package runs

import (
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/internal/uitest"
)

// TestSuspectEndClearsOnceTheRecordShowsTheEnd: SUSPECT END stays only while the record's last
// word on the process is "running"; the watcher seeing it exited (no new stream event) clears it
// at the next refresh, and so does the follower's confirmed ending.
func TestSuspectEndClearsOnceTheRecordShowsTheEnd(t *testing.T) {
	for _, by := range []string{"watcher", "stream"} {
		t.Run(by, func(t *testing.T) {
			ctx, rec := scene(t)
			m := known(New(ctx))
			m.SetSize(200, 60)
			if !strings.Contains(m.View(), "SUSPECT END") {
				t.Fatal("the scene has no suspect end")
			}
			p := &client.Process{ID: "d5e6f7a8-dev", PID: 100, Command: []string{"npm", "run", "dev"}, State: "exited",
				StartedAt: uitest.T0.Add(-10 * time.Minute), Incarnation: 2, Exit: &client.Exit{Code: 0}}
			if by == "watcher" {
				rec.Add(record.FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "shopweb", Time: uitest.T0,
					Incarnation: client.Incarnation{Number: 2}, Process: p}))
			} else {
				rec.Add(record.FromLogEvent("shopweb", p.ID, client.LogEvent{Kind: client.Ended, Time: uitest.T0, Status: p}))
			}
			refreshNow(t, m)
			v := m.View()
			if strings.Contains(v, "SUSPECT END") || strings.Contains(v, "suspect end") {
				t.Fatalf("SUSPECT END lingers after the record shows the end:\n%s", v)
			}
		})
	}
}
