package sfc_test

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/sfc"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// BenchmarkSFCCacheHit: frames of 64 flows of a local sender toward a
// destination the pause cache holds, 64 at a time, per frame: the whole
// switch's path with SFC's cache lookup and Bloom filter on every frame
// (each flow's first frame sends a BTS; the clock stands still, so the
// rest are suppressed).
func BenchmarkSFCCacheHit(b *testing.B) {
	c := sfc.NewConfig
	cfg := dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 1, Ports: []config.Port{
		{Name: "h", MAC: config.MAC(portMAC(sw1, 0)), Mechanisms: mechs(c())},
		{Name: "up", MAC: config.MAC(portMAC(sw1, 1)), Role: mech.RoleFabric, Mechanisms: mechs(c())},
	}}}
	h := dptest.New(b, cfg, 8192)
	h.Links[0].Inject(pkttest.ARP(macH1, h1, r))
	h.Links[1].Inject(pkttest.ARP(macR, r, h1))
	h.Settle()
	orig := gsperfFrame(macR, macH1, h1, r, 4000, 1, 0)
	bts := make([]byte, wire.MaxBTSFrameLen)
	n, err := wire.BuildBTS(bts, wire.MACs{Dst: macH1, Src: macR}, wire.DefaultBTSDSCP, orig, 14, 34,
		wire.BTS{Flags: wire.BTSCacheable, Pause: 100000, Switch: 2})
	if err != nil {
		b.Fatal(err)
	}
	h.Links[1].Inject(bts[:n])
	h.Settle()
	s := h.SW.Mechanisms()["sfc"].(*sfc.SFC)
	if s.CacheRemaining(r, 0) == 0 {
		b.Fatal("no cache entry")
	}
	var frames [64][]byte
	for i := range frames {
		frames[i] = gsperfFrame(macR, macH1, h1, r, uint16(1000+i), uint64(i), 0)[:100]
		frames[i][16], frames[i][17] = 0, 86 // IPv4 total length of the cut frame
		frames[i][24], frames[i][25] = 0, 0
		sum := pkttest.Checksum(frames[i][14:34])
		frames[i][24], frames[i][25] = byte(sum>>8), byte(sum)
		frames[i][38], frames[i][39] = 0, 66 // UDP length
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(frames) {
		for _, f := range frames {
			h.Links[0].Inject(f)
		}
		h.Settle()
	}
	b.StopTimer()
	if q, c, _ := s.Sent(1); c != 64 || q != 0 || b.N > 64 && s.Suppressed(1) == 0 {
		b.Fatalf("sent %d from the queue, %d from the cache, %d suppressed; want 64 from the cache, the rest suppressed", q, c, s.Suppressed(1))
	}
}
