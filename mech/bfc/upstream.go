package bfc

import (
	"math/bits"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
)

// Control applies a PAUSE, RESUME or BITMAP from the neighbour on port i
// to the port's own queues (the receiving worker; the dataplane hands over
// only frames that arrived on fabric ports). Each queue follows the newest
// message about it (per-queue serial numbers, so frames reordered on their
// way out of the neighbour's workers cannot undo a newer state); a BITMAP
// sets every queue. Frames from a port where BFC does not run with a BFC
// peer are refused (unclaimed_control), malformed ones dropped (malformed).
func (b *BFC) Control(i int, bt *mech.Batch) {
	for k := range bt.Pkts {
		p := &bt.Pkts[k]
		s := b.ports[i]
		if s == nil || s.peer != peerBFC {
			if s != nil {
				s.m.notPeerRx.Add(1)
			}
			p.DropWith(pkt.ReasonUnclaimed)
			continue
		}
		m, err := wire.ParseBFCFrame(bt.Frame(p))
		if err != nil {
			s.m.malformedRx.Add(1)
			p.DropWith(pkt.ReasonMalformed)
			continue
		}
		p.Verdict = pkt.Consume
		b.apply(s, &m, bt.Now)
	}
}

// apply applies a parsed message to port s (any worker).
func (b *BFC) apply(s *port, m *wire.BFC, now int64) {
	u := &s.up
	id := uint32(m.Switch)<<16 | uint32(m.Port)
	if old := u.sender.Swap(id); old != id && old != 0 {
		// Another neighbour (or the same one restarted with new numbers):
		// what the old one said no longer orders the new one's frames.
		for q := range u.qseq {
			u.qseq[q].Store(0)
		}
	}
	switch m.Type {
	case wire.TypeBFCPause, wire.TypeBFCResume:
		pause := m.Type == wire.TypeBFCPause
		if pause {
			s.m.pausesRx.Add(1)
		} else {
			s.m.resumesRx.Add(1)
		}
		q := int(m.Queue)
		if q >= s.nq {
			s.m.badQueueRx.Add(1)
			return
		}
		if !newer(&u.qseq[q], m.Seq) {
			s.m.staleRx.Add(1)
			return
		}
		b.setQueue(s, q, pause)
		if pause {
			u.lastRefresh.Store(now)
		}
	case wire.TypeBFCBitmap:
		s.m.bitmapsRx.Add(1)
		u.lastRefresh.Store(now)
		stale := false
		for q := 0; q < s.nq; q++ {
			if !newer(&u.qseq[q], m.Seq) {
				stale = true
				continue
			}
			b.setQueue(s, q, wire.BitmapGet(m.Bitmap, q))
		}
		if stale {
			s.m.staleRx.Add(1)
		}
		for q := s.nq; q < int(m.NQueues); q++ {
			if wire.BitmapGet(m.Bitmap, q) {
				s.m.badQueueRx.Add(1) // a queue this port does not have: counted once per frame
				break
			}
		}
	}
}

// newer records seq as queue state's newest message and reports true, or
// reports false if the state holds this or a newer one (RFC 1982 order).
func newer(st interface {
	Load() uint64
	CompareAndSwap(old, new uint64) bool
}, seq uint32) bool {
	for {
		old := st.Load()
		if old != 0 && !wire.SeqAfter(seq, uint32(old)) {
			return false
		}
		if st.CompareAndSwap(old, 1<<32|uint64(seq)) {
			return true
		}
	}
}

// setQueue pauses or resumes queue q of port s (any goroutine).
func (b *BFC) setQueue(s *port, q int, pause bool) {
	bit := uint64(1) << uint(q)
	if pause {
		if s.up.paused.Or(bit) == 0 {
			b.sw.TickSoon(s.worker, b) // the watchdog starts watching
		}
		s.sch.Pause(q)
	} else {
		s.up.paused.And(^bit)
		b.sw.ResumeQueue(s.idx, q)
	}
}

// watchdog resumes the queues of port s a neighbour paused when no bitmap
// or pause refreshed them for the watchdog bound, and forgets the
// neighbour's numbering (egress worker of s).
//
// The bound must be exceeded at two ticks with a pass of the worker in
// between: frames that arrived while the worker had no CPU wait in its rx
// ring until after the tick, and they may be the refresh.
func (b *BFC) watchdog(s *port, now int64) {
	u := &s.up
	if now-u.lastRefresh.Load() <= s.wdog {
		s.wdArmed = false
		return
	}
	if !s.wdArmed {
		s.wdArmed = true
		b.sw.TickSoon(s.worker, b)
		return
	}
	s.wdArmed = false
	if p := u.paused.Swap(0); p != 0 {
		s.m.watchdog.Add(uint64(bits.OnesCount64(p)))
		for q := 0; q < s.nq; q++ {
			if p&(1<<uint(q)) != 0 {
				b.sw.ResumeQueue(s.idx, q)
			}
		}
	}
	if u.sender.Swap(0) != 0 {
		for q := range u.qseq {
			u.qseq[q].Store(0)
		}
	}
}
