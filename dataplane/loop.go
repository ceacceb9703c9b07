package dataplane

import (
	"math"

	"github.com/gswitch/gswitch/dataplane/afxdp"
	"golang.org/x/sys/unix"
)

// The worker measures how late it runs, for the fidelity metrics: each
// timed wake-up (sleep), the gap between passes it made without sleeping
// (step) and each mechanism's tick (pass), into histograms of fidelity's
// buckets that only it writes (loopStats). Each costs a bucket look-up
// and two atomic loads and stores, no lock and no allocation: once per
// pass, per sleep or per tick, never per frame.
const (
	// noPass is lastPass after a sleep: the next pass has no gap to count.
	noPass = math.MinInt64
	// noTimer is sleepBounds' timer when nothing is due.
	noTimer = math.MaxInt64
)

// prime readies the worker once it knows its sockets and ports: the fill
// target, the descriptors it sleeps on, its gauges.
func (w *worker) prime() {
	w.rx.batch.Mem = w.s.mem
	w.rx.batch.Worker = w.id
	if len(w.rx.queues) > 0 {
		pl := &w.pool
		n := len(pl.free)
		w.rx.fillTarget = w.s.cfg.FillTarget
		if w.rx.fillTarget == 0 {
			w.rx.fillTarget = min(int(afxdp.DefaultRingSizes.Fill), (n-pl.emitReserve-pl.floodReserve)/2/len(w.rx.queues))
		}
		w.rx.fillTarget = max(w.rx.fillTarget, BatchSize)
	}
	w.buildPoll()
	w.publishGauges()
}

