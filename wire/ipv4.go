package wire

import "encoding/binary"

// Sizes of the IPv4/UDP framing of routed messages.
const (
	IPv4HeaderLen = 20 // gswitch sends no IP options
	UDPHeaderLen  = 8
	UDPFrameLen   = EthHeaderLen + IPv4HeaderLen + UDPHeaderLen // 42: the message starts here
	DefaultTTL    = 64
)

// MACs are the Ethernet addresses of a frame a builder writes.
type MACs struct {
	Dst, Src [6]byte
}

// FiveTuple identifies an IPv4 flow in the direction its data travels.
type FiveTuple struct {
	Src, Dst         [4]byte
	SrcPort, DstPort uint16
	Proto            uint8
}

// IPv4UDP is the Ethernet, IPv4 and UDP framing of a routed message as
// ParseIPv4UDP reads it. The builders write TOS = DSCP<<2 (ECN 0), ID 0, DF,
// TTL 64 and UDP checksum 0; routers on the way may lower the TTL, and hosts
// that send through their UDP stack fill in the UDP checksum.
type IPv4UDP struct {
	DstMAC, SrcMAC   [6]byte
	TOS              uint8 // DSCP<<2 | ECN
	ID               uint16
	DF               bool // don't-fragment flag
	TTL              uint8
	Src, Dst         [4]byte
	SrcPort, DstPort uint16
	UDPChecksum      uint16 // 0: none; otherwise ParseIPv4UDP has verified it
}

// DSCP returns the DiffServ code point of the TOS byte.
func (f *IPv4UDP) DSCP() uint8 { return f.TOS >> 2 }

