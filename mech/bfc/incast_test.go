package bfc_test

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
)

// line is the BFC testbed in memory: upstream switches A and B (a host
// port each, whose hosts ignore pauses, and a 1 Gbit/s port toward C), and
// C, whose port toward the receiver is shaped to 100 Mbit/s with a 64 KB
// buffer. With on, BFC runs on every port.
func line(t *testing.T, on bool) (f *dptest.Fabric, a, b, c *dptest.Harness) {
	const delay = 20e3
	m := func(cfg *bfc.Config) config.Mechanisms {
		if !on {
			return nil
		}
		return mechs(cfg)
	}
	f = dptest.NewFabric()
	up := func(id uint16) *dptest.Harness {
		return f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: int(id), Ports: []config.Port{
			{Name: "h", Scheduler: "drr", Queues: 16, Mechanisms: m(&bfc.Config{})},
			{Name: "c", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, Rate: 1e9, Burst: 1538, Buffer: 16 << 20, Delay: delay, Mechanisms: m(&bfc.Config{})},
		}}}, 16384)
	}
	a, b = up(1), up(2)
	c = f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 3, Ports: []config.Port{
		{Name: "a", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, Delay: delay, Mechanisms: m(&bfc.Config{})},
		{Name: "b", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, Delay: delay, Mechanisms: m(&bfc.Config{})},
		{Name: "r", Scheduler: "drr", Queues: 16, Rate: 100e6, Burst: 1538, Buffer: 64 << 10, Mechanisms: m(&bfc.Config{})},
	}}}, 16384)
	f.Connect(a, 1, c, 0)
	f.Connect(b, 1, c, 1)
	c.Links[2].Record = true
	c.Links[2].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
	f.Settle()
	c.Links[2].Sent = nil
	return f, a, b, c
}

// TestIncastIntoAShapedPort: eight flows from two upstream switches burst
// into one 100 Mbit/s port with a 64 KB buffer. Without BFC the port
// drops; with BFC it drops nothing, the upstream switches hold the excess,
// and every frame arrives.
func TestIncastIntoAShapedPort(t *testing.T) {
	const flows, perFlow = 8, 150
	for _, on := range []bool{false, true} {
		f, a, b, c := line(t, on)
		for i := 0; i < perFlow; i++ {
			for fl := 0; fl < flows; fl++ {
				h := a
				if fl%2 == 1 {
					h = b
				}
				h.Links[0].Inject(udp(uint16(1 + fl)))
			}
			f.Advance(20e3, 10e3) // each flow offers 1 frame / 20 us: 8 x 400 Mbit/s
		}
		f.Advance(200e6, 50e3)
		var drops uint64
		cs := c.SW.Counters(2)
		for r, n := range cs.Drops {
			if pkt.Reason(r) != pkt.ReasonNone {
				drops += n
			}
		}
		got := len(c.Links[2].Sent)
		t.Logf("bfc %v: %d of %d frames delivered, %d dropped at the congested port", on, got, flows*perFlow, drops)
		if !on {
			if drops == 0 {
				t.Fatal("without BFC the 64 KB port dropped nothing: the test does not congest it")
			}
			continue
		}
		if drops != 0 || got != flows*perFlow {
			t.Fatalf("with BFC: %d drops at the congested port, %d of %d delivered", drops, got, flows*perFlow)
		}
		ic := inst(c)
		for p := 0; p < 2; p++ {
			if st := ic.Stats(p); st.PausesSent == 0 || st.CountersActive != 0 {
				t.Fatalf("C's port %d: %+v", p, st)
			}
		}
		for _, h := range []*dptest.Harness{a, b} {
			if st := inst(h).Stats(1); st.PausesRx == 0 || st.WatchdogResumes != 0 || st.PausedByPeer != 0 {
				t.Fatalf("upstream: %+v", st)
			}
		}
		a.CheckFrames(t)
		b.CheckFrames(t)
		c.CheckFrames(t)
	}
}

