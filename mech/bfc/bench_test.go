package bfc_test

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// BenchmarkBFC: frames of 64 flows from a BFC neighbour through a port
// assigning queues (assign dynamic or stochastic), 64 at a time, per
// frame: the whole switch's path with BFC's flow table on it (Admit,
// Enqueued, Dequeued).
func BenchmarkBFC(b *testing.B) {
	for _, assign := range []string{bfc.AssignDynamic, bfc.AssignStochastic} {
		b.Run(assign, func(b *testing.B) {
			cfg := dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 7, Ports: []config.Port{
				{Name: "up", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
				{Name: "out", Scheduler: "drr", Queues: 8, Buffer: 1 << 20, Mechanisms: mechs(&bfc.Config{Assign: assign})},
			}}}
			h := dptest.New(b, cfg, 8192)
			h.Links[1].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
			h.Settle()
			var frames [64][]byte
			for i := range frames {
				frames[i] = pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, uint16(1000+i), 9, make([]byte, 58))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += len(frames) {
				for _, f := range frames {
					h.Links[0].Inject(f)
				}
				h.Settle()
			}
		})
	}
}
