package sched

import (
	"math/rand"
	"testing"

	"github.com/gswitch/gswitch/internal/fairness"
	"github.com/gswitch/gswitch/internal/keyhash"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

func mk(t testing.TB, name string, p Params) Scheduler {
	t.Helper()
	if p.PortBytes == 0 {
		p.PortBytes = 1 << 24
	}
	s, err := New(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDRRFairAcrossPacketSizes keeps four queues with packets of 64, 500,
// 1000 and 1500 bytes backlogged and checks the bytes each one sends.
func TestDRRFairAcrossPacketSizes(t *testing.T) {
	for _, name := range []string{"drr", "sfq"} {
		cls := Classifier{By: "queue"}
		s := mk(t, name, Params{Queues: 4, Classify: cls})
		sizes := []uint32{64, 500, 1000, 1500}
		hashes := []uint32{0, 1, 2, 3} // sfq: hash % 4 picks the queue
		fill := func() {
			for q := range sizes {
				for {
					s.Publish()
					_, n := s.Depth(q)
					if n >= 20 {
						break
					}
					p := pkt.Packet{Len: sizes[q], Queue: uint16(q), Hash: hashes[q]}
					if d := s.Enqueue(&p); d != queues.Accepted {
						t.Fatalf("enqueue: %v", d)
					}
				}
			}
		}
		sent := make([]float64, 4)
		var p pkt.Packet
		for i := 0; i < 100000; i++ {
			fill()
			if !s.Dequeue(&p) {
				t.Fatal("backlogged scheduler returned nothing")
			}
			sent[p.Queue] += float64(p.Len)
		}
		if j := fairness.Jain(sent); j < 0.99 {
			t.Errorf("%s: Jain index %.4f over bytes %v", name, j, sent)
		}
	}
}

func TestStrictPriorityNeverServesLower(t *testing.T) {
	s := mk(t, "prio", Params{Queues: 8})
	rng := rand.New(rand.NewSource(1))
	var p pkt.Packet
	for i := 0; i < 50000; i++ {
		if rng.Intn(3) > 0 {
			p = pkt.Packet{Len: 100, TOS: uint8(rng.Intn(64)) << 2}
			s.Enqueue(&p)
			continue
		}
		if rng.Intn(50) == 0 {
			q := rng.Intn(8)
			if rng.Intn(2) == 0 {
				s.Pause(q)
			} else {
				s.Resume(q)
			}
		}
		best := -1
		s.Publish()
		for q := 0; q < 8; q++ {
			if _, n := s.Depth(q); n > 0 && !s.(*prio).s.Paused(q) {
				best = q
				break
			}
		}
		ok := s.Dequeue(&p)
		if ok != (best >= 0) || ok && int(p.Queue) != best {
			t.Fatalf("served queue %d (ok %v), highest ready is %d", p.Queue, ok, best)
		}
	}
	// The default map: EF (46) above best effort (0).
	c, err := DefaultClassifier(8).compile(8)
	if err != nil {
		t.Fatal(err)
	}
	if ef, be := c.queue(&pkt.Packet{TOS: 46 << 2}), c.queue(&pkt.Packet{}); ef >= be {
		t.Fatalf("EF in queue %d, best effort in %d", ef, be)
	}
}

func TestPausedQueuesAreNeverServed(t *testing.T) {
	for _, name := range []string{"fifo", "prio", "drr", "sfq", "rsp", "pfabric"} {
		s := mk(t, name, Params{Queues: 4, Classify: Classifier{By: "queue"}})
		for i := 0; i < 40; i++ {
			p := pkt.Packet{Len: 100, Queue: uint16(i % 4), Hash: uint32(i % 4), Rank: uint32(i % 4)}
			s.Enqueue(&p)
		}
		for q := 0; q < s.NumQueues(); q++ {
			s.Pause(q)
		}
		var p pkt.Packet
		if s.Dequeue(&p) {
			t.Errorf("%s: served a packet with every queue paused", name)
		}
		if s.NumQueues() > 1 {
			s.Resume(2)
			for s.Dequeue(&p) {
				if p.Queue != 2 {
					t.Errorf("%s: served queue %d, only 2 is resumed", name, p.Queue)
					break
				}
			}
		}
	}
}

func TestRSPServesRoundsInOrderAndRotates(t *testing.T) {
	s := mk(t, "rsp", Params{Queues: 4}).(*RSP)
	// Rounds 0..3 fit; round 4 is too far ahead.
	for i, r := range []uint32{2, 0, 3, 1, 0, 2} {
		p := pkt.Packet{Len: 100, Rank: r, Addr: uint64(i)}
		if d := s.Enqueue(&p); d != queues.Accepted {
			t.Fatalf("round %d: %v", r, d)
		}
	}
	if p := (pkt.Packet{Len: 100, Rank: 4}); s.Enqueue(&p) != queues.RoundOverflow {
		t.Fatal("a packet 4 rounds ahead was accepted with 4 queues")
	}
	want := []uint64{1, 4, 3, 0, 5, 2} // by round, arrival order within a round
	var p pkt.Packet
	for _, w := range want {
		if !s.Dequeue(&p) || p.Addr != w {
			t.Fatalf("got packet %d, want %d", p.Addr, w)
		}
	}
	if s.Round() != 3 {
		t.Fatalf("round %d after serving rounds 0..3", s.Round())
	}
	// Round 3 drained: the next packet in round 6 is now within reach, round 2 is in the past (sent now).
	p = pkt.Packet{Len: 100, Rank: 6, Addr: 7}
	if s.Enqueue(&p) != queues.Accepted {
		t.Fatal("round 6 refused at round 3")
	}
	p = pkt.Packet{Len: 100, Rank: 1, Addr: 8}
	s.Enqueue(&p)
	s.Dequeue(&p)
	if p.Addr != 8 {
		t.Fatalf("a late packet was not sent in the current round: got %d", p.Addr)
	}
	s.Dequeue(&p)
	if p.Addr != 7 || s.Round() != 6 {
		t.Fatalf("got %d at round %d", p.Addr, s.Round())
	}
}

// TestPFabricFigure2 is the situation of Figure 2 of the pFabric paper:
// the best-ranked packet (a,1) arrived last, so the earliest packet of its
// flow a, the second in the queue, leaves first.
func TestPFabricFigure2(t *testing.T) {
	s := mk(t, "pfabric", Params{})
	const a, b, c = 10, 20, 30
	in := []struct{ flow, rank uint32 }{{b, 4}, {a, 7}, {c, 3}, {b, 2}, {a, 1}}
	for i, x := range in {
		p := pkt.Packet{Len: 1000, Hash: x.flow, Rank: x.rank, Addr: uint64(i)}
		s.Enqueue(&p)
	}
	want := []uint64{1, 4, 0, 3, 2} // (a,7) (a,1) (b,4) (b,2) (c,3)
	var p pkt.Packet
	for _, w := range want {
		if !s.Dequeue(&p) || p.Addr != w {
			t.Fatalf("got packet %d (flow %d rank %d), want %d", p.Addr, p.Hash, p.Rank, w)
		}
	}
}

func TestPFabricEvictsWorst(t *testing.T) {
	s := mk(t, "pfabric", Params{PortBytes: 10 * 1000})
	for i := 0; i < 10; i++ {
		p := pkt.Packet{Len: 1000, Hash: uint32(i), Rank: uint32(100 + i*10), Addr: uint64(i)}
		if s.Enqueue(&p) != queues.Accepted {
			t.Fatal("refused while not full")
		}
	}
	// No better than the worst (190): dropped.
	p := pkt.Packet{Len: 1000, Rank: 190, Addr: 99}
	if d := s.Enqueue(&p); d != queues.PortLimit || p.Addr != 99 {
		t.Fatalf("equal-rank arrival: %v, packet %d", d, p.Addr)
	}
	// Better: evicts the worst (rank 190, packet 9).
	p = pkt.Packet{Len: 1000, Rank: 5, Addr: 50}
	if d := s.Enqueue(&p); d != queues.Evicted || p.Addr != 9 {
		t.Fatalf("better arrival: %v, evicted %d", d, p.Addr)
	}
	p = pkt.Packet{Len: 1000, Rank: 6, Addr: 51}
	if d := s.Enqueue(&p); d != queues.Evicted || p.Addr != 8 {
		t.Fatalf("second eviction: %v, evicted %d", d, p.Addr)
	}
}

// TestPFabricEvictsSmallPacketsForABigOne: a buffer full of small
// low-priority packets (pFabric probes) must still take a full-size packet
// of the most urgent flow, pushing out as many of them as it takes; and it
// evicts nothing for an arrival it cannot take in the end.
func TestPFabricEvictsSmallPacketsForABigOne(t *testing.T) {
	s := mk(t, "pfabric", Params{PortBytes: 3000}).(*PFabric)
	big := pkt.Packet{Len: 1500, Hash: 1, Rank: 10, Addr: 1}
	if s.Enqueue(&big) != queues.Accepted {
		t.Fatal("refused while empty")
	}
	for i := 0; i < 11; i++ { // 11 probes of 130 bytes from flows ranked 1000+
		p := pkt.Packet{Len: 130, Hash: uint32(10 + i), Rank: uint32(1000 + i), Addr: uint64(100 + i)}
		if s.Enqueue(&p) != queues.Accepted {
			t.Fatalf("probe %d refused", i)
		}
	}
	// 1500 + 11 x 130 = 2930 bytes: a 1500-byte packet ranked 5 needs 1430
	// more bytes, that is all 11 probes out, worst first.
	p := pkt.Packet{Len: 1500, Hash: 2, Rank: 5, Addr: 2}
	if d := s.Enqueue(&p); d != queues.Evicted || p.Addr != 110 {
		t.Fatalf("urgent full-size arrival: %v, first evicted %d (want the worst probe, 110)", d, p.Addr)
	}
	n := 1
	for s.MoreEvicted(&p) {
		n++
	}
	if n != 11 || s.Len() != 2 {
		t.Fatalf("evicted %d probes, %d packets left; want 11 and 2", n, s.Len())
	}
	// Now only the two full-size packets (ranks 5 and 10): one ranked 7 could
	// push out the rank-10 packet; one ranked 7 of 3000 bytes could not fit
	// even then and must leave the buffer as it is.
	p = pkt.Packet{Len: 3000, Hash: 3, Rank: 7, Addr: 3}
	if d := s.Enqueue(&p); d != queues.PortLimit || s.Len() != 2 || s.MoreEvicted(&p) {
		t.Fatalf("arrival that cannot fit: %v, %d packets left", d, s.Len())
	}
}

// TestPFabricKeepsFlowOrder: whatever the ranks, packets of one flow leave
// in the order they arrived (starvation prevention sends a flow's earliest).
func TestPFabricKeepsFlowOrder(t *testing.T) {
	s := mk(t, "pfabric", Params{PortBytes: 200 * 1000})
	rng := rand.New(rand.NewSource(3))
	last := map[uint32]uint64{}
	id := uint64(0)
	var p pkt.Packet
	for i := 0; i < 20000; i++ {
		if rng.Intn(2) == 0 {
			id++
			p = pkt.Packet{Len: 1000, Hash: uint32(rng.Intn(10)), Rank: uint32(rng.Intn(1000)), Addr: id}
			s.Enqueue(&p) // drops and evictions are fine; order is what is checked
			continue
		}
		if s.Dequeue(&p) {
			if p.Addr <= last[p.Hash] {
				t.Fatalf("flow %d: packet %d after %d", p.Hash, p.Addr, last[p.Hash])
			}
			last[p.Hash] = p.Addr
		}
	}
}

// refPFabric is the obvious O(n) pFabric: a slice in arrival order.
type refPFabric struct {
	q     []pkt.Packet
	bytes uint64
	limit uint64
	cap   int
}

func (r *refPFabric) enqueue(p pkt.Packet) (queues.Drop, []pkt.Packet) {
	fits := func() bool { return r.bytes+uint64(p.Len) <= r.limit && len(r.q) < r.cap }
	if fits() {
		r.q = append(r.q, p)
		r.bytes += uint64(p.Len)
		return queues.Accepted, nil
	}
	// Enough room in the packets ranked worse than p?
	bytes, n := r.bytes, len(r.q)
	for _, x := range r.q {
		if x.Rank > p.Rank {
			bytes -= uint64(x.Len)
			n--
		}
	}
	if bytes+uint64(p.Len) > r.limit || n >= r.cap {
		return queues.PortLimit, nil
	}
	var ev []pkt.Packet
	for !fits() {
		w := 0
		for i, x := range r.q { // worst rank, latest arrival
			if x.Rank >= r.q[w].Rank {
				w = i
			}
		}
		ev = append(ev, r.q[w])
		r.bytes -= uint64(r.q[w].Len)
		r.q = append(r.q[:w], r.q[w+1:]...)
	}
	r.q = append(r.q, p)
	r.bytes += uint64(p.Len)
	return queues.Evicted, ev
}

func (r *refPFabric) dequeue() (pkt.Packet, bool) {
	if len(r.q) == 0 {
		return pkt.Packet{}, false
	}
	b := 0
	for i, x := range r.q {
		if x.Rank < r.q[b].Rank {
			b = i
		}
	}
	for i, x := range r.q {
		if x.Hash == r.q[b].Hash {
			r.q = append(r.q[:i], r.q[i+1:]...)
			r.bytes -= uint64(x.Len)
			return x, true
		}
	}
	panic("unreachable")
}

// refDRR is DRR over per-queue slices, visiting queues in index order.
type refDRR struct {
	q       [][]pkt.Packet
	deficit []int
	pos     int
	inTurn  bool
	quantum int
	paused  []bool
}

func (r *refDRR) dequeue() (pkt.Packet, bool) {
	n := len(r.q)
	for iter := 0; iter < 1000; iter++ {
		any := false
		for i := range r.q {
			any = any || len(r.q[i]) > 0 && !r.paused[i]
		}
		if !any {
			return pkt.Packet{}, false
		}
		if !r.inTurn || len(r.q[r.pos]) == 0 || r.paused[r.pos] {
			for k := 1; k <= n; k++ {
				if j := (r.pos + k) % n; len(r.q[j]) > 0 && !r.paused[j] {
					r.pos = j
					break
				}
			}
			r.deficit[r.pos] += r.quantum
			r.inTurn = true
		}
		h := r.q[r.pos][0]
		if int(h.Len) <= r.deficit[r.pos] {
			r.deficit[r.pos] -= int(h.Len)
			r.q[r.pos] = r.q[r.pos][1:]
			if len(r.q[r.pos]) == 0 {
				r.deficit[r.pos] = 0
				r.inTurn = false
			}
			return h, true
		}
		r.inTurn = false
	}
	panic("reference DRR looped")
}

// refRSP is a calendar of per-round slices, with a 64-bit round.
type refRSP struct {
	n     uint64
	round uint64
	q     map[uint64][]pkt.Packet
}

func (r *refRSP) enqueue(p pkt.Packet) queues.Drop {
	ahead := int64(int32(p.Rank - uint32(r.round)))
	if ahead < 0 {
		ahead = 0
	}
	if uint64(ahead) >= r.n {
		return queues.RoundOverflow
	}
	rd := r.round + uint64(ahead)
	r.q[rd] = append(r.q[rd], p)
	return queues.Accepted
}

func (r *refRSP) dequeue() (pkt.Packet, bool) {
	total := 0
	for _, v := range r.q {
		total += len(v)
	}
	if total == 0 {
		return pkt.Packet{}, false
	}
	for len(r.q[r.round]) == 0 {
		delete(r.q, r.round)
		r.round++
	}
	p := r.q[r.round][0]
	r.q[r.round] = r.q[r.round][1:]
	return p, true
}

// FuzzSchedulersAgainstReference drives DRR, RSP and pFabric and simple
// reference implementations with the same random operations and compares
// every result. Hashes, ranks and lengths take their whole range: a hash is
// either one of a few values that stress the flow tables (0, 1, 2^32-1 and
// values that share a home slot) or any 32-bit value from the input; ranks
// are any 32-bit value or a round near RSP's current one; lengths are 0 to
// 9216 (the largest frame a port can carry) and, for pFabric, up to 65535.
func FuzzSchedulersAgainstReference(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 200, 100, 0, 255})
	f.Add([]byte("a fairly long seed of operations for the schedulers to chew on"))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 5, 0xdc, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, 5, 0xdc, 2, 0, 2, 0})
	f.Fuzz(runOps)
}

