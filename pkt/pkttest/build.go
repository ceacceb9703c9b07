// Package pkttest builds well-formed frames for tests.
package pkttest

import "encoding/binary"

// MAC returns the 6 bytes of a locally administered unicast MAC ending in n.
func MAC(n byte) [6]byte { return [6]byte{0x02, 0, 0, 0, 0, n} }

// MACInt is MAC(n) as the 48-bit integer the learning table keys on.
func MACInt(n byte) uint64 { return 0x02<<40 | uint64(n) }

// Broadcast is ff:ff:ff:ff:ff:ff.
var Broadcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Eth returns an Ethernet header (with an optional 802.1Q tag if vlan > 0 or pcp > 0).
func Eth(dst, src [6]byte, etype uint16, vlan uint16, pcp uint8) []byte {
	b := append(append([]byte{}, dst[:]...), src[:]...)
	if vlan > 0 || pcp > 0 {
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, uint16(pcp)<<13|vlan)
	}
	return binary.BigEndian.AppendUint16(b, etype)
}

// IPv4 returns an IPv4 header (no options) with a correct checksum for a payload of plen bytes.
func IPv4(src, dst [4]byte, proto uint8, tos uint8, plen int) []byte {
	h := make([]byte, 20)
	h[0] = 0x45
	h[1] = tos
	binary.BigEndian.PutUint16(h[2:], uint16(20+plen))
	h[8] = 64
	h[9] = proto
	copy(h[12:], src[:])
	copy(h[16:], dst[:])
	binary.BigEndian.PutUint16(h[10:], Checksum(h))
	return h
}

// UDP returns a UDP header and payload (checksum 0, which IPv4 allows).
func UDP(sport, dport uint16, payload []byte) []byte {
	h := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(payload)))
	return append(h, payload...)
}

// TCP returns a 20-byte TCP header with the given flags and the payload.
func TCP(sport, dport uint16, flags uint8, payload []byte) []byte {
	h := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	h[12] = 5 << 4
	h[13] = flags
	binary.BigEndian.PutUint16(h[14:], 65535)
	return append(h, payload...)
}

// UDP4 returns a whole Ethernet/IPv4/UDP frame.
func UDP4(dst, src [6]byte, sip, dip [4]byte, sport, dport uint16, payload []byte) []byte {
	l4 := UDP(sport, dport, payload)
	f := Eth(dst, src, 0x0800, 0, 0)
	f = append(f, IPv4(sip, dip, 17, 0, len(l4))...)
	return append(f, l4...)
}

// TCP4 returns a whole Ethernet/IPv4/TCP frame with the given TOS byte.
func TCP4(dst, src [6]byte, sip, dip [4]byte, sport, dport uint16, tos uint8, payload []byte) []byte {
	l4 := TCP(sport, dport, 0x18, payload)
	f := Eth(dst, src, 0x0800, 0, 0)
	f = append(f, IPv4(sip, dip, 6, tos, len(l4))...)
	return append(f, l4...)
}

// UDP6 returns an Ethernet/IPv6/UDP frame.
func UDP6(dst, src [6]byte, sip, dip [16]byte, sport, dport uint16, payload []byte) []byte {
	l4 := UDP(sport, dport, payload)
	f := Eth(dst, src, 0x86dd, 0, 0)
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(l4)))
	h[6] = 17
	h[7] = 64
	copy(h[8:], sip[:])
	copy(h[24:], dip[:])
	f = append(f, h...)
	return append(f, l4...)
}

// ARP returns a broadcast ARP request frame.
func ARP(src [6]byte, sip, tip [4]byte) []byte {
	f := Eth(Broadcast, src, 0x0806, 0, 0)
	b := []byte{0, 1, 8, 0, 6, 4, 0, 1}
	b = append(b, src[:]...)
	b = append(b, sip[:]...)
	b = append(b, 0, 0, 0, 0, 0, 0)
	b = append(b, tip[:]...)
	return append(f, b...)
}

// Checksum is the Internet checksum of b.
func Checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// ARPReply returns an ARP reply from (src, sip) to (dst, dip).
func ARPReply(dst, src [6]byte, sip, dip [4]byte) []byte {
	f := Eth(dst, src, 0x0806, 0, 0)
	b := []byte{0, 1, 8, 0, 6, 4, 0, 2}
	b = append(b, src[:]...)
	b = append(b, sip[:]...)
	b = append(b, dst[:]...)
	b = append(b, dip[:]...)
	return append(f, b...)
}

// Ping returns an ICMP echo request frame of id and seq with n payload bytes.
func Ping(dst, src [6]byte, sip, dip [4]byte, id, seq uint16, n int) []byte {
	icmp := make([]byte, 8+n)
	icmp[0] = 8
	binary.BigEndian.PutUint16(icmp[4:], id)
	binary.BigEndian.PutUint16(icmp[6:], seq)
	for i := range n {
		icmp[8+i] = byte(i)
	}
	binary.BigEndian.PutUint16(icmp[2:], Checksum(icmp))
	f := Eth(dst, src, 0x0800, 0, 0)
	f = append(f, IPv4(sip, dip, 1, 0, len(icmp))...)
	return append(f, icmp...)
}

// WithTTL sets the TTL of the IPv4 frame f (header at 14) and fixes its checksum.
func WithTTL(f []byte, ttl uint8) []byte {
	f[14+8] = ttl
	f[14+10], f[14+11] = 0, 0
	binary.BigEndian.PutUint16(f[14+10:], Checksum(f[14:34]))
	return f
}
