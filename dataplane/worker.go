package dataplane

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/dataplane/ring"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"golang.org/x/sys/unix"
)

// rxQueue is one socket a worker receives on.
type rxQueue struct {
	link     Link
	port     int
	queue    int
	inFill   int        // frames on the fill ring (given minus received)
	detached bool       // the link's device went away: reclaimed, never touched again
	dly      *delayLine // frames received on a port with rx_delay, until they are due

	// A multi-buffer frame being gathered into a jumbo slot (Switch.sg): its
	// buffers may arrive over several passes.
	slot    uint64 // the slot, if hasSlot
	slotOff uint64 // where the frame starts in the slot
	slotLen uint32 // bytes gathered so far
	slotBad bool   // the frame is being dropped (too long, or no slot was free): skip to its last buffer
	inSlot  bool   // a frame is in progress
	hasSlot bool   // it holds slot (a frame dropped for want of a slot has none)
}

// receiveDelayed is reception on a port whose link delays frames toward the
// switch (rx_delay): what arrives waits on the queue's delay line and
// enters the pipeline when due, in order. A full line leaves frames on the
// rx ring (the kernel drops when that fills, as a link would).
func (w *worker) receiveDelayed(q *rxQueue, now int64) bool {
	work := false
	dl := q.dly
	if room := min(dl.free(), BatchSize); room > 0 {
		if n := q.link.Receive(w.rxDescs[:room]); n > 0 {
			q.inFill -= n
			if w.s.sg {
				n = w.gather(q, n)
			}
			due := now + w.s.ports[q.port].rxDelayNs
			for _, d := range w.rxDescs[:n] {
				dl.push(d.Addr, d.Len, due)
			}
			work = true
		}
	}
	n := 0
	for n < BatchSize && dl.n > 0 && dl.head().due <= now {
		d := dl.pop()
		w.rxDescs[n] = afxdp.Desc{Addr: d.addr, Len: d.len}
		n++
	}
	dl.publish()
	if n > 0 {
		w.ingress(q.port, n, now)
		work = true
	}
	return work
}

// portCtr are a worker's counters for one port. Only the worker writes them.
type portCtr struct {
	rxPackets, rxBytes, txPackets, txBytes, flooded atomic.Uint64
	txLateNs                                        atomic.Uint64 // line time the shaper lost while frames waited (egress worker)
	drops                                           [pkt.MaxReasons]atomic.Uint64
	malformed                                       [pkt.NumErrs]atomic.Uint64
	controlRx, forged, emitted, emitFailed          [256]atomic.Uint64
	_                                               [64]byte
}

type ticker struct {
	h    mech.TickHook
	next int64
	soon atomic.Bool // TickSoon: run at the next pass (any goroutine sets it)
}

