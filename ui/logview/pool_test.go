package logview

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"sandscope/client"
	"sandscope/ui/internal/uitest"
)

// The view hands a Data event's bytes back to its follower's pool only once the buffer has taken
// them, so the follower may decode into them again. Here every buffer the pool gives out again is
// poisoned first: a buffer handed back while the view still holds its event (in the reorder window,
// across batches, with timestamps on and two processes) would show poison in the view's lines.
func TestViewHandsBackDecodeBuffersOncePlaced(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			now := uitest.T0.Add(time.Hour)
			m, _ := newView(t, target("aaaaaaaa1"), target("bbbbbbbb2"))
			m.ctx.Now = func() time.Time { return now }
			if ordered {
				press(t, m, "t")
			}
			given := map[*byte]bool{}
			again := 0
			pooled := func(src int, s string) []byte {
				b := m.sources[src].pool.Get(len(s))
				k := unsafe.SliceData(b[:1])
				if given[k] {
					again++
				}
				given[k] = true
				copy(b[:cap(b)], bytes.Repeat([]byte("POISON"), cap(b)/6+1))
				copy(b, s)
				return b
			}
			want := map[string][]string{}
			ms := 0
			for r := 0; r < 40; r++ {
				for src, name := range []string{"aaaaaaaa", "bbbbbbbb"} {
					var evs []client.LogEvent
					for k := 0; k < 3; k++ {
						line := fmt.Sprintf("%s round %d event %d", name, r, k)
						// one line cut across two events, as a stream cuts them
						evs = append(evs, data(ms, client.Stdout, "c", ""), data(ms, client.Stdout, "c", ""))
						evs[len(evs)-2].Data = pooled(src, line[:7])
						evs[len(evs)-1].Data = pooled(src, line[7:]+"\n")
						want[name] = append(want[name], line)
						ms++
					}
					feed(m, src, evs...)
				}
				now = now.Add(reorderWindow / 3)
				m.Update(reorderMsg{owner: m, gen: m.gen})
			}
			now = now.Add(2 * reorderWindow)
			m.Update(reorderMsg{owner: m, gen: m.gen})
			if again == 0 {
				t.Fatal("no buffer was given out again: the view hands nothing back")
			}
			got := map[string][]string{}
			for _, l := range lines(m) {
				name, text, _ := strings.Cut(l, " ")
				got[name] = append(got[name], text)
			}
			for name, w := range want {
				if g := strings.Join(got[name], "|"); g != strings.Join(w, "|") {
					t.Fatalf("%s's lines:\n%s\nwant\n%s", name, g, strings.Join(w, "|"))
				}
			}
		})
	}
}

// After a quiet second the view's pools let go of the buffers a burst left free.
func TestViewPoolLetsGoWhenQuiet(t *testing.T) {
	m, _ := newView(t, target("aaaaaaaa1"))
	pool := m.sources[0].pool
	b := pool.Get(100)
	copy(b, "burst\n")
	feed(m, 0, client.LogEvent{Kind: client.Data, Time: at(1), Stream: client.Stdout, Cursor: "c", Data: b[:6]})
	m.Update(tickMsg{owner: m, gen: m.gen}) // the second of the burst
	again := pool.Get(100)
	if unsafe.SliceData(again) != unsafe.SliceData(b) {
		t.Fatal("the buffer handed back was not kept while output flowed")
	}
	pool.Put(again)
	m.Update(tickMsg{owner: m, gen: m.gen}) // a quiet second
	if unsafe.SliceData(pool.Get(100)) == unsafe.SliceData(b) {
		t.Fatal("the pool kept its free buffers through a quiet second")
	}
}