// TestTwoFlowsNearTh is Fig. 7(a) on the fake clock: one flow from each of
// two upstream switches into C's port, every link at mu, so each flow
// arrives at up to twice what it drains (x = 2); HRTT comes from the
// links' delays. BFC holds each queue near Th: the peak is 2 Th, as
// appendix C says (plus a frame). When both links have the same delay the
// two flows run in lockstep and idle together, a fifth of the time
// (appendix C's bound for x = 2, both at once); when their HRTTs differ they
// drift apart and the port stays busy (utilisation at least 95%).
func TestTwoFlowsNearTh(t *testing.T) {
	for _, c := range []struct {
		name             string
		delayB           int64
		utilMin, utilMax float64
	}{
		{"same HRTT", 5e6, 0.78, 0.84},
		{"HRTTs apart", 2.5e6, 0.95, 1.01},
	} {
		t.Run(c.name, func(t *testing.T) { twoFlows(t, c.delayB, c.utilMin, c.utilMax) })
	}
}

func twoFlows(t *testing.T, delayB int64, utilMin, utilMax float64) {
	const (
		mu    = 100e6
		delay = 5e6 // A's link: HRTT = 10.05 ms with the default budget, the largest
	)
	f := dptest.NewFabric()
	up := func(id uint16, delay int64) *dptest.Harness {
		return f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: int(id), Ports: []config.Port{
			{Name: "h", Scheduler: "drr", Queues: 16},
			{Name: "c", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, Rate: mu, Burst: 1538, Buffer: 16 << 20, Delay: units.Duration(delay), Mechanisms: mechs(&bfc.Config{})},
		}}}, 16384)
	}
	a, b := up(1, delay), up(2, delayB)
	c := f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 3, Ports: []config.Port{
		{Name: "a", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, Rate: mu, Delay: delay, Mechanisms: mechs(&bfc.Config{})},
		{Name: "b", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, Rate: mu, Delay: units.Duration(delayB), Mechanisms: mechs(&bfc.Config{})},
		{Name: "r", Scheduler: "drr", Queues: 16, Rate: mu, Burst: 1538, Buffer: 16 << 20, Mechanisms: mechs(&bfc.Config{})},
	}}}, 16384)
	// The two flows need queues of their own at C's port r (sharing one, N_active
	// is 1 and Th twice as large): entries of their own in its flow table.
	fixKey(t, inst(c), 2, udp(1), udp(2))
	f.Connect(a, 1, c, 0)
	f.Connect(b, 1, c, 1)
	c.Links[2].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
	f.Settle()
	hrtt := float64(2*delay + 2*bfc.DefaultBudget)
	th := hrtt * mu / 8e9 / 2 // N_active = 2
	// Each host offers 0.8 mu (more than its share, mu/2), so the upstream
	// queues stay backlogged and send at mu whenever they are not paused.
	gap := float64(frameTime(mu)) / 0.8
	next := 0.0
	var t0 int64
	var w0 float64
	var peak uint64
	wire := func() float64 { x := c.SW.Counters(2); return float64(x.TxBytes + 24*x.TxPackets) }
	for f.Clock.T < 2e9 {
		for next <= float64(f.Clock.T) {
			a.Links[0].Inject(udp(1))
			b.Links[0].Inject(udp(2))
			next += gap
		}
		f.Advance(20e3, 20e3)
		if t0 == 0 && f.Clock.T >= 500e6 {
			t0, w0 = f.Clock.T, wire()
		}
		if t0 != 0 {
			for q := 0; q < 16; q++ {
				x, k := c.SW.Scheduler(2).(sched.Backlogger).Backlog(q)
				peak = max(peak, x+24*uint64(k))
			}
		}
	}
	util := (wire() - w0) / (mu / 8 * float64(f.Clock.T-t0) / 1e9)
	st := inst(c).Stats(2)
	t.Logf("Th %.0f B; peak queue %d B = %.2f Th; utilisation %.3f; %d + %d pauses", th, peak, float64(peak)/th, util,
		inst(c).Stats(0).PausesSent, inst(c).Stats(1).PausesSent)
	if float64(peak) > 2*th+2*wireLen {
		t.Errorf("peak queue %d B above 2 Th + a frame (%.0f B)", peak, 2*th+wireLen)
	}
	if util < utilMin || util > utilMax {
		t.Errorf("utilisation %.3f, want %.2f to %.2f", util, utilMin, utilMax)
	}
	if st.OverThreshold == 0 {
		t.Error("nothing went above Th")
	}
	if st.Collisions != 0 {
		t.Errorf("%d flow-table collisions at C's port r: the two flows shared a queue", st.Collisions)
	}
}
