package sched

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/internal/keyhash"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

func init() {
	Register(Spec{Name: "pfabric", New: newPFabric, Rank: true, OneQueue: true, DefaultBuffer: pfabricBuffer,
		Summary: "pFabric's priority queue: best rank first, earliest packet of that flow; when full, evicts the worst ranked (ranks come from the pfabric mechanism)"})
}

// pfabricBuffer is pFabric's small buffer: two bandwidth-delay products,
// at least 16 full frames.
func pfabricBuffer(rateBits uint64, rtt time.Duration) uint64 {
	return max(uint64(2*float64(rateBits)/8*rtt.Seconds()), 16*1514)
}

// PFabric is the switch side of pFabric (Alizadeh et al., section 4.1): one
// small buffer per port, ordered by the rank each packet carries in p.Rank
// (lower is better: the flow's remaining size). The rank is set before the
// traffic manager, by the pfabric mechanism (mech/pfabric: from the gsperf
// header, or least attained service); the scheduler never reads a frame.
//
//   - Priority scheduling with starvation prevention: Dequeue finds the
//     buffered packet with the best rank and sends the earliest-arrived
//     packet of that packet's flow (p.Hash). So packets of a flow always
//     leave in arrival order.
//   - Priority dropping: when an arriving packet does not fit, the buffered
//     packets ranked worse than it are evicted, worst first, until it fits
//     (queues.Evicted: the first evicted packet comes back in *p, the others
//     from MoreEvicted). If even all of them would not make room, or none is
//     worse, the arriving packet is dropped and nothing is evicted
//     (queues.PortLimit). The buffer is counted in bytes, so one full-size
//     packet may have to push out several small ones (a pFabric probe is
//     about 130 bytes): evicting only one would let a buffer that holds
//     probes refuse the most urgent flow's data.
//   - Ties: among equal ranks the earlier arrival counts as better, both for
//     choosing the flow to serve and for choosing the packet to evict (the
//     latest arrival of the worst rank goes first).
//
// Every operation is O(log n) in the buffered packets: two indexed binary
// heaps over the packets (best first, worst first), a list per flow in
// arrival order, and an open-addressing flow table. The table's home slot
// of a flow is a keyed hash of p.Hash (package keyhash, a secret key per
// port): with the unkeyed home a host could pick flows whose homes are one
// slot and make every lookup walk a chain as long as the buffer, on every
// packet of every flow.
type PFabric struct {
	slots   []pkt.Packet
	seq     []uint64
	minPos  []int32 // position of slot in best, -1 if free
	maxPos  []int32
	fnext   []int32 // next slot of the same flow (arrival order), -1 at the tail
	fprev   []int32
	best    []int32 // heap: best (rank, seq) on top
	worst   []int32 // heap: worst (rank, seq) on top
	free    []int32
	flows   []flowEntry
	fmask   uint32
	key     keyhash.Key // the flow table's hash key
	nextSeq uint64
	limit   uint64
	bytes   uint64
	depthB  atomic.Uint64
	depthP  atomic.Uint32
	paused  atomic.Bool

	stack   []int32      // scratch for the eviction check (capacity: every slot)
	evicted []pkt.Packet // evicted by the last Enqueue beyond the first, for MoreEvicted
	evNext  int          // next of them to hand over
}

// flowEntry is a slot of the open-addressing flow table: the flow's hash,
// its list of buffered packets and their count. A slot is empty when count
// is 0 (every 32-bit hash is a valid key: the key is never used as a marker).
type flowEntry struct {
	hash       uint32
	head, tail int32
	count      int32 // buffered packets of the flow; 0 = empty slot
}

var (
	_ Scheduler = (*PFabric)(nil)
	_ Evictor   = (*PFabric)(nil)
)

func newPFabric(p Params) (Scheduler, error) {
	if p.PortBytes == 0 {
		return nil, fmt.Errorf("pfabric needs a buffer size")
	}
	n := p.PortPackets
	if n <= 0 {
		n = int(min(p.PortBytes/64, 1<<16))
	}
	if n < 1 || n > 1<<20 {
		return nil, fmt.Errorf("pfabric packet capacity %d out of range", n)
	}
	f := &PFabric{slots: make([]pkt.Packet, n), seq: make([]uint64, n), minPos: make([]int32, n), maxPos: make([]int32, n),
		fnext: make([]int32, n), fprev: make([]int32, n), best: make([]int32, 0, n), worst: make([]int32, 0, n),
		free: make([]int32, n), limit: p.PortBytes, stack: make([]int32, 0, n), evicted: make([]pkt.Packet, 0, n)}
	for i := range f.free {
		f.free[i] = int32(n - 1 - i)
	}
	ft := 1
	for ft < 2*n {
		ft <<= 1
	}
	f.flows = make([]flowEntry, ft)
	f.fmask = uint32(ft - 1)
	f.key = keyhash.New()
	return f, nil
}

