package pfc

import (
	"math"
	"math/bits"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
)

// maxPauseNs is MaxPause in ns.
const maxPauseNs = int64(MaxPause)

// Control applies a PFC frame from port i's neighbour (host or switch) to
// the port's own egress queues: each enabled lossless priority with a
// non-zero time pauses the queue it maps to for that many quanta at the
// port's rate, from now (a newer frame replaces the time left, as the
// standard says); a zero time resumes it at once. Frames on a port where
// PFC does not run, and MAC control frames that are not PFC (802.3x
// PAUSE), are dropped as link_local, as on a switch without PFC; frames
// that do not parse as malformed. Any receiving worker.
func (b *PFC) Control(i int, bt *mech.Batch) {
	for k := range bt.Pkts {
		p := &bt.Pkts[k]
		s := b.ports[i]
		if s == nil {
			b.unclaim[i].Add(1)
			p.DropWith(pkt.ReasonLinkLocal)
			continue
		}
		m, err := wire.ParsePFCFrame(bt.Frame(p))
		switch {
		case err == wire.ErrWrongType:
			s.otherOpRx.Add(1)
			p.DropWith(pkt.ReasonLinkLocal)
			continue
		case err != nil:
			s.malformed.Add(1)
			p.DropWith(pkt.ReasonMalformed)
			continue
		}
		p.Verdict = pkt.Consume
		s.framesRx.Add(1)
		b.apply(s, &m, bt.Now, bt.Worker)
	}
}

// apply applies a parsed PFC message to port s at now, on worker w.
//
// Pauses act at once, from any worker (Scheduler.Pause is atomic); what
// ends a pause (a zero time, expiry, the watchdog) is the egress worker's
// reconcile, which resumes the queues no pause holds any more. apply runs
// it itself when it runs on that worker, and asks for that worker's tick
// when what it changed needs one (a new pause's expiry, a resume).
func (b *PFC) apply(s *port, m *wire.PFC, now int64, w int) {
	changed := false
	rate := s.rate.Load()
	for pr := 0; pr < nprio; pr++ {
		bit := uint8(1) << uint(pr)
		if m.Enable&bit == 0 {
			continue
		}
		st := &s.rx[pr]
		if s.lossless&bit == 0 {
			st.ignoredRx.Add(1) // not a lossless priority here
			continue
		}
		t := m.Time[pr]
		if t == 0 {
			st.resumesRx.Add(1)
			if st.stopAny(now) {
				changed = true
			}
			continue
		}
		st.pausesRx.Add(1)
		st.lastRx.Store(now)
		if s.storm.Load()&uint32(bit) != 0 {
			st.ignoredRx.Add(1) // the watchdog ignores this priority's pauses
			continue
		}
		until := addSat(now, min(wire.PauseNs(t, rate), maxPauseNs))
		// A pause that begins (none in force) stores its start before it
		// publishes its end, and the readers of both (stop, pausedFor)
		// load the end first: one that sees this pause's end sees its
		// start, never the start of an earlier pause (which would count
		// the break between them as paused). The watchdog does not read
		// since: its runs of pauses are its egress worker's own
		// (reconcile).
		cur := st.until.Load()
		fresh := cur == 0 || cur <= now
		if fresh {
			if cur != 0 {
				st.stop(cur, now) // ran out, not yet reconciled: counted before since moves on
			}
			st.since.Store(now)
		}
		old := st.until.Swap(until)
		switch {
		case fresh:
			changed = true
		case old == 0 || old <= now:
			// Ended (the watchdog, another worker's zero time) between
			// the load and the swap: this pause begins now, its start
			// stored late (a reader in between may count the break).
			st.since.Store(now)
			changed = true
		case until < old:
			changed = true // ends sooner than the tick asked for
		}
		s.applied.Or(s.prioQueues[pr])
		for q := s.prioQueues[pr]; q != 0; q &= q - 1 {
			s.sch.Pause(bits.TrailingZeros64(q))
		}
	}
	if !changed {
		return
	}
	if w == s.worker {
		b.reconcile(s, now)
	}
	b.sw.TickSoon(s.worker, b) // the next expiry
}

// stop ends the pause u (its end as the caller loaded it) if it is still
// the one in force, adding its time (to u, or now if sooner) to the
// priority's paused time, and reports whether it did. The start is loaded
// after the end and before the end is claimed (compare-and-swap): a pause
// stores its start before it publishes its end, and a later pause stores
// its own only once this one is claimed, so the two are of one pause.
func (st *rxPrio) stop(u, now int64) bool {
	since := st.since.Load()
	if !st.until.CompareAndSwap(u, 0) {
		return false
	}
	if d := min(u, now) - since; d > 0 {
		st.pausedNs.Add(uint64(d))
	}
	return true
}