// fuzzKey is the pFabric flow table's key in runOps, fixed so that
// hotHashes can share a home slot under it.
var fuzzKey = keyhash.FromKey([2]uint64{0x5eed, 0xf00d})

// Hashes that stress the flow tables: the extremes, and three that share a
// home slot in runOps' pFabric table (16 slots, under fuzzKey).
var hotHashes = func() [8]uint32 {
	h := [8]uint32{0, 1, 0xffffffff, 0xfffffffe, 0x80000000}
	home := func(x uint32) uint64 { return fuzzKey.Sum(uint64(x)) & 15 }
	n := 5
	for x := uint32(2); n < 8; x++ {
		if home(x) == home(0) {
			h[n] = x
			n++
		}
	}
	return h
}()

func runOps(t *testing.T, ops []byte) {
	if len(ops) > 20000 { // at most ~2000 packets: within the queues' 4096-packet capacity, which the references do not model
		ops = ops[:20000]
	}
	const nq = 4
	drr := mk(t, "drr", Params{Queues: nq, Quantum: 300, PortBytes: 1 << 26, PortPackets: 4096, Classify: Classifier{By: "queue"}}).(*drr)
	rdrr := &refDRR{q: make([][]pkt.Packet, nq), deficit: make([]int, nq), pos: nq - 1, quantum: 300, paused: make([]bool, nq)}
	rsp := mk(t, "rsp", Params{Queues: nq, PortBytes: 1 << 26, PortPackets: 4096}).(*RSP)
	start := uint64(1<<32 - 3) // the calendar crosses the 32-bit boundary of p.Rank
	rsp.SetRound(start)
	rrsp := &refRSP{n: nq, round: start, q: map[uint64][]pkt.Packet{}}
	pf := mk(t, "pfabric", Params{PortBytes: 6000, PortPackets: 8}).(*PFabric)
	pf.key = fuzzKey
	rpf := &refPFabric{limit: 6000, cap: 8}
	id := uint64(0)
	be32 := func(b []byte) uint32 { return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) }
	for len(ops) > 0 {
		op := ops[0]
		switch op % 4 {
		case 0, 1: // enqueue: op, hash(4), rank(4), len(2)
			if len(ops) < 11 {
				return
			}
			arg := ops[1:11]
			ops = ops[11:]
			id++
			hash := be32(arg[0:])
			if op&0x10 == 0 {
				hash = hotHashes[hash%8]
			}
			rank := be32(arg[4:])
			rspRank := rank
			if op&0x20 == 0 {
				rspRank = uint32(rsp.Round()) + rank%6
			}
			plen := uint32(arg[8])<<8 | uint32(arg[9])
			p := pkt.Packet{Addr: id, Len: plen % 9217, Queue: uint16(rank % nq), Hash: hash, Rank: rspRank}
			q := p
			if d := drr.Enqueue(&q); d == queues.Accepted {
				rdrr.q[p.Queue] = append(rdrr.q[p.Queue], p)
			}
			q = p
			if d1, d2 := rsp.Enqueue(&q), rrsp.enqueue(p); d1 != d2 {
				t.Fatalf("rsp enqueue rank %#x at round %#x: %v, reference %v", p.Rank, rsp.Round(), d1, d2)
			}
			x := p
			x.Rank, x.Len = rank, plen
			if op&0x40 == 0 {
				x.Rank = rank % 16 // many equal ranks, so ties are exercised too
			}
			q = x
			d1 := pf.Enqueue(&q)
			d2, ev := rpf.enqueue(x)
			var got []uint64
			if d1 == queues.Evicted {
				for got = append(got, q.Addr); pf.MoreEvicted(&q); {
					got = append(got, q.Addr)
				}
			}
			if d1 != d2 || len(got) != len(ev) {
				t.Fatalf("pfabric enqueue %v evicting %v, reference %v evicting %d packets", d1, got, d2, len(ev))
			}
			for k := range ev {
				if got[k] != ev[k].Addr {
					t.Fatalf("pfabric evicted %v, reference %v", got, ev)
				}
			}
		case 2: // dequeue
			ops = ops[1:]
			var a pkt.Packet
			ok1 := drr.Dequeue(&a)
			b, ok2 := rdrr.dequeue()
			if ok1 != ok2 || ok1 && a.Addr != b.Addr {
				t.Fatalf("drr dequeue %v %d, reference %v %d", ok1, a.Addr, ok2, b.Addr)
			}
			ok1 = rsp.Dequeue(&a)
			b, ok2 = rrsp.dequeue()
			if ok1 != ok2 || ok1 && a.Addr != b.Addr || rsp.Round() != rrsp.round {
				t.Fatalf("rsp dequeue %v %d round %d, reference %v %d round %d", ok1, a.Addr, rsp.Round(), ok2, b.Addr, rrsp.round)
			}
			ok1 = pf.Dequeue(&a)
			b, ok2 = rpf.dequeue()
			if ok1 != ok2 || ok1 && a.Addr != b.Addr {
				t.Fatalf("pfabric dequeue %v %d, reference %v %d", ok1, a.Addr, ok2, b.Addr)
			}
		case 3: // pause or resume a DRR queue
			if len(ops) < 2 {
				return
			}
			arg := ops[1]
			ops = ops[2:]
			q := int(arg % nq)
			if arg&0x80 != 0 {
				drr.Pause(q)
			} else {
				drr.Resume(q)
			}
			rdrr.paused[q] = arg&0x80 != 0
		}
	}
}

