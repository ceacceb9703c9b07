package pfc_test

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/pfc"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

// pausedQueues is the mask of port's queues paused now.
func pausedQueues(h *dptest.Harness, port int) (m uint8) {
	s := h.SW.Scheduler(port)
	for q := 0; q < 8; q++ {
		if s.Paused(q) {
			m |= 1 << q
		}
	}
	return m
}

// TestPausesFromTheNeighbour: a PFC frame pauses exactly the queues its
// enabled priorities map to, each for its quanta x 512 bit times at the
// port's rate from its arrival; expiry resumes them; a later frame
// replaces the time left; a zero time resumes at once; two priorities
// sharing a queue hold it until both are resumed; a host's NIC is
// honoured at its own port's rate.
func TestPausesFromTheNeighbour(t *testing.T) {
	up := defaults(func(c *pfc.Config) { c.QueueMap = map[int]int{6: 1, 7: 1} })
	h := newSwitch(t, up, defaults(nil), defaults(nil))
	b := inst(h)
	send := func(port int, f []byte) int64 {
		h.Links[port].Inject(f)
		h.Settle()
		return h.Clock.T
	}
	expect := func(what string, port int, want uint8) {
		t.Helper()
		if got := pausedQueues(h, port); got != want {
			t.Fatalf("%s: port %d paused queues %08b, want %08b", what, port, got, want)
		}
	}
	// 1000 quanta at 100 Mbit/s: 5.12 ms; 2000: 10.24 ms.
	t0 := send(pUp, pfcFrame(1<<3|1<<5, map[int]uint16{3: 1000, 5: 2000}))
	expect("pause 3 and 5", pUp, 1<<3|1<<5)
	if s := b.Stats(pUp); s.Paused != 1<<3|1<<5 || s.PausesRx[3] != 1 || s.PausesRx[5] != 1 || s.FramesRx != 1 {
		t.Fatalf("stats: %+v", s)
	}
	h.Advance(t0+5_120_000-1-h.Clock.T, 10_000)
	expect("just before 5.12 ms", pUp, 1<<3|1<<5)
	h.Advance(1, 1)
	expect("at 5.12 ms", pUp, 1<<5)
	h.Advance(t0+10_240_000-h.Clock.T, 10_000)
	expect("at 10.24 ms", pUp, 0)
	if s := b.Stats(pUp); s.PausedNs[3] != 5_120_000 || s.PausedNs[5] != 10_240_000 {
		t.Fatalf("paused for %v ns, want 5.12 ms and 10.24 ms", s.PausedNs)
	}
	// A later frame replaces the time left (shorter too): paused from t1
	// to 1 ms + 512 us after it, counted as one pause.
	t1 := send(pUp, pfcFrame(1<<3, map[int]uint16{3: 2000}))
	h.Advance(1_000_000, 100_000)
	send(pUp, pfcFrame(1<<3, map[int]uint16{3: 100})) // 512 us from now
	h.Advance(500_000, 100_000)
	expect("100 quanta, 500 us on", pUp, 1<<3)
	h.Advance(t1+1_512_000-1-h.Clock.T, 5_000)
	expect("100 quanta, 512 us on less 1 ns", pUp, 1<<3)
	h.Advance(1, 1)
	expect("100 quanta, 512 us on", pUp, 0)
	h.Advance(8_000, 4_000)
	expect("100 quanta, 520 us on", pUp, 0)
	if s := b.Stats(pUp); s.PausedNs[3] != 5_120_000+1_512_000 {
		t.Fatalf("priority 3 paused for %d ns, want 5.12 ms + 1.512 ms", s.PausedNs[3])
	}
	// Zero resumes at once, the others stay.
	send(pUp, pfcFrame(0xff, map[int]uint16{0: 9, 1: 9, 2: 9, 3: 9, 4: 9, 5: 9}))
	expect("0-5", pUp, 0x3f)
	send(pUp, pfcFrame(1<<2|1<<4, nil))
	expect("zero for 2 and 4", pUp, 0x3f&^(1<<2|1<<4))
	send(pUp, pfcFrame(0x3f, nil))
	expect("zero for all", pUp, 0)
	// Priorities 6 and 7 share queue 1 (queue_map).
	send(pUp, pfcFrame(1<<6|1<<7, map[int]uint16{6: 5000, 7: 5000}))
	expect("6 and 7", pUp, 1<<1)
	send(pUp, pfcFrame(1<<6, nil))
	expect("6 resumed, 7 not", pUp, 1<<1)
	send(pUp, pfcFrame(1<<7, nil))
	expect("7 resumed", pUp, 0)
	// The host port's NIC, at 1 Gbit/s: 1000 quanta are 512 us.
	t2 := send(pHost, pfcFrame(1<<0, map[int]uint16{0: 1000}))
	expect("host pause", pHost, 1<<0)
	h.Advance(t2+511_000-h.Clock.T, 10_000)
	expect("host, 511 us", pHost, 1<<0)
	h.Advance(1_000, 1_000)
	expect("host, 512 us", pHost, 0)
	// The frames were consumed, and counted by the switch as kind pfc.
	if c := h.SW.Counters(pUp); c.ControlRx[wire.TypePFC] != 9 || c.Drops[pkt.ReasonLinkLocal] != 0 {
		t.Fatalf("control_received %d, link_local drops %d", c.ControlRx[wire.TypePFC], c.Drops[pkt.ReasonLinkLocal])
	}
	h.CheckFrames(t)
}

