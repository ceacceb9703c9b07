package pfc_test

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/pfc"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

// TestPauseSpreads: host 1 sends priority 3 through switch A to host 3
// behind switch B's slow port, below A's own link rate. B's queue builds
// and B pauses priority 3 on the link from A; A's queue toward B then
// builds behind the pause, and A pauses its own upstream, host 1's NIC:
// the pause has spread one hop toward the source, though nothing at A is
// a bottleneck. Frames cross the link between the switches as bytes: A
// reads the pause B built. Host 1's NIC honours A's pauses, as a RoCE
// NIC does (one that does not would have its packets dropped past A's
// xoff + headroom). Every packet arrives (none is dropped), and once the
// traffic stops every pause is resumed.
func TestPauseSpreads(t *testing.T) {
	f := dptest.NewFabric()
	c := func() *pfc.Config {
		return defaults(func(c *pfc.Config) { c.XOFF, c.XON, c.PauseQuanta = 8*frameLen, 4*frameLen, 2000 })
	}
	port := func(name string, role mech.Role, r float64) config.Port {
		return config.Port{Name: name, Role: role, Scheduler: "drr", Queues: 8, Rate: units.Rate(r), Burst: 1538, Mechanisms: mechs(c())}
	}
	a := f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 1, Ports: []config.Port{
		port("a-host", mech.RoleHost, 1e9), port("a-b", mech.RoleFabric, 1e9)}}}, 8192)
	b := f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 2, Ports: []config.Port{
		port("b-a", mech.RoleFabric, 1e9), port("b-host", mech.RoleHost, 100e6)}}}, 8192)
	f.Connect(a, 1, b, 0)
	b.Links[1].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1)) // host 3 behind B
	a.Links[0].Inject(pkttest.ARP(pkttest.MAC(1), ip1, ip3)) // host 1 behind A
	f.Settle()
	a.Links[0].Record, b.Links[1].Record = true, true
	a.Links[0].Sent, b.Links[1].Sent = nil, nil
	pa, pb := inst(a), inst(b)
	const n = 300
	aPaused := false
	sent := 0
	for i := 0; sent < n && i < 100*n; i++ {
		// 1000 B every 10 us (800 Mbit/s) while A has not paused host 1
		// (A's record of it is the NIC's state: the link has no delay,
		// and A refreshes its pauses before they run out).
		if pa.Stats(0).UpstreamPaused&(1<<3) == 0 {
			a.Links[0].Inject(data(dscp3, 1))
			sent++
		}
		f.Advance(10_000, 10_000)
		if a.SW.Scheduler(1).Paused(3) {
			aPaused = true
		}
	}
	if sent != n {
		t.Fatalf("host 1 sent %d of %d packets: paused for good", sent, n)
	}
	sb, sa := pb.Stats(0), pa.Stats(0)
	if sb.PausesSent[3] == 0 {
		t.Fatalf("B never paused A: %+v", sb)
	}
	if !aPaused || pa.Stats(1).PausesRx[3] == 0 {
		t.Fatalf("A's queue toward B was never paused (%d pauses received)", pa.Stats(1).PausesRx[3])
	}
	if sa.PausesSent[3] == 0 {
		t.Fatalf("A never paused host 1: %+v", sa)
	}
	var toHost int
	for _, fr := range a.Links[0].Sent {
		if len(fr) >= 14 && fr[12] == 0x88 && fr[13] == 0x08 {
			m, err := wire.ParsePFCFrame(fr)
			if err != nil || m.Enable&(1<<3) == 0 {
				t.Fatalf("A sent host 1 %+v, %v", m, err)
			}
			toHost++
		}
	}
	if toHost == 0 {
		t.Fatal("no PFC frame reached host 1's link")
	}
	f.Advance(100e6, 100_000)
	if got := len(b.Links[1].Sent); got != n {
		t.Fatalf("%d of %d packets arrived", got, n)
	}
	for _, h := range []*dptest.Harness{a, b} {
		for p := 0; p < 2; p++ {
			s := inst(h).Stats(p)
			if s.UpstreamPaused != 0 || s.Held != [8]int64{} || s.Paused != 0 || s.HeadroomDrops != [8]uint64{} {
				t.Fatalf("after the traffic: %+v", s)
			}
		}
		h.CheckFrames(t)
	}
	if f.LostFrames != 0 {
		t.Fatalf("%d frames lost on the wire", f.LostFrames)
	}
}