// TestPFabricHashAllOnes is the remote crash of the first pFabric: a flow
// whose hash is 0xFFFFFFFF made the flow-table key wrap to the empty
// marker, and the next dequeue indexed -1.
func TestPFabricHashAllOnes(t *testing.T) {
	pf := mk(t, "pfabric", Params{PortBytes: 1 << 20, PortPackets: 64}).(*PFabric)
	for i := 0; i < 3; i++ {
		for _, h := range []uint32{0xffffffff, 0, 7} {
			p := pkt.Packet{Addr: uint64(i), Len: 100, Hash: h, Rank: uint32(i)}
			if d := pf.Enqueue(&p); d != queues.Accepted {
				t.Fatalf("enqueue hash %#x: %v", h, d)
			}
		}
	}
	n := 0
	var p pkt.Packet
	for pf.Dequeue(&p) {
		n++
	}
	if n != 9 || pf.Len() != 0 {
		t.Fatalf("dequeued %d of 9, %d left", n, pf.Len())
	}
}

// TestQueueOfIsWhereEnqueuePuts: for every scheduler, QueueOf names the
// queue Enqueue then puts the packet on (or -1 exactly when Enqueue refuses
// it outright), over packets of random DSCP, PCP, hash, queue and rank.
func TestQueueOfIsWhereEnqueuePuts(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, name := range Names() {
		for _, by := range []ClassifyBy{ByDSCP, ByPCP, ByQueue} {
			s := mk(t, name, Params{Queues: 8, Classify: Classifier{By: by}})
			qr, ok := s.(Queuer)
			if !ok {
				t.Fatalf("%s does not implement Queuer", name)
			}
			bl := s.(Backlogger)
			for i := 0; i < 2000; i++ {
				p := pkt.Packet{Len: 100, TOS: uint8(rng.Intn(256)), PCP: uint8(rng.Intn(8)), Hash: rng.Uint32(),
					Queue: uint16(rng.Intn(8)), Rank: uint32(rng.Intn(12))}
				q := qr.QueueOf(&p)
				before, _ := bl.Backlog(max(q, 0))
				d := s.Enqueue(&p)
				if q < 0 {
					if d == queues.Accepted {
						t.Fatalf("%s/%s: QueueOf said -1, Enqueue took the packet onto %d", name, by, p.Queue)
					}
					continue
				}
				if d != queues.Accepted {
					t.Fatalf("%s/%s: enqueue refused: %v", name, by, d)
				}
				after, _ := bl.Backlog(q)
				if after != before+100 || (name != "pfabric" && int(p.Queue) != q) {
					t.Fatalf("%s/%s: QueueOf %d, Enqueue put it on %d (backlog %d -> %d)", name, by, q, p.Queue, before, after)
				}
				if i%3 == 0 {
					s.Dequeue(&p)
				}
			}
		}
	}
}

// TestCapabilities: which schedulers offer which named capabilities, and
// that rsp's View and Round report the same round.
func TestCapabilities(t *testing.T) {
	for _, name := range Names() {
		s := mk(t, name, Params{Queues: 4})
		_, set := s.(SetScheduler)
		_, rd := s.(Rounder)
		_, vw := s.(Viewer)
		_, bl := s.(Backlogger)
		_, qr := s.(Queuer)
		if set != (name != "pfabric") || rd != (name == "rsp") || vw != (name == "rsp") || !bl || !qr {
			t.Errorf("%s: SetScheduler %v Rounder %v Viewer %v Backlogger %v Queuer %v", name, set, rd, vw, bl, qr)
		}
		if set && s.(SetScheduler).Set().Len() != s.NumQueues() {
			t.Errorf("%s: its Set has %d queues, the scheduler %d", name, s.(SetScheduler).Set().Len(), s.NumQueues())
		}
	}
	r := mk(t, "rsp", Params{Queues: 4}).(*RSP)
	r.SetRound(1 << 40)
	if v := r.View(); v.Round == nil || *v.Round != 1<<40 || r.Round() != 1<<40 {
		t.Fatalf("View %+v, Round %d", v, r.Round())
	}
}
