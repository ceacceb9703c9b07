package sched

import (
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/dataplane/pkt"
	"github.com/gswitch/gswitch/queues"
)

func init() { Register("afq", newAFQ) }

// AFQ is Approximate Fair Queueing (Sharma et al., sections 3 and 5) on one
// port: the enqueue side keeps each flow's bid number (the byte position of
// its last enqueued byte in an idealized bit-by-bit round robin) in a
// count-min sketch, and the dequeue side is the port's RSP calendar.
//
// For each packet of flow f (the 5-tuple hash) and size s:
//
//	bid   = max(sketch(f), current round x BpR) + s
//	round = bid / BpR
//
// A packet N or more rounds ahead is dropped (queues.RoundOverflow);
// otherwise it joins the queue of its round and the sketch keeps the new bid
// (each row's cell is raised to it; a read is the minimum over the rows, so
// collisions can only over-estimate). With ECN marking on (ECNRounds > 0), a
// packet ECNRounds or more rounds ahead that is ECN-capable is marked CE
// (section 5), its IPv4 checksum updated.
type AFQ struct {
	*RSP
	bpr    uint64
	rows   int
	cols   uint64
	sketch []uint64
	ecn    uint64
	mem    []byte
	marked atomic.Uint64
}

func newAFQ(p Params) (Scheduler, error) {
	s, err := newRSP(p)
	if err != nil {
		return nil, err
	}
	a := &AFQ{RSP: s.(*RSP), bpr: uint64(p.BytesPerRound), rows: p.SketchRows, cols: uint64(p.SketchCols), ecn: uint64(p.ECNRounds), mem: p.Mem}
	if a.bpr == 0 {
		a.bpr = 1514
	}
	if a.rows == 0 {
		a.rows = 4
	}
	if a.cols == 0 {
		a.cols = 16384
	}
	if a.rows > 8 || a.cols&(a.cols-1) != 0 || a.cols > 1<<22 {
		return nil, fmt.Errorf("afq sketch %d x %d: at most 8 rows, and a power of two of columns up to 2^22", a.rows, a.cols)
	}
	if a.ecn > 0 && a.mem == nil {
		return nil, fmt.Errorf("afq ECN marking needs the frame memory")
	}
	a.sketch = make([]uint64, a.rows*int(a.cols))
	return a, nil
}

// Marked counts packets marked CE (any goroutine).
func (a *AFQ) Marked() uint64 { return a.marked.Load() }

func (a *AFQ) cell(r int, f uint32) *uint64 {
	h := (uint64(f) + uint64(r)*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
	h ^= h >> 31
	return &a.sketch[uint64(r)*a.cols+h&(a.cols-1)]
}

func (a *AFQ) Enqueue(p *pkt.Packet) queues.Drop {
	cur := uint64(a.Round())
	prev := ^uint64(0)
	for r := 0; r < a.rows; r++ {
		prev = min(prev, *a.cell(r, p.Hash))
	}
	bid := max(prev, cur*a.bpr) + uint64(p.Len)
	round := bid / a.bpr
	if round-cur >= uint64(a.n) {
		return queues.RoundOverflow
	}
	p.Rank = uint32(round)
	if a.ecn > 0 && round-cur >= a.ecn && p.L3Off != 0 {
		if pkt.MarkCE(a.mem[p.Addr:p.Addr+uint64(p.Len)], p) {
			a.marked.Add(1)
		}
	}
	d := a.RSP.Enqueue(p)
	if d == queues.Accepted {
		for r := 0; r < a.rows; r++ {
			if c := a.cell(r, p.Hash); *c < bid {
				*c = bid
			}
		}
	}
	return d
}
