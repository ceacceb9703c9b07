package bfc

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/internal/keyhash"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/wire"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// metaCounted is BFC's scratch bit of pkt.Packet.Meta: the packet raised
// its upstream queue's pause counter at admission, so its leaving lowers
// it.
var metaCounted = pkt.RegisterMeta("bfc")

func init() {
	mech.Register(mech.Spec{
		Name:       "bfc",
		Summary:    "Backpressure Flow Control: dynamic per-flow queues, per-hop pause and resume of the upstream queue",
		Config:     defaultConfig,
		Schedulers: []string{"drr"},
		SetsQueue:  true,
		Controls:   []uint8{uint8(wire.TypeBFCPause), uint8(wire.TypeBFCResume), uint8(wire.TypeBFCBitmap)},
		New:        New,
	})
}

type assignMode uint8

const (
	modeDynamic assignMode = iota
	modeStochastic
	modeSingle
)

type peerKind uint8

const (
	peerNone peerKind = iota
	peerBFC
	peerHost
)

// wireOverhead is what the shaper charges a frame beyond its bytes
// (preamble, FCS, gap): queue lengths and Th are in these wire bytes.
const wireOverhead = 24

// lingerBitmaps is how many bitmaps a port still sends after its last
// pause counter went back to zero, so a lost RESUME is healed.
const lingerBitmaps = 2

// entry is a flow-table entry: the queue of the flows hashed to it, the
// packets of them in the switch, when one last arrived or left, and the
// hash of the flow that used it last.
type entry struct {
	ts   int64
	size uint32
	fp   uint32
	q    uint16
}

// qstate is BFC's view of one queue of a port (egress worker), with the
// values metrics read published atomically.
type qstate struct {
	len   uint64 // wire bytes queued
	last  int64  // when len last changed (or was integrated)
	integ float64
	pubI  atomic.Uint64 // integ as float64 bits: byte-seconds
	wm    atomic.Uint64 // highest len since the last scrape
}

// upstream is what a port's neighbour told it: the queues of this port it
// paused. Control runs on the workers receiving on the port (atomics); the
// watchdog on the port's egress worker.
type upstream struct {
	paused      atomic.Uint64     // queues paused by the neighbour
	qseq        [64]atomic.Uint64 // per queue: 1<<32 | seq of the newest message applied to it; 0 none
	sender      atomic.Uint32     // switch<<16 | port of the neighbour last heard
	lastRefresh atomic.Int64      // last PAUSE or BITMAP applied
}

// port is BFC's state on one port where it is enabled. Fields are owned by
// the port's egress worker unless marked.
type port struct {
	idx    int
	name   string
	mac    [6]byte
	peer   peerKind
	assign assignMode
	uplink bool
	worker int // the egress worker: runs this port's Admit..Egress hooks and its timers
	hrtt   int64
	period int64
	wdog   int64

	// Egress side.
	sch        sched.Scheduler
	set        *queues.Set
	nq         int
	qmask      uint64
	bytesPerNs float64 // line rate
	thFixed    uint64
	thFloor    uint64
	hrttMax    int64
	sticky     int64
	table      []entry
	key        keyhash.Key // the flow table's and stochastic assignment's hash key
	cursor     int
	rng        uint64
	assignedAt []int64 // per queue: when a new flow was last given it
	qs         []qstate

	// Downstream side: pause counters of the packets that came in on this
	// port, per upstream queue. Any egress worker (atomics).
	ctr    []atomic.Int32 // wire.MaxQueues; nil when the port has no peer to pause
	active atomic.Int32   // counters above zero
	maxQ   atomic.Int32   // 1 + the highest upstream queue counted
	seq    atomic.Uint32  // seq of the last BFC frame sent on the port
	// Bitmap timer (egress worker).
	nextBitmap int64
	linger     int
	timerOn    bool          // bitmaps are due every period
	seenEp     uint32        // episodes as of the last tick
	episodes   atomic.Uint32 // times active went 0 -> 1 (any egress worker)
	bm         [wire.MaxBitmapLen]byte

	// Upstream side.
	up      upstream
	wdArmed bool // the watchdog found no refresh at the last tick (egress worker)

	m counters
}