// ParseIPv4UDP reads the framing of a routed message: an untagged Ethernet
// frame with EtherType 0x0800 (ErrEthernet), an IPv4 header of version 4,
// IHL 5, protocol UDP, neither a fragment nor the reserved flag
// (ErrIPv4), a total length that holds the UDP header (ErrIPv4) and fits
// in the frame (ErrTruncated), a correct header checksum (ErrChecksum), a
// UDP length equal to the IPv4 payload length (ErrUDP) and a UDP checksum
// that is 0 or correct (ErrChecksum). It returns the framing and the UDP
// payload, where a GC message starts; the bytes of the frame after the IPv4
// total length are Ethernet padding.
func ParseIPv4UDP(frame []byte) (IPv4UDP, []byte, error) {
	if len(frame) < UDPFrameLen {
		return IPv4UDP{}, nil, ErrShort
	}
	if binary.BigEndian.Uint16(frame[12:]) != EtherTypeIPv4 {
		return IPv4UDP{}, nil, ErrEthernet
	}
	ip := frame[EthHeaderLen:]
	frag := binary.BigEndian.Uint16(ip[6:])
	if ip[0] != 0x45 || ip[9] != ProtoUDP || frag&^0x4000 != 0 {
		return IPv4UDP{}, nil, ErrIPv4
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if tot < IPv4HeaderLen+UDPHeaderLen {
		return IPv4UDP{}, nil, ErrIPv4
	}
	if EthHeaderLen+tot > len(frame) {
		return IPv4UDP{}, nil, ErrTruncated
	}
	if !VerifyIPv4Checksum(ip[:IPv4HeaderLen]) {
		return IPv4UDP{}, nil, ErrChecksum
	}
	udp := ip[IPv4HeaderLen:tot]
	if int(binary.BigEndian.Uint16(udp[4:])) != len(udp) {
		return IPv4UDP{}, nil, ErrUDP
	}
	f := IPv4UDP{
		DstMAC:      [6]byte(frame[0:6]),
		SrcMAC:      [6]byte(frame[6:12]),
		TOS:         ip[1],
		ID:          binary.BigEndian.Uint16(ip[4:]),
		DF:          frag&0x4000 != 0,
		TTL:         ip[8],
		Src:         [4]byte(ip[12:16]),
		Dst:         [4]byte(ip[16:20]),
		SrcPort:     binary.BigEndian.Uint16(udp[0:]),
		DstPort:     binary.BigEndian.Uint16(udp[2:]),
		UDPChecksum: binary.BigEndian.Uint16(udp[6:]),
	}
	if f.UDPChecksum != 0 && udpChecksum(f.Src, f.Dst, udp) != 0xffff {
		return IPv4UDP{}, nil, ErrChecksum
	}
	return f, udp[UDPHeaderLen:len(udp):len(udp)], nil
}

// putIPv4UDP writes the 42 bytes of framing for a UDP payload of n bytes
// (UDP checksum 0). b holds at least UDPFrameLen bytes.
func putIPv4UDP(b []byte, f *IPv4UDP, n int) {
	_ = b[UDPFrameLen-1]
	copy(b[0:6], f.DstMAC[:])
	copy(b[6:12], f.SrcMAC[:])
	binary.BigEndian.PutUint16(b[12:], EtherTypeIPv4)
	ip := b[EthHeaderLen : EthHeaderLen+IPv4HeaderLen]
	ip[0], ip[1] = 0x45, f.TOS
	binary.BigEndian.PutUint16(ip[2:], uint16(IPv4HeaderLen+UDPHeaderLen+n))
	binary.BigEndian.PutUint16(ip[4:], f.ID)
	var frag uint16
	if f.DF {
		frag = 0x4000
	}
	binary.BigEndian.PutUint16(ip[6:], frag)
	ip[8], ip[9] = f.TTL, ProtoUDP
	ip[10], ip[11] = 0, 0
	copy(ip[12:16], f.Src[:])
	copy(ip[16:20], f.Dst[:])
	binary.BigEndian.PutUint16(ip[10:], IPv4Checksum(ip))
	udp := b[EthHeaderLen+IPv4HeaderLen : UDPFrameLen]
	binary.BigEndian.PutUint16(udp[0:], f.SrcPort)
	binary.BigEndian.PutUint16(udp[2:], f.DstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(UDPHeaderLen+n))
	udp[6], udp[7] = 0, 0
}

// routedLen checks the sizes and the DSCP of a routed frame with a message of
// msgLen bytes and returns the frame's length, padding included.
func routedLen(b []byte, dscp uint8, msgLen int) (int, error) {
	if dscp > 63 {
		return 0, ErrDSCP
	}
	n := max(UDPFrameLen+msgLen, MinFrameLen)
	if len(b) < n {
		return 0, ErrBuffer
	}
	return n, nil
}

// finishRouted writes the framing of a message already at b[UDPFrameLen:]
// and the padding up to n.
func finishRouted(b []byte, f *IPv4UDP, msgLen, n int) {
	putIPv4UDP(b, f, msgLen)
	clear(b[UDPFrameLen+msgLen : n])
}

// IPv4Checksum returns the header checksum of the IPv4 header hdr (exactly
// IHL*4 bytes), computed as if its checksum field (bytes 10-11) were zero:
// the value to store there.
func IPv4Checksum(hdr []byte) uint16 {
	if len(hdr) < 12 {
		return ^fold(sum16(0, hdr))
	}
	return ^fold(sum16(sum16(0, hdr[:10]), hdr[12:]))
}

// VerifyIPv4Checksum reports whether the IPv4 header hdr (exactly IHL*4
// bytes, at least 20) carries a correct checksum: its ones'-complement sum is
// 0xffff.
func VerifyIPv4Checksum(hdr []byte) bool {
	return len(hdr) >= IPv4HeaderLen && fold(sum16(0, hdr)) == 0xffff
}

// udpChecksum returns the ones'-complement sum of the pseudo-header and udp
// (the UDP header and payload): 0xffff when the stored checksum is right.
func udpChecksum(src, dst [4]byte, udp []byte) uint16 {
	s := sum16(0, src[:])
	s = sum16(s, dst[:])
	s += ProtoUDP + uint32(len(udp))
	return fold(sum16(s, udp))
}

// sum16 adds b as big-endian 16-bit words (an odd last byte padded with
// zero) to s. s stays far from overflow for any frame under 64 KB.
func sum16(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
