package record

import (
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
)

// diskBytes is what a record takes on disk: the file, its WAL, its shared-memory index and the
// segment files of its captured output.
func diskBytes(path string) int64 {
	n := outputBytes(path)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// liveBytes is what a record holds: captured output and event bodies (read without the Record,
// so nothing is pruned or checked on the way).
func liveBytes(path string) (int64, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var chunks, events int64
	if err := db.QueryRow("SELECT COALESCE(SUM(" + chunkLen + "), 0) FROM chunks").Scan(&chunks); err != nil {
		return 0, err
	}
	if err := db.QueryRow("SELECT COALESCE(SUM(length(body)), 0) FROM events").Scan(&events); err != nil {
		return 0, err
	}
	return chunks + events, nil
}

// fillCaptures writes procs processes' output of each bytes each into a record at dir (their
// times a minute apart, so the oldest are pruned first), with an event per process, and closes it.
func fillCaptures(tb testing.TB, dir string, budget Budget, procs int, each int64) {
	if err := fillOpen(tb, dir, budget, procs, each).Close(); err != nil {
		tb.Fatal(err)
	}
}

// fillOpen is fillCaptures leaving the record open, everything flushed.
func fillOpen(tb testing.TB, dir string, budget Budget, procs int, each int64) *Record {
	var clock atomic.Int64 // read by the writer too
	clock.Store(t0.UnixNano())
	r, err := Open(Options{Dir: dir, Bridge: bridgeID, Budget: budget, Now: func() time.Time { return time.Unix(0, clock.Load()) }, FlushEvery: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	line := make([]byte, 16<<10)
	for i := range line {
		line[i] = 'a' + byte(i%26)
	}
	seq := 0
	for p := 0; p < procs; p++ {
		now := t0.Add(time.Duration(p) * time.Minute)
		clock.Store(now.UnixNano())
		proc := fmt.Sprintf("proc-%03d", p)
		r.Add(FromSandboxEvent(client.SandboxEvent{Kind: client.ProcessChanged, Sandbox: "demo", Time: now, Process: running(proc, 10, 1), Incarnation: client.Incarnation{Number: 1}}))
		for w := int64(0); w < each; w += int64(len(line)) {
			seq++
			r.CaptureData("demo", proc, client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(seq), Time: now, Data: line})
			if seq%256 == 0 {
				if err := r.Flush(); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	if err := r.Flush(); err != nil {
		tb.Fatal(err)
	}
	return r
}

// legacyFile makes the record file of dir the way versions before incremental auto-vacuum did.
func legacyFile(tb testing.TB, dir string) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+FileFor(dir, bridgeID)+"?_pragma=journal_mode(WAL)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	for _, s := range schema {
		if _, err := db.Exec(s); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkPrunedSize: a record whose captured output grew past its total budget (160 MiB written
// against 96 MiB) is opened, which prunes it; the bytes it then takes on disk (file, WAL and
// index) against the bytes it still holds. Budget: ≤ 1.25.
//
//	go test ./record -run '^$' -bench PrunedSize -benchtime 1x
func BenchmarkPrunedSize(b *testing.B) {
	budget := Budget{CapturePerRun: 8 << 20, CaptureTotal: 96 << 20}
	for _, legacy := range []bool{false, true} {
		name := "incremental"
		if legacy {
			name = "legacy-file"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				if legacy {
					legacyFile(b, dir)
				}
				fillCaptures(b, dir, Budget{CapturePerRun: 8 << 20, CaptureTotal: 1 << 40}, 32, 5<<20)
				path := FileFor(dir, bridgeID)
				before := diskBytes(path)
				r, err := Open(Options{Dir: dir, Bridge: bridgeID, Budget: budget})
				if err != nil {
					b.Fatal(err)
				}
				waitPruned(b, r)                  // the steps of pruning Open left to the writer
				if err := r.Flush(); err != nil { // the writer's first step (the conversion of a legacy file) is done
					b.Fatal(err)
				}
				open := diskBytes(path)
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
				after := diskBytes(path)
				live, err := liveBytes(path)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(before)/(1<<20), "MiB-before")
				b.ReportMetric(float64(live)/(1<<20), "MiB-live")
				b.ReportMetric(float64(open)/float64(live), "disk/live-open")
				b.ReportMetric(float64(after)/float64(live), "disk/live-closed")
			}
		})
	}
}

// BenchmarkOpenUnclean: opening a record of about 160 MiB whose sandscope was killed while it had
// it open (a copy of the file, its WAL and its output's segments taken then: no clean mark, frames
// not checkpointed), which makes Open recover the WAL and check the file. Budget: under 1 s for a
// large record.
//
//	go test ./record -run '^$' -bench OpenUnclean -benchtime 3x
func BenchmarkOpenUnclean(b *testing.B) {
	src := b.TempDir()
	r := fillOpen(b, src, Budget{CapturePerRun: 8 << 20, CaptureTotal: 1 << 40}, 32, 5<<20)
	path := FileFor(src, bridgeID)
	crash := b.TempDir()
	copyRecord(b, path, FileFor(crash, bridgeID))
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	size := float64(diskBytes(FileFor(crash, bridgeID))) / (1 << 20)
	var total time.Duration
	b.ResetTimer() // (it drops metrics reported before it)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		copyRecord(b, FileFor(crash, bridgeID), FileFor(dir, bridgeID))
		b.StartTimer()
		t := time.Now()
		r, err := Open(Options{Dir: dir, Bridge: bridgeID, Budget: Budget{CaptureTotal: 1 << 40}})
		total += time.Since(t)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if n := len(r.Notices()); n > 0 {
			b.Logf("notices: %q", r.Notices())
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()*1000/float64(b.N), "open-ms")
	b.ReportMetric(size, "MiB-record")
}

// BenchmarkCaptureCPU: 8 processes' output captured at once (the manager's default), each a
// stream of 4 KiB events every 5 ms (800 KB/s), through CaptureData and the writer (every 50 ms,
// as in the TUI), for 2 s per iteration. cpu-ms/MB is the process's CPU (user and system, all
// threads) per MB captured: figure 11b's record side, without the bridge and the follower.
//
//	go test ./record -run '^$' -bench CaptureCPU -benchtime 3x
func BenchmarkCaptureCPU(b *testing.B) {
	r, err := Open(Options{Dir: b.TempDir(), Bridge: bridgeID})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	data := outputLines(4 << 10)
	const events = 400 // 2 s at one every 5 ms
	var total int64
	c0 := cpuNow()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for p := 0; p < 8; p++ {
			wg.Add(1)
			go func(p int) {
				defer wg.Done()
				proc := fmt.Sprintf("run%d-proc%d", i, p)
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for n := 0; n < events; n++ {
					<-tick.C
					r.CaptureData("demo", proc, client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(n), Data: data})
				}
			}(p)
		}
		wg.Wait()
		total += 8 * events * int64(len(data))
	}
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	cpu := cpuNow() - c0
	b.ReportMetric(cpu.Seconds()*1000/(float64(total)/1e6), "cpu-ms/MB")
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCaptureWriter is BenchmarkCaptureCPU's output fed in batches (each 50 ms, 40 KiB for
// each of 8 processes: the same 800 KB/s) from one goroutine, so that the feeders' own wake-ups
// do not hide the record's cost: cpu-ms/MB is then mostly the writer's (SQLite's inserts, commits
// and WAL checkpoints).
//
//	go test ./record -run '^$' -bench CaptureWriter -benchtime 3x
func BenchmarkCaptureWriter(b *testing.B) {
	r, err := Open(Options{Dir: b.TempDir(), Bridge: bridgeID})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	data := outputLines(4 << 10)
	const rounds = 40 // 2 s at one every 50 ms
	var total int64
	c0 := cpuNow()
	for i := 0; i < b.N; i++ {
		tick := time.NewTicker(50 * time.Millisecond)
		for n := 0; n < rounds; n++ {
			<-tick.C
			for p := 0; p < 8; p++ {
				proc := fmt.Sprintf("run%d-proc%d", i, p)
				for e := 0; e < 10; e++ {
					r.CaptureData("demo", proc, client.LogEvent{Kind: client.Data, Cursor: strconv.Itoa(n*10 + e), Data: data})
				}
			}
		}
		tick.Stop()
		total += 8 * rounds * 10 * int64(len(data))
	}
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	cpu := cpuNow() - c0
	b.ReportMetric(cpu.Seconds()*1000/(float64(total)/1e6), "cpu-ms/MB")
}

// outputLines is n bytes of output as a chatty process prints it: 80-byte lines of letters.
func outputLines(n int) []byte {
	data := make([]byte, n)
	for i := range data {
		data[i] = 'a' + byte(i%26)
		if i%80 == 79 {
			data[i] = '\n'
		}
	}
	return data
}