// stopAny ends the pause in force, whichever it is now, and reports
// whether there was one.
func (st *rxPrio) stopAny(now int64) bool {
	for {
		u := st.until.Load()
		if u == 0 {
			return false
		}
		if st.stop(u, now) {
			return true
		}
	}
}

// addSat is a + d, saturating at the clock's end: a pause can never wrap
// into the past.
func addSat(a, d int64) int64 {
	if d > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + d
}

// reconcile ends the pauses of port s that expired, runs the watchdog, and
// resumes the queues no pause holds any more. It returns when it wants to
// run again: the next expiry, the watchdog's next look, a restore (egress
// worker of s).
func (b *PFC) reconcile(s *port, now int64) int64 {
	next := int64(math.MaxInt64)
	var desired uint64
	storm, dropping := s.storm.Load(), s.dropping.Load()
	for pr := 0; pr < nprio; pr++ {
		bit := uint32(1) << uint(pr)
		if s.lossless&uint8(bit) == 0 {
			continue
		}
		st := &s.rx[pr]
		if storm&bit != 0 {
			// Pauses ignored: honoured again once none came for restore.
			if last := st.lastRx.Load(); now-last >= s.restore {
				storm &^= bit
				dropping &^= bit
				st.restores.Add(1)
			} else {
				next = min(next, last+s.restore)
			}
			continue
		}
		r := &s.wd[pr]
		u := st.until.Load()
		if u != 0 && u <= now {
			st.stop(u, now)
			if r.start != 0 && r.brk == 0 {
				r.brk = u // the run breaks where the pause ran out
			}
			continue
		}
		if u == 0 {
			if r.start != 0 && r.brk == 0 {
				r.brk = now // resumed (a zero time) since the last look
			}
			continue
		}
		// A pause is in force. The run of pauses it belongs to is this
		// worker's own: it begins the first time this worker sees a pause
		// after none (or after a break of grace or more), so no receiving
		// worker's stores can pair this pause with an older start. A
		// shorter break does not end the run: else a neighbour that sends
		// a zero time and pauses again just before the watchdog would trip
		// holds the queue paused for good, never tripping it.
		if r.start == 0 || (r.brk != 0 && now-r.brk >= s.grace) {
			r.start = now
		}
		r.brk = 0
		if s.wdog > 0 {
			// The watchdog, as switch vendors ship it: a priority paused
			// without a break for wdog while its queue holds packets is a
			// storm (a stuck NIC, a deadlock): its pauses are ignored.
			if now-r.start >= s.wdog {
				if s.holding(pr) {
					st.stopAny(now)
					r.start, r.brk = 0, 0
					storm |= bit
					if s.dropAction {
						dropping |= bit
					}
					st.trips.Add(1)
					next = min(next, now+s.restore)
					continue
				}
				next = min(next, now+max(s.wdog/4, minRefresh)) // look again: packets may come
			} else {
				next = min(next, r.start+s.wdog)
			}
		}
		desired |= s.prioQueues[pr]
		next = min(next, u)
	}
	s.storm.Store(storm)
	s.dropping.Store(dropping)
	if extra := s.applied.Load() &^ desired; extra != 0 {
		s.applied.And(^extra)
		for q := extra; q != 0; q &= q - 1 {
			b.sw.ResumeQueue(s.idx, bits.TrailingZeros64(q))
		}
		// A pause another worker applied since desired was read keeps its
		// queues: it stored its time before it paused them.
		if again := s.holds(now) & extra; again != 0 {
			s.applied.Or(again)
			for q := again; q != 0; q &= q - 1 {
				s.sch.Pause(bits.TrailingZeros64(q))
			}
		}
	}
	return next
}

// holds is the queues of port s that pauses in force hold now.
func (s *port) holds(now int64) uint64 {
	var m uint64
	storm := s.storm.Load()
	for pr := 0; pr < nprio; pr++ {
		if s.lossless&(1<<uint(pr)) != 0 && storm&(1<<uint(pr)) == 0 && s.rx[pr].until.Load() > now {
			m |= s.prioQueues[pr]
		}
	}
	return m
}

// holding reports whether a queue priority pr maps to on port s holds
// packets (egress worker).
func (s *port) holding(pr int) bool {
	for q := s.prioQueues[pr]; q != 0; q &= q - 1 {
		if _, n := s.view.Backlog(bits.TrailingZeros64(q)); n > 0 {
			return true
		}
	}
	return false
}
