package tm

import "github.com/gswitch/gswitch/pkt"

// Send fills out, whose length is the room on the port's tx ring, with the
// frames that go to the ring at now, in order, and returns how many; only
// their Addr and Len are meaningful. Without a delay line those are the
// frames the lanes and the scheduler release (see release); with one,
// what they release goes onto the line, and out gets the frames on the
// line that are due; moved then reports whether any frame was released.
// Send runs on a port that is up; Flush on one that is down.
func (p *Port) Send(out []pkt.Packet, now int64) (n int, moved bool) {
	p.flushed = false
	dl := p.dline
	if dl == nil {
		n, _ = p.release(out, now)
		p.w.handDrops()
		return n, false
	}
	for n < len(out) {
		d, ok := dl.PopDue(now) // counts how late the frame leaves
		if !ok {
			break
		}
		out[n].Addr, out[n].Len = d.Addr, d.Len
		n++
	}
	held := p.w.held[:min(MaxBatch, dl.Free())]
	k, released := p.release(held, now)
	due := now + p.delayNs
	for i := range held[:k] {
		dl.Push(held[i].Addr, held[i].Len, due)
	}
	dl.Publish()
	p.w.handDrops()
	return n, released > 0
}

// release fills out with what may leave the port at now, as the shaper
// and len(out) allow: the control lane first, then the credit lane as its
// bucket allows, then the data scheduler. Data packets pass the
// mechanisms' Dequeued and Egress hooks (which may rewrite them: the
// shaper is charged for the final length, and those they drop or consume
// go to the Sink). It returns how many frames are in out, and how many
// left the lanes and the scheduler.
func (p *Port) release(out []pkt.Packet, now int64) (int, int) {
	w := p.w
	room := min(len(out), MaxBatch)
	p.idle = false
	// The lanes first. Every lane frame comes before every data packet:
	// once both lanes fail they stay so for this call (nothing is pushed
	// onto them meanwhile, and the credit lane's bucket only changes when
	// it sends).
	nl := 0
	for nl < room && p.shaper.Ready(now) {
		pk := &out[nl]
		if !p.ctrl.Pop(pk) && (p.credit == nil || !p.credit.Pop(now, pk)) {
			break
		}
		p.shaper.Take(pk.Len)
		nl++
	}
	nd := 0
	for nl+nd < room && p.shaper.Ready(now) {
		pk := &out[nl+nd]
		if !p.sched.Dequeue(pk) {
			p.idle = true // nothing eligible: the next arrival, emit or resume wakes the worker
			break
		}
		w.lens[nd] = pk.Len
		p.count(w.frames.rangeOf(pk.Addr), -1)
		p.shaper.Take(pk.Len)
		nd++
	}
	// Frames left for the shaper or for want of room (the batch, the tx
	// ring): the line stays busy, and time the worker is late for it may be
	// made up (shaper, Late service).
	p.shaper.Backlogged(!p.idle && (p.frames > 0 || !p.ctrl.Empty() || (p.credit != nil && !p.credit.Empty())))
	if l := p.shaper.TakeLate(); l > 0 {
		p.late.Add(uint64(l))
	}
	if nd == 0 {
		return nl, nl
	}
	data := out[nl : nl+nd]
	if len(p.dequeueH) > 0 || len(p.egressH) > 0 {
		b := &w.batch
		b.Pkts, b.Now = data, now
		for i := range b.Pkts {
			b.Pkts[i].Verdict = pkt.Forward
		}
		v := &p.view
		v.SetAdmitting(false)
		for _, h := range p.dequeueH {
			h.Dequeued(v, b)
		}
		for _, h := range p.egressH {
			h.Egress(v, b)
		}
		for i := range b.Pkts {
			if d := int64(b.Pkts[i].Len) - int64(w.lens[i]); d != 0 {
				p.shaper.Adjust(d) // an egress stage grew or shrank the frame
			}
		}
	}
	// Data an egress stage dropped or consumed goes; the rest closes up.
	k := nl
	for i := range data {
		pk := &data[i]
		if pk.Verdict != pkt.Forward {
			if pk.Verdict == pkt.Drop {
				w.drop(p.index, pk.Addr, pk.Reason)
			} else {
				w.free(p.index, pk.Addr)
			}
			continue
		}
		if k != nl+i {
			out[k] = *pk
		}
		k++
	}
	return k, nl + nd
}

