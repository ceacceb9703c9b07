package wire

import (
	"bytes"
	"strings"
	"testing"
)

// orig returns an Ethernet frame (untagged unless vlan) holding an IPv4
// header (ihl bytes, options 0x01), then rest; tot is the IPv4 total length
// written in the header (the frame may hold less or more).
func orig(vlan bool, ihl int, proto byte, frag uint16, tot int, rest []byte) []byte {
	b := []byte{2, 0, 0, 0, 0, 3, 2, 0, 0, 0, 0, 1}
	if vlan {
		b = append(b, 0x81, 0x00, 0x00, 0x07)
	}
	b = append(b, 0x08, 0x00)
	ip := []byte{0x40 | byte(ihl/4), 0, byte(tot >> 8), byte(tot), 0, 1, byte(frag >> 8), byte(frag), 64, proto, 0xbe, 0xef, 10, 0, 0, 1, 10, 0, 0, 3}
	for len(ip) < ihl {
		ip = append(ip, 1)
	}
	return append(append(b, ip...), rest...)
}

var (
	udpHdr   = hexBytes(nil, "1388 157c 0064 0000")
	tcpHdr   = hexBytes(nil, "1388 157c 00000001 00000002 5010 ffff 0000 0000")
	gsperf16 = hexBytes(nil, "4753 01 01 0000 0040 1122334455667788")
	filler   = bytes.Repeat([]byte{0x5a}, 64)
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestBTSQuoteRules(t *testing.T) {
	udpFlow := FiveTuple{Src: ip1, Dst: ip3, SrcPort: 5000, DstPort: 5500, Proto: ProtoUDP}
	cases := []struct {
		name      string
		frame     []byte
		l3, l4    int
		quote     int // bytes quoted after the IPv4 header starts
		flow      FiveTuple
		ports     bool
		flowID    uint64
		hasFlowID bool
	}{
		{"gsperf over UDP", orig(false, 20, 17, 0x4000, 200, cat(udpHdr, gsperf16, filler)), 14, 34, 44, udpFlow, true, 0x1122334455667788, true},
		{"caller found no L4 (0)", orig(false, 20, 17, 0, 200, cat(udpHdr, gsperf16, filler)), 14, 0, 44, udpFlow, true, 0x1122334455667788, true},
		{"802.1Q tagged original", orig(true, 20, 17, 0, 200, cat(udpHdr, gsperf16, filler)), 18, 38, 44, udpFlow, true, 0x1122334455667788, true},
		{"IP options", orig(false, 24, 17, 0, 200, cat(udpHdr, gsperf16, filler)), 14, 38, 48, udpFlow, true, 0x1122334455667788, true},
		{"first fragment", orig(false, 20, 17, 0x2000, 200, cat(udpHdr, gsperf16, filler)), 14, 34, 44, udpFlow, true, 0x1122334455667788, true},
		{"not gsperf", orig(false, 20, 17, 0, 200, cat(udpHdr, []byte("XS"), gsperf16[2:], filler)), 14, 34, 44, udpFlow, true, 0, false},
		{"gsperf version 2", orig(false, 20, 17, 0, 200, cat(udpHdr, gsperf16[:2], []byte{2}, gsperf16[3:], filler)), 14, 34, 44, udpFlow, true, 0, false},
		{"15 payload bytes", orig(false, 20, 17, 0, 43, cat(udpHdr, gsperf16[:15], filler)), 14, 34, 43, udpFlow, true, 0, false},
		{"no payload, Ethernet padding", orig(false, 20, 17, 0, 28, cat(udpHdr, make([]byte, 18))), 14, 34, 28, udpFlow, true, 0, false},
		{"frame cut inside UDP", orig(false, 20, 17, 0, 200, udpHdr[:4]), 14, 0, 24, udpFlow, true, 0, false},
		{"frame cut before ports", orig(false, 20, 17, 0, 200, udpHdr[:3]), 14, 0, 23, FiveTuple{Src: ip1, Dst: ip3, Proto: 17}, false, 0, false},
		{"TCP", orig(false, 20, 6, 0x4000, 1500, cat(tcpHdr, gsperf16, filler)), 14, 34, 56,
			FiveTuple{Src: ip1, Dst: ip3, SrcPort: 5000, DstPort: 5500, Proto: ProtoTCP}, true, 0, false},
		{"ICMP", orig(false, 20, 1, 0, 84, cat(gsperf16, filler)), 14, 0, 36, FiveTuple{Src: ip1, Dst: ip3, Proto: 1}, false, 0, false},
		{"non-first fragment", orig(false, 20, 17, 0x00b9, 200, cat(udpHdr, gsperf16, filler)), 14, 0, 36, FiveTuple{Src: ip1, Dst: ip3, Proto: 17}, false, 0, false},
		{"header only", orig(false, 20, 17, 0, 20, make([]byte, 40)), 14, 0, 20, FiveTuple{Src: ip1, Dst: ip3, Proto: 17}, false, 0, false},
		{"60-byte header, TCP", orig(false, 60, 6, 0, 200, cat(tcpHdr, filler)), 14, 74, 96,
			FiveTuple{Src: ip1, Dst: ip3, SrcPort: 5000, DstPort: 5500, Proto: ProtoTCP}, true, 0, false},
	}
	b := make([]byte, MaxBTSFrameLen)
	for _, c := range cases {
		n, err := BuildBTS(b, MACs{Dst: macB, Src: macC}, 63, c.frame, c.l3, c.l4, BTS{Pause: 5})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if want := max(MinFrameLen, UDPFrameLen+HeaderLen+BTSBodyLen+c.quote); n != want {
			t.Errorf("%s: frame %d bytes, want %d", c.name, n, want)
		}
		f, payload, err := ParseIPv4UDP(b[:n])
		if err != nil {
			t.Errorf("%s: framing: %v", c.name, err)
			continue
		}
		if f.Src != ip3 || f.Dst != ip1 || f.SrcPort != BTSPort || f.DstPort != BTSPort || f.DSCP() != 63 || f.TOS&3 != 0 || !f.DF || f.TTL != 64 || f.ID != 0 {
			t.Errorf("%s: framing %+v", c.name, f)
		}
		m, err := ParseBTS(payload)
		if err != nil {
			t.Errorf("%s: parse: %v", c.name, err)
			continue
		}
		if !bytes.Equal(m.Quote, c.frame[c.l3:c.l3+c.quote]) {
			t.Errorf("%s: quote\n got  %x\n want %x", c.name, m.Quote, c.frame[c.l3:c.l3+c.quote])
		}
		if m.Flow != c.flow || m.HasPorts != c.ports || m.FlowID != c.flowID || m.HasFlowID != c.hasFlowID || m.Pause != 5 {
			t.Errorf("%s: decoded %+v", c.name, m)
		}
	}
}

func TestBuildBTSRejects(t *testing.T) {
	good := orig(false, 20, 17, 0, 200, cat(udpHdr, gsperf16))
	for _, c := range []struct {
		name   string
		frame  []byte
		l3, l4 int
		dscp   uint8
		buf    int
		want   Error
	}{
		{"L3 offset negative", good, -1, 0, 48, 200, ErrOffset},
		{"L3 offset past the frame", good, len(good) + 1, 0, 48, 200, ErrOffset},
		{"L4 offset wrong", good, 14, 30, 48, 200, ErrOffset},
		{"L4 offset with options ignored", orig(false, 24, 17, 0, 200, cat(udpHdr, gsperf16)), 14, 34, 48, 200, ErrOffset},
		{"19 bytes of IPv4", good[:33], 14, 0, 48, 200, ErrQuote},
		{"L3 offset at the end", good, len(good), 0, 48, 200, ErrQuote},
		{"IPv6", append([]byte{}, append(good[:14:14], append([]byte{0x65}, good[15:]...)...)...), 14, 0, 48, 200, ErrQuote},
		{"IHL 4", orig(false, 16, 17, 0, 200, cat(make([]byte, 4), udpHdr)), 14, 0, 48, 200, ErrQuote},
		{"total below IHL", orig(false, 20, 17, 0, 19, cat(udpHdr)), 14, 0, 48, 200, ErrQuote},
		{"frame cut inside the options", orig(false, 24, 17, 0, 200, nil)[:14+22], 14, 0, 48, 200, ErrQuote},
		{"DSCP 64", good, 14, 34, 64, 200, ErrDSCP},
		{"buffer one short", good, 14, 34, 48, UDPFrameLen + 8 + 16 + 44 - 1, ErrBuffer},
	} {
		b := bytes.Repeat([]byte{0xee}, 200)
		if _, err := BuildBTS(b[:c.buf], MACs{}, c.dscp, c.frame, c.l3, c.l4, BTS{}); err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if !bytes.Equal(b, bytes.Repeat([]byte{0xee}, 200)) {
			t.Errorf("%s: wrote into the buffer on error", c.name)
		}
	}
}

func TestParseBTSRejects(t *testing.T) {
	const fixed = "000003e8 0001 0002 0003 0000 00010000 "
	const ipUDP = "4500 00c8 0001 0000 4011 beef 0a000001 0a000003 " // total 200, UDP
	cases := []struct {
		name string
		msg  string
		want Error
	}{
		{"short", "4743 01 10 0024", ErrShort},
		{"bad magic", "4753 01 10 0024 0000" + fixed + ipUDP, ErrMagic},
		{"bad version", "4743 09 10 0024 0000" + fixed + ipUDP, ErrVersion},
		{"unknown type", "4743 01 11 0024 0000" + fixed + ipUDP, ErrType},
		{"a credit", "4743 01 20 0008 0000 00000001 00000002", ErrWrongType},
		{"no room for an IPv4 header (length 35)", "4743 01 10 0023 0000" + fixed + ipUDP, ErrLength},
		{"length lies", "4743 01 10 0025 0000" + fixed + ipUDP, ErrTruncated},
		{"IHL 6, 20 bytes quoted", "4743 01 10 0024 0000" + fixed + "4600 00c8 0001 0000 4011 beef 0a000001 0a000003", ErrQuote},
		{"version 6 quoted", "4743 01 10 0024 0000" + fixed + "6500 00c8 0001 0000 4011 beef 0a000001 0a000003", ErrQuote},
		{"IHL 4 quoted", "4743 01 10 0024 0000" + fixed + "4400 00c8 0001 0000 4011 beef 0a000001 0a000003", ErrQuote},
		{"quoted total below IHL", "4743 01 10 0024 0000" + fixed + "4500 0013 0001 0000 4011 beef 0a000001 0a000003", ErrQuote},
		{"quote longer than the quoted total", "4743 01 10 0028 0000" + fixed + "4500 0017 0001 0000 4011 beef 0a000001 0a000003 1388157c", ErrQuote},
		{"UDP quote of 45 bytes", "4743 01 10 003d 0000" + fixed + ipUDP + "1388 157c 00b4 0000" + zeros(17), ErrQuote},
		{"ICMP quote of 37 bytes", "4743 01 10 0035 0000" + fixed + "4500 00c8 0001 0000 4001 beef 0a000001 0a000003" + zeros(17), ErrQuote},
		{"fragment quote of 37 bytes", "4743 01 10 0035 0000" + fixed + "4500 00c8 0001 0001 4011 beef 0a000001 0a000003" + zeros(17), ErrQuote},
		{"TCP quote of 57 bytes", "4743 01 10 0049 0000" + fixed + "4500 00c8 0001 0000 4006 beef 0a000001 0a000003" + zeros(37), ErrQuote},
	}
	for _, c := range cases {
		if _, err := ParseBTS(hexBytes(t, c.msg)); err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// The longest quotes the rules allow parse.
	for _, ok := range []string{
		"4743 01 10 003c 0000" + fixed + ipUDP + "1388 157c 00b4 0000" + zeros(16),
		"4743 01 10 0070 0000" + fixed + "4f00 00c8 0001 0000 4006 beef 0a000001 0a000003" + zeros(40) + zeros(20+16),
	} {
		if _, err := ParseBTS(hexBytes(t, ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestPutBTS(t *testing.T) {
	o := btsOriginal(t)
	m := BTS{Flags: BTSFromCache | BTSFromEstimator, Pause: 1, Switch: 2, Port: 3, Queue: 4, Depth: 0xffffffff, Quote: o[14 : 14+44]}
	b := make([]byte, 200)
	n, err := PutBTS(b, m)
	if err != nil || n != 8+16+44 {
		t.Fatalf("PutBTS: %d, %v", n, err)
	}
	frame := make([]byte, MaxBTSFrameLen)
	k, err := BuildBTS(frame, MACs{}, 48, o, 14, 34, m)
	if err != nil || !bytes.Equal(frame[UDPFrameLen:k], b[:n]) {
		t.Fatalf("BuildBTS and PutBTS differ: %v\n %x\n %x", err, frame[UDPFrameLen:k], b[:n])
	}
	got, err := ParseBTS(b[:n])
	if err != nil || got.Flags != m.Flags || got.Depth != m.Depth || !got.HasFlowID || got.FlowID != 0xabcdef {
		t.Fatalf("parse: %+v, %v", got, err)
	}
	if _, err := PutBTS(b[:n-1], m); err != ErrBuffer {
		t.Fatalf("short buffer: %v", err)
	}
	m.Quote = m.Quote[:19]
	if _, err := PutBTS(b, m); err != ErrQuote {
		t.Fatalf("19-byte quote: %v", err)
	}
	m.Quote = append(bytes.Clone(o[14:14+44]), 0)
	if _, err := PutBTS(b, m); err != ErrQuote {
		t.Fatalf("45-byte UDP quote: %v", err)
	}
	if !strings.Contains(TypeSFCBTS.Name(), "BTS") {
		t.Fatal(TypeSFCBTS.Name())
	}
}
