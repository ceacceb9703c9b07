package dataplane

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

var (
	hostA, hostB = [4]byte{10, 1, 0, 1}, [4]byte{10, 2, 0, 1}
	gwA, gwB     = [4]byte{10, 1, 0, 254}, [4]byte{10, 2, 0, 254}
	macPort      = func(i byte) net.HardwareAddr { return net.HardwareAddr{0x02, 0xaa, 0, 0, 0, i} }
)

// routerSwitch: port 0 is 10.1.0.254/24 (host A, MAC 1), port 1 is
// 10.2.0.254/24 (host B, MAC 2).
func routerSwitch(t *testing.T) (*Switch, []*MemLink, *fakeClock) {
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[0].Addrs = []netip.Prefix{netip.MustParsePrefix("10.1.0.254/24")}
		c.Ports[1].Addrs = []netip.Prefix{netip.MustParsePrefix("10.2.0.254/24")}
		c.Ports[0].MAC, c.Ports[1].MAC = config.MAC(macPort(0)), config.MAC(macPort(1))
	})
	for _, ml := range l {
		ml.Record = true
	}
	return s, l, clk
}

func mac6(m net.HardwareAddr) [6]byte { return [6]byte(m) }

// macOf is pkttest.MAC(b) as a config's MAC (a static neighbour's).
func macOf(b byte) config.MAC { m := pkttest.MAC(b); return m[:] }

