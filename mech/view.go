package mech

import (
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
)

// PortView is what the egress-side hooks (Admit, Enqueued, Dropped,
// Dequeued, Egress) know of their port: its index, its fixed facts (queues,
// buffer, rate, delay), the exact depth of any of its queues now and the
// queue a packet would take. The traffic manager keeps one per port, for
// the switch's life, and hands the same pointer to every hook of the port;
// a mechanism may also keep it from New (Port.View).
//
// Backlog and QueueOf read the scheduler's own state, exact at the moment
// of the call (the Depth the scheduler publishes for other goroutines is
// as of the egress worker's last pass): they are for the port's egress
// worker, that is, for the hooks above and the mechanism's Tick on that
// worker. Index, Queues and the buffer are fixed and any goroutine may
// read them; RateBits and DelayNs follow changes on the egress worker.
//
// The traffic manager fills the view (the Set methods); hooks only read it.
type PortView struct {
	index     int
	queues    int
	bufBytes  uint64
	bufPkts   int
	rateBits  uint64
	delayNs   int64
	sched     sched.Scheduler
	exact     sched.Backlogger // nil: the scheduler tells only its published depth
	queuer    sched.Queuer     // nil: the scheduler cannot tell a packet's queue
	admitting bool
}

// NewPortView returns the view of port index over its scheduler s, with
// a buffer of bufBytes and bufPackets (for the traffic manager).
func NewPortView(index int, s sched.Scheduler, bufBytes uint64, bufPackets int) PortView {
	v := PortView{index: index, queues: s.NumQueues(), bufBytes: bufBytes, bufPkts: bufPackets, sched: s}
	v.exact, _ = s.(sched.Backlogger)
	v.queuer, _ = s.(sched.Queuer)
	return v
}

// SetRate records the port's line rate in bit/s (the traffic manager, when
// it installs a shaper).
func (v *PortView) SetRate(bits uint64) { v.rateBits = bits }

// SetDelay records the port's link delay in ns (the traffic manager).
func (v *PortView) SetDelay(ns int64) { v.delayNs = ns }

// SetAdmitting says whether the hooks about to run are about the packet
// being admitted (the traffic manager; see Admitting).
func (v *PortView) SetAdmitting(on bool) { v.admitting = on }

// Index is the port's index (any goroutine).
func (v *PortView) Index() int { return v.index }

// Queues is the number of data queues of the port's scheduler (any goroutine).
func (v *PortView) Queues() int { return v.queues }

// BufferBytes is the port's buffer limit in bytes (any goroutine).
func (v *PortView) BufferBytes() uint64 { return v.bufBytes }

// BufferPackets is the port's packet limit (any goroutine).
func (v *PortView) BufferPackets() int { return v.bufPkts }

// RateBits is the port's line rate in bit/s, 0 if unlimited (egress worker).
func (v *PortView) RateBits() uint64 { return v.rateBits }

// DelayNs is the one-way delay of the port's link (egress worker).
func (v *PortView) DelayNs() int64 { return v.delayNs }

// Exact reports whether Backlog is exact; false only for a scheduler that
// does not implement sched.Backlogger (every scheduler of package sched
// does), whose Backlog is its published depth, a pass old.
func (v *PortView) Exact() bool { return v.exact != nil }

// Classifies reports whether QueueOf can tell a packet's queue; false only
// for a scheduler that does not implement sched.Queuer (every scheduler of
// package sched does).
func (v *PortView) Classifies() bool { return v.queuer != nil }

// Backlog is the depth of data queue q now, in frame bytes and packets
// (egress worker): in Admit without the packet being admitted, in its
// Enqueued with it.
func (v *PortView) Backlog(q int) (bytes uint64, packets uint32) {
	if v.exact != nil {
		return v.exact.Backlog(q)
	}
	return v.sched.Depth(q)
}

// Total is the depth of all the port's data queues now (egress worker).
func (v *PortView) Total() (bytes uint64, packets uint32) {
	for q := 0; q < v.queues; q++ {
		b, n := v.Backlog(q)
		bytes += b
		packets += n
	}
	return bytes, packets
}

// QueueOf is the data queue the scheduler would put p in, as p stands
// (its Queue, Rank, DSCP or hash, whatever the scheduler classifies by),
// or -1 if it would refuse p or cannot tell (egress worker). In Admit, it
// is the queue of the packet's admission only once every mechanism that
// sets the queue or the rank has run: declare it (Spec.After).
func (v *PortView) QueueOf(p *pkt.Packet) int {
	if v.queuer == nil {
		return -1
	}
	return v.queuer.QueueOf(p)
}

// Admitting reports whether the running hook is about the packet being
// admitted: true in Admit and in the Enqueued or Dropped that answers it
// (the traffic manager took the packet, or refused it: a mechanism dropped
// it at admission, the frame budget, the scheduler's limits); false in a
// Dropped about a packet queued before (evicted by an arrival, flushed
// from a port that went down), in Dequeued and in Egress (egress worker).
func (v *PortView) Admitting() bool { return v.admitting }