// counters are the port's metrics (atomics: read by Collect, some written by several workers).
type counters struct {
	pausesSent, resumesSent, bitmapsSent, emitFailed       atomic.Uint64
	pausesRx, resumesRx, bitmapsRx, staleRx, badQueueRx    atomic.Uint64
	malformedRx, notPeerRx, watchdog                       atomic.Uint64
	overTh, underflow, occupancy, collisions               atomic.Uint64
	stickyHits, stickyReuse, assignEmpty, assignRandom, th atomic.Uint64
	tagged, untagged, tagSkipped, hostQueued               atomic.Uint64
}

// BFC is the mechanism's instance in one switch.
type BFC struct {
	sw       mech.Switch
	mem      []byte
	id       uint16
	ports    []*port  // by port index; nil where BFC is not enabled
	allowed  [][]bool // allowed[in][out]: a packet in from in, queued at out, may pause in's upstream
	byWorker [][]int  // ports whose egress (and timers) worker w runs
	ems      []mech.Emitter
}

// New builds BFC for a switch.
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	b := &BFC{sw: sw, mem: sw.Mem(), id: sw.ID(), ports: make([]*port, len(ports)), byWorker: make([][]int, sw.Workers())}
	for w := 0; w < sw.Workers(); w++ {
		b.ems = append(b.ems, sw.Emitter(w))
	}
	cfgs := make([]*Config, len(ports))
	var hrttMax int64
	for i, mp := range ports {
		if mp.Config == nil {
			continue
		}
		c := mp.Config.(*Config)
		if err := c.Validate(mp.Info()); err != nil {
			return nil, fmt.Errorf("port %s: %w", mp.Name, err)
		}
		cfgs[i] = c
		if c.Peer != PeerNone {
			hrttMax = max(hrttMax, c.hrtt(mp.DelayNs))
		}
	}
	for i, mp := range ports {
		c := cfgs[i]
		if c == nil {
			continue
		}
		s := &port{idx: i, name: mp.Name, uplink: *c.Uplink, worker: sw.EgressWorker(i), sch: sw.Scheduler(i),
			nq: sw.Scheduler(i).NumQueues(), thFixed: uint64(c.Th), thFloor: uint64(c.ThFloor), rng: uint64(i)*0x9e3779b97f4a7c15 + 1,
			key: keyhash.New()}
		copy(s.mac[:], mp.MAC)
		setter, ok := s.sch.(sched.SetScheduler)
		if !ok {
			return nil, fmt.Errorf("port %s: bfc needs the drr scheduler, not %s", mp.Name, mp.Scheduler)
		}
		s.set = setter.Set()
		if s.nq < 1 || s.nq > 64 {
			return nil, fmt.Errorf("port %s: %d queues (bfc works with 1 to 64)", mp.Name, s.nq)
		}
		s.qmask = ^uint64(0) >> (64 - s.nq)
		switch c.Assign {
		case AssignStochastic:
			s.assign = modeStochastic
		case AssignSingle:
			s.assign = modeSingle
		}
		switch c.Peer {
		case PeerBFC:
			s.peer = peerBFC
		case PeerHost:
			s.peer = peerHost
		}
		s.hrtt = c.hrtt(mp.DelayNs)
		s.hrttMax = max(hrttMax, s.hrtt)
		s.period = c.period(s.hrtt, mp.Timescale)
		s.wdog = c.watchdog(s.period)
		s.sticky = int64(c.Sticky)
		if s.sticky == 0 {
			s.sticky = 2 * s.hrttMax
		}
		s.bytesPerNs = float64(mp.RateBits) / 8e9
		if s.assign == modeDynamic {
			n := c.FlowTable
			if n == 0 {
				n = 100 * s.nq
			}
			s.table = make([]entry, n)
		}
		s.assignedAt = make([]int64, s.nq)
		s.qs = make([]qstate, s.nq)
		if s.peer != peerNone {
			s.ctr = make([]atomic.Int32, wire.MaxQueues)
		}
		b.ports[i] = s
		b.byWorker[s.worker] = append(b.byWorker[s.worker], i)
	}
	// The elision table (App. B): which (ingress, egress) pairs may pause.
	b.allowed = make([][]bool, len(ports))
	for in := range ports {
		b.allowed[in] = make([]bool, len(ports))
		for out := range ports {
			pi, po := b.ports[in], b.ports[out]
			b.allowed[in][out] = pi != nil && po != nil && !(pi.uplink && po.uplink)
		}
	}
	for out, c := range cfgs {
		if c == nil || c.PauseFrom == nil {
			continue
		}
		for in := range ports {
			b.allowed[in][out] = false
		}
		for _, name := range c.PauseFrom {
			found := false
			for in, mp := range ports {
				if mp.Name == name {
					if b.ports[in] == nil {
						return nil, fmt.Errorf("port %s: pause_from: port %s does not run bfc", ports[out].Name, name)
					}
					b.allowed[in][out], found = true, true
				}
			}
			if !found {
				return nil, fmt.Errorf("port %s: pause_from: no port named %q", ports[out].Name, name)
			}
		}
	}
	return b, nil
}

