package wire

import "encoding/binary"

// BFC sizes.
const (
	BFCBodyLen     = 12                                                   // the fixed body of PAUSE, RESUME and BITMAP
	MaxQueues      = 4096                                                 // queue numbers are 12 bits
	MaxBitmapLen   = MaxQueues / 8                                        // bytes of a BITMAP for MaxQueues queues
	MaxBFCFrameLen = EthHeaderLen + HeaderLen + BFCBodyLen + MaxBitmapLen // 546
)

// BFC is a BFC link-local message: PAUSE or RESUME of one queue, or the
// BITMAP of every paused queue the sender controls. It travels in an
// Ethernet frame to LinkLocalDst with EtherType 0x88B6.
//
//	body off size field
//	0        4    seq: +1 per frame the sender sends on the port (compare with SeqAfter)
//	4        2    sender switch id
//	6        2    sender port index
//	8        2    queue: PAUSE/RESUME: the receiver's egress queue (< MaxQueues); BITMAP: 0
//	10       2    nqueues: BITMAP: bits that follow (1..MaxQueues); PAUSE/RESUME: 0
//	12       n    BITMAP: ceil(nqueues/8) bytes, bit q = byte[q/8]>>(q%8)&1, 1 = paused
//
// The bits of the last bitmap byte at and beyond nqueues must be zero.
// A BFC value is plain data; any goroutine may use its own copy. A parsed
// Bitmap aliases the parsed bytes.
type BFC struct {
	Type    Type   // TypeBFCPause, TypeBFCResume or TypeBFCBitmap
	Flags   uint16 // GC flags: reserved, send 0; receivers ignore them
	Seq     uint32
	Switch  uint16 // sender switch id
	Port    uint16 // sender port index
	Queue   uint16 // PAUSE/RESUME: the queue; BITMAP: 0
	NQueues uint16 // BITMAP: number of queue bits; PAUSE/RESUME: 0
	Bitmap  []byte // BITMAP: at least BitmapLen(NQueues) bytes (only those are sent); otherwise ignored
}

// BodyLen returns the GC length of m: BFCBodyLen, plus the bitmap for a
// BITMAP.
func (m *BFC) BodyLen() int {
	if m.Type == TypeBFCBitmap {
		return BFCBodyLen + BitmapLen(int(m.NQueues))
	}
	return BFCBodyLen
}

// check validates m for a builder: the same rules the parser applies.
func (m *BFC) check() error {
	switch m.Type {
	case TypeBFCPause, TypeBFCResume:
		if m.Queue >= MaxQueues {
			return ErrQueue
		}
		if m.NQueues != 0 {
			return ErrNQueues
		}
	case TypeBFCBitmap:
		if m.Queue != 0 {
			return ErrQueue
		}
		if m.NQueues == 0 || m.NQueues > MaxQueues {
			return ErrNQueues
		}
		n := BitmapLen(int(m.NQueues))
		if len(m.Bitmap) < n {
			return ErrLength
		}
		if !tailClear(m.Bitmap[:n], int(m.NQueues)) {
			return ErrBitmap
		}
	default:
		if m.Type.Known() {
			return ErrWrongType
		}
		return ErrType
	}
	return nil
}

// PutBFC writes m as a GC message (header and body) at the start of b and
// returns its length, HeaderLen+m.BodyLen(). It refuses (and writes nothing)
// what ParseBFC would refuse.
func PutBFC(b []byte, m BFC) (int, error) {
	if err := m.check(); err != nil {
		return 0, err
	}
	n := HeaderLen + m.BodyLen()
	if len(b) < n {
		return 0, ErrBuffer
	}
	putBFC(b, &m)
	return n, nil
}

func putBFC(b []byte, m *BFC) {
	putHeader(b, Header{Type: m.Type, Length: uint16(m.BodyLen()), Flags: m.Flags})
	p := b[HeaderLen : HeaderLen+BFCBodyLen]
	binary.BigEndian.PutUint32(p[0:], m.Seq)
	binary.BigEndian.PutUint16(p[4:], m.Switch)
	binary.BigEndian.PutUint16(p[6:], m.Port)
	binary.BigEndian.PutUint16(p[8:], m.Queue)
	binary.BigEndian.PutUint16(p[10:], m.NQueues)
	if m.Type == TypeBFCBitmap {
		copy(b[HeaderLen+BFCBodyLen:], m.Bitmap[:BitmapLen(int(m.NQueues))])
	}
}