// TestPausedQueueHoldsItsPackets: data for a paused queue waits; data of
// another priority passes; expiry lets it go.
func TestPausedQueueHoldsItsPackets(t *testing.T) {
	h := newSwitch(t, defaults(nil), defaults(nil), defaults(nil))
	h.Links[pOut].Inject(pfcFrame(1<<3, map[int]uint16{3: 1000}))
	h.Settle()
	h.Links[pOut].Sent = nil
	for i := 0; i < 3; i++ {
		h.Links[pUp].Inject(data(dscp3, 1))
		h.Links[pUp].Inject(data(dscp5, 2))
	}
	h.Advance(1_000_000, 50_000)
	if n := len(h.Links[pOut].Sent); n != 3 {
		t.Fatalf("%d frames left out while priority 3 is paused, want the 3 of priority 5", n)
	}
	h.Advance(5_000_000, 50_000)
	if n := len(h.Links[pOut].Sent); n != 6 {
		t.Fatalf("%d frames left out after the pause, want 6", n)
	}
	h.CheckFrames(t)
}

// TestFramesPFCDoesNotTake: on a port without PFC a PFC frame is dropped
// as link_local (as on a switch without PFC) and counted; 802.3x PAUSE
// is dropped as link_local; a short 0x8808 frame to PFC's group as
// malformed; a priority that is not lossless here is ignored. MAC control
// frames to any other destination (another bridge group, a host's
// unicast MAC, broadcast), PFC or PAUSE, from a port with PFC or without,
// never reach PFC and are never forwarded: dropped as link_local.
func TestFramesPFCDoesNotTake(t *testing.T) {
	up := defaults(func(c *pfc.Config) { c.Priorities = []int{3} })
	h := newSwitch(t, up, defaults(nil), defaults(nil))
	b := inst(h)
	pause := pfcFrame(1<<3, map[int]uint16{3: 1000})
	h.Links[pPlain].Inject(pause)
	pause8023x := append([]byte(nil), pause...)
	pause8023x[15] = 0x01 // opcode 0x0101 -> 0x0001
	pause8023x[14] = 0x00
	h.Links[pUp].Inject(pause8023x)
	h.Links[pUp].Inject(pause[:30]) // short
	wrongDst := append([]byte(nil), pause...)
	wrongDst[5] = 0x02
	h.Links[pUp].Inject(wrongDst) // 01:80:C2:00:00:02: link-local, 0x8808, not PFC's address
	h.Links[pUp].Inject(pfcFrame(1<<4, map[int]uint16{4: 1000}))
	// To host 3's MAC (learnt behind out) and to broadcast, PFC and PAUSE,
	// from up (PFC) and plain (none).
	for _, dst := range [][6]byte{pkttest.MAC(3), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		for _, f := range [][]byte{pause, pause8023x} {
			g := append([]byte(nil), f...)
			copy(g, dst[:])
			h.Links[pUp].Inject(g)
			h.Links[pPlain].Inject(g)
		}
	}
	h.Settle()
	if pausedQueues(h, pPlain) != 0 || pausedQueues(h, pUp) != 0 {
		t.Fatalf("paused: plain %08b, up %08b", pausedQueues(h, pPlain), pausedQueues(h, pUp))
	}
	if n := b.NotEnabledRx(pPlain); n != 1 {
		t.Fatalf("not enabled: %d", n)
	}
	if c := h.SW.Counters(pPlain); c.Drops[pkt.ReasonLinkLocal] != 1+4 || c.ControlRx[wire.TypePFC] != 1 {
		t.Fatalf("plain: link_local drops %d, PFC frames received %d", c.Drops[pkt.ReasonLinkLocal], c.ControlRx[wire.TypePFC])
	}
	s := b.Stats(pUp)
	if s.OtherOpcodeRx != 1 || s.Malformed != 1 || s.IgnoredRx[4] != 1 || s.FramesRx != 1 {
		t.Fatalf("up: %+v", s)
	}
	c := h.SW.Counters(pUp)
	if c.Drops[pkt.ReasonLinkLocal] != 2+4 || c.Drops[pkt.ReasonMalformed] != 1 || c.ControlRx[wire.TypePFC] != 3 {
		t.Fatalf("up: link_local %d, malformed %d, PFC frames received %d", c.Drops[pkt.ReasonLinkLocal], c.Drops[pkt.ReasonMalformed], c.ControlRx[wire.TypePFC])
	}
	for _, l := range h.Links {
		for _, f := range l.Sent {
			if f[0] == 0x01 && f[1] == 0x80 && f[2] == 0xc2 || binary.BigEndian.Uint16(f[12:]) == wire.EtherTypeMACControl {
				t.Fatalf("a link-local or MAC control frame was forwarded: % x", f)
			}
		}
	}
	h.CheckFrames(t)
}

