package bfc

import (
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/internal/keyhash"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/wire"
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
