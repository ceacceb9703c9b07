package sched

import (
	"sync/atomic"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

func init() {
	Register(Spec{Name: "rsp", New: newRSP, Rank: true, Summary: "rotating strict priority: the queues are a calendar of rounds; a packet's round is its rank (AFQ sets it)"})
}

// RSP is the Rotating Strict Priority scheduler of AFQ (Sharma et al.,
// section 3): the N queues form a calendar, queue r mod N holding the
// packets whose departure round is r. The queue of the current round is the
// head and is served, strictly first, until it is empty; then it drops to
// the lowest priority (it will hold round current+N) and the current round
// advances by one. A paused queue is passed over (without rotating) in
// favour of the next rounds.
//
// Enqueue reads the packet's departure round from p.Rank (set by AFQ's
// admission stage; 0 means "now"): a round already past is sent in the
// current round, a round N or more ahead is dropped (queues.RoundOverflow).
//
// The round counter is 64 bits and never wraps in practice (2^64 rounds of
// one frame each last centuries at any line rate). p.Rank carries the low
// 32 bits of a round; Enqueue compares it with the current round by
// serial-number arithmetic, so a stage may compute rounds in 64 bits and
// hand over their low half, across the 32-bit boundary too.
type RSP struct {
	setSched
	n     uint32
	round atomic.Uint64 // current round; written by the owner, read by anyone
}

var (
	_ Scheduler    = (*RSP)(nil)
	_ Rounder      = (*RSP)(nil)
	_ Viewer       = (*RSP)(nil)
	_ SetScheduler = (*RSP)(nil)
)

func newRSP(p Params) (Scheduler, error) {
	b, err := newSet(p, p.Queues)
	if err != nil {
		return nil, err
	}
	return &RSP{setSched: b, n: uint32(p.Queues)}, nil
}

// Round is the current round (any goroutine); it implements Rounder.
func (r *RSP) Round() uint64 { return r.round.Load() }

// View implements Viewer: the current round.
func (r *RSP) View() View {
	rd := r.round.Load()
	return View{Round: &rd}
}

// SetRound moves the calendar to round rd (tests; owner only, while empty).
func (r *RSP) SetRound(rd uint64) { r.round.Store(rd) }

// QueueOf implements Queuer: the queue of the packet's round, or -1 for a
// round N or more ahead.
func (r *RSP) QueueOf(p *pkt.Packet) int {
	cur := r.round.Load()
	ahead := int64(int32(p.Rank - uint32(cur))) // rounds ahead of the current one, from the low 32 bits
	if ahead < 0 {
		ahead = 0
	}
	if ahead >= int64(r.n) {
		return -1
	}
	return int((cur + uint64(ahead)) % uint64(r.n))
}

func (r *RSP) Enqueue(p *pkt.Packet) queues.Drop {
	q := r.QueueOf(p)
	if q < 0 {
		return queues.RoundOverflow
	}
	p.Queue = uint16(q)
	return r.s.Push(q, p)
}

func (r *RSP) Dequeue(p *pkt.Packet) bool {
	if r.s.NonEmpty() == 0 {
		return false
	}
	cur := r.round.Load()
	n := uint64(r.n)
	if r.s.Empty(int(cur % n)) {
		for r.s.Empty(int(cur % n)) { // the head is drained: rotate
			cur++
		}
		r.round.Store(cur)
	}
	ready := r.s.Ready()
	for k := uint64(0); k < n; k++ {
		if q := int((cur + k) % n); ready&(1<<q) != 0 {
			return r.s.Pop(q, p)
		}
	}
	return false
}
