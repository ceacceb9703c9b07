package sfc

import (
	"sync/atomic"

	"github.com/gswitch/gswitch/internal/keyhash"
)

// bloom is the BTS suppression filter of one egress port: one filter of m
// bits per queue, k hashes, reset every period (Algorithm 1 line 13; the
// prose's "line 10").
//
// The reset is O(1) and needs no timer: the filter's epoch is the clock
// divided by the period, and every 64-bit word of bits carries the epoch it
// was last written in (an epoch-stamped bank of words). A word stamped with
// an older epoch reads as zero and is cleared when first written in the new
// one, so at each period boundary the whole filter is empty at once. The
// epoch is also the salt (the paper's "version number") mixed into the
// hash, so two flows that collide in one period are unlikely to collide in
// the next (a false positive does not repeat).
//
// The flow enters keyed (keyhash.Key.Flow: the 5-tuple hash and the
// source address under the filter's secret key), so a host cannot compute
// flows of its own whose bits cover another host's flow's bits in a period
// and so have that flow's BTS suppressed as already sent.
//
// Owned by the port's egress worker, except the published counts.
type bloom struct {
	words  []bword // queue q's filter is words[q*nw : (q+1)*nw]
	nw     uint64  // words per queue (a power of two)
	k      int
	period int64
	key    keyhash.Key // the flows' hash key (drawn by newBloom)

	epoch uint64 // of the last insertion
	flows int64  // flows inserted in that epoch (all queues)

	flowsPub atomic.Int64  // flows, for metrics
	epochPub atomic.Uint64 // epoch of flowsPub
	maxFlows atomic.Int64  // most flows of any epoch so far
}

type bword struct {
	bits  uint64
	stamp uint64 // epoch of bits; another epoch's bits read as zero
}

func newBloom(queues, bits, k int, period int64) *bloom {
	nw := uint64(bits / 64)
	return &bloom{words: make([]bword, uint64(queues)*nw), nw: nw, k: k, period: period, key: keyhash.New()}
}

// epochAt is the filter's epoch at now (from 1).
func (b *bloom) epochAt(now int64) uint64 { return uint64(max(now, 0)/b.period) + 1 }

// mix64 is a 64-bit finalizer (SplitMix64).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// testAndSet reports whether flow was already in queue q's filter this
// period, and puts it in. flow is the flow's hash under the filter's key
// (b.key.Flow of the packet). q must be below the port's queues.
func (b *bloom) testAndSet(q int, flow uint64, now int64) (seen bool) {
	ep := b.epochAt(now)
	if ep != b.epoch {
		b.epoch, b.flows = ep, 0
		b.flowsPub.Store(0)
		b.epochPub.Store(ep)
	}
	h1 := mix64(flow ^ ep*0x9e3779b97f4a7c15)
	h2 := mix64(h1^0x632be59bd9b4e019) | 1 // double hashing (Kirsch-Mitzenmacher): h1 + i*h2
	m := b.nw*64 - 1
	ws := b.words[uint64(q)*b.nw : uint64(q+1)*b.nw]
	seen = true
	for i := 0; i < b.k; i++ {
		bit := (h1 + uint64(i)*h2) & m
		w := &ws[bit>>6]
		if w.stamp != ep {
			w.stamp, w.bits = ep, 0
		}
		if mask := uint64(1) << (bit & 63); w.bits&mask == 0 {
			w.bits |= mask
			seen = false
		}
	}
	if !seen {
		b.flows++
		b.flowsPub.Store(b.flows)
		if b.flows > b.maxFlows.Load() {
			b.maxFlows.Store(b.flows)
		}
	}
	return seen
}

// occupancy is the number of flows in the filter at now (any goroutine).
func (b *bloom) occupancy(now int64) int64 {
	if b.epochPub.Load() != b.epochAt(now) {
		return 0
	}
	return b.flowsPub.Load()
}
