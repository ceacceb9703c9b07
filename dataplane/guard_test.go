package dataplane

import (
	"encoding/binary"
	"flag"
	"net/netip"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// guardRouter is routerSwitch with port 0's source guard set to g.
func guardRouter(t testing.TB, g config.SourceGuard, mod func(*Config)) (*Switch, []*MemLink, *fakeClock) {
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[0].Addrs = []netip.Prefix{netip.MustParsePrefix("10.1.0.254/24")}
		c.Ports[1].Addrs = []netip.Prefix{netip.MustParsePrefix("10.2.0.254/24")}
		c.Ports[0].MAC, c.Ports[1].MAC = config.MAC(macPort(0)), config.MAC(macPort(1))
		c.Ports[0].SourceGuard = g
		if mod != nil {
			mod(c)
		}
	})
	for _, ml := range l {
		ml.Record = true
	}
	return s, l, clk
}

// fromA is a UDP packet from host port 0 (MAC mac, address src) to host B.
func fromA(mac byte, src [4]byte) []byte {
	return pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(mac), src, hostB, 1000, 2000, make([]byte, 64))
}

// udpTo counts the UDP packets to ip in sent.
func udpTo(sent [][]byte, ip [4]byte) int {
	n := 0
	for _, f := range sent {
		var p pkt.Packet
		if pkt.Parse(f, &p) == pkt.OK && p.Proto == pkt.ProtoUDP && p.Flags&pkt.FlagIPv4 != 0 && [4]byte(f[p.L3Off+16:p.L3Off+20]) == ip {
			n++
		}
	}
	return n
}

// arpRequestsFor counts the ARP requests for ip in sent.
func arpRequestsFor(sent [][]byte, ip [4]byte) int {
	n := 0
	for _, f := range sent {
		if binary.BigEndian.Uint16(f[12:]) == pkt.EtherTypeARP && binary.BigEndian.Uint16(f[20:]) == 1 && [4]byte(f[38:42]) == ip {
			n++
		}
	}
	return n
}

// TestSourceGuardBindingL3: with binding, host A's first packet (the
// switch has no binding for it yet) is dropped as spoofed and makes the
// switch ask for A; A's reply binds it, and its packets pass, keeping the
// binding alive while it sends (past the ARP TTL). Another MAC on the port
// sending from A's address, or from an address nobody has bound, is
// refused; a static neighbour passes from its own MAC only.
func TestSourceGuardBindingL3(t *testing.T) {
	static := [4]byte{10, 1, 0, 77}
	s, l, clk := guardRouter(t, config.GuardBinding, func(c *Config) {
		c.Neighbors = []config.Neighbor{{IP: netip.AddrFrom4(static), MAC: macOf(7)}, {IP: netip.AddrFrom4(hostB), MAC: macOf(2)}}
	})
	spoofed := func() uint64 { return s.Counters(0).Drops[pkt.ReasonSpoofed] }
	l[0].Inject(fromA(1, hostA))
	settle(s)
	if spoofed() != 1 || arpRequestsFor(l[0].Sent, hostA) != 1 {
		t.Fatalf("unbound A: %d spoofed drops, %d ARP requests for it", spoofed(), arpRequestsFor(l[0].Sent, hostA))
	}
	l[0].Inject(pkttest.ARPReply(mac6(macPort(0)), pkttest.MAC(1), hostA, gwA))
	l[1].Sent = l[1].Sent[:0]
	for i := 0; i < 15; i++ { // 150 s: past the 60 s TTL, the packets keep the binding
		l[0].Inject(fromA(1, hostA))
		settle(s)
		clk.t += 10e9
	}
	if n := udpTo(l[1].Sent, hostB); n != 15 || spoofed() != 1 {
		t.Fatalf("bound A: %d of 15 packets at B, %d spoofed drops", n, spoofed())
	}
	for _, f := range [][]byte{fromA(9, hostA), fromA(9, [4]byte{10, 1, 0, 50}), fromA(9, static)} {
		l[0].Inject(f)
	}
	l[0].Inject(fromA(7, static))
	settle(s)
	if n := udpTo(l[1].Sent, hostB); spoofed() != 4 || n != 16 {
		t.Fatalf("another MAC: %d spoofed drops (want 4), %d packets at B (want 16)", spoofed(), n)
	}
	if m, p, ok := s.router.nbrs.Lookup4(be32(hostA), clk.t); !ok || m != pkttest.MAC(1) || p != 0 {
		t.Fatalf("A's binding: %x port %d %v", m, p, ok)
	}
	// Silent for longer than the TTL, A is unbound: its next packet is
	// refused and asked about again.
	clk.t += arpTTL + 1
	l[0].Sent = l[0].Sent[:0]
	l[0].Inject(fromA(1, hostA))
	settle(s)
	if spoofed() != 5 || arpRequestsFor(l[0].Sent, hostA) != 1 {
		t.Fatalf("after the TTL: %d spoofed drops, %d ARP requests", spoofed(), arpRequestsFor(l[0].Sent, hostA))
	}
	checkFrames(t, s)
}

