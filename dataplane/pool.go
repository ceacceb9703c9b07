package dataplane

import (
	"sync/atomic"

	"github.com/gswitch/gswitch/dataplane/ring"
	"github.com/gswitch/gswitch/pkt"
)

// framePool is one worker's range of UMEM frames: its free frames and
// jumbo slots, and the return rings through which other workers give back
// the frames of this range they are done with (sized to hold the whole
// range, so a return never fails). Only its worker's goroutine uses it,
// except the gauges and the return rings' producer sides.
type framePool struct {
	u            *umem
	id           int                  // its worker
	lo, hi       uint64               // the range [lo, hi) as UMEM offsets
	jlo          uint64               // its jumbo slots are [jlo, hi) (jlo = hi without them); fixed in New, any goroutine reads it
	free         []uint64             // free frames of the range (a stack)
	jfree        []uint64             // free jumbo slots of the range (a stack)
	emitReserve  int                  // free frames only emissions may take
	floodReserve int                  // free frames (beyond emitReserve) only flooded copies and emissions may take
	ret          []*ring.SPSC[uint64] // ret[w]: frames worker w gives back to this one
	outRet       [][]uint64           // outRet[w]: frames of worker w's range to give back to it, staged
	peers        []*framePool         // every worker's pool, by worker (set in New)
	wake         *sleeper             // this worker's

	freeLen, staged atomic.Int64 // gauges for Switch.Frames (publishGauges)
	assembling      atomic.Int64 // jumbo slots of multi-buffer frames still arriving
}

// init sets up worker id's pool over its range of u; wake is the worker's
// sleeper, which other workers wake when they give frames back.
func (p *framePool) init(u *umem, id int, wake *sleeper) error {
	p.u, p.id, p.wake = u, id, wake
	p.lo, p.hi, p.jlo = u.rangeOf(id)
	fs := u.frameSize
	n := int((p.jlo - p.lo) / fs) // frames outside the jumbo slots
	p.free = make([]uint64, 0, n)
	for a := p.jlo; a > p.lo; a -= fs { // lowest addresses on top
		p.free = append(p.free, a-fs)
	}
	if u.sg {
		p.jfree = make([]uint64, 0, u.slotsPer)
		for a := p.hi; a > p.jlo; a -= u.slotBytes {
			p.jfree = append(p.jfree, a-u.slotBytes)
		}
	}
	p.emitReserve = max(n/64, BatchSize)
	p.floodReserve = max(n/16, BatchSize)
	p.ret = make([]*ring.SPSC[uint64], u.ranges)
	p.outRet = make([][]uint64, u.ranges)
	for o := 0; o < u.ranges; o++ {
		if o == id {
			continue
		}
		// As large as this worker's range: all of its frames could be coming back at once.
		r, err := ring.New[uint64](nextPow2(n))
		if err != nil {
			return err
		}
		p.ret[o] = r
		p.outRet[o] = make([]uint64, 0, 4*BatchSize)
	}
	return nil
}

// alloc takes a free frame, keeping keep frames back.
func (p *framePool) alloc(keep int) (uint64, bool) {
	if len(p.free) <= keep {
		return 0, false
	}
	a := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return a, true
}

// allocFor takes a free frame that holds n bytes after the headroom: a
// UMEM frame, or a jumbo slot.
func (p *framePool) allocFor(n uint32, keep int) (uint64, bool) {
	if uint64(n) <= p.u.frameSize-pkt.Headroom {
		return p.alloc(keep)
	}
	if !p.u.sg || len(p.jfree) == 0 || uint64(n) > p.u.slotBytes-pkt.Headroom {
		return 0, false
	}
	a := p.jfree[len(p.jfree)-1]
	p.jfree = p.jfree[:len(p.jfree)-1]
	return a, true
}

// release gives a frame back to the worker that owns it.
func (p *framePool) release(addr uint64) {
	base := addr &^ (p.u.frameSize - 1)
	if base >= p.lo && base < p.hi {
		if base >= p.jlo { // a jumbo slot (never without umem.sg: jlo = hi)
			p.jfree = append(p.jfree, p.slotAt(base))
			return
		}
		p.free = append(p.free, base)
		return
	}
	o := p.u.owner(base)
	p.outRet[o] = append(p.outRet[o], base)
	if len(p.outRet[o]) == cap(p.outRet[o]) {
		p.flushReturn(o)
	}
}

// slotAt is the jumbo slot of the range that holds addr (in [jlo, hi)).
func (p *framePool) slotAt(addr uint64) uint64 {
	return p.jlo + (addr-p.jlo)/p.u.slotBytes*p.u.slotBytes
}

// flushReturn pushes staged frames onto worker o's return ring. The ring
// holds o's whole range, so everything fits; anything left stays staged.
func (p *framePool) flushReturn(o int) {
	st := p.outRet[o]
	n := p.peers[o].ret[p.id].Push(st)
	p.outRet[o] = st[:copy(st, st[n:])]
	if n > 0 {
		p.peers[o].wake.wakeIfSleeping()
	}
}

// flushReturns pushes every worker's staged frames onto its return ring.
func (p *framePool) flushReturns() {
	for o := range p.outRet {
		if len(p.outRet[o]) > 0 {
			p.flushReturn(o)
		}
	}
}

// takeBack puts the frames other workers gave back on the free lists,
// using buf as scratch, and reports whether there were any.
func (p *framePool) takeBack(buf []uint64) bool {
	got := false
	for _, r := range p.ret {
		if r == nil {
			continue
		}
		for n := r.Pop(buf); n > 0; n = r.Pop(buf) {
			if p.u.sg { // slots go back on their own list
				for _, a := range buf[:n] {
					p.release(a)
				}
			} else {
				p.free = append(p.free, buf[:n]...)
			}
			got = true
		}
	}
	return got
}

// returnsPending reports whether another worker gave frames back.
func (p *framePool) returnsPending() bool {
	for _, r := range p.ret {
		if r != nil && r.Len() > 0 {
			return true
		}
	}
	return false
}

// publishGauges stores the pool's frame counts for Switch.Frames.
func (p *framePool) publishGauges() {
	p.freeLen.Store(int64(len(p.free) + len(p.jfree)))
	st := 0
	for _, o := range p.outRet {
		st += len(o)
	}
	p.staged.Store(int64(st))
}
