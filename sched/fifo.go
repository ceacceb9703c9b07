package sched

import (
	"github.com/gswitch/gswitch/dataplane/pkt"
	"github.com/gswitch/gswitch/queues"
)

func init() { Register("fifo", newFIFO) }

// fifo is a single tail-drop queue.
type fifo struct{ q *queues.FIFO }

var _ Scheduler = (*fifo)(nil)

func newFIFO(p Params) (Scheduler, error) {
	q, err := queues.NewFIFO(p.BufferBytes, p.MaxPackets)
	if err != nil {
		return nil, err
	}
	return &fifo{q: q}, nil
}

func (f *fifo) Enqueue(p *pkt.Packet) Drop {
	if !f.q.Push(p) {
		return QueueFull
	}
	return Accepted
}

func (f *fifo) Dequeue(p *pkt.Packet) bool { return f.q.Pop(p) }

func (f *fifo) Depth(int) (uint64, uint32) { return f.q.Bytes(), f.q.Packets() }

func (f *fifo) NumQueues() int { return 1 }