// TestSourceGuardRoutesBehindAHostPort: a static route through a router
// on a host port lets the sources it covers in through that port only
// (strict unicast RPF): with subnet, from any MAC; with binding, from the
// MAC bound to the route's next hop.
func TestSourceGuardRoutesBehindAHostPort(t *testing.T) {
	router, behind := [4]byte{10, 1, 0, 9}, [4]byte{10, 9, 1, 1}
	for _, g := range []config.SourceGuard{config.GuardSubnet, config.GuardBinding} {
		s, l, _ := guardRouter(t, g, func(c *Config) {
			c.Routes = []config.Route{{Prefix: netip.MustParsePrefix("10.9.0.0/16"), Via: []netip.Addr{netip.AddrFrom4(router)}}}
		})
		bindHostB(t, s, l)
		if g == config.GuardBinding {
			s.router.nbrs.ShouldRequest4(be32(router), s.Now(), arpRetry)
			l[0].Inject(pkttest.ARPReply(mac6(macPort(0)), pkttest.MAC(9), router, gwA))
		}
		l[1].Sent = l[1].Sent[:0]
		l[0].Inject(fromA(9, behind))
		l[1].Inject(pkttest.UDP4(mac6(macPort(1)), pkttest.MAC(2), behind, hostA, 1, 2, nil)) // from the wrong port
		settle(s)
		want := uint64(0)
		if g == config.GuardBinding {
			l[0].Inject(fromA(8, behind)) // the route's source from another MAC
			settle(s)
			want = 1
		}
		if n := udpTo(l[1].Sent, hostB); n != 1 || s.Counters(1).Drops[pkt.ReasonSpoofed] != 1 || s.Counters(0).Drops[pkt.ReasonSpoofed] != want {
			t.Fatalf("%s: %d packets from behind the router at B (want 1), spoofed on B's port %d (want 1), on A's %d (want %d)",
				g, n, s.Counters(1).Drops[pkt.ReasonSpoofed], s.Counters(0).Drops[pkt.ReasonSpoofed], want)
		}
	}
}

// TestSourceGuardOff: with the guard off, a routed host port routes any
// source, as before there was a guard.
func TestSourceGuardOff(t *testing.T) {
	s, l, _ := guardRouter(t, config.GuardOff, nil)
	bindHostB(t, s, l)
	l[1].Sent = l[1].Sent[:0]
	l[0].Inject(fromA(1, [4]byte{10, 7, 7, 7}))
	settle(s)
	if n := udpTo(l[1].Sent, hostB); n != 1 || s.Counters(0).Drops[pkt.ReasonSpoofed] != 0 {
		t.Fatalf("%d at B, %d spoofed", n, s.Counters(0).Drops[pkt.ReasonSpoofed])
	}
}

// TestSourceGuardIPv6: subnet applies to IPv6 sources; binding wants a
// static neighbour at the frame's MAC.
func TestSourceGuardIPv6(t *testing.T) {
	pf := netip.MustParsePrefix("fd00:1::fe/64")
	host, other := netip.MustParseAddr("fd00:1::1"), netip.MustParseAddr("fd00:1::2")
	for _, g := range []config.SourceGuard{config.GuardSubnet, config.GuardBinding} {
		s, l, _ := guardRouter(t, g, func(c *Config) {
			c.Ports[0].Addrs = append(c.Ports[0].Addrs, pf)
			c.Neighbors = []config.Neighbor{{IP: host, MAC: macOf(1)}}
		})
		dst := [16]byte{0xfd, 0, 0, 2, 15: 1}
		for _, src := range []netip.Addr{host, other, pf.Addr(), pf.Masked().Addr(), netip.MustParseAddr("fd00:2::1")} {
			l[0].Inject(pkttest.UDP6(mac6(macPort(0)), pkttest.MAC(1), src.As16(), dst, 1, 2, nil))
		}
		settle(s)
		want := uint64(3) // the switch's own, the subnet's anycast, another subnet
		if g == config.GuardBinding {
			want = 4 // and an address that is not a neighbour at MAC 1
		}
		if d := s.Counters(0).Drops[pkt.ReasonSpoofed]; d != want {
			t.Fatalf("%s: %d spoofed, want %d", g, d, want)
		}
	}
}

