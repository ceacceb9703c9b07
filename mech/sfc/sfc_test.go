package sfc_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/sfc"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

// The dumbbell of the tests, two L3 switches on one fake clock:
//
//	h1 10.1.1.1 -- sw1 port 0                     sw2 port 0 -- r 10.1.2.1 (8 Mbit/s: 1 byte per us)
//	h2 10.1.3.1 -- sw1 port 1   sw1 port 2 ==== sw2 port 1
//
// SFC runs on every port with rtt 10 ms: BDP at r's rate is 10,000 B, so
// Q_Th = 20,000 B, Q_Tg = 10,000 B and the Bloom filter resets every 5 ms.
var (
	h1, h2, r  = [4]byte{10, 1, 1, 1}, [4]byte{10, 1, 3, 1}, [4]byte{10, 1, 2, 1}
	macH1      = pkttest.MAC(1)
	macH2      = pkttest.MAC(2)
	macR       = pkttest.MAC(3)
	rateR      = uint64(8e6)
	sw1, sw2   = 0, 1
	pH1, pH2   = 0, 1 // sw1's host ports
	pUp        = 2    // sw1's uplink
	pR, pDown  = 0, 1 // sw2's host port and fabric port
	qth, qtg   = uint64(20000), uint64(10000)
	bloomReset = int64(5e6)
)

func portMAC(sw, port int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0xaa, byte(sw + 1), 0, 0, byte(port)}
}
func mac6(m net.HardwareAddr) [6]byte { return [6]byte(m) }

func conf(mode string) *sfc.Config {
	c := sfc.NewConfig()
	c.Mode = mode
	c.RTT = 10e6
	return c
}

func mechs(c *sfc.Config) config.Mechanisms {
	return config.Mechanisms{{Name: "sfc", Config: c}}
}

func prefix(s string) []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix(s)} }

// sw1Config: h1, h2 on their own subnets, the uplink toward sw2.
func sw1Config(c1 *sfc.Config) dataplane.Config {
	return dataplane.Config{Config: config.Config{SwitchID: 1, Workers: 1, Ports: []config.Port{
		{Name: "h1", MAC: config.MAC(portMAC(sw1, 0)), Addrs: prefix("10.1.1.254/24"), Mechanisms: mechs(c1)},
		{Name: "h2", MAC: config.MAC(portMAC(sw1, 1)), Addrs: prefix("10.1.3.254/24"), Mechanisms: mechs(c1)},
		{Name: "up", MAC: config.MAC(portMAC(sw1, 2)), Addrs: prefix("10.255.0.0/31"), Role: mech.RoleFabric, Mechanisms: mechs(c1)},
	},
		Routes: []config.Route{{Prefix: netip.MustParsePrefix("10.1.2.0/24"), Via: []netip.Addr{netip.MustParseAddr("10.255.0.1")}}},
		Neighbors: []config.Neighbor{{IP: netip.MustParseAddr("10.1.1.1"), MAC: macH1[:]},
			{IP: netip.MustParseAddr("10.1.3.1"), MAC: macH2[:]},
			{IP: netip.MustParseAddr("10.255.0.1"), MAC: config.MAC(portMAC(sw2, 1))}},
	}}
}

// sw2Config: r behind a port shaped to 8 Mbit/s, the fabric port toward sw1.
func sw2Config(c2 *sfc.Config) dataplane.Config {
	return dataplane.Config{Config: config.Config{SwitchID: 2, Workers: 1, Ports: []config.Port{
		{Name: "r", MAC: config.MAC(portMAC(sw2, 0)), Addrs: prefix("10.1.2.254/24"), Rate: units.Rate(rateR), Burst: 1538,
			Buffer: 4 << 20, BufferPackets: 8192, Mechanisms: mechs(c2)},
		{Name: "down", MAC: config.MAC(portMAC(sw2, 1)), Addrs: prefix("10.255.0.1/31"), Role: mech.RoleFabric, Mechanisms: mechs(c2)},
	}, Buffer: 8 << 20,
		Routes: []config.Route{{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Via: []netip.Addr{netip.MustParseAddr("10.255.0.0")}}},
		Neighbors: []config.Neighbor{{IP: netip.MustParseAddr("10.1.2.1"), MAC: macR[:]},
			{IP: netip.MustParseAddr("10.255.0.0"), MAC: config.MAC(portMAC(sw1, 2))}},
	}}
}

