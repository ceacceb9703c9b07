package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// The tests in this file are attacks a host on a host port can try, and
// use only what the switch offered before they were stopped (no config key
// or counter added since), so that they build and run against the old
// code, where each fails on what the attack achieved: a BTS in two
// fragments, a BTS type on another port, a credit on a switch without
// ExpressPass, spoofed sources, the BFC upstream-queue tag.

// reasonNamed returns the drop reason called name, failing the test if
// there is none.
func reasonNamed(t *testing.T, name string) pkt.Reason {
	t.Helper()
	for r := 0; r < pkt.NumReasons(); r++ {
		if pkt.Reason(r).String() == name {
			return pkt.Reason(r)
		}
	}
	t.Fatalf("no drop reason %q", name)
	return 0
}

// forgedBTS is the UDP datagram (header and GC message) of a BTS that
// would pause the flow victim -> dst, UDP sport -> dport, for 71 minutes:
// what a host on another port would like the victim to receive.
func forgedBTS(t *testing.T, victim, dst [4]byte, sport, dport uint16) []byte {
	t.Helper()
	quote := pkttest.IPv4(victim, dst, pkt.ProtoUDP, 0, 8+64)
	quote = append(quote, pkttest.UDP(sport, dport, make([]byte, 16))...)
	msg := make([]byte, 256)
	n, err := wire.PutBTS(msg, wire.BTS{Flags: wire.BTSCacheable, Pause: 0xffffffff, Switch: 1, Quote: quote[:20+8+16]})
	if err != nil {
		t.Fatal(err)
	}
	return pkttest.UDP(wire.BTSPort, wire.BTSPort, msg[:n])
}

// frag4 is an IPv4 fragment from sip to dip of a UDP datagram: data are
// the datagram's bytes from off on (a multiple of 8); more sets MF.
func frag4(dst, src [6]byte, sip, dip [4]byte, id uint16, off int, more bool, data []byte) []byte {
	h := pkttest.IPv4(sip, dip, pkt.ProtoUDP, 0, len(data))
	fo := uint16(off / 8)
	if more {
		fo |= 0x2000
	}
	binary.BigEndian.PutUint16(h[4:], id)
	binary.BigEndian.PutUint16(h[6:], fo)
	h[10], h[11] = 0, 0
	binary.BigEndian.PutUint16(h[10:], pkttest.Checksum(h))
	return append(append(pkttest.Eth(dst, src, pkt.EtherTypeIPv4, 0, 0), h...), data...)
}

// frag6 is an IPv6 fragment from sip to dip of a UDP datagram (a fragment
// header of id, offset off, M if more).
func frag6(dst, src [6]byte, sip, dip [16]byte, id uint32, off int, more bool, data []byte) []byte {
	h := make([]byte, 48)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(data)))
	h[6], h[7] = 44, 64
	copy(h[8:], sip[:])
	copy(h[24:], dip[:])
	fh := h[40:]
	fh[0] = pkt.ProtoUDP
	fo := uint16(off/8) << 3
	if more {
		fo |= 1
	}
	binary.BigEndian.PutUint16(fh[2:], fo)
	binary.BigEndian.PutUint32(fh[4:], id)
	return append(append(pkttest.Eth(dst, src, pkt.EtherTypeIPv6, 0, 0), h...), data...)
}

// firstFragments counts the frames in sent that hold the start of an IP
// datagram to UDP port dport: whole datagrams and first fragments, the
// only ones from which a receiver can rebuild a datagram to that port.
func firstFragments(sent [][]byte, dport uint16) int {
	n := 0
	for _, f := range sent {
		var p pkt.Packet
		if pkt.Parse(f, &p) == pkt.OK && p.Proto == pkt.ProtoUDP && p.L4Off != 0 && binary.BigEndian.Uint16(f[p.L4Off+2:]) == dport {
			n++
		}
	}
	return n
}

