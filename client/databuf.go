package client

import (
	"sync"
	"unsafe"
)

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

// DataPool recycles the buffers a follower decodes output into, for a consumer that keeps events
// past its next receive (one that drains batches, or holds events in a queue of its own) and so
// cannot follow with ReuseData. The consumer hands each Data event's bytes back with Put once
// nothing reads them any more; until then the pool never gives them out again. Put takes back only
// buffers the pool gave out and has not had back yet: any other slice (output a driver shares, a
// record's chunk) is left alone, so a consumer may hand back every Data event it gets, whatever
// made it. A pool is safe for use by several goroutines.
type DataPool struct {
	ring dataRing
	mu   sync.Mutex
	out  map[*byte]struct{} // the buffers given out and not handed back yet, by first byte
}

// NewDataPool makes a pool that keeps up to n free buffers (about as many as may be in flight
// between the follower and the consumer: its channel, the follower's own read-ahead and the
// consumer's batch).
func NewDataPool(n int) *DataPool {
	return &DataPool{ring: dataRing{max: max(n, 1)}, out: map[*byte]struct{}{}}
}

// maxOutstanding bounds the buffers a pool tracks per free buffer it may keep: a consumer that
// drops events without handing them back (a view closed mid-batch, an event lost to a cancelled
// follower) must not make the pool pin them. Past the bound the pool forgets what it gave out;
// those buffers are then left to the collector when handed back.
const maxOutstanding = 4

// Get returns a buffer of length n (its bytes are not zeroed: a recycled buffer holds what it held
// before), given out until it is handed back with Put.
func (p *DataPool) Get(n int) []byte {
	b := p.ring.get(n)
	if cap(b) == 0 {
		return b
	}
	p.mu.Lock()
	if len(p.out) >= maxOutstanding*p.ring.max {
		clear(p.out)
	}
	p.out[unsafe.SliceData(b[:1])] = struct{}{}
	p.mu.Unlock()
	return b
}

// Put hands back b (a Data event's bytes as the follower delivered them) once nothing reads it any
// more. A nil pool, and a slice the pool did not give out, are ignored.
func (p *DataPool) Put(b []byte) {
	if p == nil || cap(b) == 0 {
		return
	}
	k := unsafe.SliceData(b[:1])
	p.mu.Lock()
	_, ok := p.out[k]
	delete(p.out, k)
	p.mu.Unlock()
	if ok {
		p.ring.put(b)
	}
}

// Drop lets go of the free buffers (the follower has ended; Put still works, and keeps again).
func (p *DataPool) Drop() {
	if p == nil {
		return
	}
	p.ring.mu.Lock()
	clear(p.ring.free)
	p.ring.free = p.ring.free[:0]
	p.ring.mu.Unlock()
}
