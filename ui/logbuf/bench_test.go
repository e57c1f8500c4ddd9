package logbuf

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"sandscope/client"
)

// genChunk makes about size bytes of realistic output: lines of 80–200 bytes, some coloured, some
// with tabs, cut at a non-line boundary so chunks end mid-line like real streams.
func genChunk(r *rand.Rand, size int, seq *int) []byte {
	var sb strings.Builder
	for sb.Len() < size {
		*seq++
		n := 80 + r.IntN(121)
		head := fmt.Sprintf("%06d ", *seq)
		switch r.IntN(8) {
		case 0:
			head += "\x1b[32mINFO\x1b[0m "
		case 1:
			head += "\x1b[1;31mERROR\x1b[0m\t"
		}
		sb.WriteString(head)
		for k := len(head); k < n; k++ {
			sb.WriteByte(byte('a' + (k*7+*seq)%26))
			if k%9 == 0 {
				sb.WriteByte(' ')
				k++
			}
		}
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
}

// TestMain closes the frame benchmark's shared buffers (kept across benchmark rounds because
// filling a million lines is setup, not what is measured).
func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range []*Buffer{frameSmall, frameBig} {
		if b != nil {
			b.Close()
		}
	}
	os.Exit(code)
}

// fill appends lines until the buffer holds at least n entries.
func fill(tb testing.TB, n int) *Buffer {
	b, err := New(Options{Dir: os.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	seq := 0
	chunk := genChunk(r, 1<<20, &seq)
	for i := 0; b.Len() < n; i++ {
		// Deliver in uneven pieces so lines straddle chunks.
		for off := 0; off < len(chunk) && b.Len() < n; {
			end := min(len(chunk), off+4096+(i*131+off)%8192)
			b.AddData("", client.Stdout, chunk[off:end], fmt.Sprintf("c%d-%d", i, off), time.Unix(int64(i), 0))
			off = end
		}
	}
	return b
}

// frame renders the visible window the way the log view does: a gutter and each line cut to the
// width.
func frame(b *Buffer, from, height, width int, sb *strings.Builder) {
	sb.Reset()
	for _, l := range b.Lines(from, height) {
		fmt.Fprintf(sb, "%7d ", from)
		sb.WriteString(ansi.Truncate(l.Text, width-8, "…"))
		sb.WriteByte('\n')
		from++
	}
}

var (
	frameOnce            sync.Once
	frameSmall, frameBig *Buffer
)

// BenchmarkFrame measures one frame (48 lines at 160 columns via Lines) with 1,000 and with
// 1,000,000 lines buffered, in the same run, at the tail (following) and scrolled back into spilled
// history; it reports both costs and the ratios (budget: 1M/1k ≤ 1.2), and the cost of a frame
// after a jump to uncached history (pages read from disk).
func BenchmarkFrame(b *testing.B) {
	frameOnce.Do(func() {
		start := time.Now()
		frameSmall = fill(b, 1000)
		frameBig = fill(b, 1000000)
		b.Logf("setup: %v (1M lines, %d bytes on disk)", time.Since(start), frameBig.raws[0].disk)
	})
	const h, w = 48, 160
	var sb strings.Builder
	var tSmall, tBig, sSmall, sBig, cold time.Duration
	ns, nb := frameSmall.Len(), frameBig.Len()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		frame(frameSmall, ns-h, h, w, &sb)
		t1 := time.Now()
		frame(frameBig, nb-h, h, w, &sb)
		t2 := time.Now()
		// Scrolled back: small buffer mid-way, big buffer deep in spilled history (page-aligned
		// windows move by a few lines per frame, as when a user scrolls).
		frame(frameSmall, 400+i%64, h, w, &sb)
		t3 := time.Now()
		frame(frameBig, 400000+i%64, h, w, &sb)
		t4 := time.Now()
		// A jump far back (a search hit, Home): the pages are not cached and must be read.
		frame(frameBig, (i*7919*pageSize)%(nb/2), h, w, &sb)
		t5 := time.Now()
		tSmall += t1.Sub(t)
		tBig += t2.Sub(t1)
		sSmall += t3.Sub(t2)
		sBig += t4.Sub(t3)
		cold += t5.Sub(t4)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tSmall.Nanoseconds())/n, "ns/frame-1k")
	b.ReportMetric(float64(tBig.Nanoseconds())/n, "ns/frame-1M")
	b.ReportMetric(float64(tBig)/float64(tSmall), "ratio-tail")
	b.ReportMetric(float64(sBig)/float64(sSmall), "ratio-scrolled")
	b.ReportMetric(float64(cold.Nanoseconds())/n, "ns/frame-1M-jump")
}

