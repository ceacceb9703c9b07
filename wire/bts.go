package wire

import (
	"encoding/binary"

	"github.com/gswitch/gswitch/wire/gsperf"
)

// SFC Back-to-Sender constants.
const (
	BTSPort        = 19020                                              // UDP source and destination port of every BTS
	DefaultBTSDSCP = 48                                                 // CS6
	BTSBodyLen     = 16                                                 // the fixed part of the body, before the quote
	MaxQuoteLen    = 96                                                 // 60 (IPv4 header with options) + 20 (TCP) + 16
	MaxBTSFrameLen = UDPFrameLen + HeaderLen + BTSBodyLen + MaxQuoteLen // 162
)

const quotePayload = gsperf.OffSeq // bytes quoted after the L4 header: 16, a gsperf header up to its flow id

// BTS flags (GC header flags of an SFC_BTS).
const (
	BTSCacheable     = 1 << 0 // the congested queue is on a host-facing port
	BTSFromCache     = 1 << 1 // built by a near-source cache, not by the congested switch
	BTSFromEstimator = 1 << 2 // built from an estimate
)

// BTS is an SFC Back-to-Sender message. It travels in IPv4/UDP (port
// BTSPort both ways) from the congested switch to the original sender.
//
//	body off size field
//	0        4    pause: microseconds the sender must pause the quoted flow
//	4        2    switch id of the congested switch
//	6        2    egress port index of the congested queue
//	8        2    egress queue
//	10       2    reserved (0)
//	12       4    queue depth in bytes when the BTS was built (saturating)
//	16       n    quote: the original packet from its IPv4 header on
//
// The quote is the original IPv4 header (IHL*4 bytes), then its L4 header
// (UDP: 8 bytes, TCP: 20 bytes; none for other protocols and for non-first
// fragments), then up to 16 more bytes (for gsperf: the start of its header,
// up to and including the flow id; behind a TCP header with options, the
// start of the options), as far as the original packet (its IPv4
// total length) and frame went. It runs to the end of the body: n = GC
// length - 16. ParseBTS refuses a quote shorter than the IPv4 header it
// starts with, with a version other than 4, an IHL below 5, a total length
// below the IHL or below the quote's length, or longer than the rule above
// (ErrQuote).
//
// A BTS value is plain data; a parsed Quote aliases the parsed bytes.
type BTS struct {
	Flags    uint16 // BTSCacheable, BTSFromCache, BTSFromEstimator; other bits reserved
	Pause    uint32 // microseconds
	Switch   uint16
	Port     uint16
	Queue    uint16
	Reserved uint16 // body bytes 10-11: send 0; receivers ignore them
	Depth    uint32 // bytes
	Quote    []byte // PutBTS: written as given (validated); BuildBTS: taken from the original frame

	// What ParseBTS decoded from the quote (the builders ignore these).
	Flow      FiveTuple // addresses and protocol; ports if HasPorts
	HasPorts  bool      // the quote holds the first 4 bytes of a TCP or UDP header
	FlowID    uint64    // the gsperf flow id, if HasFlowID
	HasFlowID bool      // a UDP quote with 16 payload bytes starting "GS", version 1
}

// quoteRule returns the IHL in bytes and the most bytes a quote of the
// IPv4 header ip may hold, or ErrQuote. ip holds at least IPv4HeaderLen
// bytes.
func quoteRule(ip []byte) (ihl, most int, err error) {
	ihl = int(ip[0]&0x0f) * 4
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ihl < IPv4HeaderLen || tot < ihl {
		return 0, 0, ErrQuote
	}
	l4 := 0
	if binary.BigEndian.Uint16(ip[6:])&0x1fff == 0 { // first (or only) fragment: L4 header here
		switch ip[9] {
		case ProtoUDP:
			l4 = UDPHeaderLen
		case ProtoTCP:
			l4 = 20
		}
	}
	return ihl, min(ihl+l4+quotePayload, tot), nil
}

// parseQuote validates q and fills the decoded fields of m.
func parseQuote(q []byte, m *BTS) error {
	if len(q) < IPv4HeaderLen {
		return ErrQuote
	}
	ihl, most, err := quoteRule(q)
	if err != nil {
		return err
	}
	if len(q) < ihl || len(q) > most {
		return ErrQuote
	}
	m.Flow = FiveTuple{Src: [4]byte(q[12:16]), Dst: [4]byte(q[16:20]), Proto: q[9]}
	m.HasPorts, m.HasFlowID, m.FlowID = false, false, 0
	frag := binary.BigEndian.Uint16(q[6:]) & 0x1fff
	if frag != 0 || (m.Flow.Proto != ProtoUDP && m.Flow.Proto != ProtoTCP) {
		return nil
	}
	if len(q) >= ihl+4 {
		m.HasPorts = true
		m.Flow.SrcPort = binary.BigEndian.Uint16(q[ihl:])
		m.Flow.DstPort = binary.BigEndian.Uint16(q[ihl+2:])
	}
	if p := ihl + UDPHeaderLen; m.Flow.Proto == ProtoUDP && len(q) >= p+quotePayload {
		if h := gsperf.Header(q[p:]); h.Known() { // the quote holds the header up to the flow id
			m.HasFlowID = true
			m.FlowID = h.Flow()
		}
	}
	return nil
}

