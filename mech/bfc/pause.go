package bfc

import (
	"math"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
)

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
