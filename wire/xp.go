package wire

import "encoding/binary"

// ExpressPass constants.
const (
	CreditBodyLen     = 8
	XPRequestBodyLen  = 16
	XPStopBodyLen     = 8
	DefaultCreditDSCP = 10
	CreditFrameLen    = MinFrameLen // 58 bytes of headers and message, padded
)

// Credit is an ExpressPass credit, sent by a data receiver to the data
// sender in IPv4/UDP (the flow's ports reversed, DSCP = the credit class).
//
//	body off size field
//	0        4    credit_seq: +1 per credit of the flow
//	4        4    sent_time: the receiver's clock in microseconds (wraps) when sent
//
// Data segments echo both in the gsperf header's mechanism field (MechXP).
type Credit struct {
	Flags    uint16 // reserved: send 0; receivers ignore them
	Seq      uint32
	SentTime uint32 // microseconds
}

// XPRequest asks the data receiver for credits (sender to receiver, the
// flow's ports, DSCP 0).
//
//	body off size field
//	0        8    flow id
//	8        8    flow size in bytes
type XPRequest struct {
	Flags  uint16 // reserved: send 0; receivers ignore them
	FlowID uint64
	Size   uint64
}

// XPStop tells the data receiver to stop sending credits (sender to
// receiver, the flow's ports, DSCP 0).
//
//	body off size field
//	0        8    flow id
type XPStop struct {
	Flags  uint16 // reserved: send 0; receivers ignore them
	FlowID uint64
}

// PutCredit writes c as a GC message at the start of b and returns its
// length, 16 (ErrBuffer if b is shorter).
func PutCredit(b []byte, c Credit) (int, error) {
	const n = HeaderLen + CreditBodyLen
	if len(b) < n {
		return 0, ErrBuffer
	}
	putHeader(b, Header{Type: TypeXPCredit, Length: CreditBodyLen, Flags: c.Flags})
	binary.BigEndian.PutUint32(b[HeaderLen:], c.Seq)
	binary.BigEndian.PutUint32(b[HeaderLen+4:], c.SentTime)
	return n, nil
}

// ParseCredit reads an XP_CREDIT message (GC header and body) from msg: the
// checks of ParseHeader, ErrWrongType for other types. Body bytes beyond the
// 8 of a credit are ignored.
func ParseCredit(msg []byte) (Credit, error) {
	h, err := ParseHeader(msg)
	if err != nil {
		return Credit{}, err
	}
	if h.Type != TypeXPCredit {
		return Credit{}, ErrWrongType
	}
	p := body(msg, h)
	return Credit{Flags: h.Flags, Seq: binary.BigEndian.Uint32(p), SentTime: binary.BigEndian.Uint32(p[4:])}, nil
}

// PutXPRequest writes r as a GC message at the start of b and returns its
// length, 24.
func PutXPRequest(b []byte, r XPRequest) (int, error) {
	const n = HeaderLen + XPRequestBodyLen
	if len(b) < n {
		return 0, ErrBuffer
	}
	putHeader(b, Header{Type: TypeXPRequest, Length: XPRequestBodyLen, Flags: r.Flags})
	binary.BigEndian.PutUint64(b[HeaderLen:], r.FlowID)
	binary.BigEndian.PutUint64(b[HeaderLen+8:], r.Size)
	return n, nil
}

// ParseXPRequest reads an XP_REQUEST message from msg (as ParseCredit).
func ParseXPRequest(msg []byte) (XPRequest, error) {
	h, err := ParseHeader(msg)
	if err != nil {
		return XPRequest{}, err
	}
	if h.Type != TypeXPRequest {
		return XPRequest{}, ErrWrongType
	}
	p := body(msg, h)
	return XPRequest{Flags: h.Flags, FlowID: binary.BigEndian.Uint64(p), Size: binary.BigEndian.Uint64(p[8:])}, nil
}

