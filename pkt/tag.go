package pkt

import "github.com/gswitch/gswitch/wire"

// TagLen is the length of the BFC upstream-queue tag (package wire).
const TagLen = wire.TagLen

// tagOff is where the BFC tag sits: right after the source MAC, outermost.
const tagOff = 12

// PushTag puts a BFC upstream-queue tag of queue upq on p's frame in place
// and keeps p's metadata right. mem is the UMEM p.Addr is an offset into;
// the frame grows at the front into the headroom every frame has
// (Headroom), so nothing from the EtherType on moves. On success the frame
// starts TagLen bytes earlier and is TagLen bytes longer, TagOff is 12, and
// L3Off and L4Off, when set, grow by TagLen (the headers they point at have
// not moved, the frame's start has). UpQ and FlagUpQ, which say what tag
// the frame arrived with, are left alone, so PopTag undoes PushTag exactly.
//
// It refuses, changing nothing: a packet that already has a tag (TagOff
// set, or the bytes say so: wire.ErrTagged), upq >= wire.MaxQueues
// (wire.ErrQueue), a frame shorter than an Ethernet header or without
// TagLen bytes of UMEM in front of it or running past mem (wire.ErrShort),
// and offsets that would not fit a byte afterwards or that point into the
// Ethernet header (wire.ErrOffset). It never allocates.
func PushTag(mem []byte, p *Packet, upq uint16) error {
	if p.TagOff != 0 {
		return wire.ErrTagged
	}
	if p.L3Off > maxParseOffset-TagLen || p.L4Off > maxParseOffset-TagLen ||
		(p.L3Off != 0 && p.L3Off < EthHeaderLen) || (p.L4Off != 0 && p.L4Off < EthHeaderLen) {
		return wire.ErrOffset
	}
	end := p.Addr + uint64(p.Len)
	if p.Addr < TagLen || end < p.Addr || end > uint64(len(mem)) {
		return wire.ErrShort
	}
	if _, err := wire.InsertTag(mem[p.Addr-TagLen:end], upq); err != nil {
		return err
	}
	p.Addr -= TagLen
	p.Len += TagLen
	p.TagOff = tagOff
	if p.L3Off != 0 {
		p.L3Off += TagLen
	}
	if p.L4Off != 0 {
		p.L4Off += TagLen
	}
	return nil
}

// PopTag removes the BFC upstream-queue tag of p's frame in place and keeps
// p's metadata right: the 12 MAC bytes move TagLen bytes back over the tag,
// the frame starts TagLen bytes later and is TagLen bytes shorter, TagOff
// is 0, and L3Off and L4Off, when set, shrink by TagLen. UpQ and FlagUpQ
// keep what the tag said (the frame arrived with it).
//
// It refuses, changing nothing, a packet whose TagOff is not 12 or whose
// bytes hold no tag there (wire.ErrNoTag, which is also what an untagged
// frame gets), a frame running past mem (wire.ErrShort), and offsets that
// point into the tagged Ethernet header (wire.ErrOffset). It never
// allocates.
func PopTag(mem []byte, p *Packet) error {
	if p.TagOff != tagOff {
		return wire.ErrNoTag
	}
	end := p.Addr + uint64(p.Len)
	if end < p.Addr || end > uint64(len(mem)) {
		return wire.ErrShort
	}
	frame := mem[p.Addr:end]
	if _, ok := wire.ReadTag(frame); !ok {
		return wire.ErrNoTag
	}
	if (p.L3Off != 0 && p.L3Off < EthHeaderLen+TagLen) || (p.L4Off != 0 && p.L4Off < EthHeaderLen+TagLen) {
		return wire.ErrOffset
	}
	if _, err := wire.RemoveTag(frame); err != nil {
		return err
	}
	p.Addr += TagLen
	p.Len -= TagLen
	p.TagOff = 0
	if p.L3Off != 0 {
		p.L3Off -= TagLen
	}
	if p.L4Off != 0 {
		p.L4Off -= TagLen
	}
	return nil
}
