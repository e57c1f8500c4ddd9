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
	data := make([]byte, 8<<10)
	for i := range data {
		data[i] = 'a' + byte(i%26)
		if i%80 == 79 {
			data[i] = '\n'
		}
	}
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
