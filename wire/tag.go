package wire

import "encoding/binary"

// TagLen is the length of the BFC upstream-queue tag.
const TagLen = 4

// The BFC upstream-queue tag sits right after the source MAC, outside any
// 802.1Q tag, shaped like one:
//
//	off size field
//	12  2    TPID 0x88B5
//	14  2    flags:4 (0) | upstreamQ:12
//	16  2    the inner EtherType
//
// A sending BFC port writes its own egress queue of the frame; the receiving
// switch reads it, and removes it before the frame leaves through a port
// that does not speak BFC. The flag bits are reserved: written as 0, ignored
// when read.
//
// InsertTag and RemoveTag work on bytes alone; the switch's stages tag and
// untag a packet with pkt.PushTag and pkt.PopTag, which call them and keep
// the packet's address, length and header offsets right.

// ReadTag returns the upstream queue of the BFC tag at offset 12 of frame,
// and whether there is one (a frame too short to hold the tag and the inner
// EtherType has none).
func ReadTag(frame []byte) (upq uint16, ok bool) {
	if len(frame) < EthHeaderLen+TagLen || binary.BigEndian.Uint16(frame[12:]) != TagTPID {
		return 0, false
	}
	return binary.BigEndian.Uint16(frame[14:]) & (MaxQueues - 1), true
}

// InsertTag tags a frame in place. b[TagLen:] is the untagged frame and
// b[:TagLen] is headroom before it: InsertTag moves the 12 MAC bytes TagLen
// bytes toward the front and writes the tag behind them, so the tagged frame
// is b[0:len(b)] and everything from the EtherType on stays where it was. It
// returns the change of the frame's start, -TagLen (the new start is the
// old start plus delta; the length grows by TagLen). It refuses a frame
// shorter than an Ethernet header (ErrShort), upq >= MaxQueues (ErrQueue)
// and a frame that is already tagged (ErrTagged), changing nothing.
func InsertTag(b []byte, upq uint16) (delta int, err error) {
	if len(b) < TagLen+EthHeaderLen {
		return 0, ErrShort
	}
	if upq >= MaxQueues {
		return 0, ErrQueue
	}
	if _, tagged := ReadTag(b[TagLen:]); tagged {
		return 0, ErrTagged
	}
	copy(b[0:12], b[TagLen:TagLen+12])
	binary.BigEndian.PutUint16(b[12:], TagTPID)
	binary.BigEndian.PutUint16(b[14:], upq)
	return -TagLen, nil
}

// RemoveTag removes the BFC tag of frame in place: it moves the 12 MAC bytes
// TagLen bytes back, over the tag, so the untagged frame is frame[TagLen:].
// It returns the change of the frame's start, +TagLen (the length shrinks
// by TagLen), or ErrNoTag, changing nothing, if ReadTag finds no tag.
func RemoveTag(frame []byte) (delta int, err error) {
	if _, ok := ReadTag(frame); !ok {
		return 0, ErrNoTag
	}
	copy(frame[TagLen:TagLen+12], frame[0:12])
	return TagLen, nil
}
