// Package gsperf defines the gsperf header once: the 64-byte header at the
// start of the UDP payload of every datagram gsperf (the project's traffic
// generator) sends. Hosts write and read it through perf/proto, which is
// built on this package; the switch's stages (pFabric's ranks, BFC's
// upstream queue of a host, SFC's quote, capture filters and summaries)
// read it through Header, in place, without copying or allocating.
//
// # Layout
//
// All fields are big-endian; offsets are from the first byte of the UDP
// payload.
//
//	offset size field
//	0      2    magic "GS" (0x47 0x53)
//	2      1    version (1)
//	3      1    type: 1 data, 2 ack, 3 probe, 4 probe ack, 5 CNP (DCQCN's congestion notification)
//	4      2    flags: bit 0 FIN (the segment ends the flow), bit 1 RETX (a retransmission),
//	            bit 2 ECE (ack: the segment acknowledged arrived CE-marked)
//	6      2    header length in bytes (64; larger values leave room for options)
//	8      8    flow id
//	16     8    seq: byte offset of the payload in the flow (data), of the probe (probe);
//	            ack: offset of the segment acknowledged (selective ack)
//	24     8    ack: bytes received in order (ack, probe ack)
//	32     8    flow size in bytes
//	40     4    priority: the pFabric rank, lower is better (remaining bytes, saturating at 2^32-1)
//	44     4    window: the receiver's advertised window in bytes (ack), 0 otherwise
//	48     8    timestamp: sender's clock in ns (data, probe), echoed (ack, probe ack)
//	56     8    mechanism field, per mode (package wire: MechBFC, MechXP)
//	64     n    options, up to the header length: an INT option (int.go) or none
//
// The payload starts at the header length, not at 64: a later version may
// carry options (per-hop slots, for example) between byte 64 and the header
// length, and a reader that skips to the payload must use HdrLen (Payload
// does). The fixed fields keep their offsets whatever the header length.
//
// # Reading
//
// Header is a view over bytes: Header(b) costs nothing, and every accessor
// checks that the bytes it reads are there (a field beyond the end reads as
// 0), so a view over a truncated or hostile datagram never panics. How much
// a reader checks is its own choice, and the switch's readers differ on
// purpose:
//
//   - HasMagic: "GS" (pFabric's rank: any segment that says it is gsperf);
//   - Known: "GS" and version 1 (capture filters, SFC's quote of 16 bytes);
//   - Valid: everything perf/proto's Decode checks: the fixed 64 bytes,
//     magic, version, a known type and a header length from 64 to the
//     bytes present (hosts).
//
// InUDP finds the header in a frame from the L4 offset the parse stage
// recorded (pkt.Packet's Proto and L4Off).
//
// # Writing
//
// Init writes magic, version, type and header length; the Set methods
// write one field each. Writers hold a buffer of at least Len bytes; the
// setters panic on a shorter one, like any slice write out of range.
package gsperf

import "encoding/binary"

// Len is the header's length in version 1, and the least header length
// any version may carry: the fixed fields.
const Len = 64

// Magic and version.
const (
	Magic   = 0x4753 // "GS", the first two bytes
	Version = 1
)

// Offsets of the fields from the start of the header (the UDP payload).
const (
	OffMagic     = 0
	OffVersion   = 2
	OffType      = 3
	OffFlags     = 4
	OffHdrLen    = 6
	OffFlow      = 8
	OffSeq       = 16
	OffAck       = 24
	OffSize      = 32
	OffPriority  = 40
	OffWindow    = 44
	OffTimestamp = 48
	OffMech      = 56
)

// Types.
const (
	TypeData     = 1
	TypeAck      = 2
	TypeProbe    = 3
	TypeProbeAck = 4
	// TypeCNP is DCQCN's congestion notification packet: a receiver
	// that saw a CE-marked data segment of the flow tells the sender
	// (at most one per flow per interval). Seq, Ack and the rest are 0.
	TypeCNP = 5
)