// TestLowRateAndHugeTimes: at a rate where 65535 quanta last hours, a
// pause is bounded by MaxPause, and the clock's arithmetic cannot
// overflow however late it is.
func TestLowRateAndHugeTimes(t *testing.T) {
	h := newSwitch(t, defaults(func(c *pfc.Config) { c.Watchdog = 0 }), defaults(nil), defaults(nil))
	b := inst(h)
	if err := b.RateChanged(pUp, 1000); err != nil { // 1 kbit/s: 65535 quanta are 9.3 hours
		t.Fatal(err)
	}
	h.Links[pUp].Inject(pfcFrame(1<<0, map[int]uint16{0: 0xffff}))
	h.Settle()
	h.Advance(int64(pfc.MaxPause)-1_000_000, int64(pfc.MaxPause)/100)
	if pausedQueues(h, pUp) != 1 {
		t.Fatal("not paused just before MaxPause")
	}
	h.Advance(2_000_000, 1_000_000)
	if pausedQueues(h, pUp) != 0 {
		t.Fatal("paused after MaxPause")
	}
	// Near the clock's end: the pause saturates, it does not wrap into
	// the past (which would resume at once).
	h.Clock.T = 1<<63 - 1_000
	h.Settle()
	h.Links[pUp].Inject(pfcFrame(1<<0, map[int]uint16{0: 0xffff}))
	h.Settle()
	if pausedQueues(h, pUp) != 1 {
		t.Fatal("a pause near the clock's end did not hold")
	}
}