// PutXPStop writes s as a GC message at the start of b and returns its
// length, 16.
func PutXPStop(b []byte, s XPStop) (int, error) {
	const n = HeaderLen + XPStopBodyLen
	if len(b) < n {
		return 0, ErrBuffer
	}
	putHeader(b, Header{Type: TypeXPStop, Length: XPStopBodyLen, Flags: s.Flags})
	binary.BigEndian.PutUint64(b[HeaderLen:], s.FlowID)
	return n, nil
}

// ParseXPStop reads an XP_STOP message from msg (as ParseCredit).
func ParseXPStop(msg []byte) (XPStop, error) {
	h, err := ParseHeader(msg)
	if err != nil {
		return XPStop{}, err
	}
	if h.Type != TypeXPStop {
		return XPStop{}, ErrWrongType
	}
	return XPStop{Flags: h.Flags, FlowID: binary.BigEndian.Uint64(body(msg, h))}, nil
}

// BuildCredit writes into b a complete credit frame for the data flow flow
// (Src = the data sender, as in its data segments; Proto is ignored): from
// flow.Dst to flow.Src, UDP port flow.DstPort -> flow.SrcPort (checksum 0),
// with the given DSCP (the credit class, DefaultCreditDSCP unless
// configured), ECN 0, ID 0, DF, TTL 64; padded to MinFrameLen. It returns
// CreditFrameLen.
func BuildCredit(b []byte, macs MACs, dscp uint8, flow FiveTuple, c Credit) (int, error) {
	const msgLen = HeaderLen + CreditBodyLen
	n, err := routedLen(b, dscp, msgLen)
	if err != nil {
		return 0, err
	}
	PutCredit(b[UDPFrameLen:], c)
	f := IPv4UDP{
		DstMAC: macs.Dst, SrcMAC: macs.Src, TOS: dscp << 2, DF: true, TTL: DefaultTTL,
		Src: flow.Dst, Dst: flow.Src, SrcPort: flow.DstPort, DstPort: flow.SrcPort,
	}
	finishRouted(b, &f, msgLen, n)
	return n, nil
}

// dataDirection is the framing of XP_REQUEST and XP_STOP: the flow's own
// addresses and ports, DSCP 0.
func dataDirection(macs MACs, flow FiveTuple) IPv4UDP {
	return IPv4UDP{
		DstMAC: macs.Dst, SrcMAC: macs.Src, DF: true, TTL: DefaultTTL,
		Src: flow.Src, Dst: flow.Dst, SrcPort: flow.SrcPort, DstPort: flow.DstPort,
	}
}

// BuildXPRequest writes into b a complete XP_REQUEST frame in the data
// direction of flow (Src = the data sender; Proto ignored): the flow's
// addresses and ports, DSCP 0, ECN 0, ID 0, DF, TTL 64, UDP checksum 0. It
// returns the frame's length, 66.
func BuildXPRequest(b []byte, macs MACs, flow FiveTuple, r XPRequest) (int, error) {
	const msgLen = HeaderLen + XPRequestBodyLen
	n, err := routedLen(b, 0, msgLen)
	if err != nil {
		return 0, err
	}
	PutXPRequest(b[UDPFrameLen:], r)
	f := dataDirection(macs, flow)
	finishRouted(b, &f, msgLen, n)
	return n, nil
}

// BuildXPStop writes into b a complete XP_STOP frame, framed as
// BuildXPRequest. It returns the frame's length, 60 (58 padded).
func BuildXPStop(b []byte, macs MACs, flow FiveTuple, s XPStop) (int, error) {
	const msgLen = HeaderLen + XPStopBodyLen
	n, err := routedLen(b, 0, msgLen)
	if err != nil {
		return 0, err
	}
	PutXPStop(b[UDPFrameLen:], s)
	f := dataDirection(macs, flow)
	finishRouted(b, &f, msgLen, n)
	return n, nil
}