// index is the flow-table entry of a flow hash: keyed (package keyhash),
// so a host cannot compute which of its flows share an entry, hence a
// queue, with another host's flow.
func (s *port) index(h uint32) int {
	return keyhash.Index(s.key.Sum(uint64(h)), len(s.table))
}

// random is the port's xorshift generator.
func (s *port) random() uint64 {
	x := s.rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	s.rng = x
	return x
}

// pickQueue chooses the queue of a new flow: the first empty queue at or
// after a rotating cursor (empty and not paused first), else a random one.
func (s *port) pickQueue() int {
	empty := ^s.set.NonEmpty() & s.qmask
	if e := empty &^ s.up.paused.Load(); e != 0 {
		empty = e
	}
	if empty == 0 {
		s.m.assignRandom.Add(1)
		return int(s.random() % uint64(s.nq))
	}
	s.m.assignEmpty.Add(1)
	q := firstFrom(empty, s.cursor)
	s.cursor = (q + 1) % s.nq
	return q
}

// firstFrom is the first set bit of mask (non-zero) at or after c, wrapping.
func firstFrom(mask uint64, c int) int {
	if hi := mask >> uint(c) << uint(c); hi != 0 {
		return bits.TrailingZeros64(hi)
	}
	return bits.TrailingZeros64(mask)
}

// assignDynamic is BFC's queue assignment (section 3.3.1, with the sticky
// rule of 3.3.2).
func (s *port) assignDynamic(p *pkt.Packet, now int64) int {
	if p.Hash == 0 {
		return 0 // not IP: the default queue
	}
	e := &s.table[s.index(p.Hash)]
	if e.size == 0 {
		if e.ts == 0 || now-e.ts > s.sticky {
			q := s.pickQueue()
			e.q, e.fp = uint16(q), p.Hash
			s.assignedAt[q] = now
			return q
		}
		s.m.stickyHits.Add(1)
		if s.assignedAt[e.q] > e.ts {
			s.m.stickyReuse.Add(1) // the queue went to a new flow meanwhile: they share it now
		}
	}
	if e.fp != p.Hash {
		s.m.collisions.Add(1)
		e.fp = p.Hash
	}
	return int(e.q)
}