type dumbbell struct {
	f      *dptest.Fabric
	a, b   *dptest.Harness
	s1, s2 *sfc.SFC
}

func newDumbbell(t *testing.T, c1, c2 *sfc.Config) *dumbbell {
	f := dptest.NewFabric()
	a := f.Add(t, sw1Config(c1), 4096)
	b := f.Add(t, sw2Config(c2), 8192)
	f.Connect(a, pUp, b, pDown)
	a.Links[pH1].Record, a.Links[pH2].Record, b.Links[pR].Record = true, true, true
	return &dumbbell{f: f, a: a, b: b, s1: a.SW.Mechanisms()["sfc"].(*sfc.SFC), s2: b.SW.Mechanisms()["sfc"].(*sfc.SFC)}
}

// gsperfFrame is a 1000-byte gsperf data segment of flow id from src to dst,
// sent by a host to its gateway's MAC.
func gsperfFrame(gw [6]byte, srcMAC [6]byte, src, dst [4]byte, sport uint16, id uint64, tos uint8) []byte {
	payload := make([]byte, 1000-42)
	h := proto.Header{Type: proto.TypeData, Flow: id, Size: 1 << 20}
	h.Encode(payload)
	f := pkttest.UDP4(gw, srcMAC, src, dst, sport, 5500, payload)
	if tos != 0 {
		f[15] = tos
		f[24], f[25] = 0, 0
		s := pkttest.Checksum(f[14:34])
		f[24], f[25] = byte(s>>8), byte(s)
	}
	return f
}

func fromH1(sport uint16, id uint64) []byte {
	return gsperfFrame(mac6(portMAC(sw1, pH1)), macH1, h1, r, sport, id, 0)
}
func fromH2(sport uint16, id uint64, tos uint8) []byte {
	return gsperfFrame(mac6(portMAC(sw1, pH2)), macH2, h2, r, sport, id, tos)
}

// btsOf parses the BTS frames among frames (others are ignored).
func btsOf(t *testing.T, frames [][]byte) (out []wire.BTS, ips []wire.IPv4UDP) {
	t.Helper()
	for _, f := range frames {
		ip, msg, err := wire.ParseIPv4UDP(f)
		if err != nil || ip.DstPort != wire.BTSPort {
			continue
		}
		m, err := wire.ParseBTS(msg)
		if err != nil {
			t.Fatalf("a frame to port %d does not parse as a BTS: %v\n% x", wire.BTSPort, err, f)
		}
		out = append(out, m)
		ips = append(ips, ip)
	}
	return out, ips
}