// TestFragmentedBTSFromAHost: a host sends a BTS to another host in two
// fragments, the first holding only the UDP header (to port 19020), the
// second the GC message. Neither carries a whole GC header, so before
// this was stopped neither was taken for a control message and both
// reached the victim, whose kernel rebuilt the BTS for gsperf. Now the
// first fragment is forged (a datagram to the BTS port from a host), and
// without it the victim cannot rebuild the datagram; the same over IPv6
// and on an L3 port.
func TestFragmentedBTSFromAHost(t *testing.T) {
	victim := [4]byte{10, 0, 0, 2}
	dgram := forgedBTS(t, victim, [4]byte{10, 0, 0, 9}, 5000, 5001)
	for _, tc := range []struct {
		name   string
		l3     bool
		frames func(dst [6]byte) [][]byte
	}{
		{"ipv4", false, func(dst [6]byte) [][]byte {
			return [][]byte{frag4(dst, pkttest.MAC(1), ip1, victim, 7, 0, true, dgram[:8]), frag4(dst, pkttest.MAC(1), ip1, victim, 7, 8, false, dgram[8:])}
		}},
		{"ipv6", false, func(dst [6]byte) [][]byte {
			return [][]byte{frag6(dst, pkttest.MAC(1), [16]byte{0xfd, 1}, [16]byte{0xfd, 2}, 7, 0, true, dgram[:8]),
				frag6(dst, pkttest.MAC(1), [16]byte{0xfd, 1}, [16]byte{0xfd, 2}, 7, 8, false, dgram[8:])}
		}},
		{"routed", true, func(dst [6]byte) [][]byte {
			return [][]byte{frag4(dst, pkttest.MAC(1), hostA, hostB, 7, 0, true, dgram[:8]), frag4(dst, pkttest.MAC(1), hostA, hostB, 7, 8, false, dgram[8:])}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *Switch
			var l []*MemLink
			dst := pkttest.MAC(2)
			if tc.l3 {
				s, l, _ = routerSwitch(t)
				bindHostB(t, s, l)
				dst = mac6(macPort(0))
			} else {
				s, l, _ = testSwitch(t, 3, 1, 4096, nil)
				for i := range l {
					l[i].Record = true
					l[i].Inject(udp(0xff, byte(i+1), 10)) // every host is learnt
				}
				settle(s)
			}
			for _, ml := range l {
				ml.Sent = ml.Sent[:0]
			}
			for _, f := range tc.frames(dst) {
				l[0].Inject(f)
			}
			settle(s)
			if n := firstFragments(l[1].Sent, wire.BTSPort); n != 0 {
				t.Fatalf("the victim received %d first fragment(s) of a datagram to the BTS port: it can rebuild the forged BTS", n)
			}
			c := s.Counters(0)
			if c.Drops[pkt.ReasonForged] != 1 || c.Forged[wire.TypeSFCBTS] != 1 {
				t.Fatalf("forged drops %d, forged BTS %d, want 1 and 1", c.Drops[pkt.ReasonForged], c.Forged[wire.TypeSFCBTS])
			}
			checkFrames(t, s)
		})
	}
}

// bindHostB makes the router switch bind host B (port 1, MAC 2): a packet
// to it makes the switch ask, and B answers.
func bindHostB(t *testing.T, s *Switch, l []*MemLink) {
	t.Helper()
	l[1].Inject(pkttest.ARP(pkttest.MAC(2), hostB, gwB))
	settle(s)
	if _, _, ok := s.router.nbrs.Lookup4(be32(hostB), s.Now()); !ok {
		t.Fatal("host B is not bound")
	}
}

// TestGCPayloadOnAnotherPortIsData: a datagram between hosts whose payload
// happens to start "GC", version 1 and a type of SFC's or ExpressPass's
// reserved range, to a port other than the BTS port, is data: forwarded,
// not dropped as forged (before, any such payload was, whatever its port).
func TestGCPayloadOnAnotherPortIsData(t *testing.T) {
	s, l, _ := testSwitch(t, 2, 1, 4096, nil)
	l[1].Record = true
	l[1].Inject(udp(0xff, 2, 10))
	settle(s)
	for _, typ := range []byte{16, 17, 31, 35, 47} {
		payload := append([]byte{'G', 'C', 1, typ, 0, 36, 0, 0}, make([]byte, 48)...)
		l[0].Inject(pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, 4000, 4001, payload))
	}
	settle(s)
	if n := len(l[1].Sent); n != 5 {
		t.Fatalf("%d of 5 datagrams arrived (forged drops %d)", n, s.Counters(0).Drops[pkt.ReasonForged])
	}
}

// flagRecorder is a test mechanism: its Admit records whether each packet
// still carries the control flag (what SFC, say, reads to leave control
// messages alone).
type flagRecorder struct{}

var recordedControl []bool

func init() {
	mech.Register(mech.Spec{Name: "dataplane-test-flags", Config: func() any { return &struct{}{} },
		New: func(mech.Switch, []mech.Port) (mech.Instance, error) { return flagRecorder{}, nil }})
}

