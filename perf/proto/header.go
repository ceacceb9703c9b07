// Package proto is gsperf's wire format on hosts: the header at the start
// of every UDP payload gsperf sends, as a decoded Header value with Encode
// and Decode. The layout (64 bytes, big-endian: magic "GS", version 1,
// type, flags, header length, flow id, seq, ack, flow size, priority,
// window, timestamp, mechanism field) is defined once, in package
// wire/gsperf, and docs/wire-formats.md; the switch's stages read the
// header in place through wire/gsperf's Header view, and this package is
// built on the same accessors, so the two cannot disagree.
package proto

import (
	"errors"
	"fmt"

	"github.com/gswitch/gswitch/wire/gsperf"
)

// HeaderLen is the header's length in version 1.
const HeaderLen = gsperf.Len

// PriorityOffset is where the priority sits in the UDP payload.
const PriorityOffset = gsperf.OffPriority

// Types.
const (
	TypeData     = gsperf.TypeData
	TypeAck      = gsperf.TypeAck
	TypeProbe    = gsperf.TypeProbe
	TypeProbeAck = gsperf.TypeProbeAck
	TypeCNP      = gsperf.TypeCNP
)

// Flags.
const (
	FlagFIN  = gsperf.FlagFIN
	FlagRetx = gsperf.FlagRetx
	FlagECE  = gsperf.FlagECE // ack: the segment acknowledged arrived CE-marked
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
	w := gsperf.Header(b[:HeaderLen])
	w.Init(h.Type)
	w.SetFlags(h.Flags)
	w.SetFlow(h.Flow)
	w.SetSeq(h.Seq)
	w.SetAck(h.Ack)
	w.SetSize(h.Size)
	w.SetPriority(h.Priority)
	w.SetWindow(h.Window)
	w.SetTimestamp(h.Timestamp)
	w.SetMech(h.Mech)
	return HeaderLen
}

// Decode reads a header from b and returns it and the payload after it.
func Decode(b []byte) (Header, []byte, error) {
	var h Header
	r := gsperf.Header(b)
	if len(b) < HeaderLen {
		return h, nil, ErrShort
	}
	if !r.HasMagic() {
		return h, nil, ErrMagic
	}
	if v := r.Version(); v != gsperf.Version {
		return h, nil, fmt.Errorf("%w %d", ErrVersion, v)
	}
	h.Type = r.Type()
	if h.Type < TypeData || h.Type > TypeCNP {
		return h, nil, fmt.Errorf("%w %d", ErrType, h.Type)
	}
	h.Flags = r.Flags()
	h.HdrLen = r.HdrLen()
	if !r.Valid() { // the only check left: the header length
		return h, nil, fmt.Errorf("%w %d", ErrHdrLen, h.HdrLen)
	}
	h.Flow = r.Flow()
	h.Seq = r.Seq()
	h.Ack = r.Ack()
	h.Size = r.Size()
	h.Priority = r.Priority()
	h.Window = r.Window()
	h.Timestamp = r.Timestamp()
	h.Mech = r.Mech()
	return h, r.Payload(), nil
}

// Rank is the pFabric priority of a segment: the flow's remaining bytes
// (size - seq), saturating at 2^32-1.
func Rank(size, seq uint64) uint32 {
	if seq >= size {
		return 0
	}
	return uint32(min(size-seq, 1<<32-1))
}