func (f *PFabric) NumQueues() int { return 1 }
func (f *PFabric) Depth(int) (uint64, uint32) {
	return f.depthB.Load(), f.depthP.Load()
}
func (f *PFabric) Pause(int)  { f.paused.Store(true) }
func (f *PFabric) Resume(int) { f.paused.Store(false) }

// Paused reports whether the port's queue is paused.
func (f *PFabric) Paused(int) bool { return f.paused.Load() }

// QueueOf implements Queuer: pFabric has one buffer.
func (f *PFabric) QueueOf(*pkt.Packet) int { return 0 }

// Backlog is the buffer's exact bytes and packets (owner only).
func (f *PFabric) Backlog(int) (uint64, uint32) { return f.bytes, uint32(len(f.best)) }

// Len is the number of buffered packets (owner only).
func (f *PFabric) Len() int { return len(f.best) }

// Publish makes Depth current (owner only, once per batch).
func (f *PFabric) Publish() {
	f.depthB.Store(f.bytes)
	f.depthP.Store(uint32(len(f.best)))
}

// better reports whether slot a ranks before slot b.
func (f *PFabric) better(a, b int32) bool {
	ra, rb := f.slots[a].Rank, f.slots[b].Rank
	return ra < rb || ra == rb && f.seq[a] < f.seq[b]
}

func (f *PFabric) Enqueue(p *pkt.Packet) queues.Drop {
	f.evicted, f.evNext = f.evicted[:0], 0
	if f.fits(p.Len) {
		f.insert(p)
		return queues.Accepted
	}
	if !f.canMakeRoom(p) {
		return queues.PortLimit
	}
	first := f.slots[f.worst[0]]
	f.remove(f.worst[0])
	for !f.fits(p.Len) {
		w := f.worst[0]
		f.evicted = append(f.evicted, f.slots[w])
		f.remove(w)
	}
	f.insert(p)
	*p = first
	return queues.Evicted
}

// MoreEvicted moves into p the next packet the last Enqueue evicted beyond
// the one it returned, worst first (owner only).
func (f *PFabric) MoreEvicted(p *pkt.Packet) bool {
	if f.evNext == len(f.evicted) {
		return false
	}
	*p = f.evicted[f.evNext]
	f.evNext++
	return true
}

func (f *PFabric) fits(n uint32) bool {
	return f.bytes+uint64(n) <= f.limit && len(f.free) > 0
}

// canMakeRoom reports whether evicting the buffered packets ranked worse
// than p would let p in. Those packets are the top of the worst-first heap
// (a node is never worse than its parent), so a walk down from the root
// that stops at packets no worse than p visits only them, and stops as
// soon as they add up to enough.
func (f *PFabric) canMakeRoom(p *pkt.Packet) bool {
	if uint64(p.Len) > f.limit || len(f.worst) == 0 || f.slots[f.worst[0]].Rank <= p.Rank {
		return false
	}
	needB := int64(f.bytes) + int64(p.Len) - int64(f.limit) // bytes to free
	needP := 0
	if len(f.free) == 0 {
		needP = 1
	}
	st := append(f.stack[:0], 0)
	for len(st) > 0 {
		i := st[len(st)-1]
		st = st[:len(st)-1]
		s := f.worst[i]
		if f.slots[s].Rank <= p.Rank {
			continue
		}
		needB -= int64(f.slots[s].Len)
		needP--
		if needB <= 0 && needP <= 0 {
			f.stack = st
			return true
		}
		for c := 2*i + 1; c <= 2*i+2 && int(c) < len(f.worst); c++ {
			st = append(st, c)
		}
	}
	f.stack = st
	return false
}

func (f *PFabric) Dequeue(p *pkt.Packet) bool {
	if len(f.best) == 0 || f.paused.Load() {
		return false
	}
	b := f.best[0]
	e := f.lookup(f.slots[b].Hash)
	s := f.flows[e].head
	*p = f.slots[s]
	f.remove(s)
	return true
}