// worker runs the pipeline for the sockets and egress ports it owns. Every
// field is private to the worker's goroutine except the atomics, which
// other goroutines read (metrics) or write (sleeping is read by producers,
// queued by the workers whose queues hold this worker's frames).
type worker struct {
	id     int
	s      *Switch
	rx     []*rxQueue
	egress []*Port

	free         []uint64             // free frames of this worker's range (a stack)
	lo, hi       uint64               // this worker's frame range [lo, hi) as UMEM offsets
	jlo          uint64               // its jumbo slots are [jlo, hi) (jlo = hi without them); fixed in New, any goroutine reads it
	jfree        []uint64             // free jumbo slots of this range (a stack)
	txSplit      []afxdp.Desc         // scratch: a tx batch cut into one descriptor per UMEM frame (Switch.sg)
	ret          []*ring.SPSC[uint64] // ret[w]: frames worker w gives back to this one
	outRet       [][]uint64           // frames to give back to worker w, staged
	out          [][]pkt.Packet       // packets for port i, staged (handed over, or admitted here)
	ctr          []portCtr            // per port
	fillTarget   int                  // frames to keep on each fill ring
	emitReserve  int                  // free frames only emissions may take
	floodReserve int                  // free frames (beyond emitReserve) only flooded copies and emissions may take
	queueLimit   int64                // most frames of this range the queues may hold
	queued       atomic.Int64         // frames of this range in queues and lanes (any egress worker adds, once a pass)
	qpend        []int64              // this pass's queued frames per owner worker, not yet in their queued (this worker only)
	qpendAll     int64                // their sum, not yet in Switch.queuedFrames
	tickers      []ticker
	gen          uint64 // the switch's stateGen this worker has acted on
	em           emitter

	rxDescs  [BatchSize]afxdp.Desc // scratch: one rx batch
	pkts     [BatchSize]pkt.Packet // scratch: the batch's packets
	hpkts    [BatchSize]pkt.Packet // scratch: packets popped from handoff and emit rings
	laneOut  [BatchSize]pkt.Packet // scratch: frames pulled from the control and credit lanes
	dataOut  [BatchSize]pkt.Packet // scratch: packets pulled from the scheduler
	dataLen  [BatchSize]uint32     // scratch: their lengths as the shaper charged them
	addrs    [BatchSize]uint64     // scratch: completions, returns
	reclaim  []uint64              // scratch: frames reclaimed from a link whose device went away
	lastICMP int64                 // when this worker last sent an ICMP error (rate limit)
	unrouted [256]atomic.Uint64    // emissions to be routed that found no way out, by kind
	flood    []uint16              // scratch: ports a frame floods to (one per port)
	pk       pkt.Packet            // scratch: a packet held across an interface call (a local would escape)
	victim   pkt.Packet            // scratch: a credit a full lane gives up (creditLane.push)
	one      [1]pkt.Packet         // scratch: a batch of one for control hooks
	batch    mech.Batch            // scratch: the batch handed to hooks
	ctlBatch mech.Batch            // scratch: a batch of one control frame
	evictBuf pkt.Packet
	arrival  pkt.Packet // scratch: a packet as it arrived at the scheduler

	efd        int // eventfd other workers write to wake this one
	wone       uint64
	rbuf       uint64
	pollfds    []unix.PollFd
	pollPort   []int // port of each pollfd (-1: the eventfd)
	unpollable bool  // some link has no descriptor to poll (in-memory links)
	ts         unix.Timespec
	sleeping   atomic.Bool
	resumed    atomic.Bool // a paused queue of one of its ports was resumed (any goroutine): pass again before sleeping

	freeLen, inFill, staged atomic.Int64
	assembling              atomic.Int64 // jumbo slots of multi-buffer frames still arriving
	passes, sleeps, wakeups atomic.Uint64
	spinning                atomic.Bool // the worker spins before it sleeps (adaptive spinning; for metrics)
}

func newWorker(s *Switch, id int) (*worker, error) {
	w := &worker{id: id, s: s, wone: 1, lastICMP: -1e18}
	w.em.w = w
	fs := s.frameSize
	w.lo = uint64(id) * uint64(s.perWorker) * fs
	w.hi = w.lo + uint64(s.perWorker)*fs
	if id == s.cfg.Workers-1 {
		w.hi = uint64(s.numFrames) * fs
	}
	w.jlo = w.hi - s.slotsPer*s.slotBytes
	n := int((w.jlo - w.lo) / fs) // frames outside the jumbo slots
	w.free = make([]uint64, 0, n)
	for a := w.jlo; a > w.lo; a -= fs { // lowest addresses on top
		w.free = append(w.free, a-fs)
	}
	if s.sg {
		w.jfree = make([]uint64, 0, s.slotsPer)
		for a := w.hi; a > w.jlo; a -= s.slotBytes {
			w.jfree = append(w.jfree, a-s.slotBytes)
		}
		w.txSplit = make([]afxdp.Desc, 2*BatchSize*int(s.slotChunks))
	}
	w.emitReserve = max(n/64, BatchSize)
	w.floodReserve = max(n/16, BatchSize)
	w.queueLimit = int64(float64(n+len(w.jfree)) * s.cfg.QueueFrames)
	w.ret = make([]*ring.SPSC[uint64], s.cfg.Workers)
	w.outRet = make([][]uint64, s.cfg.Workers)
	w.qpend = make([]int64, s.cfg.Workers)
	for o := 0; o < s.cfg.Workers; o++ {
		if o == id {
			continue
		}
		// As large as this worker's range: all of its frames could be coming back at once.
		r, err := ring.New[uint64](nextPow2(n))
		if err != nil {
			return nil, err
		}
		w.ret[o] = r
		w.outRet[o] = make([]uint64, 0, 4*BatchSize)
	}
	w.out = make([][]pkt.Packet, len(s.ports))
	for i := range w.out {
		w.out[i] = make([]pkt.Packet, 0, BatchSize)
	}
	w.flood = make([]uint16, len(s.ports))
	w.ctr = make([]portCtr, len(s.ports))
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w.efd = efd
	return w, nil
}

