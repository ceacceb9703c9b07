package gsperf

import "encoding/binary"

// # The INT option
//
// In-band network telemetry for HPCC (Li et al., "HPCC: High Precision
// Congestion Control", SIGCOMM 2019, section 3.2): a sender that wants
// each switch's view of its path reserves slots in the options of its data
// segments; every switch whose egress port runs INT fills the next slot as
// the segment leaves; the receiver copies the option into the segment's
// ack; the sender reads the hops there. The switch only writes into bytes
// the sender reserved, so no frame grows inside the fabric.
//
// The option starts at byte 64 (Len), the header length covers it whole:
//
//	offset size field
//	64     1    kind: 1 (OptINT)
//	65     1    hops written so far (n)
//	66     1    slots reserved (max hops, 1 to MaxINTHops)
//	67     5    zero
//	72     24   hop 0, then hop 1 at 96, ... up to the slots reserved
//
// and each hop, in the order the segment crossed the switches:
//
//	offset size field
//	0      8    timestamp: the switch's clock when the segment left the port, ns
//	8      8    tx bytes: bytes the port had sent before this segment (wraps)
//	16     4    queue length: bytes waiting in the port's queues as the segment left (saturating)
//	20     4    rate: the port's rate in kbit/s (saturating)
//
// HPCC's own header packs a hop into 8 bytes (a rate index, 24 bits of
// time, 20 of bytes, 16 of queue); these slots are wider so that no value
// wraps within a round trip at any rate a port can have here. Values are
// the switch's own (its clock and its rates on this machine); HPCC uses
// them only in ratios (queue / (rate x base RTT), tx rate / rate), which a
// timescale leaves unchanged.
//
// A segment whose n equals its slots crossed more INT switches than it
// reserved for: the later switches leave it alone (they count it).

// OptINT is the kind byte of the INT option.
const OptINT = 1

// MaxINTHops is the most hops an INT option may reserve.
const MaxINTHops = 8

// INT option geometry.
const (
	INTHeadLen = 8  // kind, hops, slots, padding
	INTHopLen  = 24 // one hop's slot
)

// INTLen is the length of an INT option with slots hops: the header length
// of a segment that carries it is Len + INTLen(slots).
func INTLen(slots int) int { return INTHeadLen + INTHopLen*slots }

// INT is a view of an INT option: the bytes from its kind byte to the end
// of its last slot. The zero value (nil) is no option.
type INT []byte

// INTHop is one switch's record.
type INTHop struct {
	TS       uint64 // ns, the switch's clock
	TxBytes  uint64 // the port's bytes sent before the segment
	QLen     uint32 // bytes queued at the port
	RateKbps uint32 // the port's rate, kbit/s
}

// INT returns h's INT option, or nil if h carries none: h must be Known,
// its header length must cover the option's slots and lie within h, and
// the option's kind, hop count and slots must be consistent (hops at most
// slots, slots from 1 to MaxINTHops). A hostile header yields nil, never
// a view past h.
func (h Header) INT() INT {
	if !h.Known() || len(h) < Len+INTHeadLen {
		return nil
	}
	n := int(binary.BigEndian.Uint16(h[OffHdrLen:]))
	if n > len(h) || n < Len+INTHeadLen || h[Len] != OptINT {
		return nil
	}
	slots := int(h[Len+2])
	if slots < 1 || slots > MaxINTHops || int(h[Len+1]) > slots || Len+INTLen(slots) > n {
		return nil
	}
	return INT(h[Len : Len+INTLen(slots)])
}

// InitINT writes an empty INT option with slots hops (clamped to 1 to
// MaxINTHops) into b, which must hold INTLen(slots) bytes, and returns its
// length. The caller sets the header length to Len plus it.
func InitINT(b []byte, slots int) int {
	slots = max(1, min(slots, MaxINTHops))
	n := INTLen(slots)
	clear(b[:n])
	b[0], b[2] = OptINT, byte(slots)
	return n
}

// Hops is the number of hops written.
func (o INT) Hops() int {
	if len(o) < INTHeadLen {
		return 0
	}
	return int(o[1])
}

// Slots is the number of hops reserved.
func (o INT) Slots() int {
	if len(o) < INTHeadLen {
		return 0
	}
	return int(o[2])
}

// Hop returns hop i (0 <= i < Hops); a hop out of range reads as zero.
func (o INT) Hop(i int) INTHop {
	at := INTHeadLen + INTHopLen*i
	if i < 0 || i >= o.Hops() || at+INTHopLen > len(o) {
		return INTHop{}
	}
	s := o[at : at+INTHopLen]
	return INTHop{
		TS:       binary.BigEndian.Uint64(s[0:]),
		TxBytes:  binary.BigEndian.Uint64(s[8:]),
		QLen:     binary.BigEndian.Uint32(s[16:]),
		RateKbps: binary.BigEndian.Uint32(s[20:]),
	}
}

// Push writes the next hop and reports whether there was a slot for it.
// qlen (bytes) and rate (bit/s) saturate at what their fields hold.
func (o INT) Push(ts, txBytes, qlen, rateBits uint64) bool {
	n := o.Hops()
	at := INTHeadLen + INTHopLen*n
	if n >= o.Slots() || at+INTHopLen > len(o) {
		return false
	}
	s := o[at : at+INTHopLen]
	binary.BigEndian.PutUint64(s[0:], ts)
	binary.BigEndian.PutUint64(s[8:], txBytes)
	binary.BigEndian.PutUint32(s[16:], uint32(min(qlen, 1<<32-1)))
	binary.BigEndian.PutUint32(s[20:], uint32(min(rateBits/1000, 1<<32-1)))
	o[1] = byte(n + 1)
	return true
}
