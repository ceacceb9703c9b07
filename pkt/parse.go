package pkt

import (
	"encoding/binary"

	"github.com/gswitch/gswitch/wire"
)

// EtherTypes the parser understands.
const (
	EtherTypeIPv4  = 0x0800
	EtherTypeARP   = 0x0806
	EtherTypeVLAN  = 0x8100
	EtherTypeQinQ  = 0x88a8
	EtherTypeIPv6  = 0x86dd
	EtherTypeGC    = wire.EtherType // gswitch link-local control messages (IEEE 802 local experimental 2)
	TPIDUpQ        = wire.TagTPID   // BFC upstream-queue tag (IEEE 802 local experimental 1)
	ProtoTCP       = 6
	ProtoUDP       = 17
	EthHeaderLen   = 14
	MinFrameLen    = EthHeaderLen
	maxParseOffset = 255 // L3Off and L4Off are bytes
)

// Err says why a frame is malformed. The zero value means it parsed.
type Err uint8

// Parse results. Each non-OK value is a counted drop reason.
const (
	OK         Err = iota
	ErrShort       // shorter than an Ethernet header
	ErrVLAN        // truncated 802.1Q tag, or more than two tags
	ErrARP         // truncated ARP packet
	ErrIPv4        // bad version, IHL, or total length
	ErrIPv6        // truncated header, bad version, or payload length beyond the frame
	ErrL4          // truncated TCP or UDP header, or bad TCP data offset
	ErrTooDeep     // headers end beyond byte 255 (offsets do not fit)
	ErrSrcMAC      // the source MAC is a group (multicast or broadcast) address
	ErrTag         // a truncated BFC tag, or one that is not outermost
	numErrs
)

var errNames = [...]string{"ok", "short", "vlan", "arp", "ipv4", "ipv6", "l4", "too_deep", "src_mac", "tag"}

func (e Err) String() string {
	if int(e) < len(errNames) {
		return errNames[e]
	}
	return "unknown"
}

// NumErrs is the number of Err values, OK included.
const NumErrs = int(numErrs)

// Parse decodes frame's headers into p (leaving Addr, Len, ports and Queue
// alone) and returns OK or why the frame is malformed. It never reads beyond
// frame and never allocates. Frames of EtherTypes it does not know parse as
// OK with only the Ethernet fields set: a switch forwards what it does not
// understand.
func Parse(frame []byte, p *Packet) Err {
	p.Hash, p.VLAN, p.L3Off, p.L4Off, p.Proto, p.TOS, p.PCP, p.Flags = 0, 0, 0, 0, 0, 0, 0, 0
	p.UpQ, p.TagOff, p.Ctl = 0, 0, 0
	if len(frame) < EthHeaderLen {
		return ErrShort
	}
	if frame[6]&1 != 0 {
		return ErrSrcMAC
	}
	if frame[0]&1 != 0 {
		p.Flags |= FlagMulticast
		if frame[0] == 0x01 && frame[1] == 0x80 && frame[2] == 0xc2 && frame[3] == 0 && frame[4] == 0 && frame[5]&0xf0 == 0 {
			p.Flags |= FlagLinkLocal
		}
	}
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	off += 2
	if et == TPIDUpQ {
		if len(frame) < off+4 {
			return ErrTag
		}
		p.UpQ = binary.BigEndian.Uint16(frame[off:]) & 0x0fff
		p.TagOff = 12
		p.Flags |= FlagUpQ
		et = binary.BigEndian.Uint16(frame[off+2:])
		off += 4
	}
	for tags := 0; et == EtherTypeVLAN || et == EtherTypeQinQ || et == TPIDUpQ; tags++ {
		if et == TPIDUpQ {
			return ErrTag // only as the outermost tag
		}
		if tags == 2 || len(frame) < off+4 {
			return ErrVLAN
		}
		tci := binary.BigEndian.Uint16(frame[off:])
		if tags == 0 {
			p.PCP = uint8(tci >> 13)
			p.VLAN = tci & 0x0fff
			p.Flags |= FlagTagged
		}
		et = binary.BigEndian.Uint16(frame[off+2:])
		off += 4
	}
	p.EthType = et
	switch et {
	case EtherTypeARP:
		if len(frame) < off+28 {
			return ErrARP
		}
		p.L3Off = uint8(off)
		return OK
	case EtherTypeIPv4:
		return parseIPv4(frame, off, p)
	case EtherTypeIPv6:
		return parseIPv6(frame, off, p)
	case EtherTypeGC:
		// A link-local control message: the type is in the GC header.
		p.L3Off = uint8(off)
		if t, ok := gcType(frame[off:]); ok {
			p.Flags |= FlagControl
			p.Ctl = t
		}
	}
	return OK
}