// ParseBFC reads a BFC message (GC header and body) from msg. Besides the
// header checks of ParseHeader it refuses other types (ErrWrongType), a
// PAUSE/RESUME with queue >= MaxQueues (ErrQueue) or nqueues != 0
// (ErrNQueues), a BITMAP with queue != 0 (ErrQueue), nqueues 0 or above
// MaxQueues (ErrNQueues), a GC length too short for its bitmap (ErrLength)
// or bits set beyond nqueues (ErrBitmap). Body bytes beyond the message's
// own fields (a longer GC length) are ignored.
func ParseBFC(msg []byte) (BFC, error) {
	h, err := ParseHeader(msg)
	if err != nil {
		return BFC{}, err
	}
	if h.Type != TypeBFCPause && h.Type != TypeBFCResume && h.Type != TypeBFCBitmap {
		return BFC{}, ErrWrongType
	}
	p := body(msg, h)
	m := BFC{
		Type:    h.Type,
		Flags:   h.Flags,
		Seq:     binary.BigEndian.Uint32(p[0:]),
		Switch:  binary.BigEndian.Uint16(p[4:]),
		Port:    binary.BigEndian.Uint16(p[6:]),
		Queue:   binary.BigEndian.Uint16(p[8:]),
		NQueues: binary.BigEndian.Uint16(p[10:]),
	}
	if m.Type == TypeBFCBitmap {
		if m.Queue != 0 {
			return BFC{}, ErrQueue
		}
		if m.NQueues == 0 || m.NQueues > MaxQueues {
			return BFC{}, ErrNQueues
		}
		end := BFCBodyLen + BitmapLen(int(m.NQueues))
		if len(p) < end {
			return BFC{}, ErrLength
		}
		m.Bitmap = p[BFCBodyLen:end:end]
		if !tailClear(m.Bitmap, int(m.NQueues)) {
			return BFC{}, ErrBitmap
		}
		return m, nil
	}
	if m.Queue >= MaxQueues {
		return BFC{}, ErrQueue
	}
	if m.NQueues != 0 {
		return BFC{}, ErrNQueues
	}
	return m, nil
}

// BuildBFC writes a complete link-local frame carrying m into b: destination
// LinkLocalDst, source src (the sending port's MAC), EtherType 0x88B6, the
// message, zeros up to MinFrameLen. It returns the frame's length (60 for
// PAUSE and RESUME, at most MaxBFCFrameLen).
func BuildBFC(b []byte, src [6]byte, m BFC) (int, error) {
	if err := m.check(); err != nil {
		return 0, err
	}
	end := EthHeaderLen + HeaderLen + m.BodyLen()
	n := max(end, MinFrameLen)
	if len(b) < n {
		return 0, ErrBuffer
	}
	copy(b[0:6], LinkLocalDst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], EtherType)
	putBFC(b[EthHeaderLen:], &m)
	clear(b[end:n])
	return n, nil
}

// ParseBFCFrame reads a link-local BFC frame: it must be addressed to
// LinkLocalDst with EtherType 0x88B6 (ErrEthernet; no VLAN tag), then
// ParseBFC applies to the rest. The sender's MAC is frame[6:12].
func ParseBFCFrame(frame []byte) (BFC, error) {
	if len(frame) < EthHeaderLen {
		return BFC{}, ErrShort
	}
	if [6]byte(frame[0:6]) != LinkLocalDst || binary.BigEndian.Uint16(frame[12:]) != EtherType {
		return BFC{}, ErrEthernet
	}
	return ParseBFC(frame[EthHeaderLen:])
}

// BitmapLen returns the bytes a BITMAP of nqueues queues takes:
// ceil(nqueues/8), 0 for nqueues <= 0.
func BitmapLen(nqueues int) int {
	if nqueues <= 0 {
		return 0
	}
	return (nqueues + 7) / 8
}

// BitmapGet reports whether queue q is marked paused in bm (false if q is
// outside bm).
func BitmapGet(bm []byte, q int) bool {
	if q < 0 || q/8 >= len(bm) {
		return false
	}
	return bm[q/8]>>(q%8)&1 != 0
}

// BitmapSet marks queue q paused (or not) in bm. It returns false, changing
// nothing, if q is outside bm.
func BitmapSet(bm []byte, q int, paused bool) bool {
	if q < 0 || q/8 >= len(bm) {
		return false
	}
	if paused {
		bm[q/8] |= 1 << (q % 8)
	} else {
		bm[q/8] &^= 1 << (q % 8)
	}
	return true
}

// tailClear reports whether the bits of bm's last byte at and beyond nqueues
// are zero (bm is BitmapLen(nqueues) bytes).
func tailClear(bm []byte, nqueues int) bool {
	if r := nqueues % 8; r != 0 {
		return bm[len(bm)-1]>>r == 0
	}
	return true
}