// Flags.
const (
	FlagFIN  = 1 << 0 // the segment ends the flow
	FlagRetx = 1 << 1 // a retransmission
	// FlagECE, on an ack or probe ack, echoes that the datagram it answers
	// arrived with the ECN field CE (congestion experienced): DCTCP's
	// ECN-Echo, per segment, since a gsperf receiver acknowledges every
	// segment (Alizadeh et al., "Data Center TCP (DCTCP)", section 3.1,
	// with one ack per segment). Receivers set it for any flow; only
	// senders whose datagrams are ECN-capable can ever see it.
	FlagECE = 1 << 2
)

// UDPHeaderLen is the length of the UDP header in front of the gsperf
// header.
const UDPHeaderLen = 8

// protoUDP is the IP protocol number of UDP.
const protoUDP = 17

// Header is a view of a gsperf header: the bytes from the start of the UDP
// payload on (the payload after the header included, if the caller has
// it). It aliases the bytes it was made from; it never copies them.
type Header []byte

// InUDP returns the view of the UDP payload of frame, whose transport
// header starts at l4Off and whose IP protocol is proto (pkt.Packet's
// L4Off and Proto), or nil when the frame carries no UDP header: proto is
// not UDP, l4Off is 0 (no L4 header, as in a non-first fragment), or the
// UDP header does not fit the frame. It reads no byte of the frame.
func InUDP(frame []byte, proto, l4Off uint8) Header {
	o := int(l4Off) + UDPHeaderLen
	if proto != protoUDP || l4Off == 0 || o > len(frame) {
		return nil
	}
	return Header(frame[o:])
}

// TypeName is the name of a header type: data, ack, probe, probe-ack, or
// "" for any other value.
func TypeName(t uint8) string {
	switch t {
	case TypeData:
		return "data"
	case TypeAck:
		return "ack"
	case TypeProbe:
		return "probe"
	case TypeProbeAck:
		return "probe-ack"
	case TypeCNP:
		return "cnp"
	}
	return ""
}

// HasMagic reports whether h starts with the magic "GS".
func (h Header) HasMagic() bool { return len(h) >= 2 && h[0] == Magic>>8 && h[1] == Magic&0xff }

// Known reports whether h starts with the magic and a version this package
// knows (1). It looks at those 3 bytes only.
func (h Header) Known() bool { return len(h) > OffVersion && h.HasMagic() && h[OffVersion] == Version }

// Valid reports whether h holds a whole header that perf/proto's Decode
// accepts: at least Len bytes, the magic, version 1, a known type, and a
// header length of at least Len that ends within h.
func (h Header) Valid() bool {
	if len(h) < Len || !h.Known() {
		return false
	}
	if t := h[OffType]; t < TypeData || t > TypeCNP {
		return false
	}
	n := int(binary.BigEndian.Uint16(h[OffHdrLen:]))
	return n >= Len && n <= len(h)
}

// Payload returns what follows the header, from the header length on, or
// nil if h is not Valid.
func (h Header) Payload() []byte {
	if !h.Valid() {
		return nil
	}
	return h[h.HdrLen():]
}

// Options returns the bytes between the fixed fields and the header
// length (empty in version 1), or nil if h is not Valid.
func (h Header) Options() []byte {
	if !h.Valid() {
		return nil
	}
	return h[Len:h.HdrLen()]
}

// The accessors read one field each; a field that does not fit in h reads
// as 0. None checks the magic: the caller decides how much to believe.

// Version is the version byte.
func (h Header) Version() uint8 { return h.u8(OffVersion) }

// Type is the segment type (TypeData, ...).
func (h Header) Type() uint8 { return h.u8(OffType) }

// Flags are the flags (FlagFIN, FlagRetx, FlagECE).
func (h Header) Flags() uint16 { return h.u16(OffFlags) }

