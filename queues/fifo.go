package queues

import (
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/pkt"
)

// FIFO is a first-in first-out queue of packets with a byte limit.
type FIFO struct {
	buf        []pkt.Packet
	mask       uint32
	head, tail uint32 // owner-private
	limit      uint64 // bytes
	bytes      uint64 // owner-private
	pubBytes   atomic.Uint64
	pubPackets atomic.Uint32
}

// NewFIFO returns a queue that holds at most limitBytes of frames and at most
// maxPackets packets (rounded up to a power of two).
func NewFIFO(limitBytes uint64, maxPackets int) (*FIFO, error) {
	if limitBytes == 0 {
		return nil, fmt.Errorf("queue limit must be positive")
	}
	if maxPackets <= 0 || maxPackets > 1<<24 {
		return nil, fmt.Errorf("queue packet capacity %d out of range", maxPackets)
	}
	n := 1
	for n < maxPackets {
		n <<= 1
	}
	return &FIFO{buf: make([]pkt.Packet, n), mask: uint32(n - 1), limit: limitBytes}, nil
}

// Push appends p unless that would exceed the byte limit or the packet capacity.
func (q *FIFO) Push(p *pkt.Packet) bool {
	if q.bytes+uint64(p.Len) > q.limit || q.tail-q.head == uint32(len(q.buf)) {
		return false
	}
	q.buf[q.tail&q.mask] = *p
	q.tail++
	q.bytes += uint64(p.Len)
	return true
}

// Pop removes the head packet into p.
func (q *FIFO) Pop(p *pkt.Packet) bool {
	if q.head == q.tail {
		return false
	}
	*p = q.buf[q.head&q.mask]
	q.head++
	q.bytes -= uint64(p.Len)
	return true
}

// ReplaceFromTail takes the packet n places before the tail (0: the last
// pushed) out of the queue into out, moves the n packets behind it up by
// one, and appends p at the tail, so the order of the others stays (owner
// only). It reports false, changing nothing, if the queue holds no more
// than n packets or the byte limit would be exceeded. The cost is n moves.
func (q *FIFO) ReplaceFromTail(n uint32, p, out *pkt.Packet) bool {
	if q.tail-q.head <= n {
		return false
	}
	i := q.tail - 1 - n
	victim := q.buf[i&q.mask]
	if q.bytes-uint64(victim.Len)+uint64(p.Len) > q.limit {
		return false
	}
	for ; i != q.tail-1; i++ {
		q.buf[i&q.mask] = q.buf[(i+1)&q.mask]
	}
	q.buf[(q.tail-1)&q.mask] = *p
	q.bytes += uint64(p.Len) - uint64(victim.Len)
	*out = victim
	return true
}

// Head returns the head packet without removing it (owner only).
func (q *FIFO) Head() (*pkt.Packet, bool) {
	if q.head == q.tail {
		return nil, false
	}
	return &q.buf[q.head&q.mask], true
}

// Empty reports whether the queue holds nothing (owner only).
func (q *FIFO) Empty() bool { return q.head == q.tail }

// Bytes is the queued bytes (owner only).
func (q *FIFO) Bytes() uint64 { return q.bytes }

// Packets is the queued packets (owner only).
func (q *FIFO) Packets() uint32 { return q.tail - q.head }

// Publish makes the current depth visible to Depth. The owner calls it once
// per batch, so the per-packet path does no atomic stores.
func (q *FIFO) Publish() {
	q.pubBytes.Store(q.bytes)
	q.pubPackets.Store(q.tail - q.head)
}

// Depth is the depth as of the last Publish (any goroutine).
func (q *FIFO) Depth() (uint64, uint32) { return q.pubBytes.Load(), q.pubPackets.Load() }

// Limit is the byte limit.
func (q *FIFO) Limit() uint64 { return q.limit }