func (flagRecorder) Admit(_ *mech.PortView, p *pkt.Packet, _ int64) {
	recordedControl = append(recordedControl, p.Flags&pkt.FlagControl != 0)
}

// TestCreditIsDataWithoutExpressPass: a datagram whose payload starts with
// a credit's GC header keeps the control flag only on a switch that runs a
// mechanism for credits; elsewhere it is data to the mechanisms (before,
// it kept the flag on every switch, so SFC never sent a BTS about it).
func TestCreditIsDataWithoutExpressPass(t *testing.T) {
	credit := make([]byte, 16)
	if _, err := wire.PutCredit(credit, wire.Credit{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	for _, claimed := range []bool{false, true} {
		s, l, _ := testSwitch(t, 2, 1, 4096, func(c *Config) {
			c.Ports[1].Mechanisms = config.Mechanisms{{Name: "dataplane-test-flags", Config: &struct{}{}}}
			if claimed { // ExpressPass (linked in by mech/all) claims credits
				xp, _ := mech.Lookup("expresspass")
				c.Ports[0].Rate = 1e9
				c.Ports[0].Mechanisms = config.Mechanisms{{Name: "expresspass", Config: xp.Config()}}
			}
		})
		l[1].Inject(udp(0xff, 2, 10))
		settle(s)
		recordedControl = nil
		l[0].Inject(pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, 4000, 4001, credit))
		settle(s)
		if len(recordedControl) != 1 || recordedControl[0] != claimed {
			t.Fatalf("credit on a switch running ExpressPass: %v; control flag at admission: %v, want [%v]", claimed, recordedControl, claimed)
		}
	}
}

// TestSpoofedSourcesFromAHost: on a routed host port (whose source guard is
// subnet by default), a host sending from another host's address, from
// the switch's own or from its subnet's broadcast address is dropped and
// counted as spoofed; before, each was routed like any packet (so a
// congested switch's BTS about a spoofed flow went to the host whose
// address was used).
func TestSpoofedSourcesFromAHost(t *testing.T) {
	s, l, _ := routerSwitch(t)
	bindHostB(t, s, l)
	l[1].Sent = l[1].Sent[:0]
	for _, src := range [][4]byte{{10, 3, 0, 1}, {10, 2, 0, 7}, gwA, {10, 1, 0, 255}, {10, 1, 0, 0}} {
		l[0].Inject(pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), src, hostB, 1000, 2000, make([]byte, 64)))
	}
	settle(s)
	if n := len(l[1].Sent); n != 0 {
		t.Fatalf("%d spoofed packets reached host B", n)
	}
	if d := s.Counters(0).Drops[reasonNamed(t, "spoofed")]; d != 5 {
		t.Fatalf("%d spoofed drops, want 5", d)
	}
	// Host A's own packets still go through.
	l[0].Inject(pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), hostA, hostB, 1000, 2000, make([]byte, 64)))
	settle(s)
	if len(l[1].Sent) != 1 {
		t.Fatalf("host A's own packet: %d frames at B", len(l[1].Sent))
	}
	checkFrames(t, s)
}

// TestHostCannotClaimUpstreamQueue: a host sends a frame carrying BFC's
// upstream-queue tag (TPID 0x88B5) to another host. Only a switch's BFC
// port may send it: the frame is dropped and counted as forged, so it
// neither reaches the other host with the tag on (as it did before) nor
// claims an upstream queue.
func TestHostCannotClaimUpstreamQueue(t *testing.T) {
	s, l, _ := testSwitch(t, 2, 1, 4096, nil)
	l[1].Record = true
	l[1].Inject(udp(0xff, 2, 10))
	settle(s)
	data := udp(2, 1, 40)
	tagged := append(append(append([]byte{}, data[:12]...), 0x88, 0xb5, 0x00, 0x05), data[12:]...)
	l[0].Inject(tagged)
	settle(s)
	for _, f := range l[1].Sent {
		if binary.BigEndian.Uint16(f[12:]) == wire.TagTPID {
			t.Fatalf("host 2 received the frame with the tag on: % x", f)
		}
	}
	if len(l[1].Sent) != 0 || s.Counters(0).Drops[pkt.ReasonForged] != 1 {
		t.Fatalf("%d frames at host 2, %d forged drops: want 0 and 1", len(l[1].Sent), s.Counters(0).Drops[pkt.ReasonForged])
	}
	checkFrames(t, s)
}
