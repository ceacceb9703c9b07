package dataplane

import (
	"sync/atomic"

	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/tm"
)

// worker runs the pipeline for the sockets and egress ports it owns. Its
// state is grouped by what it serves; every field is private to the
// worker's goroutine except the atomics, which other goroutines read
// (metrics) or write (sleeping is read by producers).
type worker struct {
	id int
	s  *Switch

	pool framePool  // its range of UMEM frames (pool.go)
	rx   rxSide     // its sockets and the ingress stages (rx.go, ingress.go)
	eg   egressSide // the ports whose egress it owns (egress.go)
	nap  sleeper    // sleeping and being woken (wake.go, loop.go)
	em   emitter    // its mech.Emitter (emit.go)
	tmp  scratch

	tickers  []ticker
	gen      uint64             // the switch's stateGen this worker has acted on
	ctr      []portCtr          // per port
	unrouted [256]atomic.Uint64 // emissions to be routed that found no way out, by kind
	lastICMP int64              // when this worker last sent an ICMP error (rate limit)
	lastPass int64              // when the last pass began; noPass after a sleep (loop.go, step)
	stats    loopStats
}

// rxSide is what a worker receives on and how: its sockets, the batch
// being received, and the packets staged for their egress ports.
type rxSide struct {
	queues     []*rxQueue
	fillTarget int                   // frames to keep on each fill ring
	inFill     atomic.Int64          // gauge: frames on its fill rings (for Switch.Frames)
	descs      [BatchSize]afxdp.Desc // one rx batch
	pkts       [BatchSize]pkt.Packet // the batch's packets
	out        [][]pkt.Packet        // packets for port i, staged (handed over, or admitted here)
	flood      []uint16              // ports a frame floods to (one per port)
	batch      mech.Batch            // the batch handed to ingress hooks
	ctlBatch   mech.Batch            // a batch of one control frame
}

// rxQueue is one socket a worker receives on.
type rxQueue struct {
	link     Link
	port     int
	queue    int
	inFill   int           // frames on the fill ring (given minus received)
	detached bool          // the link's device went away: reclaimed, never touched again
	dly      *tm.DelayLine // frames received on a port with rx_delay, until they are due

	// A multi-buffer frame being gathered into a jumbo slot (umem.sg): its
	// buffers may arrive over several passes.
	slot    uint64 // the slot, if hasSlot
	slotOff uint64 // where the frame starts in the slot
	slotLen uint32 // bytes gathered so far
	slotBad bool   // the frame is being dropped (too long, or no slot was free): skip to its last buffer
	inSlot  bool   // a frame is in progress
	hasSlot bool   // it holds slot (a frame dropped for want of a slot has none)
}

// egressSide is the egress of the ports a worker owns: their traffic
// managers' shared part, and the batch being sent.
type egressSide struct {
	ports []*Port
	tm    *tm.Worker
	in    [BatchSize]pkt.Packet     // packets popped from handoff and emit rings
	out   [BatchSize]pkt.Packet     // frames a port's traffic manager sends
	descs [2 * BatchSize]afxdp.Desc // their tx descriptors
	split []afxdp.Desc              // a tx batch cut into one descriptor per UMEM frame (umem.sg)
}

// scratch is a worker's buffers for what does not fit the sides above.
type scratch struct {
	addrs   [BatchSize]uint64 // completions, returns
	reclaim []uint64          // frames reclaimed from a link whose device went away
	pk      pkt.Packet        // a packet held across an interface call (a local would escape)
	one     [1]pkt.Packet     // a batch of one
}

// loopStats are a worker's loop counters (for WorkerStats).
type loopStats struct {
	passes, sleeps, wakeups atomic.Uint64
	spinning                atomic.Bool // the worker spins before it sleeps (adaptive spinning; for metrics)

	// How late the worker runs, in fidelity's buckets (ns), written by the
	// worker alone (loop.go).
	wakeLate fidelity.Recorder // timed wake-ups: the clock after ppoll minus the first timer's deadline, once it had passed
	passGap  fidelity.Recorder // from one pass's start to the next's, when the worker did not sleep in between
	tickLate fidelity.Recorder // mechanisms' ticks: when the tick ran minus when it asked to
}

// portCtr are a worker's counters for one port. Only the worker writes them.
type portCtr struct {
	rxPackets, rxBytes, txPackets, txBytes, flooded atomic.Uint64
	drops                                           [pkt.MaxReasons]atomic.Uint64
	malformed                                       [pkt.NumErrs]atomic.Uint64
	controlRx, forged, emitted, emitFailed          [256]atomic.Uint64
	forgedTags                                      atomic.Uint64 // frames from a host port carrying the upstream-queue tag (wire.EtherTypeUpQ)
	_                                               [64]byte
}

type ticker struct {
	h    mech.TickHook
	next int64
	soon atomic.Bool // TickSoon: run at the next pass (any goroutine sets it)
}

// emitter is a worker's mech.Emitter: frames the switch builds itself. They
// come from the worker's free frames, the emit reserve included (received
// frames and flooded copies never take the last emitReserve frames), are
// built at pkt.Headroom into the frame, and go to the egress port's control
// or credit lane: directly when this worker owns the port's egress, else
// over the port's emit ring for this worker (never the data handoff ring).
// The lanes are never paused. Only the worker's goroutine uses it.
type emitter struct {
	w    *worker
	addr uint64 // the frame taken by the last Frame call (0: none)
	port int
	kind uint8
}

// newWorker builds worker id of s, over its range of the UMEM.
func newWorker(s *Switch, id int) (*worker, error) {
	w := &worker{id: id, s: s, lastICMP: -1e18, lastPass: noPass}
	w.em.w = w
	w.nap.efd = -1
	if err := w.pool.init(&s.umem, id, &w.nap); err != nil {
		return nil, err
	}
	if s.sg {
		w.eg.split = make([]afxdp.Desc, 2*BatchSize*int(s.slotChunks))
	}
	w.eg.tm = tm.NewWorker(id, s.mem, s.frames, w)
	w.rx.out = make([][]pkt.Packet, len(s.ports))
	for i := range w.rx.out {
		w.rx.out[i] = make([]pkt.Packet, 0, BatchSize)
	}
	w.rx.flood = make([]uint16, len(s.ports))
	w.ctr = make([]portCtr, len(s.ports))
	if err := w.nap.open(); err != nil {
		return nil, err
	}
	return w, nil
}