// TestWatchdog: a priority paused without a break for watchdog while its
// queue holds packets trips: its pauses are ignored, its queue resumes
// (forward: the packets go; drop: they are dropped, and new ones too),
// until none came for watchdog_restore; then a pause is honoured again.
func TestWatchdog(t *testing.T) {
	for _, action := range []string{pfc.ActionForward, pfc.ActionDrop} {
		t.Run(action, func(t *testing.T) {
			up := defaults(func(c *pfc.Config) {
				c.Watchdog, c.WatchdogRestore, c.WatchdogAction = units.Duration(10e6), units.Duration(5e6), action
			})
			h := newSwitch(t, up, defaults(nil), defaults(nil))
			b := inst(h)
			refresh := func() { h.Links[pUp].Inject(pfcFrame(1<<3, map[int]uint16{3: 1000})) } // 5.12 ms
			refresh()
			h.Settle()
			for i := 0; i < 4; i++ {
				h.Links[pOut].Inject(back(dscp3)) // to host 1 behind up, queue 3
			}
			h.Settle()
			h.Links[pUp].Sent = nil
			// Refreshed every 2 ms: paused without a break.
			for ms := 0; ms < 8; ms += 2 { // 8 ms
				h.Advance(2e6, 100e3)
				refresh()
			}
			h.Settle()
			if s := b.Stats(pUp); s.Trips[3] != 0 || pausedQueues(h, pUp) != 1<<3 || len(h.Links[pUp].Sent) != 0 {
				t.Fatalf("before 10 ms: trips %d, paused %08b, %d sent", s.Trips[3], pausedQueues(h, pUp), len(h.Links[pUp].Sent))
			}
			h.Advance(2e6, 100e3) // 10 ms paused: trip
			s := b.Stats(pUp)
			if s.Trips[3] != 1 || s.Storm != 1<<3 || pausedQueues(h, pUp) != 0 {
				t.Fatalf("after 10 ms: %+v, paused %08b", s, pausedQueues(h, pUp))
			}
			// Pauses are ignored while they keep coming.
			for i := 0; i < 5; i++ {
				refresh()
				h.Links[pOut].Inject(back(dscp3))
				h.Advance(2e6, 100e3)
			}
			s = b.Stats(pUp)
			if pausedQueues(h, pUp) != 0 || s.IgnoredRx[3] != 5 || s.Restores[3] != 0 {
				t.Fatalf("storm: %+v, paused %08b", s, pausedQueues(h, pUp))
			}
			sent := len(h.Links[pUp].Sent)
			if action == pfc.ActionForward && (sent != 9 || s.WatchdogDrops[3] != 0) {
				t.Fatalf("forward: %d sent, %d dropped, want 9 and 0", sent, s.WatchdogDrops[3])
			}
			if action == pfc.ActionDrop {
				if sent != 0 || s.WatchdogDrops[3] != 9 || h.SW.Counters(pUp).Drops[pfc.ReasonWatchdog] != 9 {
					t.Fatalf("drop: %d sent, %d dropped (%d counted), want 0 and 9", sent, s.WatchdogDrops[3], h.SW.Counters(pUp).Drops[pfc.ReasonWatchdog])
				}
				// Other priorities go on.
				h.Links[pOut].Inject(back(dscp5))
				h.Settle()
				if len(h.Links[pUp].Sent) != 1 {
					t.Fatal("drop: priority 5 did not pass")
				}
			}
			// The pauses stop: restored after 5 ms, honoured again.
			h.Advance(5e6, 100e3)
			if s := b.Stats(pUp); s.Restores[3] != 1 || s.Storm != 0 || s.Dropping != 0 {
				t.Fatalf("after restore: %+v", s)
			}
			refresh()
			h.Settle()
			if pausedQueues(h, pUp) != 1<<3 {
				t.Fatal("a pause after the restore was not honoured")
			}
			h.Advance(10e6, 1e6)
			h.CheckFrames(t)
		})
	}
}