// threshold is Th for a packet bound for queue q (egress worker).
func (s *port) threshold(q int) uint64 {
	if s.thFixed != 0 {
		return s.thFixed
	}
	if s.bytesPerNs == 0 {
		return math.MaxUint64 // unlimited port: not a bottleneck Th can be sized for
	}
	n := bits.OnesCount64(s.set.Ready() | 1<<uint(q))
	th := uint64(float64(s.hrttMax) * s.bytesPerNs / float64(n))
	return max(th, s.thFloor)
}

// upKey is the pause counter of packet p that came in on port in: its
// upstream queue, or 0 if the upstream has one queue (single).
func upKey(in *port, p *pkt.Packet) int {
	if in.assign == modeSingle {
		return 0
	}
	return int(p.UpQ & (wire.MaxQueues - 1))
}

// Admit assigns the packet's queue and decides whether it raises its
// upstream queue's pause counter (metaCounted), which its Enqueued does
// (egress worker).
func (b *BFC) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	e := v.Index()
	s := b.ports[e]
	if p.Lane != pkt.LaneData {
		return
	}
	var q int
	switch s.assign {
	case modeSingle:
	case modeStochastic:
		if p.Hash != 0 {
			q = keyhash.Index(s.key.Sum(uint64(p.Hash)), s.nq)
		}
	default:
		q = s.assignDynamic(p, now)
	}
	p.Queue = uint16(q)
	p.Meta &^= metaCounted
	if int(p.InPort) < len(b.ports) {
		if in := b.ports[p.InPort]; in != nil && in.ctr != nil && p.Flags&pkt.FlagUpQ != 0 && p.Hash != 0 && b.allowed[p.InPort][e] {
			th := s.threshold(q)
			s.m.th.Store(th)
			if s.qs[q].len > th {
				p.Meta |= metaCounted
			}
		}
	}
}

// account changes queue q's length by d wire bytes at now (egress worker).
func (s *port) account(q int, d int64, now int64) {
	st := &s.qs[q]
	st.integ += float64(st.len) * float64(now-st.last) / 1e9
	st.last = now
	st.pubI.Store(math.Float64bits(st.integ))
	st.len = uint64(int64(st.len) + d)
	if d > 0 && st.len > st.wm.Load() {
		st.wm.Store(st.len)
	}
}

// Enqueued counts the packet in: its flow-table entry, its queue, and its
// upstream queue's pause counter, which pauses that queue on 0 -> 1.
func (b *BFC) Enqueued(v *mech.PortView, p *pkt.Packet, now int64) {
	s := b.ports[v.Index()]
	if p.Lane != pkt.LaneData || int(p.Queue) >= s.nq {
		return
	}
	s.account(int(p.Queue), int64(p.Len)+wireOverhead, now)
	if s.table != nil && p.Hash != 0 {
		en := &s.table[s.index(p.Hash)]
		if en.size == 0 {
			s.m.occupancy.Add(1)
		}
		en.size++
		en.ts = now
	}
	if p.Meta&metaCounted != 0 {
		in := b.ports[p.InPort]
		k := upKey(in, p)
		s.m.overTh.Add(1)
		if in.ctr[k].Add(1) == 1 {
			if in.active.Add(1) == 1 {
				in.episodes.Add(1)
				b.sw.TickSoon(in.worker, b) // the bitmaps to in's neighbour start
			}
			for {
				m := in.maxQ.Load()
				if int32(k) < m || in.maxQ.CompareAndSwap(m, int32(k)+1) {
					break
				}
			}
			if b.emit(s.worker, in, wire.TypeBFCPause, uint16(k)) {
				in.m.pausesSent.Add(1)
			}
		}
	}
}

