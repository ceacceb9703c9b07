package sched

import (
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

func init() {
	Register(Spec{Name: "drr", New: newDRR, Quantum: DefaultQuantum, Summary: "deficit round robin over the queues; queue from DSCP, PCP or an earlier stage"})
	Register(Spec{Name: "sfq", New: newSFQ, Quantum: DefaultQuantum, Summary: "deficit round robin with packets hashed onto the queues by their 5-tuple"})
}

// DefaultQuantum is drr's and sfq's quantum when the config gives none:
// one full-size Ethernet frame (without FCS) per turn.
const DefaultQuantum = 1514

// drr is Deficit Round Robin (Shreedhar and Varghese) over the port's
// queues, visited in index order. A queue gets Quantum bytes of credit at
// the start of each of its turns and sends while its head fits the credit;
// an empty queue loses its credit. A paused queue is skipped: it keeps its
// place in the order and its credit, and gains no credit while paused.
//
// sfq is the same scheduler with packets spread over the queues by their
// flow hash (stochastic fair queueing), the baseline of the AFQ paper.
type drr struct {
	setSched
	cls     classifier
	sfq     bool
	quantum int
	deficit []int
	pos     int  // the queue whose turn it is (or was)
	inTurn  bool // pos has had its quantum for the current turn
	maxIter int
}

var _ Scheduler = (*drr)(nil)

func newDRR(p Params) (Scheduler, error) {
	b, err := newSet(p, p.Queues)
	if err != nil {
		return nil, err
	}
	cls, err := p.Classify.compile(p.Queues)
	if err != nil {
		return nil, err
	}
	return &drr{setSched: b, cls: cls, quantum: p.Quantum, deficit: make([]int, p.Queues),
		pos: p.Queues - 1, maxIter: p.Queues * (9216/p.Quantum + 2)}, nil
}

func newSFQ(p Params) (Scheduler, error) {
	s, err := newDRR(p)
	if err != nil {
		return nil, err
	}
	s.(*drr).sfq = true
	return s, nil
}

// QueueOf implements Queuer.
func (d *drr) QueueOf(p *pkt.Packet) int {
	if d.sfq {
		return int(p.Hash % uint32(d.s.Len()))
	}
	return d.cls.queue(p)
}

func (d *drr) Enqueue(p *pkt.Packet) queues.Drop {
	q := d.QueueOf(p)
	p.Queue = uint16(q)
	return d.s.Push(q, p)
}

func (d *drr) Dequeue(p *pkt.Packet) bool {
	for i := 0; i < d.maxIter; i++ {
		ready := d.s.Ready()
		if ready == 0 {
			return false
		}
		if !d.inTurn || ready&(1<<d.pos) == 0 {
			d.pos = nextAfter(ready, d.pos)
			d.deficit[d.pos] += d.quantum
			d.inTurn = true
		}
		h, _ := d.s.Head(d.pos)
		if int(h.Len) <= d.deficit[d.pos] {
			d.deficit[d.pos] -= int(h.Len)
			d.s.Pop(d.pos, p)
			if d.s.Empty(d.pos) {
				d.deficit[d.pos] = 0
				d.inTurn = false
			}
			return true
		}
		d.inTurn = false // the head does not fit: the turn passes, the credit stays
	}
	return false
}

// nextAfter is the first set bit of mask after position pos, wrapping around.
func nextAfter(mask uint64, pos int) int {
	above := mask &^ (uint64(2)<<uint(pos) - 1)
	if pos >= 63 {
		above = 0
	}
	if above != 0 {
		return queues.First(above)
	}
	return queues.First(mask)
}