// TestWatchdogNeedsPackets: a priority paused long with nothing queued
// does not trip (a pause that holds nothing harms nothing).
func TestWatchdogNeedsPackets(t *testing.T) {
	up := defaults(func(c *pfc.Config) { c.Watchdog, c.WatchdogRestore = units.Duration(10e6), units.Duration(5e6) })
	h := newSwitch(t, up, defaults(nil), defaults(nil))
	for ms := 0; ms < 30; ms += 2 {
		h.Links[pUp].Inject(pfcFrame(1<<3, map[int]uint16{3: 1000}))
		h.Advance(2e6, 100e3)
	}
	if s := inst(h).Stats(pUp); s.Trips[3] != 0 || pausedQueues(h, pUp) != 1<<3 {
		t.Fatalf("tripped with an empty queue: %+v", s)
	}
	h.Links[pOut].Inject(back(dscp3))
	h.Advance(4e6, 100e3)
	if s := inst(h).Stats(pUp); s.Trips[3] != 1 {
		t.Fatalf("a packet came and the pause held on: %+v", s)
	}
}

// TestWatchdogSeesThroughShortBreaks: a neighbour that pauses a priority
// for just under watchdog, sends a zero time and pauses it again after a
// break shorter than watchdog/4 holds it paused as if without a break:
// the watchdog trips, in the cycle that takes the run past watchdog. A
// break of watchdog/4 or more ends the run: such cycles never trip it.
func TestWatchdogSeesThroughShortBreaks(t *testing.T) {
	for _, c := range []struct {
		name  string
		gap   int64 // the break between a zero time and the next pause
		trips bool
	}{{"back to back", 0, true}, {"2 ms", 2e6, true}, {"3 ms", 3e6, false}} {
		t.Run(c.name, func(t *testing.T) {
			up := defaults(func(cf *pfc.Config) {
				cf.Watchdog, cf.WatchdogRestore, cf.WatchdogAction = units.Duration(10e6), units.Duration(5e6), pfc.ActionForward
			}) // a break of under 2.5 ms does not end a run
			h := newSwitch(t, up, defaults(nil), defaults(nil))
			b := inst(h)
			pause := pfcFrame(1<<3, map[int]uint16{3: 2000}) // 10.24 ms, longer than the watchdog
			zero := pfcFrame(1<<3, nil)
			tripped := -1
			for cycle := 0; cycle < 6 && tripped < 0; cycle++ {
				h.Links[pUp].Inject(pause)
				h.Settle()
				for i := 0; i < 4; i++ {
					h.Links[pOut].Inject(back(dscp3)) // to host 1 behind up: queue 3 holds them
				}
				h.Advance(9e6, 100e3) // paused 9 ms: under the watchdog
				if b.Stats(pUp).Trips[3] != 0 {
					tripped = cycle
					break
				}
				h.Links[pUp].Inject(zero)
				if c.gap > 0 {
					h.Settle() // the queue resumes and sends for the gap
					h.Advance(c.gap, 100e3)
				}
			}
			s := b.Stats(pUp)
			switch {
			case c.trips && (tripped != 1 || s.Trips[3] != 1):
				t.Fatalf("tripped in cycle %d (want 1): %+v", tripped, s)
			case !c.trips && (tripped >= 0 || s.Trips[3] != 0):
				t.Fatalf("tripped in cycle %d with breaks of %d ns: %+v", tripped, c.gap, s)
			}
			h.Advance(50e6, 1e6)
			h.CheckFrames(t)
		})
	}
}

