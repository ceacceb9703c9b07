package bfc

import (
	"encoding/binary"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// Ingress reads the upstream queue of packets received on a BFC port:
// from the BFC tag (peer bfc; the tag is removed, so frames inside the
// switch are untagged) or from the gsperf header (peer host). Tags on
// frames from other peers are removed and not believed.
func (b *BFC) Ingress(i int, bt *mech.Batch) {
	s := b.ports[i]
	for k := range bt.Pkts {
		p := &bt.Pkts[k]
		if p.Verdict != pkt.Forward && p.Verdict != pkt.Flood {
			continue
		}
		if p.TagOff != 0 && pkt.PopTag(b.mem, p) == nil {
			s.m.untagged.Add(1)
		}
		if s.peer != peerBFC {
			p.Flags &^= pkt.FlagUpQ
			p.UpQ = 0
		}
		if s.peer == peerHost {
			if q, ok := b.hostQueue(p); ok {
				p.UpQ = q
				p.Flags |= pkt.FlagUpQ
				s.m.hostQueued.Add(1)
			}
		}
	}
}

// hostQueue reads the upstream queue a gsperf host in BFC mode writes in
// its header's mechanism field (0: the host gives none).
func (b *BFC) hostQueue(p *pkt.Packet) (uint16, bool) {
	if p.Flags&pkt.FlagFragment != 0 {
		return 0, false
	}
	h := gsperf.InUDP(b.mem[p.Addr:p.Addr+uint64(p.Len)], p.Proto, p.L4Off)
	if len(h) < gsperf.Len || !h.Known() || (h.Type() != gsperf.TypeData && h.Type() != gsperf.TypeProbe) {
		return 0, false
	}
	q := wire.MechBFCQueue(h.Mech())
	return q, q != 0
}

// Egress writes the upstream-queue tag on data frames leaving toward a BFC
// neighbour (the queue the frame left from) and removes tags toward
// anything else (egress worker).
func (b *BFC) Egress(v *mech.PortView, bt *mech.Batch) {
	s := b.ports[v.Index()]
	for k := range bt.Pkts {
		p := &bt.Pkts[k]
		if p.Verdict != pkt.Forward {
			continue
		}
		if s.peer != peerBFC {
			if p.TagOff != 0 {
				pkt.PopTag(b.mem, p) // a frame whose tag will not go is sent as it is
			}
			continue
		}
		if p.TagOff != 0 { // came tagged from a port that is not BFC: rewrite in place
			binary.BigEndian.PutUint16(b.mem[p.Addr+uint64(p.TagOff)+2:], p.Queue)
			s.m.tagged.Add(1)
			continue
		}
		if pkt.PushTag(b.mem, p, p.Queue) != nil { // headers too deep, no headroom
			s.m.tagSkipped.Add(1)
			continue
		}
		s.m.tagged.Add(1)
	}
}