// TestRouting: ARP for the gateway is answered; a packet to an unresolved
// host makes the switch ask by ARP (and is dropped, counted); once the host
// answers, packets are routed with the MACs rewritten and the TTL
// decremented under a correct checksum; the gateway answers pings; TTL
// expiry and missing routes are dropped and counted.
func TestRouting(t *testing.T) {
	s, l, _ := routerSwitch(t)
	// A asks for its gateway.
	l[0].Inject(pkttest.ARP(pkttest.MAC(1), hostA, gwA))
	settle(s)
	if len(l[0].Sent) != 1 {
		t.Fatalf("ARP reply: %d frames", len(l[0].Sent))
	}
	r := l[0].Sent[0]
	if binary.BigEndian.Uint16(r[20:]) != 2 || [6]byte(r[22:28]) != mac6(macPort(0)) || [4]byte(r[28:32]) != gwA ||
		[6]byte(r[0:6]) != pkttest.MAC(1) || [4]byte(r[38:42]) != hostA {
		t.Fatalf("bad ARP reply % x", r)
	}
	// A sends to B: B's MAC is not known yet.
	data := pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), hostA, hostB, 1000, 2000, make([]byte, 100))
	l[0].Inject(data)
	settle(s)
	if c := s.Counters(0); c.Drops[pkt.ReasonNoNeighbor] != 1 {
		t.Fatalf("no_neighbor drops %d", c.Drops[pkt.ReasonNoNeighbor])
	}
	if len(l[1].Sent) != 1 || binary.BigEndian.Uint16(l[1].Sent[0][12:]) != pkt.EtherTypeARP || [4]byte(l[1].Sent[0][38:42]) != hostB {
		t.Fatalf("no ARP request for B on port 1: %d frames", len(l[1].Sent))
	}
	if c := s.Counters(1); c.Emitted[arpKind] != 1 {
		t.Fatalf("ARP requests counted %d", c.Emitted[arpKind])
	}
	// A second packet within the retry interval asks no more.
	l[0].Inject(data)
	settle(s)
	if len(l[1].Sent) != 1 {
		t.Fatalf("ARP asked again at once: %d frames", len(l[1].Sent))
	}
	// B answers; now A's packets go through.
	l[1].Inject(pkttest.ARPReply(mac6(macPort(1)), pkttest.MAC(2), hostB, gwB))
	settle(s)
	l[0].Inject(data)
	settle(s)
	if len(l[1].Sent) != 2 {
		t.Fatalf("routed packet not sent: %d frames on port 1", len(l[1].Sent))
	}
	out := l[1].Sent[1]
	if [6]byte(out[0:6]) != pkttest.MAC(2) || [6]byte(out[6:12]) != mac6(macPort(1)) {
		t.Fatalf("MACs not rewritten: % x", out[:12])
	}
	if out[22] != 63 || pkttest.Checksum(out[14:34]) != 0 {
		t.Fatalf("TTL %d, checksum %#x", out[22], pkttest.Checksum(out[14:34]))
	}
	if string(out[34:]) != string(data[34:]) {
		t.Fatal("payload changed")
	}
	// A frame the switch builds to be routed goes toward its IPv4 destination, MACs set for the hop.
	em := s.Emitter(0)
	buf := em.Frame(mech.Routed, 16)
	n := copy(buf, pkttest.UDP4([6]byte{}, [6]byte{}, gwA, hostB, 19020, 19020, make([]byte, 40)))
	if !em.Send(n, pkt.LaneControl) {
		t.Fatal("routed emission refused")
	}
	settle(s)
	if got := l[1].Sent[len(l[1].Sent)-1]; [6]byte(got[0:6]) != pkttest.MAC(2) || [6]byte(got[6:12]) != mac6(macPort(1)) || binary.BigEndian.Uint16(got[36:]) != 19020 {
		t.Fatalf("routed emission went out as % x", got[:38])
	}
	if buf = em.Frame(mech.Routed, 16); buf == nil {
		t.Fatal("no frame")
	}
	n = copy(buf, pkttest.UDP4([6]byte{}, [6]byte{}, gwA, [4]byte{10, 77, 0, 1}, 19020, 19020, nil))
	if em.Send(n, pkt.LaneControl) || s.Unrouted()[16] != 1 {
		t.Fatalf("an emission with no route was sent (unrouted %d)", s.Unrouted()[16])
	}
	// Ping the gateway.
	l[0].Inject(pkttest.Ping(mac6(macPort(0)), pkttest.MAC(1), hostA, gwA, 7, 1, 32))
	settle(s)
	echo := l[0].Sent[len(l[0].Sent)-1]
	if echo[34] != 0 || [4]byte(echo[26:30]) != gwA || [4]byte(echo[30:34]) != hostA || pkttest.Checksum(echo[14:34]) != 0 || pkttest.Checksum(echo[34:]) != 0 {
		t.Fatalf("bad echo reply % x", echo)
	}
	// TTL 1 expires; an unknown network has no route; a frame to another MAC is not routed.
	l[0].Inject(pkttest.WithTTL(pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), hostA, hostB, 1, 2, nil), 1))
	l[0].Inject(pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), hostA, [4]byte{10, 9, 0, 1}, 1, 2, nil))
	l[0].Inject(pkttest.UDP4(pkttest.MAC(9), pkttest.MAC(1), hostA, hostB, 1, 2, nil))
	settle(s)
	var te []byte
	for _, f := range l[0].Sent {
		if len(f) > 34 && f[23] == 1 && f[34] == 11 {
			te = f
		}
	}
	if te == nil || [4]byte(te[26:30]) != gwA || [4]byte(te[30:34]) != hostA || pkttest.Checksum(te[14:34]) != 0 ||
		pkttest.Checksum(te[34:]) != 0 || [4]byte(te[42+12:42+16]) != hostA || [6]byte(te[0:6]) != pkttest.MAC(1) {
		t.Fatalf("no valid ICMP time exceeded back to A (%d frames)", len(l[0].Sent))
	}
	c := s.Counters(0)
	if c.Drops[pkt.ReasonTTL] != 1 || c.Drops[pkt.ReasonNoRoute] != 1 || c.Drops[pkt.ReasonNotRouted] != 1 {
		t.Fatalf("drops: ttl %d, no route %d, not routed %d", c.Drops[pkt.ReasonTTL], c.Drops[pkt.ReasonNoRoute], c.Drops[pkt.ReasonNotRouted])
	}
	if c.Flooded != 0 {
		t.Fatal("an L3 port flooded")
	}
	checkFrames(t, s)
}