// TestBTSFromTheCongestedQueue: 30 frames of one flow arrive at once at
// r's port, which has sent only its 1,000-byte burst. The first to find
// more than Q_Th queued, at 21,000 B, triggers one BTS with T_P = (21,000 -
// 10,000) B / 1 B per us = 11,000 us; the others are suppressed. The BTS
// crosses sw1, which caches it, and reaches h1 in the documented format;
// every data frame still reaches r.
func TestBTSFromTheCongestedQueue(t *testing.T) {
	d := newDumbbell(t, conf("ingress_cache"), conf("ingress_cache"))
	for i := 0; i < 30; i++ {
		d.a.Links[pH1].Inject(fromH1(4000, 77))
	}
	d.f.Settle()
	bts, ips := btsOf(t, d.a.Links[pH1].Sent)
	if len(bts) != 1 {
		t.Fatalf("h1 got %d BTS, want 1", len(bts))
	}
	m, ip := bts[0], ips[0]
	if m.Depth != 21000 || m.Pause != 11000 {
		t.Fatalf("BTS: depth %d B, pause %d us; want 21000 B and (21000 - 10000) B at 1 B/us = 11000 us", m.Depth, m.Pause)
	}
	f := d.a.Links[pH1].Sent[0]
	if [6]byte(f[0:6]) != macH1 || [6]byte(f[6:12]) != mac6(portMAC(sw1, pH1)) {
		t.Errorf("BTS MACs % x -> % x, want from sw1's h1 port to h1", f[6:12], f[0:6])
	}
	if ip.Src != r || ip.Dst != h1 || ip.SrcPort != wire.BTSPort || ip.DSCP() != wire.DefaultBTSDSCP || ip.TTL != wire.DefaultTTL-1 {
		t.Errorf("BTS framing %+v", ip)
	}
	want := wire.FiveTuple{Src: h1, Dst: r, SrcPort: 4000, DstPort: 5500, Proto: wire.ProtoUDP}
	if m.Flags != wire.BTSCacheable || m.Switch != 2 || m.Port != uint16(pR) || m.Queue != 0 || m.Flow != want || !m.HasFlowID || m.FlowID != 77 {
		t.Errorf("BTS %+v", m)
	}
	q, c, e := d.s2.Sent(pR)
	if q != 1 || c != 0 || e != 0 || d.s2.Suppressed(pR) == 0 {
		t.Errorf("sw2 r: sent %d/%d/%d, suppressed %d", q, c, e, d.s2.Suppressed(pR))
	}
	if rem := d.s1.CacheRemaining(r, 0); rem != 11000e3 {
		t.Errorf("sw1 caches %d ns for r, want 11 ms", rem)
	}
	if d.s2.CacheEntries() != 0 {
		t.Errorf("sw2 cached the BTS it sent")
	}
	// gswitchctl flows lists the entry on sw1's ports (mode ingress_cache).
	if fl := d.s1.Flows(pH2, 10); len(fl) != 1 || fl[0].Dst.Addr() != netip.AddrFrom4(r) || fl[0].State["dscp"] != uint8(0) ||
		fl[0].State["pause_left_us"] != uint32(11000) {
		t.Errorf("sw1 flows %+v", fl)
	}
	if fl := d.s1.Flows(pH2, 0); fl != nil {
		t.Errorf("sw1 flows with max 0: %+v", fl)
	}
	// A ping names no flow a sender could pause: no BTS for it, even now.
	d.a.Links[pH1].Inject(pkttest.Ping(mac6(portMAC(sw1, pH1)), macH1, h1, r, 1, 1, 900))
	d.f.Settle()
	if bts, _ := btsOf(t, d.a.Links[pH1].Sent); len(bts) != 1 {
		t.Fatalf("h1 got %d BTS after a ping into the congested queue", len(bts))
	}
	d.f.Advance(100e6, 1e6)
	if n := d.b.Links[pR].SentCount; n != 31 {
		t.Fatalf("r got %d of 31 frames", n)
	}
	d.a.CheckFrames(t)
	d.b.CheckFrames(t)
}

// TestPauseTime checks T_P = (qd - Q_Tg)/R on depths from just above Q_Th
// up, through the frame it builds: each flow's first frame finds the queue
// one frame deeper.
func TestPauseTime(t *testing.T) {
	d := newDumbbell(t, conf("ingress"), conf("ingress"))
	for i := 0; i < 40; i++ {
		d.a.Links[pH1].Inject(fromH1(uint16(1000+i), uint64(i)))
	}
	d.f.Settle()
	bts, _ := btsOf(t, d.a.Links[pH1].Sent)
	if len(bts) != 40-21 {
		t.Fatalf("%d BTS, want one per frame that found more than 20,000 B: 19", len(bts))
	}
	for i, m := range bts {
		qd := uint64(21000 + 1000*i)
		if uint64(m.Depth) != qd || uint64(m.Pause) != (qd-qtg)*8e6/rateR {
			t.Errorf("BTS %d: depth %d, pause %d us; want %d and %d", i, m.Depth, m.Pause, qd, (qd-qtg)*8e6/rateR)
		}
		if m.FlowID != uint64(21+i) || m.Flow.SrcPort != uint16(1021+i) {
			t.Errorf("BTS %d names flow %d port %d", i, m.FlowID, m.Flow.SrcPort)
		}
	}
	if d.s1.CacheEntries() != 0 {
		t.Error("mode ingress cached")
	}
}

