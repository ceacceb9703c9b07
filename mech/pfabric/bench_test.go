package pfabric_test

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech/pfabric"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// BenchmarkPFabric: frames of 64 flows through a pfabric port ranked by
// rank (gsperf or las), 64 at a time, per frame: the whole switch's path
// with the rank and the pfabric scheduler's flow table on it.
func BenchmarkPFabric(b *testing.B) {
	for _, rank := range []string{pfabric.RankGsperf, pfabric.RankLAS} {
		b.Run(rank, func(b *testing.B) {
			cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a"},
				{Name: "b", Scheduler: "pfabric", Buffer: 1 << 20,
					Mechanisms: config.Mechanisms{{Name: "pfabric", Config: &pfabric.Config{Rank: rank}}}}}}}
			h := dptest.New(b, cfg, 8192)
			h.Links[1].Inject(pkttest.ARP(pkttest.MAC(2), ip2, ip1))
			h.Settle()
			var frames [64][]byte
			for i := range frames {
				frames[i] = gsperfUDP(uint16(1000+i), uint32(i*1000), 58)
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
