package queues

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/gswitch/gswitch/pkt"
)

// Drop says why a packet was not queued. The zero value means it was.
type Drop uint8

// Drop reasons.
const (
	Accepted      Drop = iota
	BufferFull         // the switch's shared buffer is full
	PortLimit          // the port's byte or packet limit
	QueueLimit         // the queue's static limit or its dynamic threshold
	Evicted            // pushed out of the buffer by a better packet (pFabric)
	RoundOverflow      // the packet's round is N or more rounds ahead (AFQ/RSP)
	NumDrops
)

var dropNames = [...]string{"accepted", "buffer_full", "port_limit", "queue_limit", "evicted", "round_overflow"}

func (d Drop) String() string { return dropNames[d] }

// MaxQueues is the most queues a port can have (the pause and occupancy bitmaps are 64 bits).
const MaxQueues = 64

// Buffer is the packet buffer shared by all ports of a switch.
type Buffer struct {
	size int64
	used atomic.Int64
}

// NewBuffer returns a shared buffer of size bytes.
func NewBuffer(size uint64) *Buffer { return &Buffer{size: int64(size)} }

// Used is the bytes held by all queues.
func (b *Buffer) Used() int64 { return b.used.Load() }

// Size is the buffer's capacity.
func (b *Buffer) Size() int64 { return b.size }

// SetConfig configures a port's queues.
type SetConfig struct {
	Queues      int     // N, 1..64
	PortBytes   uint64  // the port's byte limit
	PortPackets int     // the port's packet limit
	QueueBytes  uint64  // each queue's static byte limit (0 = PortBytes)
	Alpha       float64 // dynamic threshold: a queue may hold alpha x the free shared buffer (0 = off)
}

// Set is one port's queues.
type Set struct {
	q        []*FIFO
	buf      *Buffer
	alpha256 int64 // alpha x 256
	portLim  uint64
	portPkts int
	bytes    uint64 // owner-private
	pkts     int    // owner-private
	nonEmpty uint64 // owner-private bitmap
	dirty    uint64 // owner-private: queues changed since Publish
	paused   atomic.Uint64
}

// NewSet builds a port's queues over the shared buffer buf (nil: a private buffer of PortBytes).
func NewSet(c SetConfig, buf *Buffer) (*Set, error) {
	if c.Queues < 1 || c.Queues > MaxQueues {
		return nil, fmt.Errorf("queues: %d out of range [1, %d]", c.Queues, MaxQueues)
	}
	if c.PortBytes == 0 {
		return nil, fmt.Errorf("port buffer limit must be positive")
	}
	if c.PortPackets <= 0 {
		c.PortPackets = int(min(c.PortBytes/64, 1<<16))
	}
	if c.QueueBytes == 0 || c.QueueBytes > c.PortBytes {
		c.QueueBytes = c.PortBytes
	}
	if c.Alpha < 0 {
		return nil, fmt.Errorf("alpha %v must not be negative", c.Alpha)
	}
	if buf == nil {
		buf = NewBuffer(c.PortBytes)
	}
	s := &Set{buf: buf, alpha256: int64(c.Alpha * 256), portLim: c.PortBytes, portPkts: c.PortPackets}
	for i := 0; i < c.Queues; i++ {
		f, err := NewFIFO(c.QueueBytes, c.PortPackets)
		if err != nil {
			return nil, err
		}
		s.q = append(s.q, f)
	}
	return s, nil
}

// Len is the number of queues.
func (s *Set) Len() int { return len(s.q) }

// Push admits p to queue i or says why not.
func (s *Set) Push(i int, p *pkt.Packet) Drop {
	n := int64(p.Len)
	used := s.buf.used.Load()
	if used+n > s.buf.size {
		return BufferFull
	}
	if s.bytes+uint64(n) > s.portLim || s.pkts >= s.portPkts {
		return PortLimit
	}
	q := s.q[i]
	if s.alpha256 > 0 {
		free := s.buf.size - used
		if len(s.q) > 1 {
			free = min(free, int64(s.portLim-s.bytes))
		}
		if (int64(q.Bytes())+n)*256 > s.alpha256*free {
			return QueueLimit
		}
	}
	if !q.Push(p) {
		return QueueLimit
	}
	s.buf.used.Add(n)
	s.bytes += uint64(n)
	s.pkts++
	s.nonEmpty |= 1 << i
	s.dirty |= 1 << i
	return Accepted
}

// Pop removes the head of queue i into p (paused or not: the caller decides).
func (s *Set) Pop(i int, p *pkt.Packet) bool {
	q := s.q[i]
	if !q.Pop(p) {
		return false
	}
	if q.Empty() {
		s.nonEmpty &^= 1 << i
	}
	s.dirty |= 1 << i
	s.buf.used.Add(-int64(p.Len))
	s.bytes -= uint64(p.Len)
	s.pkts--
	return true
}

// Queue returns queue i (owner only, for its exact Bytes and Packets).
func (s *Set) Queue(i int) *FIFO { return s.q[i] }

// Head returns queue i's head packet without removing it.
func (s *Set) Head(i int) (*pkt.Packet, bool) { return s.q[i].Head() }

// Empty reports whether queue i is empty (owner only).
func (s *Set) Empty(i int) bool { return s.nonEmpty&(1<<i) == 0 }

// Ready is the bitmap of queues that are non-empty and not paused (owner only).
func (s *Set) Ready() uint64 { return s.nonEmpty &^ s.paused.Load() }

// NonEmpty is the bitmap of non-empty queues (owner only).
func (s *Set) NonEmpty() uint64 { return s.nonEmpty }

// Bytes is what the port holds (owner only).
func (s *Set) Bytes() uint64 { return s.bytes }

// Pause stops queue i from being served (any goroutine).
func (s *Set) Pause(i int) { s.paused.Or(1 << i) }

// Resume lets queue i be served again (any goroutine).
func (s *Set) Resume(i int) { s.paused.And(^uint64(1 << i)) }

// Paused reports whether queue i is paused (any goroutine).
func (s *Set) Paused(i int) bool { return s.paused.Load()&(1<<i) != 0 }

// Depth is queue i's bytes and packets as of the last Publish (any goroutine).
func (s *Set) Depth(i int) (uint64, uint32) { return s.q[i].Depth() }

// Publish makes the depth of the queues changed since the last call visible
// to Depth (owner only; once per batch).
func (s *Set) Publish() {
	for d := s.dirty; d != 0; d &= d - 1 {
		s.q[First(d)].Publish()
	}
	s.dirty = 0
}

// First returns the lowest set bit's index of m, or -1.
func First(m uint64) int {
	if m == 0 {
		return -1
	}
	return bits.TrailingZeros64(m)
}