// TestCacheAnswersLocalSenders: after a BTS from sw2 crossed sw1, a packet
// of h2 toward r gets a BTS from sw1 itself (from_cache) carrying the
// remaining pause, and still goes on; a packet with another DSCP does not
// match. Cacheable BTS arriving later raise the entry, never lower it
// (max); a BTS that is not cacheable leaves it alone.
func TestCacheAnswersLocalSenders(t *testing.T) {
	d := newDumbbell(t, conf("ingress_cache"), conf("ingress_cache"))
	for i := 0; i < 30; i++ {
		d.a.Links[pH1].Inject(fromH1(4000, 77))
	}
	d.f.Settle()
	d.f.Advance(3e6, 1e6) // 8 ms of the 11 ms pause left
	got0 := d.b.Links[pR].SentCount
	d.a.Links[pH2].Inject(fromH2(6000, 88, 0x28)) // DSCP 10: another key
	d.a.Links[pH2].Inject(fromH2(6001, 89, 0))
	d.f.Settle()
	// r's queue is still above Q_Th, so sw2 signals both of h2's flows too;
	// sw1 answers only the DSCP 0 packet, from its cache.
	all, _ := btsOf(t, d.a.Links[pH2].Sent)
	var bts []wire.BTS
	for _, m := range all {
		if m.Switch == 1 {
			bts = append(bts, m)
		}
	}
	if len(bts) != 1 || len(all) != 3 {
		t.Fatalf("h2 got %d BTS from sw1, want 1 (for its DSCP 0 packet only), and %d in all, want 3", len(bts), len(all))
	}
	m := bts[0]
	if m.Flags != wire.BTSFromCache || m.Pause != 8000 || m.Switch != 1 || m.Port != uint16(pUp) || m.FlowID != 89 {
		t.Errorf("cache BTS %+v; want from_cache, 8000 us, switch 1, port %d", m, pUp)
	}
	if _, c, _ := d.s1.Sent(pUp); c != 1 {
		t.Errorf("sw1 up: %d BTS from the cache", c)
	}

	// Max-update: BTS arriving on sw1's uplink from the fabric.
	now := d.f.Clock.T
	base := d.s1.CacheRemaining(r, 0)
	inject := func(pause uint32, flags uint16) {
		orig := fromH1(4000, 77)
		b := make([]byte, wire.MaxBTSFrameLen)
		n, err := wire.BuildBTS(b, wire.MACs{Dst: mac6(portMAC(sw1, pUp)), Src: mac6(portMAC(sw2, pDown))}, wire.DefaultBTSDSCP, orig, 14, 34,
			wire.BTS{Flags: flags, Pause: pause, Switch: 2})
		if err != nil {
			t.Fatal(err)
		}
		d.a.Links[pUp].Inject(b[:n])
		d.f.Settle()
	}
	inject(1000, wire.BTSCacheable)
	if rem := d.s1.CacheRemaining(r, 0); rem != base {
		t.Fatalf("a shorter pause changed the entry: %d -> %d ns", base, rem)
	}
	inject(50000, 0)
	if rem := d.s1.CacheRemaining(r, 0); rem != base {
		t.Fatalf("a BTS that is not cacheable changed the entry: %d -> %d ns", base, rem)
	}
	inject(50000, wire.BTSCacheable)
	if rem := d.s1.CacheRemaining(r, 0); rem != 50000e3 || d.f.Clock.T != now {
		t.Fatalf("a longer pause left %d ns, want 50 ms", rem)
	}
	if bts, _ := btsOf(t, d.a.Links[pH1].Sent); len(bts) != 4 {
		t.Fatalf("h1 got %d BTS, want 4 (every BTS is forwarded)", len(bts))
	}
	d.f.Advance(55e6, 1e6)
	if d.s1.CacheEntries() != 0 || d.s1.CacheRemaining(r, 0) != 0 {
		t.Fatal("the entry did not expire")
	}
	if n := d.b.Links[pR].SentCount; n != 32 || got0 >= 32 {
		t.Errorf("r got %d frames, want all 32 (h2's packets go on)", n)
	}
	d.a.CheckFrames(t)
	d.b.CheckFrames(t)
}

// TestBloomSuppressesWithinHalfAnRTT: with r's queue kept above Q_Th, flow
// A sends a packet every millisecond for 23 ms. It gets one BTS per Bloom
// period (5 ms), not one per packet; flow B, in the middle of a period in
// which A was already signalled, gets its own.
func TestBloomSuppressesWithinHalfAnRTT(t *testing.T) {
	d := newDumbbell(t, conf("ingress"), conf("ingress"))
	for i := 0; i < 60; i++ { // fill: 60,000 B, 1 B/us drains 23,000 B in 23 ms
		d.a.Links[pH2].Inject(fromH2(uint16(9000+i), uint64(9000+i), 0))
	}
	d.f.Settle()
	d.a.Links[pH1].Sent = nil
	periods := map[int64]bool{}
	for k := 0; k < 23; k++ {
		periods[d.f.Clock.T/bloomReset] = true
		d.a.Links[pH1].Inject(fromH1(4000, 1))
		if k == 12 {
			d.a.Links[pH1].Inject(fromH1(4001, 2))
		}
		d.f.Advance(1e6, 1e6)
	}
	bts, _ := btsOf(t, d.a.Links[pH1].Sent)
	var a, b int
	for _, m := range bts {
		switch m.FlowID {
		case 1:
			a++
		case 2:
			b++
		}
	}
	if a != len(periods) || b != 1 {
		t.Fatalf("flow A got %d BTS over %d Bloom periods, flow B %d; want one per flow per period", a, len(periods), b)
	}
	if len(periods) < 4 {
		t.Fatalf("the run crossed only %d periods", len(periods))
	}
	if s := d.s2.Suppressed(pR); s < uint64(23-len(periods)) {
		t.Fatalf("suppressed %d", s)
	}
}

