package wire

import "encoding/binary"

// IEEE 802.1Qbb priority flow control (PFC): a MAC control frame that
// stops the receiver's transmission of up to eight priorities, each for a
// time of its own. It is not a GC message; it is here so that the switch's
// PFC mechanism, gsperf's host side and tests share one definition of the
// bytes.
const (
	EtherTypeMACControl = 0x8808 // IEEE 802.3 MAC control (PAUSE, PFC)
	OpcodePause         = 0x0001 // IEEE 802.3x PAUSE: the whole link (not PFC; the switch drops it as link_local)
	OpcodePFC           = 0x0101 // IEEE 802.1Qbb priority-based flow control
	PFCLen              = 34     // the fields of a PFC frame; the frame is padded to MinFrameLen
	PFCPriorities       = 8      // priorities a PFC frame names
	QuantumBits         = 512    // a pause quantum: 512 bit times at the link's rate
	MaxQuanta           = 0xFFFF // the longest pause one frame can ask for
)

// TypeMACControl is the kind under which the switch dispatches and
// counts MAC control frames (EtherType 0x8808) to the MAC control group
// (a mechanism's Spec.Controls, the emitter's kind, the control_received
// metric's kind label, "pfc": PFC's are the ones a mechanism claims). No
// GC message carries it: it is the last number of the link-local range,
// so it shares that range's rule (never forwarded), and Known is false
// for it (PutHeader and ParseHeader refuse it).
const TypeMACControl Type = 15

// TypePFC is the kind of PFC frames: the MAC control frames a switch
// handles (opcode 0x0101).
const TypePFC = TypeMACControl

// MACControlGroup is the IEEE 802.3 MAC control group address
// (01:80:C2:00:00:01), the destination of MAC control frames (PAUSE, PFC),
// which bridges never forward.
var MACControlGroup = [6]byte{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}

// PFCDst is the destination of every PFC frame: the MAC control group.
var PFCDst = MACControlGroup

// PFC is a priority flow control frame's message: the priorities it names
// (Enable, bit p for priority p) and, for each, the pause time in quanta
// of 512 bit times at the link's rate; 0 resumes the priority at once.
// The times of priorities not enabled are sent as 0 and ignored.
//
//	off size field
//	0   6    destination 01:80:C2:00:00:01
//	6   6    source: the sending port's MAC
//	12  2    EtherType 0x8808
//	14  2    opcode 0x0101
//	16  2    class-enable vector: bits 0-7 priorities 0-7; bits 8-15 reserved (0, ignored)
//	18  16   time[0..7]: quanta, priority p at 18 + 2p
//	34  26   zeros (to 60 bytes, no FCS)
type PFC struct {
	Enable uint8
	Time   [PFCPriorities]uint16
}

// BuildPFC writes a complete PFC frame carrying m into b: destination
// PFCDst, source src, EtherType 0x8808, opcode 0x0101, m's vector and
// times (those of priorities m does not enable written as 0), zeros up to
// MinFrameLen. It returns MinFrameLen, or ErrBuffer if b is shorter.
func BuildPFC(b []byte, src [6]byte, m PFC) (int, error) {
	if len(b) < MinFrameLen {
		return 0, ErrBuffer
	}
	copy(b[0:6], PFCDst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], EtherTypeMACControl)
	binary.BigEndian.PutUint16(b[14:], OpcodePFC)
	binary.BigEndian.PutUint16(b[16:], uint16(m.Enable))
	for p := 0; p < PFCPriorities; p++ {
		t := m.Time[p]
		if m.Enable&(1<<p) == 0 {
			t = 0
		}
		binary.BigEndian.PutUint16(b[18+2*p:], t)
	}
	clear(b[PFCLen:MinFrameLen])
	return MinFrameLen, nil
}

// ParsePFCFrame reads a PFC frame: at least PFCLen bytes (ErrShort; the
// padding is not required), destination PFCDst and EtherType 0x8808
// untagged (ErrEthernet), opcode 0x0101 (ErrWrongType: an 802.3x PAUSE,
// 0x0001, or another MAC control opcode). The vector's reserved bits and
// the times of priorities it does not enable are ignored (returned as 0).
// The sender's MAC is frame[6:12].
func ParsePFCFrame(frame []byte) (PFC, error) {
	if len(frame) < PFCLen {
		return PFC{}, ErrShort
	}
	if [6]byte(frame[0:6]) != PFCDst || binary.BigEndian.Uint16(frame[12:]) != EtherTypeMACControl {
		return PFC{}, ErrEthernet
	}
	if binary.BigEndian.Uint16(frame[14:]) != OpcodePFC {
		return PFC{}, ErrWrongType
	}
	m := PFC{Enable: frame[17]}
	for p := 0; p < PFCPriorities; p++ {
		if m.Enable&(1<<p) != 0 {
			m.Time[p] = binary.BigEndian.Uint16(frame[18+2*p:])
		}
	}
	return m, nil
}

// PauseNs is the length in ns of a pause of quanta at rateBits bit/s,
// rounded up, so that a pause of one quantum is never 0 (which would mean
// resume). It cannot overflow: MaxQuanta x 512 bits take at most about
// 3.4e16 ns (a year) at 1 bit/s. A rate of 0 (unknown, unlimited) gives 0.
func PauseNs(quanta uint16, rateBits uint64) int64 {
	if rateBits == 0 || quanta == 0 {
		return 0
	}
	bits := uint64(quanta) * QuantumBits * 1e9
	ns := bits / rateBits
	if bits%rateBits != 0 {
		ns++
	}
	return int64(ns)
}
