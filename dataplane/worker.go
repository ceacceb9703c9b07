package dataplane

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/dataplane/pkt"
	"github.com/gswitch/gswitch/dataplane/ring"
	"github.com/gswitch/gswitch/queues"
	"golang.org/x/sys/unix"
)

// rxQueue is one socket a worker receives on.
type rxQueue struct {
	link   Link
	port   int
	queue  int
	inFill int // frames on the fill ring (given minus received)
}

// portCtr are a worker's counters for one port. Only the worker writes them.
type portCtr struct {
	rxPackets, rxBytes, txPackets, txBytes, flooded atomic.Uint64
	drops                                           [NumDropReasons]atomic.Uint64
	malformed                                       [pkt.NumErrs]atomic.Uint64
	_                                               [64]byte
}

// worker runs the pipeline for the sockets and egress ports it owns. Every
// field is private to the worker's goroutine except the atomics, which
// other goroutines read (metrics) or write (sleeping is read by producers).
type worker struct {
	id     int
	s      *Switch
	rx     []*rxQueue
	egress []*Port

	free       []uint64              // free frames of this worker's range (a stack)
	lo, hi     uint64                // this worker's frame range [lo, hi) as UMEM offsets
	ret        []*ring.SPSC[uint64]  // ret[w]: frames worker w gives back to this one
	outRet     [][]uint64            // frames to give back to worker w, staged
	handoff    [][]pkt.Packet        // packets for port i's egress worker, staged
	ctr        []portCtr             // per port
	fillTarget int                   // frames to keep on each fill ring
	reserve    int                   // free frames kept back from fill rings (flood copies)
	rxDescs    [BatchSize]afxdp.Desc // scratch: one rx batch
	pkts       [BatchSize]pkt.Packet // scratch: the batch's packets
	hpkts      [BatchSize]pkt.Packet // scratch: packets popped from handoff rings
	addrs      [BatchSize]uint64     // scratch: completions, returns
	flood      [BatchSize]uint16     // scratch: ports a frame floods to
	pk         pkt.Packet            // scratch: a dequeued packet or a flooded copy (a local would escape through the Scheduler interface)

	efd      int // eventfd other workers write to wake this one
	one      uint64
	rbuf     uint64
	pollfds  []unix.PollFd
	ts       unix.Timespec
	sleeping atomic.Bool

	freeLen, inFill, staged atomic.Int64
	passes, sleeps, wakeups atomic.Uint64
}