// singleSW2 is sw2 alone: its fabric port is an unwired link the test
// injects into, as if sw1 sent the frames.
func singleSW2(t *testing.T, c *sfc.Config) (*dptest.Harness, *sfc.SFC) {
	h := dptest.New(t, sw2Config(c), 8192)
	return h, h.SW.Mechanisms()["sfc"].(*sfc.SFC)
}

// fromFabric is a data frame as sw1 would forward it to sw2.
func fromFabric(src [4]byte, sport uint16, id uint64) []byte {
	return gsperfFrame(mac6(portMAC(sw2, pDown)), mac6(portMAC(sw1, pUp)), src, r, sport, id, 0)
}

// TestNoBTSForABTS: a BTS headed to r while r's queue is far above Q_Th
// gets no BTS of its own, cacheable or not; it overtakes the queued data on
// r's control lane.
func TestNoBTSForABTS(t *testing.T) {
	h, s := singleSW2(t, conf("ingress_cache"))
	h.Links[pR].Record, h.Links[pDown].Record = true, true
	for i := 0; i < 40; i++ {
		h.Links[pDown].Inject(fromFabric(h1, uint16(1000+i), uint64(i)))
	}
	h.Settle()
	sentBefore, _, _ := s.Sent(pR)
	out0, r0 := len(h.Links[pDown].Sent), len(h.Links[pR].Sent)
	for _, flags := range []uint16{wire.BTSCacheable, 0} {
		// A BTS to r, about a flow r sent to h1, as a switch on h1's side would send it.
		orig := pkttest.UDP4(pkttest.MAC(9), macR, r, h1, 5500, 4000, make([]byte, 64))
		b := make([]byte, wire.MaxBTSFrameLen)
		n, err := wire.BuildBTS(b, wire.MACs{Dst: mac6(portMAC(sw2, pDown)), Src: mac6(portMAC(sw1, pUp))}, wire.DefaultBTSDSCP, orig, 14, 34,
			wire.BTS{Flags: flags, Pause: 500, Switch: 1})
		if err != nil {
			t.Fatal(err)
		}
		h.Links[pDown].Inject(b[:n])
	}
	h.Settle()
	h.Advance(1e6, 1e5)
	if q, c, e := s.Sent(pR); q != sentBefore || c != 0 || e != 0 || len(h.Links[pDown].Sent) != out0 {
		t.Fatalf("BTS about a BTS: sent %d -> %d (cache %d, est %d), %d frames back toward sw1", sentBefore, q, c, e, len(h.Links[pDown].Sent)-out0)
	}
	bts, _ := btsOf(t, h.Links[pR].Sent[r0:])
	if len(bts) != 2 {
		t.Fatalf("r got %d of the 2 BTS", len(bts))
	}
	// Both left before the data still queued: r's next two frames were the BTS.
	for i := 0; i < 2; i++ {
		if _, msg, err := wire.ParseIPv4UDP(h.Links[pR].Sent[r0+i]); err != nil || len(msg) < 4 || msg[3] != byte(wire.TypeSFCBTS) {
			t.Fatalf("frame %d to r after the BTS arrived is not a BTS: the BTS waited behind data", i)
		}
	}
}