// left counts a packet out of the port's queues (sent, dropped or
// flushed): the flow table, the queue, and the pause counter, which
// resumes the upstream queue on 1 -> 0 (egress worker).
func (b *BFC) left(s *port, p *pkt.Packet, now int64) {
	if p.Lane != pkt.LaneData || int(p.Queue) >= s.nq {
		return
	}
	s.account(int(p.Queue), -(int64(p.Len) + wireOverhead), now)
	if s.table != nil && p.Hash != 0 {
		en := &s.table[s.index(p.Hash)]
		if en.size > 0 {
			en.size--
			if en.size == 0 {
				s.m.occupancy.Add(^uint64(0))
			}
		}
		en.ts = now
	}
	if p.Meta&metaCounted != 0 && int(p.InPort) < len(b.ports) {
		in := b.ports[p.InPort]
		if in == nil || in.ctr == nil {
			return
		}
		k := upKey(in, p)
		switch n := in.ctr[k].Add(-1); {
		case n == 0:
			in.active.Add(-1)
			if b.emit(s.worker, in, wire.TypeBFCResume, uint16(k)) {
				in.m.resumesSent.Add(1)
			}
		case n < 0:
			in.ctr[k].Add(1) // cannot happen: every decrement follows its increment
			s.m.underflow.Add(1)
		}
	}
}

// Dropped: a packet refused at admission (v.Admitting) was never
// counted; one dropped later (evicted, flushed) leaves the queues.
func (b *BFC) Dropped(v *mech.PortView, p *pkt.Packet, r pkt.Reason, now int64) {
	if v.Admitting() {
		return
	}
	b.left(b.ports[v.Index()], p, now)
}

// Dequeued counts the released packets out.
func (b *BFC) Dequeued(v *mech.PortView, bt *mech.Batch) {
	s := b.ports[v.Index()]
	for i := range bt.Pkts {
		b.left(s, &bt.Pkts[i], bt.Now)
	}
}

// emit sends a PAUSE or RESUME of upstream queue q out of port in, from
// worker w. A frame that cannot be sent is healed by the next bitmap.
func (b *BFC) emit(w int, in *port, t wire.Type, q uint16) bool {
	em := b.ems[w]
	buf := em.Frame(in.idx, uint8(t))
	if buf == nil {
		in.m.emitFailed.Add(1)
		return false
	}
	n, err := wire.BuildBFC(buf, in.mac, wire.BFC{Type: t, Seq: in.seq.Add(1), Switch: b.id, Port: uint16(in.idx), Queue: q})
	if err != nil {
		em.Abort()
		in.m.emitFailed.Add(1)
		return false
	}
	if !em.Send(n, pkt.LaneControl) {
		in.m.emitFailed.Add(1)
		return false
	}
	return true
}

// sendBitmap sends port s's neighbour the set of its queues that must be
// paused: the upstream queues whose counter is above zero (egress worker).
func (b *BFC) sendBitmap(w int, s *port) {
	seq := s.seq.Add(1) // before reading: a PAUSE counted after this read is newer
	nq := int(max(s.maxQ.Load(), 1))
	bm := s.bm[:wire.BitmapLen(nq)]
	clear(bm)
	for q := 0; q < nq; q++ {
		if s.ctr[q].Load() > 0 {
			bm[q/8] |= 1 << (q % 8)
		}
	}
	em := b.ems[w]
	buf := em.Frame(s.idx, uint8(wire.TypeBFCBitmap))
	if buf == nil {
		s.m.emitFailed.Add(1)
		return
	}
	n, err := wire.BuildBFC(buf, s.mac, wire.BFC{Type: wire.TypeBFCBitmap, Seq: seq, Switch: b.id, Port: uint16(s.idx), NQueues: uint16(nq), Bitmap: bm})
	if err != nil {
		em.Abort()
		s.m.emitFailed.Add(1)
		return
	}
	if em.Send(n, pkt.LaneControl) {
		s.m.bitmapsSent.Add(1)
	} else {
		s.m.emitFailed.Add(1)
	}
}

// idleTick is how often an idle worker's timers run (the queue integrals).
const idleTick = int64(time.Second)

