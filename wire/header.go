package wire

import "encoding/binary"

// Constants of the GC envelope and its Ethernet and IP carriers.
const (
	HeaderLen     = 8      // the GC header
	Magic         = 0x4743 // "GC", the first two bytes of every message
	Version       = 1      // the only version
	EtherType     = 0x88B6 // link-local messages (IEEE 802 local experimental 2)
	TagTPID       = 0x88B5 // the BFC upstream-queue tag (IEEE 802 local experimental 1)
	EtherTypeIPv4 = 0x0800
	EthHeaderLen  = 14
	MinFrameLen   = 60 // builders pad frames with zeros to this length (no FCS)
	ProtoTCP      = 6
	ProtoUDP      = 17
)

// LinkLocalDst is the destination of every link-local frame: the IEEE 802.1Q
// nearest-bridge group address, which bridges never forward.
var LinkLocalDst = [6]byte{0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E}

// Type is the GC header's message type.
type Type uint8

// The known message types. 4-14 are reserved for link-local messages (15,
// TypePFC, names PFC frames, which are not GC messages: pfc.go), 17-31
// for SFC, 35-47 for ExpressPass, 48-255 for later mechanisms; 0 is never
// used.
const (
	TypeBFCPause  Type = 1  // BFC: pause one queue (link-local)
	TypeBFCResume Type = 2  // BFC: resume one queue (link-local)
	TypeBFCBitmap Type = 3  // BFC: the full paused set (link-local)
	TypeSFCBTS    Type = 16 // SFC Back-to-Sender (routed, UDP port BTSPort)
	TypeXPCredit  Type = 32 // ExpressPass credit (routed, receiver to sender)
	TypeXPRequest Type = 33 // ExpressPass credit request (routed, sender to receiver)
	TypeXPStop    Type = 34 // ExpressPass credit stop (routed, sender to receiver)
)

// Scope says where a message may travel.
type Scope uint8

// Scopes.
const (
	ScopeNone      Scope = iota // type 0 and 48-255: not assigned yet
	ScopeLinkLocal              // types 1-15: one link, never forwarded
	ScopeRouted                 // types 16-47: IPv4/UDP, forwarded like data
)

func (s Scope) String() string {
	switch s {
	case ScopeLinkLocal:
		return "link-local"
	case ScopeRouted:
		return "routed"
	}
	return "none"
}

// Scope returns the type's scope. Reserved types take the scope of their
// range (4-15 link-local, 17-47 routed), so a receiver knows never to
// forward a link-local message it does not understand.
func (t Type) Scope() Scope {
	switch {
	case t >= 1 && t <= 15:
		return ScopeLinkLocal
	case t >= 16 && t <= 47:
		return ScopeRouted
	}
	return ScopeNone
}

// FromHost reports whether a host may send the type: a switch drops any
// other GC message arriving on a host-facing port as forged. Only the
// ExpressPass messages (credits come from data receivers; requests and stops
// from data senders) are true; reserved types are false.
func (t Type) FromHost() bool {
	return t == TypeXPCredit || t == TypeXPRequest || t == TypeXPStop
}

// Known reports whether t is one of the types above.
func (t Type) Known() bool { return t.MinBody() > 0 }

// MinBody returns the smallest body length (the GC length field) a message
// of type t may have; 0 if t is not known. A BITMAP needs its bitmap on top,
// and a BTS its quote beyond the 20 bytes of an IPv4 header counted here.
func (t Type) MinBody() int {
	switch t {
	case TypeBFCPause, TypeBFCResume, TypeBFCBitmap:
		return BFCBodyLen
	case TypeSFCBTS:
		return BTSBodyLen + 20
	case TypeXPCredit:
		return CreditBodyLen
	case TypeXPRequest:
		return XPRequestBodyLen
	case TypeXPStop:
		return XPStopBodyLen
	}
	return 0
}

