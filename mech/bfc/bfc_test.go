package bfc_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

var ip1, ip3 = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 3}

// frameLen is the length of the test's data frames; wireLen what the
// shaper and BFC charge for one.
const (
	frameLen = 1000
	wireLen  = frameLen + 24
)

func udp(sport uint16) []byte {
	return pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, sport, 9, make([]byte, frameLen-42))
}

// tagged is udp(sport) with a BFC tag of upstream queue upq.
func tagged(upq uint16, sport uint16) []byte {
	f := udp(sport)
	b := make([]byte, len(f)+wire.TagLen)
	copy(b[wire.TagLen:], f)
	if _, err := wire.InsertTag(b, upq); err != nil {
		panic(err)
	}
	return b
}

// bfcFrames parses the BFC frames among sent (the others are skipped).
func bfcFrames(t *testing.T, sent [][]byte) []wire.BFC {
	t.Helper()
	var out []wire.BFC
	for _, f := range sent {
		if len(f) < 14 || binary.BigEndian.Uint16(f[12:]) != wire.EtherType {
			continue
		}
		m, err := wire.ParseBFCFrame(f)
		if err != nil {
			t.Fatalf("a BFC frame the switch sent does not parse: %v (% x)", err, f)
		}
		out = append(out, m)
	}
	return out
}

func ofType(ms []wire.BFC, ty wire.Type) []wire.BFC {
	var out []wire.BFC
	for _, m := range ms {
		if m.Type == ty {
			out = append(out, m)
		}
	}
	return out
}

func inst(h *dptest.Harness) *bfc.BFC { return h.SW.Mechanisms()["bfc"].(*bfc.BFC) }

func mechs(c *bfc.Config) config.Mechanisms {
	return config.Mechanisms{{Name: "bfc", Config: c}}
}

// congested is one switch (the downstream, congested one): port 0 "up"
// faces a BFC neighbour, port 1 "out" is a host port shaped to rate.
func congested(t *testing.T, out *bfc.Config, rate uint64, buffer uint64) *dptest.Harness {
	t.Helper()
	cfg := dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 7, Ports: []config.Port{
		{Name: "up", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
		{Name: "out", Scheduler: "drr", Queues: 8, Rate: units.Rate(rate), Burst: 1538, Buffer: units.Size(buffer), Mechanisms: mechs(out)},
	}}}
	h := dptest.New(t, cfg, 8192)
	h.Record()
	h.Links[1].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1)) // the receiver announces itself
	h.Settle()
	h.Links[0].Sent, h.Links[1].Sent = nil, nil
	return h
}

// frameTime is how long one test frame takes at rate bit/s, in ns.
func frameTime(rate uint64) int64 { return int64(wireLen) * 8e9 / int64(rate) }