// prime sets fill targets once the worker knows its sockets.
func (w *worker) prime() {
	w.batch.Mem = w.s.mem
	w.batch.Worker = w.id
	if len(w.rx) > 0 {
		n := len(w.free)
		w.fillTarget = w.s.cfg.FillTarget
		if w.fillTarget == 0 {
			w.fillTarget = min(int(afxdp.DefaultRingSizes.Fill), (n-w.emitReserve-w.floodReserve)/2/len(w.rx))
		}
		w.fillTarget = max(w.fillTarget, BatchSize)
	}
	w.buildPoll()
	w.publish()
}

// buildPoll lists the fds the worker sleeps on: its sockets of ports that
// are up, and its eventfd. A socket whose interface went away polls as
// readable (POLLERR) forever, so it must not be in the set.
func (w *worker) buildPoll() {
	w.pollfds, w.pollPort = w.pollfds[:0], w.pollPort[:0]
	for _, q := range w.rx {
		if q.detached {
			continue
		}
		if fd := q.link.FD(); fd >= 0 && !w.s.ports[q.port].down.Load() {
			w.pollfds = append(w.pollfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			w.pollPort = append(w.pollPort, q.port)
		}
	}
	w.pollfds = append(w.pollfds, unix.PollFd{Fd: int32(w.efd), Events: unix.POLLIN})
	w.pollPort = append(w.pollPort, -1)
	w.unpollable = false
	for _, q := range w.rx {
		if !q.detached && q.link.FD() < 0 {
			w.unpollable = true
		}
	}
}

// run is the worker's loop: pass after pass, sleeping when idle, after
// spinning up to SpinTime while spinning pays (spin.go).
func (w *worker) run() {
	s := w.s
	spin := max(int64(s.cfg.SpinTime), 0)
	sp := newSpinner()
	last := s.clock.Now()
	idle := false // the passes since last found nothing
	for !s.stopping.Load() {
		now := s.clock.Now()
		if w.pass(now) {
			if idle && spin > 0 {
				sp.hit() // the spin ended in work
			}
			idle = false
			last = now
			continue
		}
		idle = true
		if s.cfg.BusyPoll || (now-last < spin && sp.on()) {
			continue
		}
		w.spinning.Store(sp.on() && spin > 0)
		w.sleep(now)
		last = s.clock.Now()
		if spin > 0 {
			if last-now < spin {
				sp.hit() // woken soon: a spin would have caught it
			} else {
				sp.miss()
			}
		}
		idle = false
	}
}

// pass runs every stage once over what is ready and reports whether it did anything.
func (w *worker) pass(now int64) bool {
	work := false
	if g := w.s.stateGen.Load(); g != w.gen {
		w.gen = g
		w.linkState()
		w.applySettings()
		w.buildPoll()
		work = true
	}
	// Frames other workers are done with come home.
	for _, r := range w.ret {
		if r == nil {
			continue
		}
		for n := r.Pop(w.addrs[:]); n > 0; n = r.Pop(w.addrs[:]) {
			if w.s.sg { // slots go back on their own list
				for _, a := range w.addrs[:n] {
					w.release(a)
				}
			} else {
				w.free = append(w.free, w.addrs[:n]...)
			}
			work = true
		}
	}
	// Sent frames come back from the tx side.
	for _, p := range w.egress {
		if p.txDetached {
			continue
		}
		if n := p.txLink.Complete(w.addrs[:]); n > 0 {
			if w.s.sg {
				n = w.completeChains(n)
			}
			p.txOutstanding.Add(int64(-n))
			for _, a := range w.addrs[:n] {
				w.release(a)
			}
			work = true
		}
	}
	// Mechanisms' timers.
	for i := range w.tickers {
		t := &w.tickers[i]
		if now >= t.next || t.soon.Load() {
			t.soon.Store(false)
			w.batch.Now = now
			t.next = t.h.Tick(w.id, now)
			work = true
		}
	}
	// Parse, ingress stages and dispatch, a batch per socket.
	for _, q := range w.rx {
		if q.detached || w.s.ports[q.port].down.Load() {
			continue
		}
		w.refill(q)
		if q.dly != nil {
			if w.receiveDelayed(q, now) {
				work = true
			}
			continue
		}
		n := q.link.Receive(w.rxDescs[:])
		if n == 0 {
			continue
		}
		q.inFill -= n
		if w.s.sg {
			if n = w.gather(q, n); n == 0 {
				work = true
				continue
			}
		}
		w.ingress(q.port, n, now)
		work = true
	}
	// Traffic manager and egress.
	for _, p := range w.egress {
		if w.serve(p, now) {
			work = true
		}
	}
	for o := range w.outRet {
		if len(w.outRet[o]) > 0 {
			w.flushReturn(o)
		}
	}
	w.flushQueued()
	w.publish()
	w.passes.Add(1)
	return work
}

// linkState acts on ports whose interfaces went away (DetachPort) or came
// back (AttachPort) for the links this worker owns: it reclaims a gone
// link's frames (and, for the port's first link, the transmit side, which
// this worker owns as the port's egress worker), and takes up new links.
func (w *worker) linkState() {
	for _, q := range w.rx {
		p := w.s.ports[q.port]
		if p.detachReq.Load() && !q.detached {
			w.reclaim = q.link.Reclaim(w.reclaim[:0])
			for _, a := range w.reclaim {
				if !w.s.chainTail(a) { // a chain on the tx or completion ring is one frame, its first buffer
					w.release(a)
				}
			}
			w.endSlot(q, false)
			rx, tx := q.link.Outstanding()
			p.lost.Add(int64(rx + tx))
			for q.dly != nil && q.dly.n > 0 {
				w.release(q.dly.pop().addr)
			}
			if q.dly != nil {
				q.dly.publish()
			}
			if q.queue == 0 {
				p.txDetached = true
				p.txOutstanding.Store(0)
			}
			q.inFill = 0
			q.detached = true
			p.detachAcks.Add(1)
		}
		if nl := p.newLinks.Load(); q.detached && nl != nil {
			q.link = (*nl)[q.queue]
			q.detached = false
			if q.queue == 0 {
				p.txLink = q.link
				p.txDetached = false
			}
			if int(p.attachAcks.Add(1)) == len(*nl) {
				p.links.Store(nl)
				p.newLinks.Store(nil)
				p.detachReq.Store(false)
			}
		}
	}
}

// publish stores the worker's frame gauges for Switch.Frames.
func (w *worker) publish() {
	w.freeLen.Store(int64(len(w.free) + len(w.jfree)))
	f := 0
	for _, q := range w.rx {
		f += q.inFill
	}
	w.inFill.Store(int64(f))
	st := 0
	for _, o := range w.outRet {
		st += len(o)
	}
	w.staged.Store(int64(st))
}

// refill tops the socket's fill ring up to the target from the free list,
// leaving the reserves for flooded copies and emitted frames.
func (w *worker) refill(q *rxQueue) {
	want := min(w.fillTarget-q.inFill, len(w.free)-w.emitReserve-w.floodReserve)
	if want < BatchSize/4 {
		return
	}
	top := len(w.free)
	got := q.link.Fill(w.free[top-want:])
	if got == 0 {
		return
	}
	// Fill took w.free[top-want : top-want+got]; close the gap.
	copy(w.free[top-want:], w.free[top-want+got:])
	w.free = w.free[:top-got]
	q.inFill += got
	q.link.WakeFill()
}

// alloc takes a free frame of this worker's range, keeping keep frames back.
func (w *worker) alloc(keep int) (uint64, bool) {
	if len(w.free) <= keep {
		return 0, false
	}
	a := w.free[len(w.free)-1]
	w.free = w.free[:len(w.free)-1]
	return a, true
}

// release gives a frame back to the worker that owns it.
func (w *worker) release(addr uint64) {
	base := addr &^ (w.s.frameSize - 1)
	if base >= w.lo && base < w.hi {
		if base >= w.jlo { // a jumbo slot (never without Switch.sg: jlo = hi)
			w.jfree = append(w.jfree, w.slotAt(base))
			return
		}
		w.free = append(w.free, base)
		return
	}
	o := w.s.owner(base)
	w.outRet[o] = append(w.outRet[o], base)
	if len(w.outRet[o]) == cap(w.outRet[o]) {
		w.flushReturn(o)
	}
}

// slotAt is the jumbo slot of this worker's range that holds addr (in [jlo, hi)).
func (w *worker) slotAt(addr uint64) uint64 {
	return w.jlo + (addr-w.jlo)/w.s.slotBytes*w.s.slotBytes
}

// flushReturn pushes staged frames onto worker o's return ring. The ring
// holds o's whole range, so everything fits; anything left stays staged.
func (w *worker) flushReturn(o int) {
	st := w.outRet[o]
	n := w.s.workers[o].ret[w.id].Push(st)
	w.outRet[o] = st[:copy(st, st[n:])]
	if n > 0 {
		w.s.workers[o].wakeIfSleeping()
	}
}

// wakeIfSleeping writes the worker's eventfd if it is (about to be) asleep.
func (w *worker) wakeIfSleeping() {
	if w.sleeping.Load() {
		w.wake()
	}
}

func (w *worker) wake() {
	if w.efd >= 0 {
		syscall.RawSyscall(unix.SYS_WRITE, uintptr(w.efd), uintptr(unsafe.Pointer(&w.wone)), 8)
	}
}

// sleep blocks in ppoll until a socket has frames, another worker hands
// over work, the next shaped frame may leave or a mechanism's timer is due.
func (w *worker) sleep(now int64) {
	timeout := w.sleepTimeout(now)
	if timeout <= 0 {
		return
	}
	w.sleeping.Store(true)
	// A producer that pushed before seeing sleeping=true did not wake us: look once more.
	if w.inboundPending() || w.s.stateGen.Load() != w.gen {
		w.sleeping.Store(false)
		return
	}
	w.sleeps.Add(1)
	w.ts = unix.NsecToTimespec(timeout)
	n, _ := unix.Ppoll(w.pollfds, &w.ts, nil)
	w.sleeping.Store(false)
	if n > 0 {
		w.wakeups.Add(1)
		for i := range w.pollfds {
			re := w.pollfds[i].Revents
			if w.pollPort[i] < 0 {
				// The eventfd: drain it only when it was written. A system
				// call costs 10-20 µs in some guests, and most wake-ups
				// are a socket's.
				if re&unix.POLLIN != 0 {
					syscall.RawSyscall(unix.SYS_READ, uintptr(w.efd), uintptr(unsafe.Pointer(&w.rbuf)), 8)
				}
				continue
			}
			// An error on a socket (its interface went away) would wake us
			// on every poll: take the socket out until its port comes back.
			if re&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				w.s.SetPortDown(w.pollPort[i], true)
			}
		}
	}
}

