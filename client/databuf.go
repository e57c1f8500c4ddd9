package client

import "sync"

// dataRing recycles the buffers that output events are decoded into, for followers whose consumer
// opted in to FollowOptions.ReuseData. Decoding into warm memory saves zeroing and faulting in a
// fresh buffer per event, which dominates the cost of following a fast log. It never blocks: when
// no buffer is free a new one is made, and a buffer that cannot be kept is left to the collector.
type dataRing struct {
	mu   sync.Mutex
	free [][]byte // last in, first out: the most recently used buffer is the one still in cache
	max  int
	big  int // the largest size asked for or handed back: new buffers get it, so they all fit
}

// minRingBuf is the smallest buffer the ring makes, so that small events share warm buffers too.
const minRingBuf = 32 << 10

// maxRingBuf is the largest buffer the ring keeps: a rare huge event should not pin its memory.
const maxRingBuf = 4 << 20

func newDataRing(n int) *dataRing { return &dataRing{max: n} }

// get returns a buffer of length n.
func (d *dataRing) get(n int) []byte {
	d.mu.Lock()
	d.big = max(d.big, min(n, maxRingBuf))
	size := max(d.big, minRingBuf)
	if k := len(d.free); k > 0 {
		b := d.free[k-1]
		d.free[k-1] = nil
		d.free = d.free[:k-1]
		d.mu.Unlock()
		if cap(b) >= n {
			return b[:n]
		}
	} else {
		d.mu.Unlock()
	}
	return make([]byte, n, size)
}

// put hands back a buffer no one reads any more.
func (d *dataRing) put(b []byte) {
	if cap(b) < minRingBuf || cap(b) > maxRingBuf {
		return
	}
	d.mu.Lock()
	d.big = max(d.big, cap(b))
	if len(d.free) < d.max {
		d.free = append(d.free, b[:0])
	}
	d.mu.Unlock()
}

// heldData is a delivered event's buffer, free once the consumer has received an event emitted
// after it (see follower.release).
type heldData struct {
	seq uint64 // emit sequence number of the event carrying buf
	buf []byte
}