// gcType reads the type of the GC header (package wire) at the start of b,
// if b starts with one: magic and version right, a non-zero type. Only
// those four bytes decide, so Ethernet padding after a short frame cannot
// change the classification; the message itself (its length included) is
// validated by the mechanism that handles it.
func gcType(b []byte) (uint8, bool) {
	if len(b) < 4 || b[0] != wire.Magic>>8 || b[1] != wire.Magic&0xff || b[2] != wire.Version || b[3] == 0 {
		return 0, false
	}
	return b[3], true
}

// udpControl says whether a UDP datagram (u: its header and as much of
// its payload as the packet holds) is a candidate control message of
// ours, and of which GC type. A GC header is looked for only where one is
// expected:
//
//   - On the BTS port (wire.BTSPort, destination), which only switches
//     send to: any GC header, and a first fragment whatever its payload
//     (its message may start in a later fragment, which carries no UDP
//     header; it counts as a BTS, type 16), so that a message to the
//     port is recognised the same whether it came whole or in fragments.
//   - On any other port: only an ExpressPass type (32-47), since credits,
//     requests and stops ride the flow's own ports. The types of SFC's
//     range (16-31) travel only on the BTS port, so anywhere else they are
//     data, as are the link-local types and those of no range.
//
// The control stage then keeps the flag only for what this switch runs or
// must police (dataplane's worker.control).
func udpControl(u []byte, first bool) (uint8, bool) {
	t, gc := gcType(u[8:])
	if binary.BigEndian.Uint16(u[2:]) == wire.BTSPort {
		switch {
		case gc:
			return t, true
		case first:
			return uint8(wire.TypeSFCBTS), true
		}
		return 0, false
	}
	return t, gc && t >= uint8(wire.TypeXPCredit) && wire.Type(t).Scope() == wire.ScopeRouted
}

func parseIPv4(frame []byte, off int, p *Packet) Err {
	if len(frame) < off+20 {
		return ErrIPv4
	}
	h := frame[off:]
	ihl := int(h[0]&0x0f) * 4
	tot := int(binary.BigEndian.Uint16(h[2:]))
	if h[0]>>4 != 4 || ihl < 20 || tot < ihl || off+tot > len(frame) {
		return ErrIPv4
	}
	p.L3Off = uint8(off)
	p.Flags |= FlagIPv4
	p.TOS = h[1]
	p.Proto = h[9]
	src := binary.BigEndian.Uint32(h[12:])
	dst := binary.BigEndian.Uint32(h[16:])
	a := uint64(src)<<32 | uint64(dst)
	frag := binary.BigEndian.Uint16(h[6:])
	if frag&0x1fff != 0 { // fragment offset != 0: no L4 header here
		p.Flags |= FlagFragment
		p.Hash = hash(a, uint64(p.Proto))
		return OK
	}
	return parseL4(frame[:off+tot], off+ihl, a, 0, frag&0x2000 != 0, p) // more fragments: a first fragment
}

