package tm

import (
	"math/bits"
	"sync/atomic"
)

// Frames is the switch's frame budget: how many UMEM frames the data
// queues of all ports may hold. A frame takes a whole UMEM chunk whatever
// its length, so the queues are limited in frames as well as in bytes: the
// UMEM is split into one range per worker, and the data queues may hold
// at most a range's limit of its frames (the rest keep the fill rings and
// the emit reserve going), and one port at most as many frames as are
// still free in all (a dynamic threshold with alpha 1, so two congested
// ports leave a third of them to the others).
//
// The counts are shared between workers. Each egress worker adds what its
// pass queued and dequeued once a pass (Worker.EndPass), not an atomic add
// per frame; its own admissions see its pending sums, other workers'
// within one pass.
type Frames struct {
	shift    uint // log2 of the UMEM frame size
	perRange uint32
	ranges   []frameRange
	limit    int64        // the ranges' limits together
	queued   atomic.Int64 // frames in all data queues
}

// frameRange is one worker's range of UMEM frames, on a cache line of its
// own: the egress workers of every port add to it.
type frameRange struct {
	limit  int64
	queued atomic.Int64 // frames of the range in data queues
	_      [48]byte
}

// NewFrames returns the budget of a UMEM of frames of frameSize bytes (a
// power of two) split into ranges of perRange frames, the last one taking
// the rest; limits[i] is how many frames of range i the queues may hold.
func NewFrames(frameSize uint64, perRange uint32, limits []int64) *Frames {
	f := &Frames{shift: uint(bits.TrailingZeros64(frameSize)), perRange: perRange, ranges: make([]frameRange, len(limits))}
	for i, l := range limits {
		f.ranges[i].limit = l
		f.limit += l
	}
	return f
}

// Limit is how many frames of range r the data queues may hold.
func (f *Frames) Limit(r int) int64 { return f.ranges[r].limit }

// Queued is how many frames of range r the data queues held at the end of
// the last pass of each egress worker (any goroutine).
func (f *Frames) Queued(r int) int64 { return f.ranges[r].queued.Load() }

// rangeOf is the range that holds the frame at addr.
func (f *Frames) rangeOf(addr uint64) int {
	r := int(uint32(addr>>f.shift) / f.perRange)
	if r >= len(f.ranges) {
		r = len(f.ranges) - 1
	}
	return r
}