// PutBTS writes m (with m.Quote, validated as ParseBTS does) as a GC message
// at the start of b and returns its length, HeaderLen+BTSBodyLen+len(Quote).
// Hosts and tests use it; a switch builds the whole frame with BuildBTS.
func PutBTS(b []byte, m BTS) (int, error) {
	if err := parseQuote(m.Quote, &m); err != nil {
		return 0, err
	}
	n := HeaderLen + BTSBodyLen + len(m.Quote)
	if len(b) < n {
		return 0, ErrBuffer
	}
	putBTS(b, &m, m.Quote)
	return n, nil
}

func putBTS(b []byte, m *BTS, quote []byte) {
	putHeader(b, Header{Type: TypeSFCBTS, Length: uint16(BTSBodyLen + len(quote)), Flags: m.Flags})
	p := b[HeaderLen : HeaderLen+BTSBodyLen]
	binary.BigEndian.PutUint32(p[0:], m.Pause)
	binary.BigEndian.PutUint16(p[4:], m.Switch)
	binary.BigEndian.PutUint16(p[6:], m.Port)
	binary.BigEndian.PutUint16(p[8:], m.Queue)
	binary.BigEndian.PutUint16(p[10:], m.Reserved)
	binary.BigEndian.PutUint32(p[12:], m.Depth)
	copy(b[HeaderLen+BTSBodyLen:], quote)
}

// ParseBTS reads an SFC_BTS message (GC header and body) from msg, a UDP
// payload: the header checks of ParseHeader, ErrWrongType for other types,
// then the quote rules above. It fills Flow (the quoted packet's 5-tuple, in
// its own direction: Src is the original sender, the BTS's receiver) and,
// when quoted, the gsperf flow id.
func ParseBTS(msg []byte) (BTS, error) {
	h, err := ParseHeader(msg)
	if err != nil {
		return BTS{}, err
	}
	if h.Type != TypeSFCBTS {
		return BTS{}, ErrWrongType
	}
	p := body(msg, h)
	m := BTS{
		Flags:    h.Flags,
		Pause:    binary.BigEndian.Uint32(p[0:]),
		Switch:   binary.BigEndian.Uint16(p[4:]),
		Port:     binary.BigEndian.Uint16(p[6:]),
		Queue:    binary.BigEndian.Uint16(p[8:]),
		Reserved: binary.BigEndian.Uint16(p[10:]),
		Depth:    binary.BigEndian.Uint32(p[12:]),
		Quote:    p[BTSBodyLen:],
	}
	if err := parseQuote(m.Quote, &m); err != nil {
		return BTS{}, err
	}
	return m, nil
}

// BuildBTS writes into b a complete BTS frame about the original frame orig,
// whose IPv4 header starts at l3off and whose TCP/UDP header, if the caller's
// parser found one, at l4off (0: none; otherwise it must be l3off + IHL*4,
// ErrOffset). The frame goes to macs.Dst (the next hop toward the original
// sender) from macs.Src (the emitting port), from the original destination
// IP to the original source IP, with the given DSCP (DefaultBTSDSCP unless
// configured), ECN 0, ID 0, DF, TTL 64, UDP BTSPort -> BTSPort with checksum
// 0, the fields of m and the quote taken from orig (m.Quote and the decoded
// fields are ignored); padded to MinFrameLen. It returns the frame's length
// (at most MaxBTSFrameLen). orig must hold a full IPv4 header at l3off
// (ErrOffset if l3off is outside orig, ErrQuote otherwise). b must not overlap
// orig.
func BuildBTS(b []byte, macs MACs, dscp uint8, orig []byte, l3off, l4off int, m BTS) (int, error) {
	if l3off < 0 || l3off > len(orig) {
		return 0, ErrOffset
	}
	ip := orig[l3off:]
	if len(ip) < IPv4HeaderLen {
		return 0, ErrQuote
	}
	ihl, most, err := quoteRule(ip)
	if err != nil {
		return 0, err
	}
	if len(ip) < ihl {
		return 0, ErrQuote
	}
	if l4off != 0 && l4off != l3off+ihl {
		return 0, ErrOffset
	}
	quote := ip[:min(len(ip), most)]
	msgLen := HeaderLen + BTSBodyLen + len(quote)
	n, err := routedLen(b, dscp, msgLen)
	if err != nil {
		return 0, err
	}
	putBTS(b[UDPFrameLen:], &m, quote)
	f := IPv4UDP{
		DstMAC: macs.Dst, SrcMAC: macs.Src,
		TOS: dscp << 2, DF: true, TTL: DefaultTTL,
		Src: [4]byte(ip[16:20]), Dst: [4]byte(ip[12:16]),
		SrcPort: BTSPort, DstPort: BTSPort,
	}
	finishRouted(b, &f, msgLen, n)
	return n, nil
}
