package pfc_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/mech/pfc"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

// TestHotPathDoesNotAllocate: priorities and queues, counting, pauses,
// refreshes and resumes out, pauses and resumes in, the watchdog's and
// the headroom's drops: nothing allocates.
func TestHotPathDoesNotAllocate(t *testing.T) {
	up := defaults(func(c *pfc.Config) { c.XOFF, c.XON, c.PauseQuanta = 3*frameLen, frameLen, 200 })
	out := defaults(func(c *pfc.Config) { c.Watchdog, c.WatchdogRestore = units.Duration(1e6), units.Duration(1e6) })
	h := newSwitch(t, up, defaults(nil), out)
	b := inst(h)
	frames := [][]byte{data(dscp3, 1), data(dscp5, 2), data(0, 3)}
	pause, resume := pfcFrame(1<<3|1<<5, map[int]uint16{3: 3000, 5: 100}), pfcFrame(1<<5, nil)
	run := func() {
		for i := 0; i < 30; i++ {
			h.Links[pUp].Inject(frames[i%3])
		}
		h.Links[pOut].Inject(pause)
		h.Links[pOut].Inject(resume)
		h.Advance(3e6, 100e3)
		h.Links[pOut].Inject(pause)
		h.Advance(3e6, 100e3)
	}
	run()
	h.Links[pUp].Record, h.Links[pOut].Record = false, false
	if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
		t.Fatalf("%.1f allocations per run", allocs)
	}
	s, o := b.Stats(pUp), b.Stats(pOut)
	if s.PausesSent[3] == 0 || s.ResumesSent[3] == 0 || s.RefreshesSent[3] == 0 || o.PausesRx[3] == 0 || o.ResumesRx[5] == 0 ||
		o.Trips[3] == 0 || o.WatchdogDrops[3] == 0 || s.HeadroomDrops[3] == 0 {
		t.Fatalf("the run did not exercise the paths: %+v %+v", s, o)
	}
	h.CheckFrames(t)
}

// frameOf builds a PFC frame from a fuzzer's 17 bytes: the vector, then
// eight times (the full range of both).
func frameOf(rec []byte) []byte {
	m := wire.PFC{Enable: rec[0]}
	for p := 0; p < 8; p++ {
		m.Time[p] = binary.BigEndian.Uint16(rec[1+2*p:])
	}
	f := make([]byte, wire.MinFrameLen)
	if _, err := wire.BuildPFC(f, neighbour, m); err != nil {
		panic(err)
	}
	return f
}

// FuzzControl feeds arbitrary bytes after the MAC control EtherType to a
// PFC port, to PFC's group or to another destination (another bridge
// group, host 3's unicast MAC, an unknown one, broadcast, a multicast
// group): nothing panics, only queues of priorities the bytes could name
// are paused, and only by a frame to PFC's group; no MAC control frame is
// forwarded (those to another destination are dropped as link_local);
// every pause runs out, every frame comes back.
func FuzzControl(f *testing.F) {
	dsts := [][6]byte{wire.PFCDst, {0x01, 0x80, 0xc2, 0, 0, 0x02}, pkttest.MAC(3), pkttest.MAC(9),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {0x01, 0x00, 0x5e, 0, 0, 1}}
	for d := range dsts {
		f.Add(uint8(d), pfcFrame(1<<3, map[int]uint16{3: 1000})[14:])
	}
	f.Add(uint8(0), pfcFrame(0xff, map[int]uint16{0: 0xffff, 7: 1})[14:])
	f.Add(uint8(2), pfcFrame(0xff, map[int]uint16{0: 0xffff, 7: 1})[14:])
	f.Add(uint8(0), []byte{0x01, 0x01})
	f.Add(uint8(0), []byte{0x00, 0x01, 0xff, 0xff})
	f.Add(uint8(4), []byte{0x00, 0x01, 0xff, 0xff})
	h := newSwitch(f, defaults(func(c *pfc.Config) { c.Watchdog = 0 }), defaults(nil), defaults(nil))
	h.Links[pUp].Record = false
	f.Fuzz(func(t *testing.T, d uint8, body []byte) {
		dst := dsts[int(d)%len(dsts)]
		frame := make([]byte, 14+min(len(body), 1500))
		copy(frame, dst[:])
		copy(frame[6:], neighbour[:])
		binary.BigEndian.PutUint16(frame[12:], wire.EtherTypeMACControl)
		copy(frame[14:], body)
		linkLocal := h.SW.Counters(pUp).Drops[pkt.ReasonLinkLocal]
		h.Links[pUp].Inject(frame)
		h.Settle()
		if m, err := wire.ParsePFCFrame(frame); err == nil {
			// Up maps priority p to queue p (8 queues, no queue_map).
			if p := pausedQueues(h, pUp); p&^m.Enable != 0 {
				t.Fatalf("paused %08b after a frame enabling %08b", p, m.Enable)
			}
		} else if pausedQueues(h, pUp) != 0 {
			t.Fatalf("paused %08b after a frame that does not parse (%v)", pausedQueues(h, pUp), err)
		}
		if dst != wire.PFCDst && h.SW.Counters(pUp).Drops[pkt.ReasonLinkLocal] != linkLocal+1 {
			t.Fatalf("a MAC control frame to %x was not dropped as link_local", dst)
		}
		for i, l := range h.Links {
			for _, f := range l.Sent {
				if binary.BigEndian.Uint16(f[12:]) == wire.EtherTypeMACControl && [6]byte(f[6:12]) == neighbour {
					t.Fatalf("port %d was sent the neighbour's MAC control frame % x", i, f)
				}
			}
			l.Sent = nil
		}
		h.Advance(400e6, 50e6) // 65535 quanta at 100 Mbit/s: 335.5 ms
		if p := pausedQueues(h, pUp); p != 0 {
			t.Fatalf("still paused %08b after the longest pause", p)
		}
		h.CheckFrames(t)
	})
}