// TestResumeOnlyAfterLastOverThresholdPacketLeaves: the upstream queue is
// paused by the first packet that finds its queue above Th and resumed when
// the last packet that found it above Th leaves, not before, and not later
// (a packet queued below Th behind it does not hold the resume back).
func TestResumeOnlyAfterLastOverThresholdPacketLeaves(t *testing.T) {
	const rate = 100e6
	h := congested(t, &bfc.Config{Assign: bfc.AssignSingle, Th: 3*wireLen - 1}, rate, 1<<20)
	b := inst(h)
	out := h.SW.Scheduler(1)
	out.Pause(0) // hold the port so the queue builds exactly as injected
	for i := 0; i < 10; i++ {
		h.Links[0].Inject(tagged(5, 1))
	}
	h.Settle()
	// Packet i finds i frames queued: i = 3..9 are above Th.
	if c := b.Counter(0, 5); c != 7 {
		t.Fatalf("counter of upstream queue 5 = %d after 10 packets, want 7", c)
	}
	ms := bfcFrames(t, h.Links[0].Sent)
	if len(ms) != 1 || ms[0].Type != wire.TypeBFCPause || ms[0].Queue != 5 || ms[0].Switch != 7 || ms[0].Port != 0 {
		t.Fatalf("after the burst the upstream got %+v, want one PAUSE of queue 5 from switch 7 port 0", ms)
	}
	if src := [6]byte(h.Links[0].Sent[0][6:12]); src != [6]byte(h.SW.Ports()[0].MAC) {
		t.Fatalf("PAUSE from %x, want the port's MAC %x", src, h.SW.Ports()[0].MAC)
	}
	h.Links[0].Sent = nil
	out.Resume(0)
	base := h.Links[1].SentCount
	injected := false
	for step := 0; step < 200; step++ {
		h.Advance(frameTime(rate)/8, frameTime(rate)/8)
		sent := h.Links[1].SentCount - base
		if sent >= 8 && !injected {
			if sent >= 10 {
				t.Fatalf("%d left in one step", sent)
			}
			// At most two left, both above Th; this one finds them, is not above Th, is not counted.
			if c := b.Counter(0, 5); c != int32(10-sent) {
				t.Fatalf("counter %d with %d packets above Th still queued", c, 10-sent)
			}
			h.Links[0].Inject(tagged(5, 1))
			h.Settle()
			injected = true
			if c := b.Counter(0, 5); c != int32(10-sent) {
				t.Fatalf("counter %d after a packet below Th, want %d", c, 10-sent)
			}
		}
		resumes := ofType(bfcFrames(t, h.Links[0].Sent), wire.TypeBFCResume)
		if len(resumes) == 0 {
			if sent >= 10 {
				t.Fatalf("the last packet above Th left (%d sent) and no RESUME", sent)
			}
			continue
		}
		_, queued := out.(sched.Backlogger).Backlog(0)
		if sent != 10 || queued != 1 || len(resumes) != 1 || resumes[0].Queue != 5 {
			t.Fatalf("RESUME %+v when %d packets had left and %d were queued; want one RESUME of queue 5 when packet 9 (the tenth) leaves, the uncounted eleventh still queued",
				resumes, sent, queued)
		}
		if !wire.SeqAfter(resumes[0].Seq, ms[0].Seq) {
			t.Fatalf("RESUME seq %d not after PAUSE seq %d", resumes[0].Seq, ms[0].Seq)
		}
		h.Advance(10*frameTime(rate), frameTime(rate))
		if h.Links[1].SentCount-base != 11 || b.Counter(0, 5) != 0 || b.Stats(0).CountersActive != 0 {
			t.Fatalf("after the drain: %d sent, counter %d", h.Links[1].SentCount-base, b.Counter(0, 5))
		}
		h.CheckFrames(t)
		return
	}
	t.Fatal("no RESUME")
}

// TestCountersRightAfterDrops: packets the traffic manager refuses raise no
// counter, so right after a burst that overflows the port the counter is
// exactly the queued packets that found their queue above Th; a port that
// goes down drops its queue and every counter comes back to zero with one
// RESUME.
func TestCountersRightAfterDrops(t *testing.T) {
	const rate = 100e6
	h := congested(t, &bfc.Config{Assign: bfc.AssignSingle, Th: 2 * wireLen}, rate, 6*1024)
	b := inst(h)
	out := h.SW.Scheduler(1)
	out.Pause(0)
	for i := 0; i < 40; i++ {
		h.Links[0].Inject(tagged(2, 1))
	}
	h.Settle()
	c := h.SW.Counters(1)
	var dropped uint64
	for _, d := range c.Drops {
		dropped += d
	}
	_, queued := out.(sched.Backlogger).Backlog(0)
	if dropped == 0 || queued == 0 || int(queued)+int(dropped) != 40 {
		t.Fatalf("%d queued, %d dropped of 40: the port's buffer should have refused some", queued, dropped)
	}
	// Packets 0..2 found at most 2 x wireLen queued: not above Th.
	if got, want := b.Counter(0, 2), int32(queued)-3; got != want {
		t.Fatalf("counter %d with %d queued and %d dropped, want %d (drops must not count)", got, queued, dropped, want)
	}
	if n := len(ofType(bfcFrames(t, h.Links[0].Sent), wire.TypeBFCPause)); n != 1 {
		t.Fatalf("%d PAUSEs, want 1", n)
	}
	// The port goes down with the queue full: the flush drops everything.
	h.SW.SetPortDown(1, true)
	h.Settle()
	if got := b.Counter(0, 2); got != 0 || b.Stats(0).CountersActive != 0 || b.Stats(1).Underflow != 0 {
		t.Fatalf("after the flush: counter %d, active %d, underflow %d", got, b.Stats(0).CountersActive, b.Stats(1).Underflow)
	}
	ms := bfcFrames(t, h.Links[0].Sent)
	if r := ofType(ms, wire.TypeBFCResume); len(r) != 1 || r[0].Queue != 2 {
		t.Fatalf("frames to the upstream %+v: want one RESUME of queue 2 after the flush", ms)
	}
	h.SW.SetPortDown(1, false)
	h.Settle()
	h.CheckFrames(t)
}