// TestForgedBTSFromAHost: a BTS sent by h2 (a host port) is dropped and
// counted as forged; it fills no cache and pauses nobody: h2's next packet
// to r gets no BTS from sw1, and h1 hears nothing.
func TestForgedBTSFromAHost(t *testing.T) {
	d := newDumbbell(t, conf("ingress_cache"), conf("ingress_cache"))
	orig := fromH1(4000, 77)
	b := make([]byte, wire.MaxBTSFrameLen)
	n, err := wire.BuildBTS(b, wire.MACs{Dst: mac6(portMAC(sw1, pH2)), Src: macH2}, wire.DefaultBTSDSCP, orig, 14, 34,
		wire.BTS{Flags: wire.BTSCacheable, Pause: 50000, Switch: 2})
	if err != nil {
		t.Fatal(err)
	}
	d.a.Links[pH2].Inject(b[:n])
	d.f.Settle()
	c := d.a.SW.Counters(pH2)
	if c.Drops[pkt.ReasonForged] != 1 || c.Forged[wire.TypeSFCBTS] != 1 {
		t.Fatalf("forged drops %d, forged BTS %d", c.Drops[pkt.ReasonForged], c.Forged[wire.TypeSFCBTS])
	}
	if d.s1.CacheEntries() != 0 || len(d.a.Links[pH1].Sent) != 0 {
		t.Fatalf("the forged BTS changed something: %d cache entries, %d frames to h1", d.s1.CacheEntries(), len(d.a.Links[pH1].Sent))
	}
	d.a.Links[pH2].Inject(fromH2(6000, 88, 0))
	d.f.Settle()
	if bts, _ := btsOf(t, d.a.Links[pH2].Sent); len(bts) != 0 {
		t.Fatalf("h2 got %d BTS after forging one", len(bts))
	}
	d.a.CheckFrames(t)
}

// TestEgressTrigger: in mode egress the signal comes when a packet leaves
// a queue still above Q_Th, about the packet leaving (the oldest), with the
// depth it leaves behind: with the clock stopped, the two frames r's shaper
// lets out are signalled, not the arrivals that built the queue.
func TestEgressTrigger(t *testing.T) {
	d := newDumbbell(t, conf("egress"), conf("egress"))
	for i := 0; i < 40; i++ {
		d.a.Links[pH1].Inject(fromH1(uint16(1000+i), uint64(i)))
	}
	d.f.Settle()
	bts, _ := btsOf(t, d.a.Links[pH1].Sent)
	left := d.b.Links[pR].SentCount
	if left != 2 || len(bts) != left {
		t.Fatalf("%d frames left r's queue, %d BTS; want one BTS per frame leaving above Q_Th", left, len(bts))
	}
	d.f.Advance(5e6, 100e3)
	bts, _ = btsOf(t, d.a.Links[pH1].Sent)
	left = d.b.Links[pR].SentCount
	if len(bts) != left || left < 6 {
		t.Fatalf("%d frames left, %d BTS", left, len(bts))
	}
	for i, m := range bts {
		depth := uint64(40-i-1) * 1000
		if i == 0 {
			depth = 38000 // the first two leave in one batch: both leave 38,000 B behind
		}
		if m.FlowID != uint64(i) || uint64(m.Depth) != depth || uint64(m.Pause) != (depth-qtg)*8e6/rateR || m.Flags != wire.BTSCacheable {
			t.Errorf("egress BTS %d: %+v; want flow %d, depth %d", i, m, i, depth)
		}
	}
}

// TestEstimator: two local senders burst toward r at once; before any BTS
// from sw2 could arrive, sw1's estimator on its uplink sees more bytes
// toward r in the last rtt than r's link drains plus Q_Tg, and pauses each
// flow for the excess: the first BTS comes when the count reaches 21,000 B
// (excess 1,000 B = 1,000 us at 8 Mbit/s).
func TestEstimator(t *testing.T) {
	c1 := conf("ingress")
	c1.Estimator = true
	c1.EstimatorDsts = []string{"10.1.2.1"}
	c1.EstimatorRate = 8e6
	d := newDumbbell(t, c1, conf("off"))
	for i := 0; i < 15; i++ { // sw1 alone: nothing from sw2 yet
		d.a.Links[pH1].Inject(fromH1(4000, 1))
		d.a.Settle()
		d.a.Links[pH2].Inject(fromH2(6000, 2, 0))
		d.a.Settle()
	}
	b1, _ := btsOf(t, d.a.Links[pH1].Sent)
	b2, _ := btsOf(t, d.a.Links[pH2].Sent)
	if len(b1) != 1 || len(b2) != 1 {
		t.Fatalf("estimator BTS: h1 %d, h2 %d; want one each", len(b1), len(b2))
	}
	// Packets alternate h1, h2: the 21st (h1's 11th) makes 21,000 B, the 22nd (h2's) 22,000 B.
	if b1[0].Flags != wire.BTSFromEstimator || b1[0].Pause != 1000 || b2[0].Pause != 2000 || b1[0].Switch != 1 {
		t.Fatalf("estimator BTS %+v / %+v", b1[0], b2[0])
	}
	if _, _, e := d.s1.Sent(pUp); e != 2 {
		t.Fatalf("sw1 counts %d estimator BTS", e)
	}
}

