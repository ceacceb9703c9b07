package pkt_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

var (
	m1, m2   = pkttest.MAC(1), pkttest.MAC(2)
	ip1, ip2 = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
)

func TestParseIPv4UDP(t *testing.T) {
	f := pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2000, make([]byte, 18))
	var p pkt.Packet
	if e := pkt.Parse(f, &p); e != pkt.OK {
		t.Fatalf("Parse = %v", e)
	}
	if p.EthType != pkt.EtherTypeIPv4 || p.L3Off != 14 || p.L4Off != 34 || p.Proto != 17 || p.Flags&pkt.FlagIPv4 == 0 {
		t.Fatalf("bad decode: %+v", p)
	}
	if p.Hash == 0 {
		t.Fatal("no flow hash")
	}
	var q pkt.Packet
	pkt.Parse(pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2001, nil), &q)
	if q.Hash == p.Hash {
		t.Fatal("different ports gave the same hash")
	}
	var r pkt.Packet
	pkt.Parse(pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2000, make([]byte, 100)), &r)
	if r.Hash != p.Hash {
		t.Fatal("same 5-tuple gave different hashes")
	}
}

func TestParseVLANAndDSCP(t *testing.T) {
	l4 := pkttest.TCP(1, 2, 0x10, nil)
	f := pkttest.Eth(m2, m1, 0x0800, 42, 5)
	f = append(f, pkttest.IPv4(ip1, ip2, 6, 46<<2|1, len(l4))...)
	f = append(f, l4...)
	var p pkt.Packet
	if e := pkt.Parse(f, &p); e != pkt.OK {
		t.Fatalf("Parse = %v", e)
	}
	if p.VLAN != 42 || p.PCP != 5 || p.DSCP() != 46 || p.TOS&3 != 1 || p.L3Off != 18 || p.L4Off != 38 || p.Proto != 6 {
		t.Fatalf("bad decode: %+v", p)
	}
}

func TestParseIPv6AndARP(t *testing.T) {
	var s, d [16]byte
	s[15], d[15] = 1, 2
	var p pkt.Packet
	if e := pkt.Parse(pkttest.UDP6(m2, m1, s, d, 5, 6, []byte("x")), &p); e != pkt.OK {
		t.Fatalf("IPv6: %v", e)
	}
	if p.Flags&pkt.FlagIPv6 == 0 || p.L4Off != 54 || p.Proto != 17 || p.Hash == 0 {
		t.Fatalf("bad IPv6 decode: %+v", p)
	}
	if e := pkt.Parse(pkttest.ARP(m1, ip1, ip2), &p); e != pkt.OK || p.L3Off != 14 || p.Flags&pkt.FlagMulticast == 0 {
		t.Fatalf("ARP: %v %+v", e, p)
	}
}

func TestParseMalformed(t *testing.T) {
	good := pkttest.UDP4(m2, m1, ip1, ip2, 1, 2, make([]byte, 8))
	tcp := pkttest.TCP4(m2, m1, ip1, ip2, 1, 2, 0, nil)
	mut := func(b []byte, f func([]byte)) []byte { c := append([]byte{}, b...); f(c); return c }
	cases := []struct {
		name  string
		frame []byte
		want  pkt.Err
	}{
		{"empty", nil, pkt.ErrShort},
		{"13 bytes", good[:13], pkt.ErrShort},
		{"truncated tag", append(pkttest.Eth(m2, m1, 0x8100, 0, 0), 0, 1), pkt.ErrVLAN},
		{"three tags", append(pkttest.Eth(m2, m1, 0x8100, 0, 0), 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x08, 0), pkt.ErrVLAN},
		{"short ARP", pkttest.ARP(m1, ip1, ip2)[:30], pkt.ErrARP},
		{"short IPv4", good[:30], pkt.ErrIPv4},
		{"IPv4 version 5", mut(good, func(b []byte) { b[14] = 0x55 }), pkt.ErrIPv4},
		{"IHL 4", mut(good, func(b []byte) { b[14] = 0x44 }), pkt.ErrIPv4},
		{"total length beyond frame", mut(good, func(b []byte) { binary.BigEndian.PutUint16(b[16:], 1500) }), pkt.ErrIPv4},
		{"UDP truncated", mut(good[:40], func(b []byte) { binary.BigEndian.PutUint16(b[16:], 26) }), pkt.ErrL4},
		{"TCP data offset 4", mut(tcp, func(b []byte) { b[46] = 4 << 4 }), pkt.ErrL4},
		{"TCP data offset beyond packet", mut(tcp, func(b []byte) { b[46] = 15 << 4 }), pkt.ErrL4},
		{"group source MAC", pkttest.Eth(m2, pkttest.Broadcast, 0x0800, 0, 0), pkt.ErrSrcMAC},
		{"IPv6 short", pkttest.UDP6(m2, m1, [16]byte{}, [16]byte{}, 1, 2, nil)[:40], pkt.ErrIPv6},
	}
	for _, c := range cases {
		var p pkt.Packet
		if got := pkt.Parse(c.frame, &p); got != c.want {
			t.Errorf("%s: Parse = %v, want %v", c.name, got, c.want)
		}
	}
	// Unknown EtherTypes are forwarded, not dropped.
	var p pkt.Packet
	if e := pkt.Parse(pkttest.Eth(m2, m1, 0x88cc, 0, 0), &p); e != pkt.OK {
		t.Errorf("LLDP-typed frame: %v", e)
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	f := pkttest.TCP4(m2, m1, ip1, ip2, 1, 2, 0, make([]byte, 100))
	var p pkt.Packet
	if n := testing.AllocsPerRun(1000, func() { pkt.Parse(f, &p) }); n != 0 {
		t.Fatalf("Parse allocates %v times per frame", n)
	}
}

// FuzzParse checks that no input panics, that offsets stay inside the frame,
// and that a frame that parses OK keeps parsing OK with trailing bytes added
// (Ethernet padding).
func FuzzParse(f *testing.F) {
	f.Add(pkttest.UDP4(m2, m1, ip1, ip2, 1, 2, []byte("hi")))
	f.Add(pkttest.TCP4(m2, m1, ip1, ip2, 1, 2, 0, nil))
	f.Add(pkttest.UDP6(m2, m1, [16]byte{1}, [16]byte{2}, 1, 2, nil))
	f.Add(pkttest.ARP(m1, ip1, ip2))
	f.Add(append(pkttest.Eth(m2, m1, 0x8100, 3, 1), 0x86, 0xdd, 0x60))
	// A GC header cut short after its type: padding must not make it a
	// control frame (it was one classification without and another with).
	f.Add(append(pkttest.Eth(m2, m1, 0x88b6, 0, 0), 0x47, 0x43, 1, 0x30, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p pkt.Packet
		e := pkt.Parse(b, &p)
		if e != pkt.OK {
			return
		}
		if int(p.L3Off) > len(b) || int(p.L4Off) > len(b) {
			t.Fatalf("offsets beyond frame: %+v len %d", p, len(b))
		}
		if p.L4Off != 0 && p.L4Off <= p.L3Off {
			t.Fatalf("L4 before L3: %+v", p)
		}
		var q pkt.Packet
		if e2 := pkt.Parse(append(append([]byte{}, b...), 0, 0, 0, 0), &q); e2 != pkt.OK || q != p {
			t.Fatalf("padding changed the result: %v %+v vs %+v", e2, q, p)
		}
	})
}