// TestStickyAssignmentWithinTwoHRTT: a flow whose packets all left comes
// back within 2 HRTT and keeps its queue, although the rotating cursor has
// moved on; after 2 HRTT it gets a new one. A flow that comes back after
// its queue went to a new flow keeps it too, counted as sticky reuse.
func TestStickyAssignmentWithinTwoHRTT(t *testing.T) {
	const rate = 100e6
	hrtt := units.Duration(200e3) // sticky = 400 us
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "up", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{HRTT: hrtt})},
		{Name: "out", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Rate: rate, Burst: 4 * 1538, Mechanisms: mechs(&bfc.Config{HRTT: hrtt})},
	}}}
	h := dptest.New(t, cfg, 4096)
	b := inst(h)
	// The test's flows, F (1), G (2) and eight new ones (10..17), each need
	// an entry of their own in "out"'s flow table.
	flows := [][]byte{udp(1), udp(2)}
	for i := 0; i < 8; i++ {
		flows = append(flows, udp(uint16(10+i)))
	}
	fixKey(t, b, 1, flows...)
	h.Record()
	h.Links[1].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
	h.Settle()
	queueOf := func(sport uint16, after int64) int {
		t.Helper()
		h.Links[1].Sent = nil
		h.Links[0].Inject(udp(sport))
		h.Advance(after, 10e3)
		if len(h.Links[1].Sent) != 1 {
			t.Fatalf("%d frames out", len(h.Links[1].Sent))
		}
		q, ok := wire.ReadTag(h.Links[1].Sent[0])
		if !ok {
			t.Fatal("the frame left toward a BFC neighbour untagged")
		}
		return int(q)
	}
	got := []int{
		queueOf(1, 50e3),  // F: a new flow, the first empty queue
		queueOf(2, 100e3), // G: the next
		queueOf(1, 500e3), // F again, 150 us after it left: within sticky
		queueOf(1, 50e3),  // F again, 500 us after: a new queue
	}
	if want := []int{0, 1, 0, 2}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("queues %v, want %v", got, want)
	}
	if st := b.Stats(1); st.Sticky != 1 || st.StickyReuse != 0 || st.AssignedEmpty != 3 {
		t.Fatalf("stats %+v: want 1 sticky, 3 assigned to empty queues", st)
	}
	// F is on queue 2 and has left. Eight new flows at once take queues
	// 3..7, 0, 1 and, the eighth, F's queue 2; F comes back within sticky.
	h.Links[1].Sent = nil
	for i := 0; i < 8; i++ {
		h.Links[0].Inject(udp(uint16(10 + i)))
	}
	h.Advance(20e3, 10e3)
	h.Links[0].Inject(udp(1))
	h.Advance(2e6, 10e3)
	byFlow := map[uint16]int{}
	for _, fr := range h.Links[1].Sent {
		q, _ := wire.ReadTag(fr)
		byFlow[binary.BigEndian.Uint16(fr[wire.TagLen+34:])] = int(q)
	}
	if len(byFlow) != 9 || byFlow[17] != 2 || byFlow[1] != 2 {
		t.Fatalf("queues by flow %v: want the eighth new flow (17) and F (1) on queue 2", byFlow)
	}
	if st := b.Stats(1); st.Sticky != 2 || st.StickyReuse != 1 || st.Collisions != 0 {
		t.Fatalf("stats %+v: want 2 sticky, 1 sticky reuse, no flow-table collision", st)
	}
	h.CheckFrames(t)
}