// run is the worker's loop: pass after pass, sleeping when idle, after
// spinning up to Config.Spin while spinning pays (spin.go).
func (w *worker) run() {
	s := w.s
	spin := max(int64(s.cfg.Spin), 0)
	if s.cfg.Realtime > 0 {
		// A realtime worker that spins keeps the workers of other switches
		// at its priority off the CPU (SCHED_FIFO does not share a CPU
		// between equals): it sleeps at once.
		spin = 0
	}
	sp := newSpinner()
	last := s.clock.Now()
	idle := false // the passes since last found nothing
	for !s.stopping.Load() {
		now := s.clock.Now()
		if w.step(now) {
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
		w.stats.spinning.Store(sp.on() && spin > 0)
		last = w.sleep(now)
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

// step is one pass at now. When the worker did not sleep since its last
// pass, the time from that pass's start to now counts as a pass gap: the
// pass's own work and any time the thread was runnable but not running.
func (w *worker) step(now int64) bool {
	if w.lastPass != noPass {
		w.stats.passGap.Observe(now - w.lastPass)
	}
	w.lastPass = now
	return w.pass(now)
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
	if w.pool.takeBack(w.tmp.addrs[:]) {
		work = true
	}
	// Sent frames come back from the tx side.
	for _, p := range w.eg.ports {
		if p.link.txDetached {
			continue
		}
		if n := p.link.tx.Complete(w.tmp.addrs[:]); n > 0 {
			if w.s.sg {
				n = w.completeChains(w.tmp.addrs[:n])
			}
			p.link.txOutstanding.Add(int64(-n))
			for _, a := range w.tmp.addrs[:n] {
				w.pool.release(a)
			}
			work = true
		}
	}
	// Mechanisms' timers.
	for i := range w.tickers {
		t := &w.tickers[i]
		if now >= t.next || t.soon.Load() {
			if now >= t.next && t.next != 0 { // 0: the first tick, which asked for no time
				w.stats.tickLate.Observe(now - t.next)
			}
			t.soon.Store(false)
			t.next = t.h.Tick(w.id, now)
			work = true
		}
	}
	// Parse, ingress stages and dispatch, a batch per socket.
	if w.receive(now) {
		work = true
	}
	// Traffic manager and egress.
	for _, p := range w.eg.ports {
		if w.serve(p, now) {
			work = true
		}
	}
	w.pool.flushReturns()
	w.eg.tm.EndPass()
	w.publishGauges()
	w.stats.passes.Add(1)
	return work
}

// publishGauges stores the worker's frame gauges for Switch.Frames.
func (w *worker) publishGauges() {
	w.pool.publishGauges()
	f := 0
	for _, q := range w.rx.queues {
		f += q.inFill
	}
	w.rx.inFill.Store(int64(f))
}

// buildPoll lists the fds the worker sleeps on: its sockets of ports that
// are up, and its eventfd. A socket whose interface went away polls as
// readable (POLLERR) forever, so it must not be in the set.
func (w *worker) buildPoll() {
	z := &w.nap
	z.pollfds, z.pollPort = z.pollfds[:0], z.pollPort[:0]
	for _, q := range w.rx.queues {
		if q.detached {
			continue
		}
		if fd := q.link.FD(); fd >= 0 && !w.s.ports[q.port].link.down.Load() {
			z.pollfds = append(z.pollfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			z.pollPort = append(z.pollPort, q.port)
		}
	}
	z.pollfds = append(z.pollfds, unix.PollFd{Fd: int32(z.efd), Events: unix.POLLIN})
	z.pollPort = append(z.pollPort, -1)
	z.unpollable = false
	for _, q := range w.rx.queues {
		if !q.detached && q.link.FD() < 0 {
			z.unpollable = true
		}
	}
}

// sleep blocks in ppoll until a socket has frames, another worker hands
// over work, the next shaped frame may leave or a mechanism's timer is
// due, and returns the clock when it is back. A wake-up at or after the
// first timer's deadline counts how late it came (wakeLate): ppoll's own
// lateness, and the time the thread waited for a CPU after it. One before
// the deadline (an event, or a bound that is no timer) counts nothing, nor
// does a sleep that had no timer (the idle bound).
func (w *worker) sleep(now int64) int64 {
	timeout, timer := w.sleepBounds(now)
	if timeout <= 0 {
		return w.s.clock.Now()
	}
	z := &w.nap
	z.sleeping.Store(true)
	// A producer that pushed before seeing sleeping=true did not wake us: look once more.
	if w.inboundPending() || w.s.stateGen.Load() != w.gen {
		z.sleeping.Store(false)
		return w.s.clock.Now()
	}
	w.stats.sleeps.Add(1)
	n := z.poll(timeout)
	woke := w.s.clock.Now()
	w.lastPass = noPass
	if timer != noTimer && woke >= now+timer {
		w.stats.wakeLate.Observe(woke - (now + timer))
	}
	if n <= 0 {
		return woke
	}
	w.stats.wakeups.Add(1)
	for i := range z.pollfds {
		re := z.pollfds[i].Revents
		if z.pollPort[i] < 0 {
			// The eventfd: drain it only when it was written. A system
			// call costs 10-20 µs in some guests, and most wake-ups
			// are a socket's.
			if re&unix.POLLIN != 0 {
				z.drain()
			}
			continue
		}
		// An error on a socket (its interface went away) would wake us
		// on every poll: take the socket out until its port comes back.
		if re&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			w.s.SetPortDown(z.pollPort[i], true)
		}
	}
	return woke
}

// sleepTimeout is how long the worker may sleep after a pass at now that
// found nothing to do (sleepBounds' timeout).
func (w *worker) sleepTimeout(now int64) int64 {
	timeout, _ := w.sleepBounds(now)
	return timeout
}

// sleepBounds returns how long the worker may sleep after a pass at now
// that found nothing to do: until the first timer it has (a shaped frame,
// a credit, the wire's delay, a mechanism's tick) or the first time it
// must look again without a timer (completions to reap, a full tx ring, a
// link it cannot poll), or 0 to pass again at once; and, apart, when that
// first timer is due (noTimer: none), the deadline whose lateness sleep
// counts.
func (w *worker) sleepBounds(now int64) (timeout, timer int64) {
	// Nothing to do on a timer: sleep until woken (a socket, another worker,
	// a port state change). The bound only guards against a wake-up lost
	// to a bug; an idle switch must cost nothing, so it is long.
	look := int64(1e9)
	timer = noTimer
	for _, p := range w.eg.ports {
		timer, look = p.tm.WakeBounds(now, timer, look)
		if p.link.txOutstanding.Load() > 0 && !p.link.down.Load() {
			look = min(look, 200e3) // completions to reap (a down port's tx ring does not move)
		}
	}
	for i := range w.tickers {
		timer = min(timer, max(w.tickers[i].next-now, 0))
	}
	for _, q := range w.rx.queues {
		if q.dly != nil && q.dly.Len() > 0 {
			timer = min(timer, max(q.dly.Next()-now, 1))
		}
	}
	if w.nap.unpollable {
		look = min(look, 1e6) // a link with no descriptor cannot wake us: look every millisecond
	}
	return min(timer, look), timer
}

// inboundPending reports whether work came in that does not show on a
// descriptor the worker polls: a resume, a tick asked for, frames given
// back, packets or emitted frames handed over.
func (w *worker) inboundPending() bool {
	if w.nap.resumed.Swap(false) {
		return true
	}
	for i := range w.tickers {
		if w.tickers[i].soon.Load() {
			return true
		}
	}
	if w.pool.returnsPending() {
		return true
	}
	for _, p := range w.eg.ports {
		for _, r := range p.eg.in {
			if r != nil && r.Len() > 0 {
				return true
			}
		}
		for _, r := range p.eg.emitIn {
			if r != nil && r.Len() > 0 {
				return true
			}
		}
	}
	return false
}
