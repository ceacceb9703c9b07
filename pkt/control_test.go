package pkt_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// udpDatagram builds a UDP datagram to dport with payload, whole or as
// the first fragment of a longer one (IPv4 MF, or an IPv6 fragment header
// with M), over IPv4 or IPv6.
func udpDatagram(v6, first bool, dport uint16, payload []byte) []byte {
	u := pkttest.UDP(wire.BTSPort, dport, payload)
	if !v6 {
		f := pkttest.UDP4(m2, m1, ip1, ip2, wire.BTSPort, dport, payload)
		if first {
			binary.BigEndian.PutUint16(f[14+6:], 0x2000)
		}
		return f
	}
	f := pkttest.UDP6(m2, m1, [16]byte{1}, [16]byte{2}, wire.BTSPort, dport, payload)
	if !first {
		return f
	}
	// Insert a fragment header (offset 0, M) before the UDP header.
	h := append([]byte{}, f[:54]...)
	h[14+6] = 44
	binary.BigEndian.PutUint16(h[14+4:], uint16(8+len(u)))
	return append(append(h, pkt.ProtoUDP, 0, 0, 1, 0, 0, 0, 9), u...)
}

// TestControlRecognisedWholeOrFragmented: a GC message to the BTS port is
// recognised whole, and the first fragment of a datagram to it is taken
// for a BTS whatever it holds (its message may be in later fragments);
// elsewhere only ExpressPass's types are candidates, so a BTS type on
// another port, or a first fragment to another port, is data.
func TestControlRecognisedWholeOrFragmented(t *testing.T) {
	bts := append([]byte{'G', 'C', 1, 16, 0, 36, 0, 0}, make([]byte, 40)...)
	credit := []byte{'G', 'C', 1, 32, 0, 8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2}
	reserved := []byte{'G', 'C', 1, 40, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	plain := []byte("hello, world....")
	for _, v6 := range []bool{false, true} {
		for _, c := range []struct {
			name    string
			first   bool
			dport   uint16
			payload []byte
			ctl     uint8 // 0: not flagged
		}{
			{"BTS to its port", false, wire.BTSPort, bts, 16},
			{"credit to the BTS port", false, wire.BTSPort, credit, 32},
			{"data to the BTS port", false, wire.BTSPort, plain, 0},
			{"first fragment to the BTS port, no payload", true, wire.BTSPort, nil, 16},
			{"first fragment to the BTS port, data", true, wire.BTSPort, plain, 16},
			{"BTS type to another port", false, 5000, bts, 0},
			{"first fragment of a BTS to another port", true, 5000, bts, 0},
			{"credit to another port", false, 5000, credit, 32},
			{"reserved ExpressPass type to another port", false, 5000, reserved, 40},
		} {
			var p pkt.Packet
			f := udpDatagram(v6, c.first, c.dport, c.payload)
			if e := pkt.Parse(f, &p); e != pkt.OK {
				t.Fatalf("v6 %v, %s: %v", v6, c.name, e)
			}
			flagged := p.Flags&pkt.FlagControl != 0
			if flagged != (c.ctl != 0) || p.Ctl != c.ctl {
				t.Errorf("v6 %v, %s: control %v type %d, want type %d", v6, c.name, flagged, p.Ctl, c.ctl)
			}
		}
	}
}

// FuzzUDPControl checks the classification of UDP datagrams against its
// rule for any payload, port and fragmentation: to the BTS port, a GC
// header (magic, version 1, a type) or a first fragment makes a control
// candidate (type 16 when there is no header); elsewhere only a GC header
// of an ExpressPass type does; nothing else is flagged.
func FuzzUDPControl(f *testing.F) {
	f.Add(false, false, uint16(wire.BTSPort), []byte{'G', 'C', 1, 16, 0, 36})
	f.Add(true, true, uint16(wire.BTSPort), []byte{})
	f.Add(false, true, uint16(7), []byte{'G', 'C', 1, 32})
	f.Add(true, false, uint16(7), []byte{'G', 'C', 1, 20})
	f.Fuzz(func(t *testing.T, v6, first bool, dport uint16, payload []byte) {
		if len(payload) > 1400 {
			return
		}
		var p pkt.Packet
		if e := pkt.Parse(udpDatagram(v6, first, dport, payload), &p); e != pkt.OK {
			t.Fatalf("a well-formed datagram: %v", e)
		}
		gc := len(payload) >= 4 && payload[0] == 'G' && payload[1] == 'C' && payload[2] == 1 && payload[3] != 0
		var want uint8
		switch {
		case dport == wire.BTSPort && gc:
			want = payload[3]
		case dport == wire.BTSPort && first:
			want = uint8(wire.TypeSFCBTS)
		case gc && payload[3] >= 32 && payload[3] <= 47:
			want = payload[3]
		}
		if (p.Flags&pkt.FlagControl != 0) != (want != 0) || p.Ctl != want {
			t.Fatalf("v6 %v first %v port %d payload % x: control %v type %d, want type %d", v6, first, dport, payload, p.Flags&pkt.FlagControl != 0, p.Ctl, want)
		}
	})
}