// TestECMPIsSymmetric: two leaves, each with one host subnet and two
// uplinks to the same two spines (next hops listed in spine order). Over
// 1,000 flows, each leaf spreads its flows over both spines within 10%,
// and the reverse of every flow leaves the other leaf toward the same spine.
func TestECMPIsSymmetric(t *testing.T) {
	leaf := func(host string, remote string, up1, up2, nh1, nh2 string) (*Switch, []*MemLink) {
		s, l, _ := testSwitch(t, 3, 1, 8192, func(c *Config) {
			c.Ports[0].Addrs = []netip.Prefix{netip.MustParsePrefix(host)}
			c.Ports[1].Addrs = []netip.Prefix{netip.MustParsePrefix(up1)}
			c.Ports[2].Addrs = []netip.Prefix{netip.MustParsePrefix(up2)}
			c.Ports[0].MAC = config.MAC(macPort(0))
			c.Routes = []config.Route{{Prefix: netip.MustParsePrefix(remote), Via: []netip.Addr{netip.MustParseAddr(nh1), netip.MustParseAddr(nh2)}}}
			c.Neighbors = []config.Neighbor{{IP: netip.MustParseAddr(nh1), MAC: macOf(0x51)}, {IP: netip.MustParseAddr(nh2), MAC: macOf(0x52)}}
		})
		return s, l
	}
	// Leaf 1: hosts 10.1.0.0/24, spine 1 at 10.255.0.1, spine 2 at 10.255.0.3.
	s1, l1 := leaf("10.1.0.254/24", "10.2.0.0/24", "10.255.0.0/31", "10.255.0.2/31", "10.255.0.1", "10.255.0.3")
	// Leaf 2: hosts 10.2.0.0/24, spine 1 at 10.255.0.5, spine 2 at 10.255.0.7.
	s2, l2 := leaf("10.2.0.254/24", "10.1.0.0/24", "10.255.0.4/31", "10.255.0.6/31", "10.255.0.5", "10.255.0.7")
	spineOf := func(s *Switch, l []*MemLink, f []byte) int {
		b1, b2 := l[1].SentCount, l[2].SentCount
		l[0].Inject(f)
		settle(s)
		switch {
		case l[1].SentCount == b1+1 && l[2].SentCount == b2:
			return 1
		case l[2].SentCount == b2+1 && l[1].SentCount == b1:
			return 2
		}
		t.Fatalf("flow not forwarded to exactly one uplink")
		return 0
	}
	var per [3]int
	for i := 0; i < 1000; i++ {
		a := [4]byte{10, 1, 0, byte(1 + i%200)}
		b := [4]byte{10, 2, 0, byte(1 + i*7%200)}
		sp, dp := uint16(1024+i*13), uint16(5000+i%17)
		there := spineOf(s1, l1, pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), a, b, sp, dp, nil))
		back := spineOf(s2, l2, pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(2), b, a, dp, sp, nil))
		if there != back {
			t.Fatalf("flow %d: %v:%d -> %v:%d crosses spine %d, its reverse spine %d", i, a, sp, b, dp, there, back)
		}
		per[there]++
	}
	t.Logf("flows per spine: %d / %d", per[1], per[2])
	if per[1] < 450 || per[2] < 450 {
		t.Fatalf("flows per spine %d / %d: not within 10%% of even", per[1], per[2])
	}
}

// TestECMPAvoidsDownPorts: with one uplink down, every flow takes the other.
func TestECMPAvoidsDownPorts(t *testing.T) {
	s, l, _ := testSwitch(t, 3, 1, 8192, func(c *Config) {
		c.Ports[0].Addrs = []netip.Prefix{netip.MustParsePrefix("10.1.0.254/24")}
		c.Ports[1].Addrs = []netip.Prefix{netip.MustParsePrefix("10.255.0.0/31")}
		c.Ports[2].Addrs = []netip.Prefix{netip.MustParsePrefix("10.255.0.2/31")}
		c.Ports[0].MAC = config.MAC(macPort(0))
		c.Routes = []config.Route{{Prefix: netip.MustParsePrefix("10.2.0.0/24"), Via: []netip.Addr{netip.MustParseAddr("10.255.0.1"), netip.MustParseAddr("10.255.0.3")}}}
		c.Neighbors = []config.Neighbor{{IP: netip.MustParseAddr("10.255.0.1"), MAC: macOf(0x51)}, {IP: netip.MustParseAddr("10.255.0.3"), MAC: macOf(0x52)}}
	})
	s.SetPortDown(1, true)
	settle(s)
	for i := 0; i < 200; i++ {
		l[0].Inject(pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), [4]byte{10, 1, 0, 1}, [4]byte{10, 2, 0, byte(i)}, uint16(i), 9, nil))
		settle(s)
	}
	if l[2].SentCount != 200 || s.Counters(1).Drops[pkt.ReasonPortDown] != 0 {
		t.Fatalf("with port 1 down: %d of 200 flows on port 2, %d port_down drops", l[2].SentCount, s.Counters(1).Drops[pkt.ReasonPortDown])
	}
}
