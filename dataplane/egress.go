package dataplane

import (
	"sync/atomic"

	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

// fromQueues maps a traffic-manager drop to its reason.
var fromQueues = [queues.NumDrops]pkt.Reason{
	queues.BufferFull: pkt.ReasonBufferFull, queues.PortLimit: pkt.ReasonPortLimit, queues.QueueLimit: pkt.ReasonQueueLimit,
	queues.Evicted: pkt.ReasonEvicted, queues.RoundOverflow: pkt.ReasonRoundOverflow,
}

// admit runs the port's admission hooks over p and gives it to the traffic
// manager: the data scheduler, or the control or credit lane the hooks
// chose (egress worker only).
func (w *worker) admit(port *Port, p *pkt.Packet, now int64) {
	if port.down.Load() {
		w.drop(port, p, pkt.ReasonPortDown)
		return
	}
	if p.Len > port.maxFrame {
		w.drop(port, p, pkt.ReasonTooLong)
		return
	}
	p.Verdict = pkt.Forward
	if p.Lane != pkt.LaneData {
		// Control and credit frames skip the admission hooks (queue
		// assignment, ranks, counters are about data) and go to their lane.
		if p.Lane == pkt.LaneControl || port.credit != nil {
			w.toLane(port, p, now)
			return
		}
		p.Lane = pkt.LaneData // no credit lane on this port: credits are data here
	}
	for _, h := range port.admit {
		h.Admit(port.Index, p, now)
		if p.Verdict != pkt.Forward {
			break
		}
	}
	switch p.Verdict {
	case pkt.Forward:
	case pkt.Consume:
		w.release(p.Addr)
		return
	default:
		w.dropAdmitted(port, p, p.Reason, now)
		return
	}
	switch p.Lane {
	case pkt.LaneControl:
		w.toLane(port, p, now)
		return
	case pkt.LaneCredit:
		if port.credit != nil {
			w.toLane(port, p, now)
			return
		}
		p.Lane = pkt.LaneData // no credit lane on this port: credits are data here
	}
	// Frame admission: the queues may hold only part of each worker's
	// frames (the rest keep the fill rings and the emit reserve going), and
	// one port only as many as are still free (a dynamic threshold on frames,
	// so two congested ports leave a third of them to the others).
	owner := w.s.workers[w.s.owner(p.Addr)]
	if owner.queued.Load()+w.qpend[owner.id] >= owner.queueLimit || port.frames >= w.s.frameLimit-w.s.queuedFrames.Load()-w.qpendAll {
		w.dropAdmitted(port, p, pkt.ReasonFrameLimit, now)
		return
	}
	// On a drop, *p is the packet to free: the arriving one, or the one it
	// evicted. Only a scheduler that evicts (an Evictor) can hand back
	// another packet, so only then is the arrival kept aside.
	if port.evictor != nil {
		w.arrival = *p
	}
	d := port.sched.Enqueue(p)
	if d == queues.Accepted {
		w.queuedOne(owner, port, 1)
		for _, h := range port.observe {
			h.Enqueued(port.Index, p, now)
		}
		return
	}
	if d == queues.Evicted {
		// The arrival is in; the evicted packet leaves the queues.
		w.queuedOne(owner, port, 1)
		for _, h := range port.observe {
			h.Enqueued(port.Index, &w.arrival, now)
		}
		w.queuedOne(w.s.workers[w.s.owner(p.Addr)], port, -1)
		w.dropAdmitted(port, p, pkt.ReasonEvicted, now)
		if port.evictor != nil {
			for port.evictor.MoreEvicted(&w.evictBuf) {
				w.queuedOne(w.s.workers[w.s.owner(w.evictBuf.Addr)], port, -1)
				w.dropAdmitted(port, &w.evictBuf, pkt.ReasonEvicted, now)
			}
		}
		return
	}
	w.dropAdmitted(port, p, fromQueues[d], now)
}

// queuedOne counts a frame of owner's range into (d = 1) or out of (d = -1)
// port's queues. The shared counters (owner.queued, Switch.queuedFrames)
// take the worker's sum once a pass (flushQueued): two atomic adds a frame
// each way cost a third of the per-frame time.
func (w *worker) queuedOne(owner *worker, port *Port, d int64) {
	w.qpend[owner.id] += d
	w.qpendAll += d
	port.frames += d
}

// flushQueued adds what this pass queued and dequeued to the shared
// counters (end of each pass).
func (w *worker) flushQueued() {
	for i, d := range w.qpend {
		if d != 0 {
			w.s.workers[i].queued.Add(d)
			w.qpend[i] = 0
		}
	}
	if w.qpendAll != 0 {
		w.s.queuedFrames.Add(w.qpendAll)
		w.qpendAll = 0
	}
}

// drop frees p, counting reason r on port.
func (w *worker) drop(port *Port, p *pkt.Packet, r pkt.Reason) {
	w.ctr[port.Index].drops[r].Add(1)
	w.release(p.Addr)
}

// dropAdmitted drops a packet that went through the port's admission hooks:
// the mechanisms observing the port hear of it first.
func (w *worker) dropAdmitted(port *Port, p *pkt.Packet, r pkt.Reason, now int64) {
	for _, h := range port.observe {
		h.Dropped(port.Index, p, r, now)
	}
	w.drop(port, p, r)
}

// toLane puts a frame on the port's control or credit lane (egress worker
// only) and reports whether it did. A full control lane drops the frame; a
// credit lane drops it, or may take it and drop one it queued before (see
// creditLane); drops are lane_full.
func (w *worker) toLane(port *Port, p *pkt.Packet, now int64) bool {
	var ok bool
	if p.Lane == pkt.LaneCredit && port.credit != nil {
		var evicted bool
		if ok, evicted = port.credit.push(p, &w.victim, now); evicted {
			port.credit.dropped.Add(1)
			w.drop(port, &w.victim, pkt.ReasonLaneFull)
		}
		if !ok {
			port.credit.dropped.Add(1)
		}
	} else {
		ok = port.ctrl.Push(p)
	}
	if !ok {
		w.drop(port, p, pkt.ReasonLaneFull)
	}
	return ok
}

// serve moves what other workers handed over into the port's lanes and
// scheduler, and sends what the shaper and the tx ring allow: the control
// lane first, then the credit lane as its bucket allows, then the data
// scheduler. Data packets pass the mechanisms' Dequeued and Egress hooks on
// the way out.
func (w *worker) serve(p *Port, now int64) bool {
	work := false
	for _, r := range p.emitIn {
		if r == nil {
			continue
		}
		for n := r.Pop(w.hpkts[:]); n > 0; n = r.Pop(w.hpkts[:]) {
			for i := 0; i < n; i++ {
				if p.down.Load() {
					w.drop(p, &w.hpkts[i], pkt.ReasonPortDown)
					continue
				}
				w.toLane(p, &w.hpkts[i], now)
			}
			work = true
		}
	}
	for _, r := range p.in {
		if r == nil {
			continue
		}
		for n := r.Pop(w.hpkts[:]); n > 0; n = r.Pop(w.hpkts[:]) {
			for i := 0; i < n; i++ {
				w.admit(p, &w.hpkts[i], now)
			}
			work = true
		}
	}
	if p.down.Load() || p.txDetached {
		if !p.flushed {
			w.flush(p, now)
			p.flushed = true
			work = true
		}
		p.sched.Publish()
		p.ctrl.Publish()
		return work
	}
	p.flushed = false
	txRoom := min(p.txLink.TxFree(), BatchSize)
	if w.s.sg {
		txRoom = min(p.txLink.TxFree()/int(w.s.slotChunks), BatchSize) // a frame may take a descriptor per UMEM frame of a slot
	}
	n := 0
	var bytes uint64
	// Frames on the wire (the link's delay) that are due leave first.
	for dl := p.dline; dl != nil && n < txRoom && dl.n > 0 && dl.head().due <= now; n++ {
		d := dl.pop()
		p.txDescs[n] = afxdp.Desc{Addr: d.addr, Len: d.len}
		bytes += uint64(d.len)
	}
	room := txRoom - n
	if p.dline != nil {
		room = min(BatchSize, p.dline.free())
	}
	nl, nd := 0, 0
	p.idle = false
	for nl+nd < room && p.shaper.Ready(now) {
		var pk *pkt.Packet
		switch {
		case p.ctrl.Pop(&w.laneOut[nl]):
			pk = &w.laneOut[nl]
			nl++
		case p.credit != nil && p.credit.ready(now):
			pk = &w.laneOut[nl]
			p.credit.q.Pop(pk)
			p.credit.bucket.Take(pk.Len)
			p.credit.sent.Add(1)
			p.credit.sentSome()
			nl++
		case p.sched.Dequeue(&w.dataOut[nd]):
			pk = &w.dataOut[nd]
			w.dataLen[nd] = pk.Len
			w.queuedOne(w.s.workers[w.s.owner(pk.Addr)], p, -1)
			nd++
		}
		if pk == nil {
			p.idle = true // nothing eligible: the next arrival, emit or resume wakes the worker
			break
		}
		p.shaper.Take(pk.Len)
	}
	// Frames left for the shaper or for want of room (the batch, the tx
	// ring): the line stays busy, and time the worker is late for it may be
	// made up (shaper, Late service).
	p.shaper.Backlogged(!p.idle && (p.frames > 0 || !p.ctrl.Empty() || (p.credit != nil && !p.credit.q.Empty())))
	if l := p.shaper.TakeLate(); l > 0 {
		w.ctr[p.Index].txLateNs.Add(uint64(l))
	}
	if nd > 0 && (len(p.observe) > 0 || len(p.egressH) > 0) {
		b := &w.batch
		b.Pkts, b.Now = w.dataOut[:nd], now
		for i := range b.Pkts {
			b.Pkts[i].Verdict = pkt.Forward
		}
		for _, h := range p.observe {
			h.Dequeued(p.Index, b)
		}
		for _, h := range p.egressH {
			h.Egress(p.Index, b)
		}
		for i := range b.Pkts {
			if d := int64(b.Pkts[i].Len) - int64(w.dataLen[i]); d != 0 {
				p.shaper.Adjust(d) // an egress stage grew or shrank the frame
			}
		}
	}
	// What left the lanes and the scheduler goes to the tx ring, or onto the
	// wire to arrive after the link's delay.
	due := now + p.delayNs
	for i := 0; i < nl; i++ {
		pk := &w.laneOut[i]
		if p.dline != nil {
			p.dline.push(pk.Addr, pk.Len, due)
			continue
		}
		p.txDescs[n] = afxdp.Desc{Addr: pk.Addr, Len: pk.Len}
		bytes += uint64(pk.Len)
		n++
	}
	for i := 0; i < nd; i++ {
		pk := &w.dataOut[i]
		if pk.Verdict != pkt.Forward {
			if pk.Verdict == pkt.Drop {
				w.drop(p, pk, pk.Reason)
			} else {
				w.release(pk.Addr)
			}
			continue
		}
		if p.dline != nil {
			p.dline.push(pk.Addr, pk.Len, due)
			continue
		}
		p.txDescs[n] = afxdp.Desc{Addr: pk.Addr, Len: pk.Len}
		bytes += uint64(pk.Len)
		n++
	}
	if p.dline != nil {
		p.dline.publish()
		if nl+nd > 0 {
			work = true
		}
	}
	if n > 0 {
		if p.capture.Load() != nil {
			for _, d := range p.txDescs[:n] {
				w.mirror(p, CaptureTx, w.s.mem[d.Addr:d.Addr+uint64(d.Len)], now)
			}
		}
		if w.s.sg {
			p.txLink.Transmit(w.splitTx(p.txDescs[:n])) // takes them all: room was checked for whole slots
		} else {
			p.txLink.Transmit(p.txDescs[:n]) // takes all n: room was checked
		}
		p.txOutstanding.Add(int64(n))
		c := &w.ctr[p.Index]
		c.txPackets.Add(uint64(n))
		c.txBytes.Add(bytes)
		work = true
	}
	if n > 0 || p.txOutstanding.Load() > 0 {
		p.txLink.Kick()
	}
	p.sched.Publish()
	p.ctrl.Publish()
	if p.credit != nil {
		p.credit.bucket.Backlogged(!p.credit.q.Empty())
		p.credit.q.Publish()
		p.credit.tokens.Store(p.credit.bucket.Tokens(now))
	}
	return work
}

// push puts an arriving credit p on the lane at now, at the queue length
// configured (the ring under it may be larger), and reports whether it
// did (egress worker only). A full lane either drops p (queued false) or,
// with the probability of reservoir sampling, takes p in place of one it
// admitted since its last send, which it moves into victim (evicted true)
// for the caller to drop (see creditLane).
func (c *creditLane) push(p, victim *pkt.Packet, now int64) (queued, evicted bool) {
	if c.random && c.early(now) {
		c.earlyDrops.Add(1)
		return false, false // not among the arrivals that compete for room
	}
	c.arrived++
	if c.q.Packets() < c.limit && c.q.Push(p) {
		c.admits = min(c.admits+1, fairWindow)
		return true, false
	}
	if c.admits == 0 {
		return false, false
	}
	j := uint32(c.next() >> 32 * uint64(c.arrived) >> 32) // uniform in [0, arrived)
	if j >= c.admits || !c.q.ReplaceFromTail(j, p, victim) {
		return false, false
	}
	return true, true
}

// early folds the queue's length into its average and draws whether an
// arriving credit is dropped before the queue is full: with probability
// (avg - limit/2) / (limit - limit/2), clamped to [0, 1] (mech.CreditDropRandom).
// The threshold is half the queue, not less: at a quarter, a lane that was
// not the flows' bottleneck (the multi-bottleneck's swl) dropped early
// whenever its credits bunched. An empty lane's average decays as if a
// credit had arrived to it every credit time since the last arrival (as
// RED's does over idle time, so a burst after a pause is not dropped for
// the queue of before).
func (c *creditLane) early(now int64) bool {
	if c.q.Packets() == 0 && c.avg > 0 {
		for m := (now - c.lastArrival) / c.gap; m > 0 && c.avg > 0; m-- {
			c.avg -= (c.avg + 15) / 16
		}
	}
	c.lastArrival = now
	c.avg += (int64(c.q.Packets())<<8 - c.avg) / 16 // weight 1/16 per arrival
	lo, hi := int64(c.limit)<<7, int64(c.limit)<<8  // half the queue, the queue; 1/256 credits
	if c.avg <= lo {
		return false
	}
	r := int64(c.next() >> 40) // uniform in [0, 2^24)
	return r*(hi-lo) < (c.avg-lo)<<24
}

// next steps the lane's xorshift generator.
func (c *creditLane) next() uint64 {
	c.rng ^= c.rng << 13
	c.rng ^= c.rng >> 7
	c.rng ^= c.rng << 17
	return c.rng
}

// sentSome ends a pass's competition for room: the credits that arrive
// next compete for what this send freed (egress worker only).
func (c *creditLane) sentSome() { c.arrived, c.admits = 0, 0 }

// reset forgets the lane's history when the port went down and its credits
// were dropped: no competition, no average, no banked catch-up.
func (c *creditLane) reset() {
	c.sentSome()
	c.avg = 0
	c.bucket.Backlogged(false)
}

// ready reports whether the lane's head credit may leave at now: the
// bucket holds its whole cost (egress worker only).
func (c *creditLane) ready(now int64) bool {
	h, ok := c.q.Head()
	return ok && c.bucket.ReadyFor(now, h.Len)
}

// wait is how long until the head credit may leave (0: now or nothing queued).
func (c *creditLane) wait(now int64) int64 {
	h, ok := c.q.Head()
	if !ok {
		return 0
	}
	return c.bucket.WaitFor(now, h.Len)
}

// flush drops everything queued on a port that went down: each data packet
// is a port_down drop that the port's mechanisms hear of (so, for example,
// pause counters come back down).
func (w *worker) flush(p *Port, now int64) {
	for {
		if !p.ctrl.Pop(&w.pk) {
			break
		}
		w.drop(p, &w.pk, pkt.ReasonPortDown)
	}
	if p.credit != nil {
		for p.credit.q.Pop(&w.pk) {
			w.drop(p, &w.pk, pkt.ReasonPortDown)
		}
		p.credit.reset()
	}
	if dl := p.dline; dl != nil {
		for dl.n > 0 {
			d := dl.pop()
			w.ctr[p.Index].drops[pkt.ReasonPortDown].Add(1)
			w.release(d.addr)
		}
		dl.publish()
	}
	// Resume every queue so the scheduler gives up what a pause holds
	// back, then restore the pauses (they belong to whoever sent them).
	var paused uint64
	for q := 0; q < p.sched.NumQueues(); q++ {
		if p.sched.Paused(q) {
			paused |= 1 << q
			p.sched.Resume(q)
		}
	}
	for p.sched.Dequeue(&w.pk) {
		w.queuedOne(w.s.workers[w.s.owner(w.pk.Addr)], p, -1)
		w.dropAdmitted(p, &w.pk, pkt.ReasonPortDown, now)
	}
	for q := 0; q < p.sched.NumQueues(); q++ {
		if paused&(1<<q) != 0 {
			p.sched.Pause(q)
		}
	}
}

// delayLine is the wire of a port with a propagation delay: frames the
// shaper has released wait here until they are due, in order (egress
// worker only; the count is published for Switch.Frames).
type delayLine struct {
	buf    []delayed
	mask   uint32
	hd, tl uint32
	n      int
	pub    atomic.Int64
}

type delayed struct {
	addr uint64
	len  uint32
	due  int64
}

func newDelayLine(size int) *delayLine {
	n := nextPow2(size)
	return &delayLine{buf: make([]delayed, n), mask: uint32(n - 1)}
}

func (d *delayLine) free() int      { return len(d.buf) - d.n }
func (d *delayLine) head() *delayed { return &d.buf[d.hd&d.mask] }
func (d *delayLine) publish()       { d.pub.Store(int64(d.n)) }
func (d *delayLine) push(addr uint64, l uint32, due int64) {
	d.buf[d.tl&d.mask] = delayed{addr, l, due}
	d.tl++
	d.n++
}
func (d *delayLine) pop() delayed {
	x := d.buf[d.hd&d.mask]
	d.hd++
	d.n--
	return x
}
