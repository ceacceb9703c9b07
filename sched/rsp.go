package sched

import (
	"sync/atomic"

	"github.com/gswitch/gswitch/dataplane/pkt"
	"github.com/gswitch/gswitch/queues"
)

func init() { Register("rsp", newRSP) }

// RSP is the Rotating Strict Priority scheduler of AFQ (Sharma et al.,
// section 3): the N queues form a calendar, queue r mod N holding the
// packets whose departure round is r. The queue of the current round is the
// head and is served, strictly first, until it is empty; then it drops to
// the lowest priority (it will hold round current+N) and the current round
// advances by one. A paused queue is passed over (without rotating) in
// favour of the next rounds.
//
// Enqueue reads the packet's departure round from p.Rank (set by AFQ's
// ingress stage; 0 means "now"): a round already past is sent in the current
// round, a round N or more ahead is dropped (queues.RoundOverflow).
type RSP struct {
	setSched
	n     uint32
	round atomic.Uint32 // current round; written by the owner, read by anyone
}

var _ Scheduler = (*RSP)(nil)

func newRSP(p Params) (Scheduler, error) {
	b, err := newSet(p, p.Queues)
	if err != nil {
		return nil, err
	}
	return &RSP{setSched: b, n: uint32(p.Queues)}, nil
}

// Round is the current round (any goroutine).
func (r *RSP) Round() uint32 { return r.round.Load() }

func (r *RSP) Enqueue(p *pkt.Packet) queues.Drop {
	cur := r.round.Load()
	rd := p.Rank
	if int32(rd-cur) < 0 {
		rd = cur
	}
	if rd-cur >= r.n {
		return queues.RoundOverflow
	}
	q := int(rd % r.n)
	p.Queue = uint16(q)
	return r.s.Push(q, p)
}

func (r *RSP) Dequeue(p *pkt.Packet) bool {
	if r.s.NonEmpty() == 0 {
		return false
	}
	cur := r.round.Load()
	if r.s.Empty(int(cur % r.n)) {
		for r.s.Empty(int(cur % r.n)) { // the head is drained: rotate
			cur++
		}
		r.round.Store(cur)
	}
	ready := r.s.Ready()
	for k := uint32(0); k < r.n; k++ {
		if q := int((cur + k) % r.n); ready&(1<<q) != 0 {
			return r.s.Pop(q, p)
		}
	}
	return false
}