// twoSwitches is a fabric of an upstream switch A (port 0 host, port 1
// toward B) and the congested switch B (port 0 toward A, port 1 the host
// shaped to rate), links of delay ns each way.
func twoSwitches(t *testing.T, fast, rate uint64, burst int64, delay int64, cb *bfc.Config) (f *dptest.Fabric, a, b *dptest.Harness) {
	t.Helper()
	f = dptest.NewFabric()
	a = f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 1, Ports: []config.Port{
		{Name: "h"},
		{Name: "b", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Rate: units.Rate(fast), Burst: 1538, Buffer: 8 << 20, Delay: units.Duration(delay), Mechanisms: mechs(&bfc.Config{HRTT: cb.HRTT})},
	}}}, 16384)
	b = f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 2, Ports: []config.Port{
		{Name: "a", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Delay: units.Duration(delay), Mechanisms: mechs(&bfc.Config{HRTT: cb.HRTT})},
		{Name: "out", Scheduler: "drr", Queues: 8, Rate: units.Rate(rate), Burst: units.Size(burst), Buffer: 8 << 20, Mechanisms: mechs(cb)},
	}}}, 16384)
	f.Connect(a, 1, b, 0)
	b.Links[1].Record = true
	b.Links[1].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1)) // flooded to A: both learn where the receiver is
	f.Settle()
	b.Links[1].Sent = nil
	return f, a, b
}

// TestBitmapHealsLostResume: every RESUME from the congested switch is
// lost on the wire. Whenever the congested switch has had no upstream queue
// to pause for one bitmap period (plus the link delay), the upstream queue
// must run again: the bitmap heals each lost RESUME, not the watchdog, and
// every packet gets through.
func TestBitmapHealsLostResume(t *testing.T) {
	const delay, step = 20e3, 2e3
	f, a, b := twoSwitches(t, 1e9, 100e6, 1538, delay, &bfc.Config{})
	bb, ba := inst(b), inst(a)
	period, _ := bb.Period(0)
	if want := int64(4 * (2*delay + 2*bfc.DefaultBudget)); period != want {
		t.Fatalf("bitmap period %d ns, want 4 x HRTT = 4 x (2 x the port's delay + 2 x budget) = %d", period, want)
	}
	lost := 0
	f.Lose = func(h *dptest.Harness, port int, fr []byte) bool {
		if h != b || port != 0 || binary.BigEndian.Uint16(fr[12:]) != wire.EtherType {
			return false
		}
		if m, err := wire.ParseBFCFrame(fr); err == nil && m.Type == wire.TypeBFCResume {
			lost++
			return true
		}
		return false
	}
	for i := 0; i < 200; i++ {
		a.Links[0].Inject(udp(uint16(1 + i%3)))
	}
	var zeroSince int64 = -1
	healed := 0
	wasPaused := false
	for f.Clock.T < 30e6 {
		f.Advance(step, step)
		paused := ba.Stats(1).PausedByPeer != 0
		if bb.Stats(0).CountersActive != 0 {
			zeroSince = -1
		} else if zeroSince < 0 {
			zeroSince = f.Clock.T
		}
		if paused && zeroSince >= 0 && f.Clock.T-zeroSince > period+delay+step {
			t.Fatalf("t=%d us: the upstream queue is still paused %d us after the congested switch's last counter went to zero (bitmap period %d us)",
				f.Clock.T/1000, (f.Clock.T-zeroSince)/1000, period/1000)
		}
		if wasPaused && !paused {
			healed++ // no RESUME ever arrives: a bitmap resumed it
		}
		wasPaused = paused
	}
	st := ba.Stats(1)
	t.Logf("%d RESUMEs lost, %d healed by bitmaps (%d received), bitmap period %d us", lost, healed, st.BitmapsRx, period/1000)
	if lost == 0 || healed == 0 || st.BitmapsRx == 0 || st.WatchdogResumes != 0 || st.ResumesRx != 0 {
		t.Fatalf("lost %d, healed %d; upstream stats %+v: bitmaps, not the watchdog, must heal the lost RESUMEs", lost, healed, st)
	}
	if n := len(b.Links[1].Sent); n != 200 {
		t.Fatalf("%d of 200 frames delivered", n)
	}
	a.CheckFrames(t)
	b.CheckFrames(t)
}