// FuzzFrameSequence plays sequences of PFC frames over the whole range of
// vectors and times, with time advancing between them by up to 255 x
// 64 us, on a port with a short watchdog: nothing panics; a queue is
// paused while a pause of its priority is in force, and only then: from
// the frame for its time (never past MaxPause), unless a later frame
// replaced it; every pause runs out; the counts balance; every frame
// comes back.
func FuzzFrameSequence(f *testing.F) {
	rec := func(gap uint8, enable uint8, times ...uint16) []byte {
		b := []byte{gap, enable}
		for p := 0; p < 8; p++ {
			var t uint16
			if p < len(times) {
				t = times[p]
			}
			b = binary.BigEndian.AppendUint16(b, t)
		}
		return b
	}
	f.Add(append(rec(0, 0x08, 0, 0, 0, 1000), rec(10, 0x08)...))
	f.Add(append(append(rec(1, 0xff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff), rec(255, 0xff, 1, 1, 1, 1, 1, 1, 1, 1)...), rec(255, 0x81, 0)...))
	f.Add(rec(3, 0x00, 5))
	up := defaults(func(c *pfc.Config) {
		c.Watchdog, c.WatchdogRestore, c.WatchdogAction = units.Duration(20e6), units.Duration(5e6), pfc.ActionForward
	})
	h := newSwitch(f, up, defaults(nil), defaults(nil))
	b := inst(h)
	h.Links[pUp].Record = false
	const recLen = 18
	f.Fuzz(func(t *testing.T, seq []byte) {
		var until [8]int64 // when each priority's last honoured pause ends
		// check compares the queues paused at now with the pauses: each
		// is paused exactly while its priority's pause is in force (up
		// holds no packets, so the watchdog never trips).
		check := func(when string) {
			t.Helper()
			now, got, storm := h.Clock.T, pausedQueues(h, pUp), b.Stats(pUp).Storm
			for p := 0; p < 8; p++ {
				switch {
				case got&(1<<p) != 0 && until[p] <= now:
					t.Fatalf("%s: queue %d paused at %d, its pause ended at %d", when, p, now, until[p])
				case got&(1<<p) == 0 && until[p] > now && storm&(1<<p) == 0:
					t.Fatalf("%s: queue %d not paused at %d, its pause ends at %d", when, p, now, until[p])
				}
			}
		}
		for len(seq) >= recLen {
			r := seq[:recLen]
			seq = seq[recLen:]
			h.Advance(int64(r[0])*64e3+1, 1e6)
			check("before a frame")
			storm := b.Stats(pUp).Storm
			fr := frameOf(r[1:])
			h.Links[pUp].Inject(fr)
			h.Settle()
			now := h.Clock.T
			m, _ := wire.ParsePFCFrame(fr)
			for p := 0; p < 8; p++ {
				if m.Enable&(1<<p) == 0 || storm&(1<<p) != 0 {
					continue
				}
				until[p] = 0
				if m.Time[p] != 0 {
					until[p] = now + min(wire.PauseNs(m.Time[p], rate), int64(pfc.MaxPause))
				}
			}
			check("after a frame")
		}
		h.Advance(int64(pfc.MaxPause)+int64(100e6), int64(pfc.MaxPause)/4)
		if p := pausedQueues(h, pUp); p != 0 {
			t.Fatalf("still paused %08b after the longest pause", p)
		}
		if s := b.Stats(pUp); s.Paused != 0 || s.Underflow != 0 {
			t.Fatalf("after: %+v", s)
		}
		h.CheckFrames(t)
	})
}