// Name returns the type's name as the design tables spell it (BFC_PAUSE,
// SFC_BTS, ...), or the range an unknown type falls in.
func (t Type) Name() string {
	switch t {
	case TypeBFCPause:
		return "BFC_PAUSE"
	case TypeBFCResume:
		return "BFC_RESUME"
	case TypeBFCBitmap:
		return "BFC_BITMAP"
	case TypeSFCBTS:
		return "SFC_BTS"
	case TypeXPCredit:
		return "XP_CREDIT"
	case TypeXPRequest:
		return "XP_REQUEST"
	case TypeXPStop:
		return "XP_STOP"
	case TypePFC:
		return "PFC"
	}
	switch {
	case t >= 4 && t <= 15:
		return "reserved_link_local"
	case t >= 17 && t <= 31:
		return "reserved_sfc"
	case t >= 35 && t <= 47:
		return "reserved_xp"
	}
	return "unassigned"
}

func (t Type) String() string { return t.Name() }

// Header is the GC header: 8 bytes at the start of every message.
//
//	off size field
//	0   2    magic "GC"
//	2   1    version (1)
//	3   1    type
//	4   2    length: bytes of body after the header
//	6   2    flags (per type)
type Header struct {
	Type   Type
	Length uint16 // body bytes after the 8-byte header
	Flags  uint16
}

// PutHeader writes h at the start of b and returns HeaderLen. b must have
// room for the header and the h.Length bytes of body the caller writes after
// it (ErrBuffer); h.Type must be known (ErrType) and h.Length at least its
// MinBody (ErrLength), so a header PutHeader writes is one ParseHeader
// accepts once the body is there.
func PutHeader(b []byte, h Header) (int, error) {
	if !h.Type.Known() {
		return 0, ErrType
	}
	if int(h.Length) < h.Type.MinBody() {
		return 0, ErrLength
	}
	if len(b) < HeaderLen+int(h.Length) {
		return 0, ErrBuffer
	}
	putHeader(b, h)
	return HeaderLen, nil
}

func putHeader(b []byte, h Header) {
	_ = b[HeaderLen-1]
	b[0], b[1], b[2], b[3] = 'G', 'C', Version, byte(h.Type)
	binary.BigEndian.PutUint16(b[4:], h.Length)
	binary.BigEndian.PutUint16(b[6:], h.Flags)
}

// ParseHeader reads and validates the GC header at the start of msg: magic,
// version, a known type, a length of at least the type's MinBody, and
// HeaderLen+Length within msg. The body is msg[HeaderLen:HeaderLen+Length];
// bytes after it are padding. On ErrType, ErrLength and ErrTruncated the
// returned Header holds the fields as read (so a caller can still look at
// h.Type.Scope()); on earlier errors it is zero.
func ParseHeader(msg []byte) (Header, error) {
	if len(msg) < HeaderLen {
		return Header{}, ErrShort
	}
	if msg[0] != 'G' || msg[1] != 'C' {
		return Header{}, ErrMagic
	}
	if msg[2] != Version {
		return Header{}, ErrVersion
	}
	h := Header{
		Type:   Type(msg[3]),
		Length: binary.BigEndian.Uint16(msg[4:]),
		Flags:  binary.BigEndian.Uint16(msg[6:]),
	}
	if !h.Type.Known() {
		return h, ErrType
	}
	if int(h.Length) < h.Type.MinBody() {
		return h, ErrLength
	}
	if HeaderLen+int(h.Length) > len(msg) {
		return h, ErrTruncated
	}
	return h, nil
}

// body returns the message body of a header ParseHeader accepted.
func body(msg []byte, h Header) []byte {
	n := HeaderLen + int(h.Length)
	return msg[HeaderLen:n:n]
}

// SeqAfter reports whether sequence number a is newer than b in serial-number
// arithmetic (RFC 1982): int32(a-b) > 0. Sequence numbers wrap; when a and b
// are exactly 2^31 apart neither is after the other.
func SeqAfter(a, b uint32) bool { return int32(a-b) > 0 }

// SeqDiff returns how far a is ahead of b (negative: behind), modulo 2^32.
func SeqDiff(a, b uint32) int32 { return int32(a - b) }