func parseIPv6(frame []byte, off int, p *Packet) Err {
	if len(frame) < off+40 {
		return ErrIPv6
	}
	h := frame[off:]
	if h[0]>>4 != 6 || off+40+int(binary.BigEndian.Uint16(h[4:])) > len(frame) {
		return ErrIPv6
	}
	end := off + 40 + int(binary.BigEndian.Uint16(h[4:]))
	p.L3Off = uint8(off)
	p.Flags |= FlagIPv6
	p.TOS = uint8(binary.BigEndian.Uint16(h[0:]) >> 4)
	// Fold the 32 bytes of addresses into two words.
	a := binary.BigEndian.Uint64(h[8:]) ^ binary.BigEndian.Uint64(h[16:])<<1
	b := binary.BigEndian.Uint64(h[24:]) ^ binary.BigEndian.Uint64(h[32:])<<1
	nh := h[6]
	l4 := off + 40
	first := false
	// Walk the common extension headers so TCP/UDP are found behind them.
	for i := 0; i < 4; i++ {
		switch nh {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if end < l4+8 {
				return ErrIPv6
			}
			nh, l4 = frame[l4], l4+8+int(frame[l4+1])*8
			continue
		case 44: // fragment
			if end < l4+8 {
				return ErrIPv6
			}
			fo := binary.BigEndian.Uint16(frame[l4+2:])
			if fo&0xfff8 != 0 {
				p.Proto = frame[l4]
				p.Flags |= FlagFragment
				p.Hash = hash(a, b^uint64(p.Proto))
				return OK
			}
			first = first || fo&1 != 0 // M: more fragments follow this first one
			nh, l4 = frame[l4], l4+8
			continue
		}
		break
	}
	if l4 > end {
		return ErrIPv6
	}
	p.Proto = nh
	return parseL4(frame[:end], l4, a, b, first, p)
}

// parseL4 records the transport header at off (frame ends at the IP
// packet's end). first says the packet is the first fragment of a longer
// datagram: its transport header is here, the rest of its payload in
// fragments that carry none.
func parseL4(frame []byte, off int, a, b uint64, first bool, p *Packet) Err {
	var ports uint64
	switch p.Proto {
	case ProtoTCP:
		if len(frame) < off+20 || int(frame[off+12]>>4)*4 < 20 || off+int(frame[off+12]>>4)*4 > len(frame) {
			return ErrL4
		}
		ports = uint64(binary.BigEndian.Uint32(frame[off:]))
	case ProtoUDP:
		if len(frame) < off+8 {
			return ErrL4
		}
		ports = uint64(binary.BigEndian.Uint32(frame[off:]))
		if t, ok := udpControl(frame[off:], first); ok {
			p.Flags |= FlagControl
			p.Ctl = t
		}
	default:
		p.Hash = hash(a, b^uint64(p.Proto))
		return OK
	}
	if off > maxParseOffset {
		return ErrTooDeep
	}
	p.L4Off = uint8(off)
	p.Hash = hash(a, b^(ports<<8|uint64(p.Proto)))
	return OK
}

// hash mixes two words into a 32-bit flow hash (a multiply-xorshift in the
// style of wyhash's mixer: fast, no tables, well spread in the low bits).
func hash(a, b uint64) uint32 {
	const k0, k1 = 0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9
	h := (a ^ k0) * k1
	h ^= h >> 29
	h = (h ^ b) * k0
	h ^= h >> 32
	if h == 0 {
		h = 1 // 0 means "no flow"
	}
	return uint32(h)
}

// DstMAC and SrcMAC read the Ethernet addresses as 48-bit integers.
func DstMAC(frame []byte) uint64 { return mac48(frame[0:6]) }

// SrcMAC returns the source MAC of frame (at least 12 bytes) as a 48-bit integer.
func SrcMAC(frame []byte) uint64 { return mac48(frame[6:12]) }

func mac48(b []byte) uint64 {
	_ = b[5]
	return uint64(b[0])<<40 | uint64(b[1])<<32 | uint64(b[2])<<24 | uint64(b[3])<<16 | uint64(b[4])<<8 | uint64(b[5])
}
