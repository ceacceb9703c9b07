package tm

import (
	"sync/atomic"

	"github.com/gswitch/gswitch/fidelity"
)

// DelayLine is the wire of a link with a propagation delay: frames wait
// here until they are due, in order. A port's egress puts the frames its
// shaper released on it (Port.SetDelay); the dataplane keeps one per
// socket of a port with a receive delay. The worker that owns it is the
// only one to touch it; Published and Errors are for any goroutine.
//
// The line measures its own error: how late each frame PopDue takes off
// leaves against its due time (the worker came back after the frame was
// due), in a histogram of fidelity's buckets.
type DelayLine struct {
	buf    []Delayed
	mask   uint32
	hd, tl uint32
	n      int
	pub    atomic.Int64

	// Frames PopDue took off since the last Publish that left equally
	// late, not yet counted: the frames of one batch share their due time
	// and leave in one pass, so they cost one bucket look-up.
	pendLate int64
	pendN    uint64
	errs     fidelity.Recorder
}

// Delayed is a frame on a delay line.
type Delayed struct {
	Addr uint64 // the frame's UMEM offset
	Len  uint32
	Due  int64 // when it leaves the line (switch clock, ns)
}

// NewDelayLine returns a line of at least size frames.
func NewDelayLine(size int) *DelayLine {
	n := pow2(size)
	return &DelayLine{buf: make([]Delayed, n), mask: uint32(n - 1)}
}

// Len is the number of frames on the line.
func (d *DelayLine) Len() int { return d.n }

// Free is the room left on the line, in frames.
func (d *DelayLine) Free() int { return len(d.buf) - d.n }

// Next is when the first frame on the line is due (Len must be > 0).
func (d *DelayLine) Next() int64 { return d.buf[d.hd&d.mask].Due }

// Push puts a frame of l bytes at addr on the line, due at due; the caller
// checks Free first.
func (d *DelayLine) Push(addr uint64, l uint32, due int64) {
	d.buf[d.tl&d.mask] = Delayed{addr, l, due}
	d.tl++
	d.n++
}

// Pop takes the first frame off the line, due or not, and counts no
// lateness: a line that is emptied (Len must be > 0).
func (d *DelayLine) Pop() Delayed {
	x := d.buf[d.hd&d.mask]
	d.hd++
	d.n--
	return x
}

// PopDue takes the first frame off the line if it is due at now, and
// reports whether it did; the frame's lateness (now - Due) goes into the
// line's error histogram by the next Publish.
func (d *DelayLine) PopDue(now int64) (Delayed, bool) {
	if d.n == 0 {
		return Delayed{}, false
	}
	x := d.buf[d.hd&d.mask]
	if x.Due > now {
		return Delayed{}, false
	}
	d.hd++
	d.n--
	late := now - x.Due
	if d.pendN > 0 && late != d.pendLate {
		d.errs.ObserveN(d.pendLate, d.pendN)
		d.pendN = 0
	}
	d.pendLate = late
	d.pendN++
	return x, true
}

// Publish makes the line's length visible to Published, and the lateness
// of the frames PopDue took off to Errors.
func (d *DelayLine) Publish() {
	if d.pendN > 0 {
		d.errs.ObserveN(d.pendLate, d.pendN)
		d.pendN = 0
	}
	d.pub.Store(int64(d.n))
}

// Errors adds the line's error histogram to dst: for each frame PopDue
// took off, how late it left against its due time, in ns, as of the last
// Publish (any goroutine).
func (d *DelayLine) Errors(dst *fidelity.Counts) { d.errs.AddTo(dst) }

// Published is the line's length as of the last Publish (any goroutine).
func (d *DelayLine) Published() int64 { return d.pub.Load() }

// pow2 is the least power of two of at least n.
func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
