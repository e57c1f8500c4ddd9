// Command soak checks the log buffer's memory budget: it appends a large amount of realistic output
// (default 1 GiB; lines of 80–200 bytes, some coloured, arriving in uneven chunks that end mid-line)
// through a logbuf.Buffer while reading the tail window like the log view does, then reports peak RSS
// (VmHWM from /proc/self/status; budget 150 MiB), throughput and disk use, and checks that Line(0)
// is the first line and that SaveRaw reproduces every byte from the first (SHA-256 compared).
//
//	go run ./ui/logbuf/internal/soak [-size 1GiB-in-bytes] [-dir DIR]
//
// It exits 1 when a check fails or the budget is exceeded.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"sandscope/client"
	"sandscope/ui/logbuf"
)

func main() {
	size := flag.Int64("size", 1<<30, "bytes of output to append")
	dir := flag.String("dir", os.TempDir(), "parent directory for the buffer's files")
	budget := flag.Int64("budget", 150, "peak RSS budget in MiB")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*size, *dir, *budget); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(size int64, dir string, budget int64) error {
	b, err := logbuf.New(logbuf.Options{Dir: dir})
	if err != nil {
		return err
	}
	defer b.Close()
	r := rand.New(rand.NewPCG(7, 11))
	want := sha256.New()
	var first string
	var fed int64
	seq, chunks := 0, 0
	start := time.Now()
	block := make([]byte, 0, 1<<20+256)
	off := 0
	for fed < size {
		if off == len(block) { // next block of whole lines; chunks are cut from it unevenly
			block, off = block[:0], 0
			for len(block) < 1<<20 {
				block = genLine(r, block, &seq)
				if first == "" {
					first = string(block[:len(block)-1])
				}
			}
		}
		n := 512 + r.IntN(32<<10)
		n = int(min(int64(min(n, len(block)-off)), size-fed))
		chunk := block[off : off+n]
		want.Write(chunk)
		b.AddData("", client.Stdout, chunk, "c"+strconv.Itoa(chunks), time.Unix(int64(chunks), 0))
		off += n
		fed += int64(n)
		chunks++
		if chunks%64 == 0 { // a frame
			l := b.Len()
			b.Lines(max(0, l-48), 48)
		}
	}
	elapsed := time.Since(start)
	if err := b.Err(); err != nil {
		return fmt.Errorf("buffer error: %w", err)
	}
	hwm, err := vmHWM()
	if err != nil {
		return err
	}
	disk := dirSize(b.Dir())
	fmt.Printf("appended %d bytes (%d lines, %d chunks) in %v: %.1f MB/s\n",
		fed, b.Len(), chunks, elapsed.Round(time.Millisecond), float64(fed)/elapsed.Seconds()/1e6)
	fmt.Printf("peak RSS (VmHWM): %.1f MiB (budget %d MiB); disk: %.1f MiB\n", float64(hwm)/(1<<20), budget, float64(disk)/(1<<20))

	var failed []string
	if l, ok := b.Line(0); !ok || l.Text != first {
		failed = append(failed, fmt.Sprintf("Line(0) = %q, want %q", l.Text, first))
	} else {
		fmt.Printf("Line(0) = %q: ok\n", l.Text)
	}
	got := sha256.New()
	w := bufio.NewWriterSize(got, 1<<20)
	t := time.Now()
	if err := b.SaveRaw(w); err != nil {
		failed = append(failed, "SaveRaw: "+err.Error())
	}
	w.Flush()
	if string(got.Sum(nil)) != string(want.Sum(nil)) {
		failed = append(failed, "SaveRaw bytes differ from the output appended")
	} else {
		fmt.Printf("SaveRaw reproduces all %d bytes (sha256 equal) in %v: ok\n", fed, time.Since(t).Round(time.Millisecond))
	}
	t = time.Now()
	if i, err := b.Search(context.Background(), logbuf.Query{Text: "NOT PRESENT", IgnoreCase: true}, 0, logbuf.Forward); err != nil || i != -1 {
		failed = append(failed, fmt.Sprintf("search: %d, %v", i, err))
	} else {
		fmt.Printf("case-insensitive search through all %d lines: %v\n", b.Len(), time.Since(t).Round(time.Millisecond))
	}
	if hwm2, err := vmHWM(); err == nil && hwm2 > hwm {
		hwm = hwm2
		fmt.Printf("peak RSS after save and search: %.1f MiB\n", float64(hwm)/(1<<20))
	}
	if hwm > budget<<20 {
		failed = append(failed, fmt.Sprintf("peak RSS %.1f MiB over budget %d MiB", float64(hwm)/(1<<20), budget))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

// bodies are pre-generated line bodies (generating random text per byte would dominate the run).
var bodies = func() [][]byte {
	r := rand.New(rand.NewPCG(7, 11))
	out := make([][]byte, 4096)
	for i := range out {
		n := 72 + r.IntN(121)
		var b []byte
		switch r.IntN(8) {
		case 0:
			b = append(b, " \x1b[32mINFO\x1b[0m "...)
		case 1:
			b = append(b, " \x1b[1;31mERROR\x1b[0m\t"...)
		default:
			b = append(b, ' ')
		}
		for len(b) < n {
			if r.IntN(7) == 0 {
				b = append(b, ' ')
			} else {
				b = append(b, byte('a'+r.IntN(26)))
			}
		}
		out[i] = b
	}
	return out
}()

// genLine appends one line of 80–200 bytes ending in LF: a sequence number and a body.
func genLine(r *rand.Rand, dst []byte, seq *int) []byte {
	*seq++
	dst = strconv.AppendInt(dst, int64(*seq), 10)
	dst = append(dst, bodies[r.IntN(len(bodies))]...)
	return append(dst, '\n')
}

func vmHWM() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read VmHWM: %w", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, err := strconv.ParseInt(f[1], 10, 64)
				if err == nil {
					return kb << 10, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("VmHWM not found in /proc/self/status")
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
