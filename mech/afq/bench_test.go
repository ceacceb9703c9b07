package afq_test

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech/afq"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// BenchmarkAFQ: frames of 64 flows through a port running AFQ (the
// paper's sketch, 4 x 16384) on rsp, 64 at a time, per frame: the whole
// switch's path with AFQ's Admit and Enqueued on it.
func BenchmarkAFQ(b *testing.B) {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a"}, {Name: "b"},
		{Name: "c", Scheduler: "rsp", Queues: 8, Buffer: 4 << 20,
			Mechanisms: config.Mechanisms{{Name: "afq", Config: &afq.Config{BytesPerRound: 1514, Sketch: afq.Sketch{Rows: 4, Cols: 16384}}}}}}}}
	h := dptest.New(b, cfg, 8192)
	h.Links[2].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
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
}