// TestSourceGuardIPv6RoutesBehindAHostPort is TestSourceGuardRoutesBehindAHostPort
// for IPv6: a static route through a router on a host port lets the
// sources it covers in through that port (strict unicast RPF): with
// subnet, from any MAC; with binding, from the MAC of the route's next hop
// (a static neighbour). A source no route sends back out of the port is
// refused either way.
func TestSourceGuardIPv6RoutesBehindAHostPort(t *testing.T) {
	router := netip.MustParseAddr("fd00:1::9")
	behind, unrouted := netip.MustParseAddr("fd00:9::1").As16(), netip.MustParseAddr("fd00:7::1").As16()
	dst := [16]byte{0xfd, 0, 0, 2, 15: 1}
	for _, g := range []config.SourceGuard{config.GuardSubnet, config.GuardBinding} {
		s, l, _ := guardRouter(t, g, func(c *Config) {
			c.Ports[0].Addrs = append(c.Ports[0].Addrs, netip.MustParsePrefix("fd00:1::fe/64"))
			c.Neighbors = []config.Neighbor{{IP: router, MAC: macOf(9)}}
			c.Routes = []config.Route{{Prefix: netip.MustParsePrefix("fd00:9::/32"), Via: []netip.Addr{router}}}
		})
		spoofed := func() uint64 { return s.Counters(0).Drops[pkt.ReasonSpoofed] }
		l[0].Inject(pkttest.UDP6(mac6(macPort(0)), pkttest.MAC(9), behind, dst, 1, 2, nil))
		settle(s)
		if spoofed() != 0 {
			t.Fatalf("%s: the route's source from its next hop: %d spoofed drops, want 0", g, spoofed())
		}
		l[0].Inject(pkttest.UDP6(mac6(macPort(0)), pkttest.MAC(8), behind, dst, 1, 2, nil))
		settle(s)
		want := uint64(0)
		if g == config.GuardBinding {
			want = 1
		}
		if spoofed() != want {
			t.Fatalf("%s: the route's source from another MAC: %d spoofed drops, want %d", g, spoofed(), want)
		}
		l[0].Inject(pkttest.UDP6(mac6(macPort(0)), pkttest.MAC(9), unrouted, dst, 1, 2, nil))
		settle(s)
		if spoofed() != want+1 {
			t.Fatalf("%s: a source without a route: %d spoofed drops, want %d", g, spoofed(), want+1)
		}
	}
}

// TestSourceGuardARP: on an L3 host port with a guard, ARP claiming one
// of the switch's addresses is dropped as spoofed.
func TestSourceGuardARP(t *testing.T) {
	s, l, _ := guardRouter(t, config.GuardSubnet, nil)
	l[0].Inject(pkttest.ARP(pkttest.MAC(1), gwA, [4]byte{10, 1, 0, 1}))
	l[0].Inject(pkttest.ARP(pkttest.MAC(1), hostA, gwA))
	settle(s)
	if d := s.Counters(0).Drops[pkt.ReasonSpoofed]; d != 1 || len(l[0].Sent) != 1 {
		t.Fatalf("%d spoofed drops, %d replies", d, len(l[0].Sent))
	}
}

// l2Guard is a switch of n L2 ports whose source guard is binding, with a
// MAC table of port limit limit.
func l2Guard(t testing.TB, n, limit int) (*Switch, []*MemLink, *fakeClock) {
	s, l, clk := testSwitch(t, n, 1, 4096, func(c *Config) {
		c.MACTable.PortLimit = limit
		for i := range c.Ports {
			c.Ports[i].SourceGuard = config.GuardBinding
		}
	})
	for _, ml := range l {
		ml.Record = true
	}
	return s, l, clk
}

