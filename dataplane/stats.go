package dataplane

import (
	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/pkt"
)

// FrameCounts says where the UMEM's frames are.
type FrameCounts struct {
	Total     uint64 // frames in the UMEM
	Free      uint64 // on a worker's free list
	Fill      uint64 // given to the kernel to receive into
	Handoff   uint64 // on a ring between workers, as packets
	Queued    uint64 // in an egress scheduler or lane
	Tx        uint64 // on a tx ring, not yet completed
	Delayed   uint64 // on the wire of a port with a delay, not yet due
	Returning uint64 // on the way back to the worker that owns them
	// Assembling counts jumbo slots holding the first buffers of a
	// multi-buffer frame whose last buffer has not arrived yet.
	Assembling uint64
}

// InPool is the number of frames ready for reception (free or on a fill ring).
func (c FrameCounts) InPool() uint64 { return c.Free + c.Fill }

// Sum adds up every state; it equals Total when no frame is lost (exactly
// so while the switch is quiescent). A jumbo slot counts as one frame in
// Total and in every state.
func (c FrameCounts) Sum() uint64 {
	return c.Free + c.Fill + c.Handoff + c.Queued + c.Tx + c.Delayed + c.Returning + c.Assembling
}

// Frames counts frames by state. It may be called from any goroutine;
// while traffic flows, a frame moving between states may be counted twice
// or not at all.
func (s *Switch) Frames() FrameCounts {
	c := FrameCounts{Total: uint64(s.numFrames) - uint64(len(s.workers))*s.slotsPer*(s.slotChunks-1)}
	if !s.sg {
		c.Total = uint64(s.numFrames)
	}
	for _, w := range s.workers {
		c.Free += uint64(w.pool.freeLen.Load())
		c.Assembling += uint64(w.pool.assembling.Load())
		c.Fill += uint64(w.rx.inFill.Load())
		for _, r := range w.pool.ret {
			if r != nil {
				c.Returning += uint64(r.Len())
			}
		}
		c.Returning += uint64(w.pool.staged.Load())
		for _, q := range w.rx.queues {
			if q.dly != nil {
				c.Delayed += uint64(q.dly.Published())
			}
		}
	}
	for _, p := range s.ports {
		c.Queued += p.tm.Held()
		for _, r := range p.eg.in {
			if r != nil {
				c.Handoff += uint64(r.Len())
			}
		}
		for _, r := range p.eg.emitIn {
			if r != nil {
				c.Handoff += uint64(r.Len())
			}
		}
		c.Tx += uint64(p.link.txOutstanding.Load())
		c.Delayed += p.tm.Delayed()
	}
	return c
}

// QueueFrameLimit is the most frames of worker w's range the queues may hold.
func (s *Switch) QueueFrameLimit(w int) int64 { return s.frames.Limit(w) }

// PortCounters are one port's cumulative counters.
type PortCounters struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
	Flooded                                uint64 // frames received on this port that were flooded
	TxLateNs                               uint64 // line time (ns) the shaped port lost while frames waited, its worker running later than the shaper's catch-up allows
	CreditLateNs                           uint64 // the same for the port's credit lane's meter (0 without a credit lane)
	Drops                                  [pkt.MaxReasons]uint64
	Malformed                              [pkt.NumErrs]uint64
	ControlRx                              [256]uint64 // control messages received, by GC type
	Forged                                 [256]uint64 // of those, the ones dropped as forged (a switch-only type from a host port), by GC type
	ForgedTags                             uint64      // frames from a host port carrying the upstream-queue tag (a switch-to-switch header), dropped as forged
	Emitted                                [256]uint64 // frames the switch emitted on the port, by GC type
	EmitFailed                             [256]uint64 // emissions that failed, by GC type
}

// Counters sums port i's counters over all workers (any goroutine).
func (s *Switch) Counters(i int) PortCounters {
	c := PortCounters{TxLateNs: s.ports[i].tm.LateNs(), CreditLateNs: s.ports[i].tm.CreditLateNs()}
	for _, w := range s.workers {
		k := &w.ctr[i]
		c.RxPackets += k.rxPackets.Load()
		c.RxBytes += k.rxBytes.Load()
		c.TxPackets += k.txPackets.Load()
		c.TxBytes += k.txBytes.Load()
		c.Flooded += k.flooded.Load()
		c.ForgedTags += k.forgedTags.Load()
		for r := range k.drops {
			c.Drops[r] += k.drops[r].Load()
		}
		for e := range c.Malformed {
			c.Malformed[e] += k.malformed[e].Load()
		}
		for t := range c.ControlRx {
			c.ControlRx[t] += k.controlRx[t].Load()
			c.Forged[t] += k.forged[t].Load()
			c.Emitted[t] += k.emitted[t].Load()
			c.EmitFailed[t] += k.emitFailed[t].Load()
		}
	}
	return c
}

// Unrouted counts, by kind, frames the switch built to be routed that found
// no way out (any goroutine).
func (s *Switch) Unrouted() (c [256]uint64) {
	for _, w := range s.workers {
		for k := range c {
			c[k] += w.unrouted[k].Load()
		}
	}
	return c
}

// WorkerStats are a worker's loop counters.
type WorkerStats struct {
	Passes, Sleeps, Wakeups uint64
	Spinning                bool // at its last sleep, the worker was spinning before sleeping (spin.go)

	// How late the worker ran, in fidelity's buckets (ns): its timed
	// wake-ups (the clock after ppoll minus the deadline of the first timer
	// it slept for, counted when the deadline had passed), the gaps between
	// passes it made without sleeping in between (from one pass's start to
	// the next's), and its mechanisms' ticks (when a tick ran minus when it
	// asked to).
	WakeLate, PassGap, TickLate fidelity.Counts
}

// WorkerStats returns worker w's counters (any goroutine).
func (s *Switch) WorkerStats(w int) WorkerStats {
	st := &s.workers[w].stats
	return WorkerStats{Passes: st.passes.Load(), Sleeps: st.sleeps.Load(), Wakeups: st.wakeups.Load(), Spinning: st.spinning.Load(),
		WakeLate: st.wakeLate.Load(), PassGap: st.passGap.Load(), TickLate: st.tickLate.Load()}
}

// DelayErrors returns how late frames left port's delay lines against
// their due time, in fidelity's buckets (ns): its egress delay line's and
// those of its sockets with a receive delay, together. ok is false when
// the port has neither delay (any goroutine).
func (s *Switch) DelayErrors(port int) (c fidelity.Counts, ok bool) {
	ok = s.ports[port].tm.DelayErrors(&c)
	for _, w := range s.workers {
		for _, q := range w.rx.queues {
			if q.port == port && q.dly != nil {
				q.dly.Errors(&c)
				ok = true
			}
		}
	}
	return c, ok
}

// Timescale is K of the switch's timescale: the fabric it emulates runs K
// times slower than this machine's clock (1: none). Metrics export it
// (gswitch_timescale) and package fidelity scales frame times by it.
func (s *Switch) Timescale() float64 {
	return s.cfg.Timescale.K() // 1 when unset
}
