package bfc

import (
	"math"
	"math/bits"

	"github.com/gswitch/gswitch/internal/keyhash"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
)

// index is the flow-table entry of a flow hash: keyed (package keyhash),
// so a host cannot compute which of its flows share an entry, hence a
// queue, with another host's flow.
func (s *port) index(h uint32) int {
	return keyhash.Index(s.key.Sum(uint64(h)), len(s.table))
}

// random is the port's xorshift generator.
func (s *port) random() uint64 {
	x := s.rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	s.rng = x
	return x
}

// pickQueue chooses the queue of a new flow: the first empty queue at or
// after a rotating cursor (empty and not paused first), else a random one.
func (s *port) pickQueue() int {
	empty := ^s.set.NonEmpty() & s.qmask
	if e := empty &^ s.up.paused.Load(); e != 0 {
		empty = e
	}
	if empty == 0 {
		s.m.assignRandom.Add(1)
		return int(s.random() % uint64(s.nq))
	}
	s.m.assignEmpty.Add(1)
	q := firstFrom(empty, s.cursor)
	s.cursor = (q + 1) % s.nq
	return q
}

// firstFrom is the first set bit of mask (non-zero) at or after c, wrapping.
func firstFrom(mask uint64, c int) int {
	if hi := mask >> uint(c) << uint(c); hi != 0 {
		return bits.TrailingZeros64(hi)
	}
	return bits.TrailingZeros64(mask)
}

// assignDynamic is BFC's queue assignment (section 3.3.1, with the sticky
// rule of 3.3.2).
func (s *port) assignDynamic(p *pkt.Packet, now int64) int {
	if p.Hash == 0 {
		return 0 // not IP: the default queue
	}
	e := &s.table[s.index(p.Hash)]
	if e.size == 0 {
		if e.ts == 0 || now-e.ts > s.sticky {
			q := s.pickQueue()
			e.q, e.fp = uint16(q), p.Hash
			s.assignedAt[q] = now
			return q
		}
		s.m.stickyHits.Add(1)
		if s.assignedAt[e.q] > e.ts {
			s.m.stickyReuse.Add(1) // the queue went to a new flow meanwhile: they share it now
		}
	}
	if e.fp != p.Hash {
		s.m.collisions.Add(1)
		e.fp = p.Hash
	}
	return int(e.q)
}

// threshold is Th for a packet bound for queue q (egress worker).
func (s *port) threshold(q int) uint64 {
	if s.thFixed != 0 {
		return s.thFixed
	}
	if s.bytesPerNs == 0 {
		return math.MaxUint64 // unlimited port: not a bottleneck Th can be sized for
	}
	n := bits.OnesCount64(s.set.Ready() | 1<<uint(q))
	th := uint64(float64(s.hrttMax) * s.bytesPerNs / float64(n))
	return max(th, s.thFloor)
}

// upKey is the pause counter of packet p that came in on port in: its
// upstream queue, or 0 if the upstream has one queue (single).
func upKey(in *port, p *pkt.Packet) int {
	if in.assign == modeSingle {
		return 0
	}
	return int(p.UpQ & (wire.MaxQueues - 1))
}

// Admit assigns the packet's queue and decides whether it raises its
// upstream queue's pause counter (metaCounted), which its Enqueued does
// (egress worker).
func (b *BFC) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	e := v.Index()
	s := b.ports[e]
	if p.Lane != pkt.LaneData {
		return
	}
	var q int
	switch s.assign {
	case modeSingle:
	case modeStochastic:
		if p.Hash != 0 {
			q = keyhash.Index(s.key.Sum(uint64(p.Hash)), s.nq)
		}
	default:
		q = s.assignDynamic(p, now)
	}
	p.Queue = uint16(q)
	p.Meta &^= metaCounted
	if int(p.InPort) < len(b.ports) {
		if in := b.ports[p.InPort]; in != nil && in.ctr != nil && p.Flags&pkt.FlagUpQ != 0 && p.Hash != 0 && b.allowed[p.InPort][e] {
			th := s.threshold(q)
			s.m.th.Store(th)
			if s.qs[q].len > th {
				p.Meta |= metaCounted
			}
		}
	}
}