// HdrLen is the header length field: where the payload starts.
func (h Header) HdrLen() uint16 { return h.u16(OffHdrLen) }

// Flow is the flow id.
func (h Header) Flow() uint64 { return h.u64(OffFlow) }

// Seq is the byte offset of the payload (data, probe) or of the segment
// acknowledged (ack).
func (h Header) Seq() uint64 { return h.u64(OffSeq) }

// Ack is the number of bytes received in order (ack, probe ack).
func (h Header) Ack() uint64 { return h.u64(OffAck) }

// Size is the flow's size in bytes.
func (h Header) Size() uint64 { return h.u64(OffSize) }

// Priority is the pFabric rank: the flow's remaining bytes, lower first.
func (h Header) Priority() uint32 { return h.u32(OffPriority) }

// Window is the receiver's advertised window (ack), 0 otherwise.
func (h Header) Window() uint32 { return h.u32(OffWindow) }

// Timestamp is the sender's clock in ns (data, probe) or its echo (acks).
func (h Header) Timestamp() uint64 { return h.u64(OffTimestamp) }

// Mech is the mechanism field, read as one uint64 (package wire's MechBFC
// and MechXP say what it holds per mode).
func (h Header) Mech() uint64 { return h.u64(OffMech) }

func (h Header) u8(o int) uint8 {
	if len(h) <= o {
		return 0
	}
	return h[o]
}

func (h Header) u16(o int) uint16 {
	if len(h) < o+2 {
		return 0
	}
	return binary.BigEndian.Uint16(h[o:])
}

func (h Header) u32(o int) uint32 {
	if len(h) < o+4 {
		return 0
	}
	return binary.BigEndian.Uint32(h[o:])
}

func (h Header) u64(o int) uint64 {
	if len(h) < o+8 {
		return 0
	}
	return binary.BigEndian.Uint64(h[o:])
}

// Init writes the magic, version 1, type t and header length Len, and
// leaves the other fields as they are. h must hold Len bytes.
func (h Header) Init(t uint8) {
	_ = h[Len-1]
	h[0], h[1], h[OffVersion], h[OffType] = Magic>>8, Magic&0xff, Version, t
	binary.BigEndian.PutUint16(h[OffHdrLen:], Len)
}

// SetType writes the type.
func (h Header) SetType(t uint8) { h[OffType] = t }

// SetFlags writes the flags.
func (h Header) SetFlags(f uint16) { binary.BigEndian.PutUint16(h[OffFlags:], f) }

// SetHdrLen writes the header length (Init writes Len).
func (h Header) SetHdrLen(n uint16) { binary.BigEndian.PutUint16(h[OffHdrLen:], n) }

// SetFlow writes the flow id.
func (h Header) SetFlow(v uint64) { binary.BigEndian.PutUint64(h[OffFlow:], v) }

// SetSeq writes the seq field.
func (h Header) SetSeq(v uint64) { binary.BigEndian.PutUint64(h[OffSeq:], v) }

// SetAck writes the ack field.
func (h Header) SetAck(v uint64) { binary.BigEndian.PutUint64(h[OffAck:], v) }

// SetSize writes the flow size.
func (h Header) SetSize(v uint64) { binary.BigEndian.PutUint64(h[OffSize:], v) }

// SetPriority writes the priority.
func (h Header) SetPriority(v uint32) { binary.BigEndian.PutUint32(h[OffPriority:], v) }

// SetWindow writes the window.
func (h Header) SetWindow(v uint32) { binary.BigEndian.PutUint32(h[OffWindow:], v) }

// SetTimestamp writes the timestamp.
func (h Header) SetTimestamp(v uint64) { binary.BigEndian.PutUint64(h[OffTimestamp:], v) }

// SetMech writes the mechanism field.
func (h Header) SetMech(v uint64) { binary.BigEndian.PutUint64(h[OffMech:], v) }