func (f *PFabric) insert(p *pkt.Packet) {
	s := f.free[len(f.free)-1]
	f.free = f.free[:len(f.free)-1]
	f.slots[s] = *p
	f.seq[s] = f.nextSeq
	f.nextSeq++
	f.bytes += uint64(p.Len)
	// flow list
	e := f.lookup(p.Hash)
	if f.flows[e].count == 0 {
		f.flows[e] = flowEntry{hash: p.Hash, head: s, tail: s}
		f.fprev[s], f.fnext[s] = -1, -1
	} else {
		t := f.flows[e].tail
		f.fnext[t], f.fprev[s], f.fnext[s] = s, t, -1
		f.flows[e].tail = s
	}
	f.flows[e].count++
	// heaps
	f.minPos[s] = int32(len(f.best))
	f.best = append(f.best, s)
	f.up(f.best, f.minPos, int(f.minPos[s]), true)
	f.maxPos[s] = int32(len(f.worst))
	f.worst = append(f.worst, s)
	f.up(f.worst, f.maxPos, int(f.maxPos[s]), false)
}

func (f *PFabric) remove(s int32) {
	f.bytes -= uint64(f.slots[s].Len)
	e := f.lookup(f.slots[s].Hash)
	fe := &f.flows[e]
	if pr := f.fprev[s]; pr >= 0 {
		f.fnext[pr] = f.fnext[s]
	} else {
		fe.head = f.fnext[s]
	}
	if nx := f.fnext[s]; nx >= 0 {
		f.fprev[nx] = f.fprev[s]
	} else {
		fe.tail = f.fprev[s]
	}
	fe.count--
	if fe.count == 0 {
		f.deleteFlow(e)
	}
	f.heapRemove(&f.best, f.minPos, s, true)
	f.heapRemove(&f.worst, f.maxPos, s, false)
	f.free = append(f.free, s)
}

// lookup returns the flow table index holding hash, or the empty slot where
// it would go. The table has at least twice as many slots as the buffer has
// packets, so an empty slot always exists.
func (f *PFabric) lookup(hash uint32) uint32 {
	i := f.home(hash)
	for {
		e := &f.flows[i]
		if e.count == 0 || e.hash == hash {
			return i
		}
		i = (i + 1) & f.fmask
	}
}

// home is the slot where the flow of hash starts its probe.
func (f *PFabric) home(hash uint32) uint32 { return uint32(f.key.Sum(uint64(hash))) & f.fmask }

// deleteFlow empties table slot i with backward-shift deletion (linear probing).
func (f *PFabric) deleteFlow(i uint32) {
	for {
		f.flows[i] = flowEntry{}
		j := i
		for {
			j = (j + 1) & f.fmask
			if f.flows[j].count == 0 {
				return
			}
			home := f.home(f.flows[j].hash)
			// Move j back to i if its home is not cyclically within (i, j].
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				f.flows[i] = f.flows[j]
				i = j
				break
			}
		}
	}
}

// heap helpers: min=true orders best first, min=false worst first.
func (f *PFabric) less(a, b int32, min bool) bool {
	if min {
		return f.better(a, b)
	}
	return f.better(b, a)
}

func (f *PFabric) up(h []int32, pos []int32, i int, min bool) {
	for i > 0 {
		parent := (i - 1) / 2
		if !f.less(h[i], h[parent], min) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		pos[h[i]], pos[h[parent]] = int32(i), int32(parent)
		i = parent
	}
}

func (f *PFabric) down(h []int32, pos []int32, i int, min bool) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && f.less(h[r], h[l], min) {
			c = r
		}
		if !f.less(h[c], h[i], min) {
			return
		}
		h[i], h[c] = h[c], h[i]
		pos[h[i]], pos[h[c]] = int32(i), int32(c)
		i = c
	}
}

func (f *PFabric) heapRemove(hp *[]int32, pos []int32, s int32, min bool) {
	h := *hp
	i := int(pos[s])
	last := len(h) - 1
	if i != last {
		h[i] = h[last]
		pos[h[i]] = int32(i)
	}
	*hp = h[:last]
	pos[s] = -1
	if i < last {
		f.down(*hp, pos, i, min)
		f.up(*hp, pos, i, min)
	}
}