// Flush is the egress pass of a port that is down: the first time since
// the port went down, it drops everything the port holds, each frame a
// port_down drop, and reports true; data packets are drops the port's
// mechanisms hear of (so, for example, pause counters come back down).
// Either way it publishes the data queues' and the control lane's depths.
func (p *Port) Flush(now int64) bool {
	did := !p.flushed
	if did {
		p.dropAll(now)
		p.flushed = true
		p.w.handDrops()
	}
	p.sched.Publish()
	p.ctrl.Publish()
	return did
}

// dropAll drops everything the port holds (Flush).
func (p *Port) dropAll(now int64) {
	w := p.w
	for p.ctrl.Pop(&w.pk) {
		w.drop(p.index, w.pk.Addr, pkt.ReasonPortDown)
	}
	if p.credit != nil {
		for p.credit.Remove(&w.pk) {
			w.drop(p.index, w.pk.Addr, pkt.ReasonPortDown)
		}
		p.credit.Reset()
	}
	if dl := p.dline; dl != nil {
		for dl.Len() > 0 {
			w.drop(p.index, dl.Pop().Addr, pkt.ReasonPortDown)
		}
		dl.Publish()
	}
	// Resume every queue so the scheduler gives up what a pause holds
	// back, then restore the pauses (they belong to whoever sent them).
	p.view.SetAdmitting(false)
	var paused uint64
	for q := 0; q < p.sched.NumQueues(); q++ {
		if p.sched.Paused(q) {
			paused |= 1 << q
			p.sched.Resume(q)
		}
	}
	for p.sched.Dequeue(&w.pk) {
		p.count(w.frames.rangeOf(w.pk.Addr), -1)
		p.dropAdmitted(&w.pk, pkt.ReasonPortDown, now)
	}
	for q := 0; q < p.sched.NumQueues(); q++ {
		if paused&(1<<q) != 0 {
			p.sched.Pause(q)
		}
	}
}

// SleepBound returns how long, at most bound, the port's egress worker may
// sleep after a pass at now that found nothing to do, for the port's sake:
// WakeBounds' two bounds in one.
func (p *Port) SleepBound(now, bound int64) int64 {
	timer, look := p.WakeBounds(now, bound, bound)
	return min(timer, look)
}

// WakeBounds returns how long, at most timer and look, the port's egress
// worker may sleep after a pass at now that found nothing to do, for the
// port's sake, in two parts. timer is when the port's next frame is due:
// the shaper or the credit lane lets it leave, or the first frame on the
// delay line is due; a worker that wakes after it is late (the fidelity
// metrics count by how much). look is when to look again without a frame
// being due: a port with frames eligible now (its tx ring was full).
// A port whose queues hold only paused frames sets no bound (a resume
// wakes the worker).
func (p *Port) WakeBounds(now, timer, look int64) (int64, int64) {
	if p.Queued() {
		wait := p.shaper.Wait(now)
		if p.credit != nil && !p.credit.Empty() {
			if cw := p.credit.wait(now); cw > wait {
				wait = cw
			}
		}
		switch {
		case wait > 0:
			timer = min(timer, wait)
		case p.idle:
			// Nothing eligible (the queues hold only paused frames):
			// an arrival, an emit or a resume wakes the worker.
		default:
			look = min(look, 20e3) // tx ring full: look again soon
		}
	}
	if dl := p.dline; dl != nil && dl.Len() > 0 {
		timer = min(timer, max(dl.Next()-now, 1))
	}
	return timer, look
}