// Tick runs the timers of the ports whose egress worker is w: the bitmap
// to each neighbour while any of its queues is paused (and lingerBitmaps
// periods after), the watchdog over the queues neighbours paused here, and
// the queue-length integrals. With nothing paused either way the timers
// idle; the first pause of an episode, sent or received, asks for a Tick
// at once (Switch.TickSoon).
func (b *BFC) Tick(w int, now int64) int64 {
	next := now + idleTick
	for _, i := range b.byWorker[w] {
		s := b.ports[i]
		for q := range s.qs {
			s.account(q, 0, now)
		}
		if s.ctr != nil {
			if ep := s.episodes.Load(); ep != s.seenEp || s.active.Load() > 0 {
				// Pauses went out since the last tick (perhaps a whole short
				// episode, its RESUME included): bitmaps follow every period
				// until lingerBitmaps periods after the last counter is zero.
				s.seenEp, s.linger = ep, lingerBitmaps
				if !s.timerOn {
					s.timerOn, s.nextBitmap = true, now+s.period
				}
			}
			if s.timerOn && now >= s.nextBitmap {
				if s.active.Load() > 0 {
					b.sendBitmap(w, s)
				} else if s.linger > 0 {
					s.linger--
					b.sendBitmap(w, s)
				}
				s.nextBitmap = now + s.period
			}
			if s.active.Load() == 0 && s.linger == 0 {
				s.timerOn = false
			}
			if s.timerOn {
				next = min(next, s.nextBitmap)
			}
		}
		if s.peer == peerBFC {
			b.watchdog(s, now)
			if s.up.paused.Load() != 0 || s.up.sender.Load() != 0 {
				next = min(next, now+s.period)
			}
		}
	}
	return next
}

// Ingress reads the upstream queue of packets received on a BFC port:
// from the BFC tag (peer bfc; the tag is removed, so frames inside the
// switch are untagged) or from the gsperf header (peer host). Tags on
// frames from other peers are removed and not believed.
func (b *BFC) Ingress(i int, bt *mech.Batch) {
	s := b.ports[i]
	for k := range bt.Pkts {
		p := &bt.Pkts[k]
		if p.Verdict != pkt.Forward && p.Verdict != pkt.Flood {
			continue
		}
		if p.TagOff != 0 && pkt.PopTag(b.mem, p) == nil {
			s.m.untagged.Add(1)
		}
		if s.peer != peerBFC {
			p.Flags &^= pkt.FlagUpQ
			p.UpQ = 0
		}
		if s.peer == peerHost {
			if q, ok := b.hostQueue(p); ok {
				p.UpQ = q
				p.Flags |= pkt.FlagUpQ
				s.m.hostQueued.Add(1)
			}
		}
	}
}

// hostQueue reads the upstream queue a gsperf host in BFC mode writes in
// its header's mechanism field (0: the host gives none).
func (b *BFC) hostQueue(p *pkt.Packet) (uint16, bool) {
	if p.Flags&pkt.FlagFragment != 0 {
		return 0, false
	}
	h := gsperf.InUDP(b.mem[p.Addr:p.Addr+uint64(p.Len)], p.Proto, p.L4Off)
	if len(h) < gsperf.Len || !h.Known() || (h.Type() != gsperf.TypeData && h.Type() != gsperf.TypeProbe) {
		return 0, false
	}
	q := wire.MechBFCQueue(h.Mech())
	return q, q != 0
}