// TestAdmitDoesNotAllocate: the trigger, the Bloom filter, the cache and
// the BTS builder on the hot path allocate nothing.
func TestAdmitDoesNotAllocate(t *testing.T) {
	h, s := singleSW2(t, conf("ingress_cache"))
	for i := 0; i < 40; i++ {
		h.Links[pDown].Inject(fromFabric(h1, uint16(i), uint64(i)))
	}
	h.Settle()
	frames := make([][]byte, 16)
	for i := range frames {
		frames[i] = fromFabric(h1, uint16(100+i), uint64(100+i))
	}
	q0, _, _ := s.Sent(pR)
	allocs := testing.AllocsPerRun(200, func() {
		for _, f := range frames {
			h.Links[pDown].Inject(f)
		}
		h.Advance(16e6, 2e6) // the queue drains what came in and the Bloom filter resets: every flow signals again
	})
	q1, _, _ := s.Sent(pR)
	if allocs != 0 {
		t.Fatalf("%v allocations per 16 packets", allocs)
	}
	if q1-q0 < 200*16 {
		t.Fatalf("only %d BTS sent: the path under test did not run", q1-q0)
	}

	// The cache path: sw1 alone, a cacheable BTS in from the fabric, local senders answered.
	a := dptest.New(t, sw1Config(conf("ingress_cache")), 4096)
	s1 := a.SW.Mechanisms()["sfc"].(*sfc.SFC)
	b := make([]byte, wire.MaxBTSFrameLen)
	n, err := wire.BuildBTS(b, wire.MACs{Dst: mac6(portMAC(sw1, pUp)), Src: mac6(portMAC(sw2, pDown))}, wire.DefaultBTSDSCP, fromH1(1, 1), 14, 34,
		wire.BTS{Flags: wire.BTSCacheable, Pause: 1 << 30, Switch: 2})
	if err != nil {
		t.Fatal(err)
	}
	bts := b[:n]
	for i := range frames {
		frames[i] = fromH2(uint16(100+i), uint64(100+i), 0)
	}
	allocs = testing.AllocsPerRun(200, func() {
		a.Links[pUp].Inject(bts)
		for _, f := range frames {
			a.Links[pH2].Inject(f)
		}
		a.Advance(6e6, 6e6)
	})
	if _, c, _ := s1.Sent(pUp); allocs != 0 || c < 200*16 {
		t.Fatalf("%v allocations per BTS and 16 cache answers (%d answered)", allocs, c)
	}
	h.Advance(500e6, 1e6)
	a.Advance(1e6, 1e6)
	h.CheckFrames(t)
	a.CheckFrames(t)
}

// TestConfigErrorsNameTheKey: bad values are refused with the key named.
func TestConfigErrorsNameTheKey(t *testing.T) {
	cases := map[string]func(c *sfc.Config){
		"mode:":                      func(c *sfc.Config) { c.Mode = "fast" },
		"rtt:":                       func(c *sfc.Config) { c.RTT = 0 },
		"q_tg:":                      func(c *sfc.Config) { c.QTh, c.QTg = 1000, 2000 },
		"bloom_bits:":                func(c *sfc.Config) { c.BloomBits = 1000 },
		"bloom_hashes:":              func(c *sfc.Config) { c.BloomHashes = 0 },
		"dscp:":                      func(c *sfc.Config) { c.DSCP = 64 },
		"cache_entries:":             func(c *sfc.Config) { c.CacheEntries = 3 },
		"estimator_destinations:":    func(c *sfc.Config) { c.Estimator = true },
		"estimator_destinations[1]:": func(c *sfc.Config) { c.Estimator, c.EstimatorDsts = true, []string{"10.0.0.1", "::1"} },
		"estimator:":                 func(c *sfc.Config) { c.Mode, c.Estimator, c.EstimatorDsts = "egress", true, []string{"10.0.0.1"} },
	}
	for key, mod := range cases {
		c := sfc.NewConfig()
		mod(c)
		err := c.Validate(mech.PortInfo{RateBits: 1e9})
		if err == nil || len(err.Error()) < len(key) || err.Error()[:len(key)] != key {
			t.Errorf("%s: got %v", key, err)
		}
	}
	c := sfc.NewConfig()
	c.QTh = 1000
	if err := c.Validate(mech.PortInfo{}); err == nil {
		t.Error("q_th on a port without a rate accepted")
	}
	if err := sfc.NewConfig().Validate(mech.PortInfo{}); err != nil {
		t.Errorf("defaults on an unshaped port: %v", err)
	}
}