// BenchmarkIngest measures AddData throughput on realistic output (lines spill to disk as they
// would in a long follow).
func BenchmarkIngest(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	seq := 0
	chunk := genChunk(r, 1<<20, &seq)
	buf, err := New(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Close()
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(chunk); off += 16384 {
			buf.AddData("", client.Stdout, chunk[off:min(off+16384, len(chunk))], "c", time.Time{})
		}
	}
}

// BenchmarkIngestReplay is figure 3's stream without the bridge: 62-byte plain lines (what `yes`
// writes) cut mid-line into events of 200 KB (a live producer's large reads) and of 10 KB (what the
// local bridge's replay of a finished 256 MiB process mostly delivers: 4–12 KB a pipe read). Each
// iteration adds 16 MiB, so the raw file grows as in a long follow. The batch cases hand the events
// over as the log view does (Append, 24 events a batch: a batch's chunks are written from the
// caller's buffers).
func BenchmarkIngestReplay(b *testing.B) {
	line := "sandscope benchmark line 0123456789abcdefghijklmnopqrstuvwxyz\n"
	data := []byte(strings.Repeat(line, 16<<20/len(line)))
	for _, bc := range []struct{ ev, batch int }{{200000, 0}, {10000, 0}, {10000, 24}} {
		name := fmt.Sprintf("event=%d", bc.ev)
		if bc.batch > 0 {
			name += fmt.Sprintf("/batch=%d", bc.batch)
		}
		b.Run(name, func(b *testing.B) {
			buf, err := New(Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer buf.Close()
			var evs []client.LogEvent
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for off := 0; off < len(data); off += bc.ev {
					chunk := data[off:min(off+bc.ev, len(data))]
					if bc.batch == 0 {
						buf.AddData("", client.Stdout, chunk, "c", time.Time{})
						continue
					}
					evs = append(evs, client.LogEvent{Kind: client.Data, Stream: client.Stdout, Data: chunk, Cursor: "c"})
					if len(evs) == bc.batch || off+bc.ev >= len(data) {
						buf.Append("", evs...)
						evs = evs[:0]
					}
				}
				buf.Lines(buf.Len()-48, 48)
			}
		})
	}
}

// BenchmarkRawWrite is why a raw file grows by whole blocks (rawBlock): the same 64 MiB written to
// a file reserved ahead (as raw files are), in writes that start and end on a MiB boundary, and in
// writes of 100-400 KB at whatever offset the bytes before them left (what the raw file did
// before: each batch's chunks in one write). The writes come from one 8 MiB buffer in both cases.
func BenchmarkRawWrite(b *testing.B) {
	const total = 64 << 20
	src := make([]byte, 8<<20)
	for i := range src {
		src[i] = 'a' + byte(i%26)
	}
	r := rand.New(rand.NewPCG(5, 6))
	unaligned := make([]int, 0, 512)
	for n := 0; n < total; {
		k := min(100<<10+r.IntN(300<<10), total-n)
		unaligned = append(unaligned, k)
		n += k
	}
	aligned := make([]int, total>>20)
	for i := range aligned {
		aligned[i] = 1 << 20
	}
	for _, bc := range []struct {
		name  string
		sizes []int
	}{{"aligned-1MiB", aligned}, {"unaligned-100-400KB", unaligned}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			b.SetBytes(total)
			for i := 0; i < b.N; i++ {
				f, err := os.Create(fmt.Sprintf("%s/raw-%d", dir, i))
				if err != nil {
					b.Fatal(err)
				}
				_ = reserveSpace(f, 0, total)
				var off int64
				for _, n := range bc.sizes {
					at := int(off) % (len(src) - n)
					if _, err := f.WriteAt(src[at:at+n], off); err != nil {
						b.Fatal(err)
					}
					off += int64(n)
				}
				b.StopTimer()
				f.Close()
				os.Remove(f.Name())
				b.StartTimer()
			}
		})
	}
}
