package pkt

import "encoding/binary"

// MarkCE sets the ECN field of an ECN-capable IP packet to CE (11) and, for
// IPv4, updates the header checksum incrementally (RFC 1624). It reports
// whether it marked; packets that are not ECN-capable (00) are left alone.
func MarkCE(frame []byte, p *Packet) bool {
	off := int(p.L3Off)
	switch {
	case p.Flags&FlagIPv4 != 0 && len(frame) >= off+20:
		tos := frame[off+1]
		if tos&3 == 0 || tos&3 == 3 {
			return false
		}
		old := binary.BigEndian.Uint16(frame[off:])
		frame[off+1] = tos | 3
		nw := binary.BigEndian.Uint16(frame[off:])
		// HC' = ~(~HC + ~m + m')
		sum := uint32(^binary.BigEndian.Uint16(frame[off+10:])) + uint32(^old) + uint32(nw)
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(frame[off+10:], ^uint16(sum))
		p.TOS = tos | 3
		return true
	case p.Flags&FlagIPv6 != 0 && len(frame) >= off+40:
		// Traffic class spans bits 4..11 of the first word; ECN is its low 2 bits (bits 4,5 of byte 1's high nibble).
		ecn := (frame[off+1] >> 4) & 3
		if ecn == 0 || ecn == 3 {
			return false
		}
		frame[off+1] |= 3 << 4
		p.TOS |= 3
		return true
	}
	return false
}
