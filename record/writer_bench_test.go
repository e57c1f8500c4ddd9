package record

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"sandscope/client"
)

// BenchmarkCaptureWriterSteady is the record's writer at figure 11b's rate: 8 processes, each an
// 8 KiB event in every burst, a burst every 62.5 ms (about 1 MiB/s), fed from one goroutine for
// 4 s per iteration, with the TUI's commit interval. cpu-ms/MB is the process's CPU (user and
// system, all threads) per MB captured: mostly the writer's.
//
//	go test ./record -run '^$' -bench CaptureWriterSteady -benchtime 3x
func BenchmarkCaptureWriterSteady(b *testing.B) {
	r, err := Open(Options{Dir: b.TempDir(), Bridge: bridgeID})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	data := outputLines(8 << 10)
	const bursts = 64 // 4 s
	var total int64
	c0 := cpuNow()
	for i := 0; i < b.N; i++ {
		tick := time.NewTicker(62500 * time.Microsecond)
		for n := 0; n < bursts; n++ {
			<-tick.C
			for p := 0; p < 8; p++ {
				r.CaptureData("demo", fmt.Sprintf("run%d-proc%d", i, p), client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(n), Data: data})
			}
		}
		tick.Stop()
		total += 8 * bursts * int64(len(data))
	}
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	cpu := cpuNow() - c0
	b.ReportMetric(cpu.Seconds()*1000/(float64(total)/1e6), "cpu-ms/MB")
}

// BenchmarkCaptureWriterAtCap is the writer once every captured process has reached its
// per-process budget, as a TUI capturing long-running chatty processes spends most of its life:
// each commit trims each process's oldest output, and reclaim deals with the segments those trims
// empty. Scaled down from the TUI's defaults in every proportion that matters (8 processes, live
// output twice a segment, a segment about ten commits, a reclaim a little more often than a
// segment fills): 1 MiB per process, 4 MiB segments, a commit of output every 400 ms, a reclaim
// at most every 3 s, 1 MiB/s in 8 KiB events. Each iteration is 8 s
// after a 12 s warm-up that fills the budgets. copied-MB/MB is what compaction copied per MB
// captured.
//
//	go test ./record -run '^$' -bench CaptureWriterAtCap -benchtime 3x
func BenchmarkCaptureWriterAtCap(b *testing.B) {
	oldSeg, oldEvery := segmentMax, reclaimEvery
	segmentMax, reclaimEvery = 4<<20, 3*time.Second
	defer func() { segmentMax, reclaimEvery = oldSeg, oldEvery }()
	r, err := Open(Options{Dir: b.TempDir(), Bridge: bridgeID, FlushEvery: 10 * time.Millisecond, Budget: Budget{CapturePerRun: 1 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	data := outputLines(8 << 10)
	n := 0
	feed := func(d time.Duration) int64 {
		tick := time.NewTicker(62500 * time.Microsecond)
		defer tick.Stop()
		var fed int64
		for end := time.Now().Add(d); time.Now().Before(end); {
			<-tick.C
			for p := 0; p < 8; p++ {
				r.CaptureData("demo", fmt.Sprintf("proc%d", p), client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(n), Data: data})
			}
			n++
			fed += 8 * int64(len(data))
		}
		return fed
	}
	feed(12 * time.Second)
	b.ResetTimer()
	var total int64
	c0, copied0 := cpuNow(), r.compacted.Load()
	for i := 0; i < b.N; i++ {
		total += feed(8 * time.Second)
	}
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	cpu := cpuNow() - c0
	b.ReportMetric(cpu.Seconds()*1000/(float64(total)/1e6), "cpu-ms/MB")
	b.ReportMetric(float64(r.compacted.Load()-copied0)/float64(total), "copied-MB/MB")
	b.ReportMetric(float64(outputBytes(r.Path()))/float64(8<<20), "disk/live")
}