var _ = binary.BigEndian

// TestL2Dumbbell: on learning switches the BTS goes back by the learnt
// port of the original source MAC, from the MAC of the switch port it
// leaves by (never the receiver's MAC, which other switches would learn on
// the wrong port); sw1 caches it and answers h2 from its own port's MAC.
func TestL2Dumbbell(t *testing.T) {
	f := dptest.NewFabric()
	l2 := func(id uint16, c *sfc.Config, ports ...config.Port) dataplane.Config {
		for i := range ports {
			ports[i].Mechanisms = mechs(c)
		}
		return dataplane.Config{Config: config.Config{SwitchID: int(id), Workers: 1, Ports: ports, Buffer: 8 << 20}}
	}
	a := f.Add(t, l2(1, conf("ingress_cache"), config.Port{Name: "h1", MAC: config.MAC(portMAC(sw1, 0))}, config.Port{Name: "h2", MAC: config.MAC(portMAC(sw1, 1))},
		config.Port{Name: "up", MAC: config.MAC(portMAC(sw1, 2)), Role: mech.RoleFabric}), 4096)
	b := f.Add(t, l2(2, conf("ingress_cache"), config.Port{Name: "r", MAC: config.MAC(portMAC(sw2, 0)), Rate: units.Rate(rateR), Burst: 1538, Buffer: 4 << 20, BufferPackets: 8192},
		config.Port{Name: "down", MAC: config.MAC(portMAC(sw2, 1)), Role: mech.RoleFabric}), 8192)
	f.Connect(a, pUp, b, pDown)
	a.Links[pH1].Record, a.Links[pH2].Record = true, true
	// Every host speaks once, so both switches learn where it is.
	a.Links[pH1].Inject(pkttest.UDP4(pkttest.Broadcast, macH1, h1, r, 9, 9, nil))
	a.Links[pH2].Inject(pkttest.UDP4(pkttest.Broadcast, macH2, h2, r, 9, 9, nil))
	b.Links[pR].Inject(pkttest.UDP4(pkttest.Broadcast, macR, r, h1, 9, 9, nil))
	f.Settle()
	a.Links[pH1].Sent, a.Links[pH2].Sent = nil, nil
	for i := 0; i < 30; i++ {
		a.Links[pH1].Inject(gsperfFrame(macR, macH1, h1, r, 4000, 77, 0))
	}
	f.Settle()
	bts, _ := btsOf(t, a.Links[pH1].Sent)
	if len(bts) != 1 || bts[0].Pause != 11000 || bts[0].Flags != wire.BTSCacheable {
		t.Fatalf("h1 got %d BTS %+v", len(bts), bts)
	}
	fr := a.Links[pH1].Sent[0]
	if [6]byte(fr[0:6]) != macH1 || [6]byte(fr[6:12]) != mac6(portMAC(sw2, pDown)) {
		t.Fatalf("BTS from %x to %x; want from sw2's port toward sw1 to h1", fr[6:12], fr[0:6])
	}
	// The receiver's MAC stays learnt behind sw1's uplink, where it is.
	s1 := a.SW.Mechanisms()["sfc"].(*sfc.SFC)
	if s1.CacheRemaining(r, 0) != 11000e3 {
		t.Fatalf("sw1 cached %d ns", s1.CacheRemaining(r, 0))
	}
	a.Links[pH2].Inject(gsperfFrame(macR, macH2, h2, r, 6000, 88, 0))
	f.Settle()
	var fromCache [][]byte
	for _, fr := range a.Links[pH2].Sent {
		if m, _ := btsOf(t, [][]byte{fr}); len(m) == 1 && m[0].Flags == wire.BTSFromCache {
			fromCache = append(fromCache, fr)
		}
	}
	if len(fromCache) != 1 || [6]byte(fromCache[0][0:6]) != macH2 || [6]byte(fromCache[0][6:12]) != mac6(portMAC(sw1, pH2)) {
		t.Fatalf("h2 got %d BTS from sw1's cache", len(fromCache))
	}
	// r is still reached: its MAC was not learnt anywhere else.
	f.Advance(100e6, 1e6)
	if n := b.Links[pR].SentCount; n < 31 {
		t.Fatalf("r got %d frames", n)
	}
	a.CheckFrames(t)
	b.CheckFrames(t)
}
