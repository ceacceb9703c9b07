package tm

import (
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

// fromQueues maps a scheduler's drop to its reason.
var fromQueues = [queues.NumDrops]pkt.Reason{
	queues.BufferFull: pkt.ReasonBufferFull, queues.PortLimit: pkt.ReasonPortLimit, queues.QueueLimit: pkt.ReasonQueueLimit,
	queues.Evicted: pkt.ReasonEvicted, queues.RoundOverflow: pkt.ReasonRoundOverflow,
}

// Admit runs admission over pkts, packets handed to the port at now, one
// after another, so that each decision sees the queues the previous packet
// left: the Admit hooks of the port's mechanisms in the port's hook order
// (queue assignment, ranks, bids, pause counters; they may drop or consume
// the packet), then the lane: control and credit frames go to their lanes,
// data to the frame budget and the scheduler. The mechanisms hear of each
// outcome (Enqueued, Dropped), as mech's admission contract says. What is
// refused goes to the Sink.
func (p *Port) Admit(pkts []pkt.Packet, now int64) {
	for i := range pkts {
		p.admit(&pkts[i], now)
	}
	p.w.handDrops()
}

// ToLane puts a frame the switch emits on the port's control or credit
// lane (pk.Lane) at now and reports whether it did; a full lane drops it
// (lane_full, through the Sink).
func (p *Port) ToLane(pk *pkt.Packet, now int64) bool {
	ok := p.toLane(pk, now)
	p.w.handDrops()
	return ok
}

// ToLanes is ToLane for a batch of emitted frames.
func (p *Port) ToLanes(pkts []pkt.Packet, now int64) {
	for i := range pkts {
		p.toLane(&pkts[i], now)
	}
	p.w.handDrops()
}

func (p *Port) admit(pk *pkt.Packet, now int64) {
	w := p.w
	if pk.Len > p.maxFrame {
		w.drop(p.index, pk.Addr, pkt.ReasonTooLong)
		return
	}
	pk.Verdict = pkt.Forward
	if pk.Lane != pkt.LaneData {
		// Control and credit frames skip the admission hooks (queue
		// assignment, ranks, counters are about data) and go to their lane.
		if pk.Lane == pkt.LaneControl || p.credit != nil {
			p.toLane(pk, now)
			return
		}
		pk.Lane = pkt.LaneData // no credit lane on this port: credits are data here
	}
	v := &p.view
	v.SetAdmitting(true) // until the outcome of pk is told (mech.PortView.Admitting)
	for _, h := range p.admitH {
		h.Admit(v, pk, now)
		if pk.Verdict != pkt.Forward {
			break
		}
	}
	switch pk.Verdict {
	case pkt.Forward:
	case pkt.Consume:
		w.free(p.index, pk.Addr)
		return
	default:
		p.dropAdmitted(pk, pk.Reason, now)
		return
	}
	switch pk.Lane {
	case pkt.LaneControl:
		p.toLane(pk, now)
		return
	case pkt.LaneCredit:
		if p.credit != nil {
			p.toLane(pk, now)
			return
		}
		pk.Lane = pkt.LaneData // no credit lane on this port: credits are data here
	}
	r := w.frames.rangeOf(pk.Addr)
	if !w.admits(r, p.frames) {
		p.dropAdmitted(pk, pkt.ReasonFrameLimit, now)
		return
	}
	// On a drop, *pk is the packet to free: the arriving one, or the one
	// it evicted. Only a scheduler that evicts (an Evictor) can hand back
	// another packet, so only then is the arrival kept aside.
	if p.evictor != nil {
		w.arrival = *pk
	}
	d := p.sched.Enqueue(pk)
	if d == queues.Accepted {
		p.count(r, 1)
		for _, h := range p.enqH {
			h.Enqueued(v, pk, now)
		}
		return
	}
	if d == queues.Evicted {
		// The arrival is in; the evicted packet leaves the queues.
		p.count(r, 1)
		for _, h := range p.enqH {
			h.Enqueued(v, &w.arrival, now)
		}
		v.SetAdmitting(false) // the evicted were queued before
		p.count(w.frames.rangeOf(pk.Addr), -1)
		p.dropAdmitted(pk, pkt.ReasonEvicted, now)
		if p.evictor != nil {
			for p.evictor.MoreEvicted(&w.evicted) {
				p.count(w.frames.rangeOf(w.evicted.Addr), -1)
				p.dropAdmitted(&w.evicted, pkt.ReasonEvicted, now)
			}
		}
		return
	}
	p.dropAdmitted(pk, fromQueues[d], now)
}

// count counts a frame of range r into (d = 1) or out of (d = -1) the
// port's data queues.
func (p *Port) count(r int, d int64) {
	p.w.count(r, d)
	p.frames += d
}

// dropAdmitted drops a data packet that went through the port's
// admission hooks: the port's Dropped hooks hear of it first.
func (p *Port) dropAdmitted(pk *pkt.Packet, r pkt.Reason, now int64) {
	for _, h := range p.dropH {
		h.Dropped(&p.view, pk, r, now)
	}
	p.w.drop(p.index, pk.Addr, r)
}

// toLane puts pk on its lane and reports whether it did. A full control
// lane drops the frame; the credit lane drops it, or takes it and drops
// one it queued before (see Lane.Push); drops are lane_full.
func (p *Port) toLane(pk *pkt.Packet, now int64) bool {
	var ok bool
	if pk.Lane == pkt.LaneCredit && p.credit != nil {
		var evicted bool
		if ok, evicted = p.credit.Push(pk, &p.w.victim, now); evicted {
			p.w.drop(p.index, p.w.victim.Addr, pkt.ReasonLaneFull)
		}
	} else {
		ok = p.ctrl.Push(pk)
	}
	if !ok {
		p.w.drop(p.index, pk.Addr, pkt.ReasonLaneFull)
	}
	return ok
}