// Egress writes the upstream-queue tag on data frames leaving toward a BFC
// neighbour (the queue the frame left from) and removes tags toward
// anything else (egress worker).
func (b *BFC) Egress(v *mech.PortView, bt *mech.Batch) {
	s := b.ports[v.Index()]
	for k := range bt.Pkts {
		p := &bt.Pkts[k]
		if p.Verdict != pkt.Forward {
			continue
		}
		if s.peer != peerBFC {
			if p.TagOff != 0 {
				pkt.PopTag(b.mem, p) // a frame whose tag will not go is sent as it is
			}
			continue
		}
		if p.TagOff != 0 { // came tagged from a port that is not BFC: rewrite in place
			binary.BigEndian.PutUint16(b.mem[p.Addr+uint64(p.TagOff)+2:], p.Queue)
			s.m.tagged.Add(1)
			continue
		}
		if pkt.PushTag(b.mem, p, p.Queue) != nil { // headers too deep, no headroom
			s.m.tagSkipped.Add(1)
			continue
		}
		s.m.tagged.Add(1)
	}
}

var (
	_ mech.AdmitHook    = (*BFC)(nil)
	_ mech.EnqueuedHook = (*BFC)(nil)
	_ mech.DroppedHook  = (*BFC)(nil)
	_ mech.DequeuedHook = (*BFC)(nil)
	_ mech.EgressHook   = (*BFC)(nil)
	_ mech.IngressHook  = (*BFC)(nil)
	_ mech.ControlHook  = (*BFC)(nil)
	_ mech.TickHook     = (*BFC)(nil)
)

// Stats is a snapshot of one port's BFC counters (see metrics.go for what
// each counts).
type Stats struct {
	PausesSent, ResumesSent, BitmapsSent, EmitFailed               uint64
	PausesRx, ResumesRx, BitmapsRx, StaleRx, BadQueueRx, Malformed uint64
	NotPeerRx, WatchdogResumes, OverThreshold, Underflow           uint64
	FlowEntries, Collisions, Sticky, StickyReuse                   uint64
	AssignedEmpty, AssignedRandom, Tagged, TagsRemoved, HostQueued uint64
	Threshold                                                      uint64
	CountersActive                                                 int
	PausedByPeer                                                   uint64 // bit q: the neighbour paused queue q of this port
}

// Stats returns port i's counters (any goroutine); zero if BFC does not
// run on the port.
func (b *BFC) Stats(i int) Stats {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil {
		return Stats{}
	}
	s := b.ports[i]
	m := &s.m
	return Stats{PausesSent: m.pausesSent.Load(), ResumesSent: m.resumesSent.Load(), BitmapsSent: m.bitmapsSent.Load(),
		EmitFailed: m.emitFailed.Load(), PausesRx: m.pausesRx.Load(), ResumesRx: m.resumesRx.Load(), BitmapsRx: m.bitmapsRx.Load(),
		StaleRx: m.staleRx.Load(), BadQueueRx: m.badQueueRx.Load(), Malformed: m.malformedRx.Load(), NotPeerRx: m.notPeerRx.Load(),
		WatchdogResumes: m.watchdog.Load(), OverThreshold: m.overTh.Load(), Underflow: m.underflow.Load(),
		FlowEntries: m.occupancy.Load(), Collisions: m.collisions.Load(), Sticky: m.stickyHits.Load(), StickyReuse: m.stickyReuse.Load(),
		AssignedEmpty: m.assignEmpty.Load(), AssignedRandom: m.assignRandom.Load(), Tagged: m.tagged.Load(), TagsRemoved: m.untagged.Load(),
		HostQueued: m.hostQueued.Load(), Threshold: m.th.Load(), CountersActive: int(s.active.Load()), PausedByPeer: s.up.paused.Load()}
}

// Counter returns the pause counter of upstream queue upq of the
// neighbour on port i: the packets from it queued in this switch above
// Th (any goroutine).
func (b *BFC) Counter(i, upq int) int32 {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil || b.ports[i].ctr == nil || upq < 0 || upq >= wire.MaxQueues {
		return 0
	}
	return b.ports[i].ctr[upq].Load()
}

// Period returns the bitmap period of port i in ns, and its watchdog bound.
func (b *BFC) Period(i int) (period, watchdog int64) {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil {
		return 0, 0
	}
	return b.ports[i].period, b.ports[i].wdog
}
