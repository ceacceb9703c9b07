package sched

import (
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

func init() {
	Register(Spec{Name: "fifo", New: newFIFO, OneQueue: true, Summary: "one tail-drop queue"})
	Register(Spec{Name: "prio", New: newPrio, Summary: "strict priority over the queues, queue 0 first; queue from DSCP, PCP or an earlier stage"})
}

// fifo is one tail-drop queue.
type fifo struct{ setSched }

var _ Scheduler = (*fifo)(nil)

func newFIFO(p Params) (Scheduler, error) {
	b, err := newSet(p, 1)
	return &fifo{b}, err
}

func (f *fifo) Enqueue(p *pkt.Packet) queues.Drop {
	p.Queue = 0
	return f.s.Push(0, p)
}

// QueueOf implements Queuer: always queue 0.
func (f *fifo) QueueOf(*pkt.Packet) int { return 0 }

func (f *fifo) Dequeue(p *pkt.Packet) bool {
	if f.s.Ready() == 0 {
		return false
	}
	return f.s.Pop(0, p)
}

// prio is strict priority: the lowest-numbered ready queue is always served first.
type prio struct {
	setSched
	cls classifier
}

var _ Scheduler = (*prio)(nil)

func newPrio(p Params) (Scheduler, error) {
	b, err := newSet(p, p.Queues)
	if err != nil {
		return nil, err
	}
	cls, err := p.Classify.compile(p.Queues)
	if err != nil {
		return nil, err
	}
	return &prio{b, cls}, nil
}

func (s *prio) Enqueue(p *pkt.Packet) queues.Drop {
	q := s.cls.queue(p)
	p.Queue = uint16(q)
	return s.s.Push(q, p)
}

// QueueOf implements Queuer.
func (s *prio) QueueOf(p *pkt.Packet) int { return s.cls.queue(p) }

func (s *prio) Dequeue(p *pkt.Packet) bool {
	q := queues.First(s.s.Ready())
	return q >= 0 && s.s.Pop(q, p)
}