// TestFlood: thousands of PFC frames, pauses and resumes mixed, some
// malformed: each is counted, none stays in the switch, the state is the
// last frame's.
func TestFlood(t *testing.T) {
	h := newSwitch(t, defaults(nil), defaults(nil), defaults(nil))
	frames := [][]byte{pfcFrame(0xff, map[int]uint16{0: 0xffff, 1: 1, 2: 7, 3: 0x8000, 4: 3, 5: 0xffff, 6: 2, 7: 1}),
		pfcFrame(0x0f, nil), pfcFrame(0xff, nil)[:20]}
	const n = 3000
	for i := 0; i < n; i++ {
		h.Links[pUp].Inject(frames[i%3])
		if i%100 == 99 {
			h.Settle()
		}
	}
	h.Settle()
	s := inst(h).Stats(pUp)
	if s.FramesRx != 2*n/3 || s.Malformed != n/3 || s.PausesRx[0] != n/3 || s.ResumesRx[0] != n/3 {
		t.Fatalf("counted %+v", s)
	}
	// The last good frame resumed 0-3; 4-7 hold their last pause.
	if got := pausedQueues(h, pUp); got != 0xf0 {
		t.Fatalf("paused %08b, want 11110000", got)
	}
	h.Advance(400e6, 10e6)
	if got := pausedQueues(h, pUp); got != 0 {
		t.Fatalf("paused %08b after the longest pause", got)
	}
	h.CheckFrames(t)
}

// TestWatchdogRace: pauses come on a receiving worker while the port's
// egress worker runs its timers, at the same moments: each pause lasts
// half the watchdog, and each begins two watchdogs after the one before,
// so the watchdog must never trip, whatever the order in which the two
// workers' loads and stores meet. (It once did: the egress worker read
// the start of the pause before, then the end of the new one that the
// receiving worker stored in between, and took them for one pause.)
func TestWatchdogRace(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two goroutines running at once")
	}
	const wdog = 10e6
	up := defaults(func(c *pfc.Config) {
		c.Watchdog, c.WatchdogRestore, c.WatchdogAction = units.Duration(wdog), units.Duration(wdog/2), pfc.ActionForward
	})
	h := newSwitchW(t, 2, up, defaults(nil), nil)
	b := inst(h)
	eg := h.SW.EgressWorker(pUp)
	rxw := 1 - eg
	// Every queue of up holds packets: the watchdog would trip at once.
	for q := 0; q < 8; q++ {
		h.SW.Scheduler(pUp).Pause(q)
		h.Links[pOut].Inject(back(uint8(q << 5))) // DSCP 8q: priority q, queue q
	}
	h.Settle()
	for q := 0; q < 8; q++ {
		if _, n := h.SW.Scheduler(pUp).Depth(q); n != 1 {
			t.Fatalf("up's queue %d holds %d packets, want 1", q, n)
		}
	}
	// 977 quanta at 100 Mbit/s: 5.0 ms, half the watchdog.
	frame := pfcFrame(0xff, map[int]uint16{0: 977, 1: 977, 2: 977, 3: 977, 4: 977, 5: 977, 6: 977, 7: 977})
	bt := &mech.Batch{Pkts: make([]pkt.Packet, 1), Mem: frame, Worker: rxw}
	const rounds = 20000
	var start, applied atomic.Int64 // round i: start i, applied i, done -i
	done := make(chan struct{})
	go func() { // the egress worker: runs its timers while the pause arrives
		defer close(done)
		for i := int64(1); ; i++ {
			for start.Load() != i {
				if start.Load() == -rounds-1 {
					return
				}
			}
			now := h.Clock.T + i*2*wdog
			for applied.Load() != i {
				b.Tick(eg, now)
			}
			b.Tick(eg, now)
			b.Tick(eg, now+wdog*3/4) // the pause ran out
			start.Store(-i)          // done with round i
		}
	}()
	for i := int64(1); i <= rounds; i++ {
		bt.Now = h.Clock.T + i*2*wdog
		bt.Pkts[0] = pkt.Packet{Len: uint32(len(frame))}
		start.Store(i)
		b.Control(pUp, bt)
		applied.Store(i)
		for start.Load() != -i {
		}
	}
	start.Store(-rounds - 1)
	<-done
	s := b.Stats(pUp)
	if s.Trips != [8]uint64{} || s.PausesRx[0] != rounds {
		t.Fatalf("trips %v over %d pauses of half the watchdog, two watchdogs apart", s.Trips, s.PausesRx[0])
	}
	h.Clock.T += rounds*2*wdog + wdog
	h.Advance(wdog, 100e3) // the queues, resumed, send their packets
	h.CheckFrames(t)
}
