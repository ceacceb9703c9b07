// Package proto is gsperf's wire format: one fixed header at the start of
// every UDP payload gsperf sends.
//
//	offset size field
//	0      2    magic "GS" (0x47 0x53)
//	2      1    version (1)
//	3      1    type: 1 data, 2 ack, 3 probe, 4 probe ack
//	4      2    flags: bit 0 FIN (the segment ends the flow), bit 1 RETX (a retransmission)
//	6      2    header length in bytes (64; larger values leave room for options)
//	8      8    flow id
//	16     8    seq: byte offset of the payload in the flow (data), of the probe (probe)
//	24     8    ack: bytes received in order (ack, probe ack)
//	32     8    flow size in bytes
//	40     4    priority: the pFabric rank, lower is better (remaining bytes, saturating at 2^32-1)
//	44     4    window: the receiver's advertised window in bytes (ack), 0 otherwise
//	48     8    timestamp: sender's clock in ns (data, probe), echoed (ack, probe ack)
//	56     8    mechanism field, reserved for BFC, SFC and ExpressPass (zero today)
//
// All fields are big-endian. A switch finds the priority at UDP payload
// offset 40, i.e. 48 bytes after the UDP header's first byte.
package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderLen is the header's length in version 1.
const HeaderLen = 64

// PriorityOffset is where the priority sits in the UDP payload.
const PriorityOffset = 40

// Types.
const (
	TypeData     = 1
	TypeAck      = 2
	TypeProbe    = 3
	TypeProbeAck = 4
)

// Flags.
const (
	FlagFIN  = 1 << 0
	FlagRetx = 1 << 1
)

// Header is the decoded header.
type Header struct {
	Type      uint8
	Flags     uint16
	HdrLen    uint16
	Flow      uint64
	Seq       uint64
	Ack       uint64
	Size      uint64
	Priority  uint32
	Window    uint32
	Timestamp uint64
	Mech      uint64
}

// Errors Decode returns.
var (
	ErrShort   = errors.New("gsperf header: too short")
	ErrMagic   = errors.New("gsperf header: bad magic")
	ErrVersion = errors.New("gsperf header: unknown version")
	ErrType    = errors.New("gsperf header: unknown type")
	ErrHdrLen  = errors.New("gsperf header: bad header length")
)

// Encode writes h into b (at least HeaderLen bytes) and returns HeaderLen.
// HdrLen is written as HeaderLen.
func (h *Header) Encode(b []byte) int {
	_ = b[HeaderLen-1]
	b[0], b[1], b[2], b[3] = 'G', 'S', 1, h.Type
	binary.BigEndian.PutUint16(b[4:], h.Flags)
	binary.BigEndian.PutUint16(b[6:], HeaderLen)
	binary.BigEndian.PutUint64(b[8:], h.Flow)
	binary.BigEndian.PutUint64(b[16:], h.Seq)
	binary.BigEndian.PutUint64(b[24:], h.Ack)
	binary.BigEndian.PutUint64(b[32:], h.Size)
	binary.BigEndian.PutUint32(b[40:], h.Priority)
	binary.BigEndian.PutUint32(b[44:], h.Window)
	binary.BigEndian.PutUint64(b[48:], h.Timestamp)
	binary.BigEndian.PutUint64(b[56:], h.Mech)
	return HeaderLen
}

// Decode reads a header from b and returns it and the payload after it.
func Decode(b []byte) (Header, []byte, error) {
	var h Header
	if len(b) < HeaderLen {
		return h, nil, ErrShort
	}
	if b[0] != 'G' || b[1] != 'S' {
		return h, nil, ErrMagic
	}
	if b[2] != 1 {
		return h, nil, fmt.Errorf("%w %d", ErrVersion, b[2])
	}
	h.Type = b[3]
	if h.Type < TypeData || h.Type > TypeProbeAck {
		return h, nil, fmt.Errorf("%w %d", ErrType, h.Type)
	}
	h.Flags = binary.BigEndian.Uint16(b[4:])
	h.HdrLen = binary.BigEndian.Uint16(b[6:])
	if h.HdrLen < HeaderLen || int(h.HdrLen) > len(b) {
		return h, nil, fmt.Errorf("%w %d", ErrHdrLen, h.HdrLen)
	}
	h.Flow = binary.BigEndian.Uint64(b[8:])
	h.Seq = binary.BigEndian.Uint64(b[16:])
	h.Ack = binary.BigEndian.Uint64(b[24:])
	h.Size = binary.BigEndian.Uint64(b[32:])
	h.Priority = binary.BigEndian.Uint32(b[40:])
	h.Window = binary.BigEndian.Uint32(b[44:])
	h.Timestamp = binary.BigEndian.Uint64(b[48:])
	h.Mech = binary.BigEndian.Uint64(b[56:])
	return h, b[h.HdrLen:], nil
}

// Rank is the pFabric priority of a segment: the flow's remaining bytes
// (size - seq), saturating at 2^32-1.
func Rank(size, seq uint64) uint32 {
	if seq >= size {
		return 0
	}
	return uint32(min(size-seq, 1<<32-1))
}