func newWorker(s *Switch, id int) (*worker, error) {
	w := &worker{id: id, s: s, one: 1}
	fs := s.frameSize
	w.lo = uint64(id) * uint64(s.perWorker) * fs
	w.hi = w.lo + uint64(s.perWorker)*fs
	if id == s.cfg.Workers-1 {
		w.hi = uint64(s.numFrames) * fs
	}
	n := int((w.hi - w.lo) / fs)
	w.free = make([]uint64, 0, n)
	for a := w.hi; a > w.lo; a -= fs { // lowest addresses on top
		w.free = append(w.free, a-fs)
	}
	w.reserve = max(n/8, BatchSize)
	w.ret = make([]*ring.SPSC[uint64], s.cfg.Workers)
	w.outRet = make([][]uint64, s.cfg.Workers)
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
	w.handoff = make([][]pkt.Packet, len(s.ports))
	for i := range w.handoff {
		w.handoff[i] = make([]pkt.Packet, 0, BatchSize)
	}
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
	if len(w.rx) == 0 {
		return
	}
	n := len(w.free)
	w.fillTarget = w.s.cfg.FillTarget
	if w.fillTarget == 0 {
		w.fillTarget = min(int(afxdp.DefaultRingSizes.Fill), (n-w.reserve)/2/len(w.rx))
	}
	w.fillTarget = max(w.fillTarget, BatchSize)
	for _, q := range w.rx {
		if fd := q.link.FD(); fd >= 0 {
			w.pollfds = append(w.pollfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
	}
	w.pollfds = append(w.pollfds, unix.PollFd{Fd: int32(w.efd), Events: unix.POLLIN})
	w.publish()
}

// run is the worker's loop: pass after pass, sleeping when idle.
func (w *worker) run() {
	s := w.s
	spin := int64(s.cfg.SpinTime)
	last := s.clock.Now()
	for !s.stopping.Load() {
		now := s.clock.Now()
		if w.pass(now) {
			last = now
			continue
		}
		if s.cfg.BusyPoll || now-last < spin {
			continue
		}
		w.sleep(now)
		last = s.clock.Now()
	}
}

// pass runs every stage once over what is ready and reports whether it did anything.
func (w *worker) pass(now int64) bool {
	work := false
	// Frames other workers are done with come home.
	for _, r := range w.ret {
		if r == nil {
			continue
		}
		for n := r.Pop(w.addrs[:]); n > 0; n = r.Pop(w.addrs[:]) {
			w.free = append(w.free, w.addrs[:n]...)
			work = true
		}
	}
	// Sent frames come back from the tx side.
	for _, p := range w.egress {
		if n := p.txLink.Complete(w.addrs[:]); n > 0 {
			p.txOutstanding.Add(int64(-n))
			for _, a := range w.addrs[:n] {
				w.release(a)
			}
			work = true
		}
	}
	// Parse and ingress, a batch per socket.
	for _, q := range w.rx {
		w.refill(q)
		n := q.link.Receive(w.rxDescs[:])
		if n == 0 {
			continue
		}
		q.inFill -= n
		w.ingress(q.port, n, now)
		work = true
	}
	// Traffic manager and egress.
	for _, p := range w.egress {
		if w.egressPort(p, now) {
			work = true
		}
	}
	for o := range w.outRet {
		if len(w.outRet[o]) > 0 {
			w.flushReturn(o)
		}
	}
	w.publish()
	w.passes.Add(1)
	return work
}

// publish stores the worker's frame gauges for Switch.Frames.
func (w *worker) publish() {
	w.freeLen.Store(int64(len(w.free)))
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

// refill tops the socket's fill ring up to the target from the free list.
func (w *worker) refill(q *rxQueue) {
	want := min(w.fillTarget-q.inFill, len(w.free)-w.reserve)
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

// ingress parses a batch received on port in, learns, looks up and hands each packet to its egress.
func (w *worker) ingress(in int, n int, now int64) {
	s := w.s
	c := &w.ctr[in]
	memLen := uint64(len(s.mem))
	var bytes uint64
	for i := 0; i < n; i++ {
		d := w.rxDescs[i]
		bytes += uint64(d.Len)
		if d.Addr >= memLen {
			c.drops[DropBadDesc].Add(1) // not a frame of ours: nothing to free
			continue
		}
		if d.Addr+uint64(d.Len) > (d.Addr|(s.frameSize-1))+1 {
			c.drops[DropBadDesc].Add(1)
			w.release(d.Addr)
			continue
		}
		frame := s.mem[d.Addr : d.Addr+uint64(d.Len)]
		p := &w.pkts[i]
		p.Addr, p.Len, p.InPort, p.Queue, p.Rank = d.Addr, d.Len, uint16(in), 0, 0
		if e := pkt.Parse(frame, p); e != pkt.OK {
			c.malformed[e].Add(1)
			c.drops[DropMalformed].Add(1)
			w.release(d.Addr)
			continue
		}
		s.mac.Learn(pkt.SrcMAC(frame), uint16(in), now)
		if p.Flags&pkt.FlagMulticast == 0 {
			if out, ok := s.mac.Lookup(pkt.DstMAC(frame), now); ok {
				if int(out) == in {
					c.drops[DropSamePort].Add(1)
					w.release(d.Addr)
					continue
				}
				p.OutPort = out
				w.toEgress(p)
				continue
			}
		}
		c.flooded.Add(1)
		w.floodPacket(p, frame)
	}
	c.rxPackets.Add(uint64(n))
	c.rxBytes.Add(bytes)
	for i := range w.handoff {
		if len(w.handoff[i]) > 0 {
			w.flushHandoff(i)
		}
	}
}

// floodPacket sends p to every port but its ingress port: copies to all but
// the last, the frame itself to the last.
func (w *worker) floodPacket(p *pkt.Packet, frame []byte) {
	s := w.s
	k := 0
	for i := range s.ports {
		if i != int(p.InPort) {
			w.flood[k] = uint16(i)
			k++
			if k == len(w.flood) {
				break
			}
		}
	}
	if k == 0 {
		w.ctr[p.InPort].drops[DropSamePort].Add(1)
		w.release(p.Addr)
		return
	}
	for _, out := range w.flood[:k-1] {
		addr, ok := w.alloc()
		if !ok {
			w.ctr[out].drops[DropNoFrames].Add(1)
			continue
		}
		copy(s.mem[addr:addr+uint64(len(frame))], frame)
		w.pk = *p
		w.pk.Addr, w.pk.OutPort = addr, out
		w.toEgress(&w.pk)
	}
	p.OutPort = w.flood[k-1]
	w.toEgress(p)
}

// toEgress enqueues p on its egress port, or stages it for the port's worker.
func (w *worker) toEgress(p *pkt.Packet) {
	dst := w.s.ports[p.OutPort]
	if dst.egress == w.id {
		w.enqueue(dst, p)
		return
	}
	w.handoff[p.OutPort] = append(w.handoff[p.OutPort], *p)
}

// enqueue hands p to the port's scheduler, or its control queue (egress worker only).
func (w *worker) enqueue(port *Port, p *pkt.Packet) {
	if p.Flags&pkt.FlagControl != 0 {
		if !port.ctrl.Push(p) {
			w.ctr[port.Index].drops[DropQueueLimit].Add(1)
			w.release(p.Addr)
		}
		return
	}
	// On a drop, *p is the packet to free: the arriving one, or the one it evicted.
	d := port.sched.Enqueue(p)
	if d == queues.Accepted {
		return
	}
	w.ctr[port.Index].drops[fromQueues[d]].Add(1)
	w.release(p.Addr)
	if d == queues.Evicted && port.evictor != nil {
		for port.evictor.MoreEvicted(p) {
			w.ctr[port.Index].drops[DropEvicted].Add(1)
			w.release(p.Addr)
		}
	}
}

// emitControl sends frame, built by the switch itself, out of port ahead of
// all data (the control queue is never paused). It reports false, counting a
// drop, when no frame is free or the control queue is full.
func (w *worker) emitControl(port int, frame []byte) bool {
	addr, ok := w.alloc()
	if !ok || len(frame) > int(w.s.frameSize) {
		if ok {
			w.release(addr)
		}
		w.ctr[port].drops[DropNoFrames].Add(1)
		return false
	}
	copy(w.s.mem[addr:], frame)
	w.pk = pkt.Packet{Addr: addr, Len: uint32(len(frame)), OutPort: uint16(port), InPort: uint16(port), Flags: pkt.FlagControl}
	w.toEgress(&w.pk)
	for i := range w.handoff {
		if len(w.handoff[i]) > 0 {
			w.flushHandoff(i)
		}
	}
	return true
}

// flushHandoff pushes staged packets onto port i's handoff ring from this worker.
func (w *worker) flushHandoff(i int) {
	port := w.s.ports[i]
	h := w.handoff[i]
	n := port.in[w.id].Push(h)
	for _, p := range h[n:] {
		w.ctr[i].drops[DropHandoffFull].Add(1)
		w.release(p.Addr)
	}
	w.handoff[i] = h[:0]
	if n > 0 {
		w.s.workers[port.egress].wakeIfSleeping()
	}
}

// egressPort moves handed-over packets into the scheduler and sends what
// the shaper and the tx ring allow.
func (w *worker) egressPort(p *Port, now int64) bool {
	work := false
	for _, r := range p.in {
		if r == nil {
			continue
		}
		for n := r.Pop(w.hpkts[:]); n > 0; n = r.Pop(w.hpkts[:]) {
			for i := 0; i < n; i++ {
				w.enqueue(p, &w.hpkts[i])
			}
			work = true
		}
	}
	room := min(p.txLink.TxFree(), BatchSize)
	n := 0
	var bytes uint64
	pk := &w.pk
	for n < room && p.shaper.Ready(now) && (p.ctrl.Pop(pk) || p.sched.Dequeue(pk)) {
		p.shaper.Take(pk.Len)
		p.txDescs[n] = afxdp.Desc{Addr: pk.Addr, Len: pk.Len}
		bytes += uint64(pk.Len)
		n++
	}
	if n > 0 {
		p.txLink.Transmit(p.txDescs[:n]) // takes all n: room was checked
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
	return work
}

// alloc takes a free frame of this worker's range.
func (w *worker) alloc() (uint64, bool) {
	if len(w.free) == 0 {
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
		w.free = append(w.free, base)
		return
	}
	o := w.s.owner(base)
	w.outRet[o] = append(w.outRet[o], base)
	if len(w.outRet[o]) == cap(w.outRet[o]) {
		w.flushReturn(o)
	}
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
		syscall.RawSyscall(unix.SYS_WRITE, uintptr(w.efd), uintptr(unsafe.Pointer(&w.one)), 8)
	}
}

// sleep blocks in ppoll until a socket has frames, another worker hands
// over work, or the next shaped frame may leave.
func (w *worker) sleep(now int64) {
	timeout := int64(10e6) // 10 ms: a bound, not a schedule
	for _, p := range w.egress {
		if queued(p) {
			wait := p.shaper.Wait(now)
			if wait == 0 {
				wait = 20e3 // tx ring full: look again soon
			}
			timeout = min(timeout, wait)
		}
		if p.txOutstanding.Load() > 0 {
			timeout = min(timeout, 200e3)
		}
	}
	w.sleeping.Store(true)
	// A producer that pushed before seeing sleeping=true did not wake us: look once more.
	if w.inboundPending() {
		w.sleeping.Store(false)
		return
	}
	w.sleeps.Add(1)
	w.ts = unix.NsecToTimespec(timeout)
	n, _ := unix.Ppoll(w.pollfds, &w.ts, nil)
	w.sleeping.Store(false)
	if n > 0 {
		w.wakeups.Add(1)
		syscall.RawSyscall(unix.SYS_READ, uintptr(w.efd), uintptr(unsafe.Pointer(&w.rbuf)), 8)
	}
}

func (w *worker) inboundPending() bool {
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
	}
	return false
}

func queued(p *Port) bool {
	if !p.ctrl.Empty() {
		return true
	}
	for q := 0; q < p.sched.NumQueues(); q++ {
		if _, n := p.sched.Depth(q); n > 0 {
			return true
		}
	}
	return false
}