// TestSourceGuardBindingL2: on L2 ports with binding, an IPv4 address is
// bound to the port it is first seen on: another port sending from it,
// or announcing it by ARP (which would poison the other hosts' caches),
// is dropped as spoofed, until the binding ages out; a port's share of
// bindings is the MAC table's port limit; a MAC held on another port
// (move hold) is refused too.
func TestSourceGuardBindingL2(t *testing.T) {
	s, l, clk := l2Guard(t, 3, 4)
	spoofed := func(i int) uint64 { return s.Counters(i).Drops[pkt.ReasonSpoofed] }
	l[0].Inject(udp(0xff, 1, 10)) // host 1 (ip1) on port 0
	l[1].Inject(pkttest.UDP4(pkttest.MAC(0xff), pkttest.MAC(2), ip2, ip1, 1, 2, nil))
	settle(s)
	l[2].Inject(pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(3), ip1, ip2, 1, 2, nil)) // host 3 as host 1
	l[2].Inject(pkttest.ARP(pkttest.MAC(3), ip1, ip2))                             // and by ARP
	l[2].Inject(udp(2, 1, 10))                                                     // host 1's MAC from port 2: within the move hold
	settle(s)
	if spoofed(2) != 3 || spoofed(0) != 0 {
		t.Fatalf("spoofed from port 2: %d (want 3), from port 0: %d", spoofed(2), spoofed(0))
	}
	l[2].Inject(pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(3), ip3, ip2, 1, 2, nil)) // host 3 as itself
	settle(s)
	if spoofed(2) != 3 {
		t.Fatal("host 3's own address refused")
	}
	// Port 0 has 4 bindings' share: ip1 and three more; a fifth is refused.
	for i := byte(10); i < 14; i++ {
		l[0].Inject(pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), [4]byte{10, 0, 0, i}, ip2, 1, 2, nil))
	}
	settle(s)
	if spoofed(0) != 1 {
		t.Fatalf("port 0 beyond its share: %d spoofed, want 1", spoofed(0))
	}
	// Once host 1 has been silent past the aging, its address is free.
	clk.t += int64(config.DefaultAging) + 1
	s.Housekeep()
	l[2].Inject(pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(3), ip1, ip2, 1, 2, nil))
	settle(s)
	if spoofed(2) != 3 {
		t.Fatalf("after the aging: %d spoofed from port 2", spoofed(2))
	}
	checkFrames(t, s)
}

// TestSourceGuardDoesNotAllocate: the guard's checks (subnet, binding on
// L3 and L2, refusals with an ARP request) allocate nothing per frame.
func TestSourceGuardDoesNotAllocate(t *testing.T) {
	s, l, _ := guardRouter(t, config.GuardBinding, nil)
	bindHostB(t, s, l)
	s.router.nbrs.ShouldRequest4(be32(hostA), s.Now(), arpRetry)
	l[0].Inject(pkttest.ARPReply(mac6(macPort(0)), pkttest.MAC(1), hostA, gwA))
	good, bad, v6 := fromA(1, hostA), fromA(9, [4]byte{10, 1, 0, 50}), pkttest.UDP6(mac6(macPort(0)), pkttest.MAC(1), [16]byte{1}, [16]byte{2}, 1, 2, nil)
	for _, ml := range l {
		ml.Record = false
	}
	if a := testing.AllocsPerRun(200, func() {
		for k := 0; k < 16; k++ {
			l[0].Inject(good)
			l[0].Inject(bad)
			l[0].Inject(v6)
		}
		settle(s)
	}); a != 0 {
		t.Errorf("L3 binding: %v allocations per batch", a)
	}
	s2, l2, _ := l2Guard(t, 2, 0)
	l2[1].Inject(udp(1, 2, 10))
	settle(s2)
	for _, ml := range l2 {
		ml.Record = false
	}
	own, spoof := udp(2, 1, 10), pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip2, ip1, 1, 2, nil)
	if a := testing.AllocsPerRun(200, func() {
		for k := 0; k < 16; k++ {
			l2[0].Inject(own)
			l2[0].Inject(spoof)
		}
		settle(s2)
	}); a != 0 {
		t.Errorf("L2 binding: %v allocations per batch", a)
	}
	checkFrames(t, s)
	checkFrames(t, s2)
}

