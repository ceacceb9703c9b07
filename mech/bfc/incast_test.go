package bfc_test

import (
	"testing"

	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// line is the BFC testbed in memory: upstream switches A and B (a host
// port each, whose hosts ignore pauses, and a 1 Gbit/s port toward C), and
// C, whose port toward the receiver is shaped to 100 Mbit/s with a 64 KB
// buffer. With on, BFC runs on every port.
func line(t *testing.T, on bool) (f *dptest.Fabric, a, b, c *dptest.Harness) {
	const delay = 20e3
	m := func(cfg *bfc.Config) []dataplane.MechConfig {
		if !on {
			return nil
		}
		return mechs(cfg)
	}
	f = dptest.NewFabric()
	up := func(id uint16) *dptest.Harness {
		return f.Add(t, dataplane.Config{Workers: 1, SwitchID: id, Ports: []dataplane.PortConfig{
			{Name: "h", Scheduler: "drr", Queues: 16, Mechanisms: m(&bfc.Config{})},
			{Name: "c", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, RateBits: 1e9, BurstBytes: 1538, BufferBytes: 16 << 20, DelayNs: delay, Mechanisms: m(&bfc.Config{})},
		}}, 16384)
	}
	a, b = up(1), up(2)
	c = f.Add(t, dataplane.Config{Workers: 1, SwitchID: 3, Ports: []dataplane.PortConfig{
		{Name: "a", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, DelayNs: delay, Mechanisms: m(&bfc.Config{})},
		{Name: "b", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, DelayNs: delay, Mechanisms: m(&bfc.Config{})},
		{Name: "r", Scheduler: "drr", Queues: 16, RateBits: 100e6, BurstBytes: 1538, BufferBytes: 64 << 10, Mechanisms: m(&bfc.Config{})},
	}}, 16384)
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