// sleepTimeout is how long the worker may sleep after a pass at now that
// found nothing to do: until the first timer it has (a shaped frame, a
// credit, the wire's delay, a mechanism's tick), or 0 to pass again at
// once.
func (w *worker) sleepTimeout(now int64) int64 {
	// Nothing to do on a timer: sleep until woken (a socket, another worker,
	// a port state change). The bound only guards against a wake-up lost
	// to a bug; an idle switch must cost nothing, so it is long.
	timeout := int64(1e9)
	for _, p := range w.egress {
		if queued(p) {
			wait := p.shaper.Wait(now)
			if p.credit != nil && !p.credit.q.Empty() {
				if cw := p.credit.wait(now); cw > wait {
					wait = cw
				}
			}
			switch {
			case wait > 0:
				timeout = min(timeout, wait)
			case p.idle:
				// Nothing eligible (the queues hold only paused frames):
				// an arrival, an emit or a resume (ResumeQueue) wakes us.
			default:
				timeout = min(timeout, 20e3) // tx ring full: look again soon
			}
		}
		if dl := p.dline; dl != nil && dl.n > 0 {
			timeout = min(timeout, max(dl.head().due-now, 1))
		}
		if p.txOutstanding.Load() > 0 && !p.down.Load() {
			timeout = min(timeout, 200e3) // completions to reap (a down port's tx ring does not move)
		}
	}
	for i := range w.tickers {
		timeout = min(timeout, max(w.tickers[i].next-now, 0))
	}
	for _, q := range w.rx {
		if q.dly != nil && q.dly.n > 0 {
			timeout = min(timeout, max(q.dly.head().due-now, 1))
		}
	}
	if w.unpollable {
		timeout = min(timeout, 1e6) // a link with no descriptor cannot wake us: look every millisecond
	}
	return timeout
}

func (w *worker) inboundPending() bool {
	if w.resumed.Swap(false) {
		return true
	}
	for i := range w.tickers {
		if w.tickers[i].soon.Load() {
			return true
		}
	}
	for _, r := range w.ret {
		if r != nil && r.Len() > 0 {
			return true
		}
	}
	for _, p := range w.egress {
		for _, r := range p.in {
			if r != nil && r.Len() > 0 {
				return true
			}
		}
		for _, r := range p.emitIn {
			if r != nil && r.Len() > 0 {
				return true
			}
		}
	}
	return false
}

func queued(p *Port) bool {
	if !p.ctrl.Empty() {
		return true
	}
	if p.credit != nil && !p.credit.q.Empty() {
		return true
	}
	for q := 0; q < p.sched.NumQueues(); q++ {
		if _, n := p.sched.Depth(q); n > 0 {
			return true
		}
	}
	return false
}