// FuzzSourceGuardSubnet checks the subnet test of an IPv4 source against
// netip's prefixes: a source passes if and only if it is in the port's
// subnet, is neither the subnet's own address nor its broadcast (for
// prefixes of /30 and shorter) and is not the switch's address.
func FuzzSourceGuardSubnet(f *testing.F) {
	f.Add(uint32(0x0a0100fe), uint8(24), uint32(0x0a010001))
	f.Add(uint32(0x0a0100fe), uint8(24), uint32(0x0a0100ff))
	f.Add(uint32(0x0a000001), uint8(31), uint32(0x0a000000))
	f.Add(uint32(0x0a000001), uint8(32), uint32(0x0a000001))
	f.Add(uint32(0x0a000001), uint8(0), uint32(0x01020304))
	f.Fuzz(func(t *testing.T, own uint32, bits uint8, src uint32) {
		bits %= 33
		var b, s [4]byte
		binary.BigEndian.PutUint32(b[:], own)
		binary.BigEndian.PutUint32(s[:], src)
		pf := netip.PrefixFrom(netip.AddrFrom4(b), int(bits))
		g := newGuard(config.GuardSubnet, []netip.Prefix{pf})
		on, ok := g.onSubnet4(src)
		a := netip.AddrFrom4(s)
		inside := pf.Contains(a)
		want := inside && a != pf.Addr()
		if bits < 31 {
			last := binary.BigEndian.Uint32(pf.Masked().Addr().AsSlice()) | (1<<(32-bits) - 1)
			want = want && a != pf.Masked().Addr() && src != last
		}
		if on != inside || ok != want {
			t.Fatalf("%s, source %s: on %v ok %v, want %v %v", pf, a, on, ok, inside, want)
		}
	})
}

var benchGuard = flag.String("guard", "off", "BenchmarkForward: the source guard of the sending port (off or binding: L2 ports have no subnet)")

// BenchmarkForwardL3 is BenchmarkForward through a routed port whose
// source guard is off, subnet or binding (64-byte UDP frames from a host
// the switch has bound, to one it has bound).
func BenchmarkForwardL3(b *testing.B) {
	for _, g := range []config.SourceGuard{config.GuardOff, config.GuardSubnet, config.GuardBinding} {
		b.Run(string(g), func(b *testing.B) {
			s, l, _ := guardRouter(b, g, nil)
			for _, ml := range l {
				ml.Record = false
			}
			l[1].Inject(pkttest.ARP(pkttest.MAC(2), hostB, gwB))
			s.router.nbrs.ShouldRequest4(be32(hostA), s.Now(), arpRetry)
			l[0].Inject(pkttest.ARPReply(mac6(macPort(0)), pkttest.MAC(1), hostA, gwA))
			settle(s)
			frame := pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), hostA, hostB, 1000, 2000, make([]byte, 18))
			before := l[1].SentCount
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 64 {
				for k := 0; k < 64; k++ {
					l[0].Inject(frame)
				}
				settle(s)
			}
			b.StopTimer()
			if l[1].SentCount-before < b.N {
				b.Fatalf("%d of %d frames routed", l[1].SentCount-before, b.N)
			}
		})
	}
}

// BenchmarkSourceGuard is the guard's own cost per packet: the check of a
// bound host's UDP packet, on its own (no forwarding around it).
func BenchmarkSourceGuard(b *testing.B) {
	for _, g := range []config.SourceGuard{config.GuardSubnet, config.GuardBinding} {
		b.Run("l3-"+string(g), func(b *testing.B) {
			s, l, _ := guardRouter(b, g, nil)
			s.router.nbrs.ShouldRequest4(be32(hostA), s.Now(), arpRetry)
			l[0].Inject(pkttest.ARPReply(mac6(macPort(0)), pkttest.MAC(1), hostA, gwA))
			settle(s)
			frame := fromA(1, hostA)
			var p pkt.Packet
			pkt.Parse(frame, &p)
			w, port := s.workers[0], s.ports[0]
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !w.guardL3(0, &port.guard, &p, frame, 1) {
					b.Fatal("refused")
				}
			}
		})
	}
	b.Run("l2-binding", func(b *testing.B) {
		s, _, _ := l2Guard(b, 2, 0)
		frame := udp(2, 1, 18)
		var p pkt.Packet
		pkt.Parse(frame, &p)
		w := s.workers[0]
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if !w.guardL2(0, &p, frame, 0, 1) {
				b.Fatal("refused")
			}
		}
	})
}
