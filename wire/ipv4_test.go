package wire

import (
	"bytes"
	"testing"
)

func TestIPv4Checksum(t *testing.T) {
	// A header with its checksum in place (0xb861), worked by hand in many
	// textbooks.
	hdr := hexBytes(t, "4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7")
	if got := IPv4Checksum(hdr); got != 0xb861 {
		t.Fatalf("IPv4Checksum = %#x, want 0xb861", got)
	}
	if !VerifyIPv4Checksum(hdr) {
		t.Fatal("valid header does not verify")
	}
	hdr[10], hdr[11] = 0, 0 // the stored value does not matter to IPv4Checksum
	if got := IPv4Checksum(hdr); got != 0xb861 {
		t.Fatalf("IPv4Checksum with field zero = %#x", got)
	}
	if VerifyIPv4Checksum(hdr) {
		t.Fatal("zero checksum verifies")
	}
	hdr[10], hdr[11] = 0xb8, 0x61
	hdr[8]-- // a router lowers the TTL without fixing the checksum
	if VerifyIPv4Checksum(hdr) {
		t.Fatal("changed header verifies")
	}
	if VerifyIPv4Checksum(hdr[:19]) || VerifyIPv4Checksum(nil) {
		t.Fatal("short header verifies")
	}
	// With options (IHL 6): the option word is summed too.
	opt := hexBytes(t, "4600 0078 0000 4000 4011 0000 c0a8 0001 c0a8 00c7 01010101")
	c := IPv4Checksum(opt)
	opt[10], opt[11] = byte(c>>8), byte(c)
	if c != 0xb55a || !VerifyIPv4Checksum(opt) {
		t.Fatalf("IHL 6: checksum %#x, want 0xb55a (and to verify)", c)
	}
}

// udpFrame returns a valid routed frame with a 16-byte payload, built by
// hand (checksum 0x2697 worked out in TestGoldenCredit).
func udpFrame(t testing.TB) []byte {
	return hexBytes(t, `
		020000000002 020000000003 0800
		45 28 002c 0000 4000 40 11 2697 0a000002 0a000001
		1770 1388 0018 0000
		4743 01 20 0008 0000 deadbeef 00012345
		0000`)
}

func TestParseIPv4UDP(t *testing.T) {
	frame := udpFrame(t)
	f, payload, err := ParseIPv4UDP(frame)
	if err != nil {
		t.Fatal(err)
	}
	want := IPv4UDP{DstMAC: macB, SrcMAC: macC, TOS: 0x28, DF: true, TTL: 64, Src: ip2, Dst: ip1, SrcPort: 6000, DstPort: 5000}
	if f != want || f.DSCP() != 10 {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
	if !bytes.Equal(payload, frame[42:58]) || cap(payload) != 16 {
		t.Fatalf("payload %x (cap %d)", payload, cap(payload))
	}

	// A lower TTL (after routers) with the checksum fixed, a correct UDP
	// checksum, and an ID are accepted.
	g := bytes.Clone(frame)
	g[22] = 3
	g[18], g[19] = 0x12, 0x34
	fixIP(g)
	setUDPSum(g)
	if f, _, err := ParseIPv4UDP(g); err != nil || f.TTL != 3 || f.ID != 0x1234 || f.UDPChecksum == 0 {
		t.Fatalf("TTL 3, ID, UDP checksum: %+v, %v", f, err)
	}

	type mut struct {
		name string
		f    func(b []byte) []byte
		want Error
	}
	for _, c := range []mut{
		{"41 bytes", func(b []byte) []byte { return b[:41] }, ErrShort},
		{"ARP", func(b []byte) []byte { b[13] = 0x06; return b }, ErrEthernet},
		{"VLAN tagged", func(b []byte) []byte { b[12], b[13] = 0x81, 0x00; return b }, ErrEthernet},
		{"version 6", func(b []byte) []byte { b[14] = 0x65; return fixIP(b) }, ErrIPv4},
		{"IHL 4", func(b []byte) []byte { b[14] = 0x44; return fixIP(b) }, ErrIPv4},
		{"IHL 6", func(b []byte) []byte { b[14] = 0x46; return fixIP(b) }, ErrIPv4},
		{"TCP", func(b []byte) []byte { b[23] = 6; return fixIP(b) }, ErrIPv4},
		{"more fragments", func(b []byte) []byte { b[20] = 0x60; return fixIP(b) }, ErrIPv4},
		{"fragment offset", func(b []byte) []byte { b[21] = 1; return fixIP(b) }, ErrIPv4},
		{"reserved flag", func(b []byte) []byte { b[20] = 0xc0; return fixIP(b) }, ErrIPv4},
		{"total 27", func(b []byte) []byte { b[17] = 27; return fixIP(b) }, ErrIPv4},
		{"total beyond the frame", func(b []byte) []byte { b[17] = 47; return fixIP(b) }, ErrTruncated},
		{"total 65535", func(b []byte) []byte { b[16], b[17] = 0xff, 0xff; return fixIP(b) }, ErrTruncated},
		{"bad IPv4 checksum", func(b []byte) []byte { b[25]++; return b }, ErrChecksum},
		{"TTL changed, checksum not", func(b []byte) []byte { b[22]--; return b }, ErrChecksum},
		{"UDP length short", func(b []byte) []byte { b[39] = 0x17; return b }, ErrUDP},
		{"UDP length long", func(b []byte) []byte { b[39] = 0x19; return b }, ErrUDP},
		{"UDP length below 8", func(b []byte) []byte { b[39] = 4; return b }, ErrUDP},
		{"bad UDP checksum", func(b []byte) []byte { setUDPSum(b); b[41]++; return b }, ErrChecksum},
	} {
		if _, _, err := ParseIPv4UDP(c.f(bytes.Clone(frame))); err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// fixIP recomputes the IPv4 header checksum of a test frame with an
// independent implementation (32-bit sum of 16-bit words, folded).
func fixIP(b []byte) []byte {
	b[24], b[25] = 0, 0
	var s uint32
	for i := 14; i < 34; i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	s = (s >> 16) + (s & 0xffff)
	s += s >> 16
	c := ^uint16(s)
	b[24], b[25] = byte(c>>8), byte(c)
	return b
}

// setUDPSum fills in the UDP checksum of a test frame (IHL 5), computed
// independently of the package.
func setUDPSum(b []byte) {
	udpLen := int(b[38])<<8 | int(b[39])
	b[40], b[41] = 0, 0
	var s uint32
	for i := 26; i < 34; i += 2 { // addresses
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	s += 17 + uint32(udpLen)
	u := b[34 : 34+udpLen]
	for i := 0; i+1 < len(u); i += 2 {
		s += uint32(u[i])<<8 | uint32(u[i+1])
	}
	if len(u)%2 == 1 {
		s += uint32(u[len(u)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	c := ^uint16(s)
	if c == 0 {
		c = 0xffff
	}
	b[40], b[41] = byte(c>>8), byte(c)
}
