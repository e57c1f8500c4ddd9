package record

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

var (
	scaleRuns = flag.Int("scale.runs", 1000, "runs in BenchmarkScale's record (50 per sandbox, 500 events per run)")
	scaleDir  = flag.String("scale.dir", "", "keep BenchmarkScale's record in this directory and reuse it when it is there")
)

// BenchmarkScale: a record of -scale.runs runs (50 runs per sandbox, 500 events per run: 10,000
// runs are 200 sandboxes and 5 million events) and what reading it costs: Open (clean), the known
// sandboxes, one sandbox's state, one sandbox's report. None of them may grow with the total,
// only with the sandbox asked for. scripts/bench (figure 13) runs the same steps in a process of
// their own to read the peak RSS.
//
//	go test ./record -run '^$' -bench Scale -benchtime 1x -scale.runs 10000
func BenchmarkScale(b *testing.B) {
	s := Synthetic{Sandboxes: *scaleRuns / 50, Runs: *scaleRuns, Events: *scaleRuns * 500, CaptureBytes: 4 << 10, End: time.Now()}
	dir := b.TempDir()
	if *scaleDir != "" {
		dir = *scaleDir
	}
	t := time.Now()
	if _, err := os.Stat(FileFor(dir, bridgeID)); err != nil {
		if err := WriteSynthetic(dir, bridgeID, s); err != nil {
			b.Fatal(err)
		}
	}
	gen := time.Since(t)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := MeasureScale(dir, bridgeID, s.SandboxName(s.Sandboxes/2))
		if err != nil {
			b.Fatal(err)
		}
		for _, x := range m {
			b.ReportMetric(x.Took.Seconds()*1000, x.Step+"-ms")
		}
		b.ReportMetric(gen.Seconds(), "generate-s")
	}
}

func TestMeasureScaleSmall(t *testing.T) {
	s := Synthetic{Sandboxes: 4, Runs: 20, Events: 2000, CaptureBytes: 1 << 10, End: time.Now()}
	dir := t.TempDir()
	if err := WriteSynthetic(dir, bridgeID, s); err != nil {
		t.Fatal(err)
	}
	m, err := MeasureScale(dir, bridgeID, s.SandboxName(1))
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, st := range m {
		steps = append(steps, st.Step)
	}
	if got := strings.Join(steps, " "); got != "open open-first known state report" {
		t.Fatalf("steps: %s (%v)", got, m)
	}
	t.Log(fmt.Sprint(m))
}