// TestIdleFractionAppendixC: one flow bottlenecked at B, arriving at twice
// the drain rate when not paused (x = 2), with Th = HRTT x rate: BFC's
// appendix C gives the fraction of time the flow has no packet at the
// bottleneck as (x-1)/(Th/(HRTT mu) x + x^2 - 1) = 1/5, and a peak queue of
// Th + HRTT mu (x-1) = 2 Th. A late resume would idle the port longer, a
// late pause would grow the queue past 2 Th.
func TestIdleFractionAppendixC(t *testing.T) {
	const (
		mu    = 100e6
		delay = 250e3 // HRTT = 500 us: Th = HRTT x mu = 6,250 B
	)
	hrtt := units.Duration(2 * delay)
	f, a, b := twoSwitches(t, 2*mu, mu, 1538, delay, &bfc.Config{HRTT: hrtt})
	th := float64(hrtt) * mu / 8e9
	wireBytes := func() float64 {
		c := b.SW.Counters(1)
		return float64(c.TxBytes + 24*c.TxPackets)
	}
	// Keep the upstream queue backlogged: 1.3 x mu offered for 400 ms.
	gap := float64(frameTime(mu)) / 1.3
	next := 0.0
	var t0 int64
	var w0 float64
	var peak uint64
	var samples, empty int
	for f.Clock.T < 400e6 {
		for next <= float64(f.Clock.T) {
			a.Links[0].Inject(udp(1))
			next += gap
		}
		f.Advance(5e3, 5e3)
		if t0 == 0 && f.Clock.T >= 100e6 { // steady state from 100 ms
			t0, w0 = f.Clock.T, wireBytes()
		}
		if t0 != 0 {
			var n uint64
			for q := 0; q < 8; q++ {
				x, k := b.SW.Scheduler(1).(sched.Backlogger).Backlog(q)
				n += x + 24*uint64(k)
			}
			peak = max(peak, n)
			samples++
			if n == 0 {
				empty++
			}
		}
	}
	util := (wireBytes() - w0) / (mu / 8 * float64(f.Clock.T-t0) / 1e9)
	idle := float64(empty) / float64(samples)
	const x = 2.0
	want := (x - 1) / (th/(float64(hrtt)*mu/8e9)*x + x*x - 1)
	t.Logf("no packet at the bottleneck %.3f of the time (appendix C: %.3f); utilisation %.3f; peak queue %.0f B = %.2f Th (appendix C: %.2f Th); %d pauses",
		idle, want, util, float64(peak), float64(peak)/th, 1+(x-1), inst(b).Stats(0).PausesSent)
	if idle < want-0.03 || idle > want+0.03 {
		t.Errorf("the flow had no packet at the bottleneck %.3f of the time, appendix C says %.3f", idle, want)
	}
	if float64(peak) > 2*th+2*wireLen || float64(peak) < 2*th-2*wireLen {
		t.Errorf("peak queue %d B, appendix C says 2 Th = %.0f B (within two frames)", peak, 2*th)
	}
}
