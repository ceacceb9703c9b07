package dataplane

import (
	"encoding/binary"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
)

// ingress runs the ingress stages over a batch of n frames received on
// port in, then dispatches each packet by its verdict: to its egress port's
// traffic manager (here or through a handoff ring), to every other port
// (flood), or back to the free list (drop, consume).
//
// The stages, in order:
//
//	parse        pkt.Parse: headers, offsets, flow hash; malformed frames dropped
//	control      gswitch control messages and bridge protocols: role check, the mechanism's Control hook
//	forwarding   the L2 learning switch: learn the source, look up the destination
//	mechanisms   the Ingress hooks of the mechanisms enabled on the port
func (w *worker) ingress(in int, n int, now int64) {
	s := w.s
	c := &w.ctr[in]
	memLen := uint64(len(s.mem))
	var bytes uint64
	k := 0
	capt := s.captures[in].Load()
	for i := 0; i < n; i++ {
		d := w.rx.descs[i]
		bytes += uint64(d.Len)
		if d.Addr >= memLen {
			c.drops[pkt.ReasonBadDesc].Add(1) // not a frame of ours: nothing to free
			continue
		}
		if d.Len == 0 || d.Addr+uint64(d.Len) > s.frameEnd(d.Addr) {
			c.drops[pkt.ReasonBadDesc].Add(1)
			w.pool.release(d.Addr)
			continue
		}
		if capt != nil {
			capt.record(w.id, CaptureRx, s.mem[d.Addr:d.Addr+uint64(d.Len)], now)
		}
		p := &w.rx.pkts[k]
		p.Addr, p.Len, p.InPort, p.OutPort, p.Queue, p.Rank, p.TS = d.Addr, d.Len, uint16(in), 0, 0, 0, now
		p.Verdict, p.Reason, p.Lane, p.Meta = pkt.Forward, 0, pkt.LaneData, 0
		if e := pkt.Parse(s.mem[d.Addr:d.Addr+uint64(d.Len)], p); e != pkt.OK {
			c.malformed[e].Add(1)
			c.drops[pkt.ReasonMalformed].Add(1)
			w.pool.release(d.Addr)
			continue
		}
		k++
	}
	c.rxPackets.Add(uint64(n))
	c.rxBytes.Add(bytes)
	if k == 0 {
		return
	}
	b := &w.rx.batch
	b.Pkts, b.Now = w.rx.pkts[:k], now
	w.control(in, b)
	if s.ports[in].L3() {
		w.forwardL3(in, b)
	} else {
		w.forwardL2(in, b)
	}
	for _, h := range s.ports[in].ingressH {
		h.Ingress(in, b)
	}
	w.dispatch(in, b)
}

// macControlGroup is the MAC control group address (01:80:C2:00:00:01)
// as pkt.DstMAC reads it.
var macControlGroup = pkt.DstMAC(wire.MACControlGroup[:])

// Scope of gswitch control message types (package wire): link-local types
// are never forwarded.
func gcLinkLocal(t uint8) bool { return wire.Type(t).Scope() == wire.ScopeLinkLocal }

// control applies the port's role to control frames and hands those of a
// mechanism of this switch to its Control hook.
//
//   - Frames to the bridge-protocol groups 01:80:C2:00:00:0x that are not
//     ours (STP, LLDP, 802.1X) are never forwarded.
//   - MAC control frames (EtherType 0x8808) are never
//     forwarded, whatever their destination: the MAC Control sublayer of
//     the port consumes them, so a bridge never relays one (else a host
//     could pause another host's NIC by its unicast MAC, or every NIC
//     behind the switch by broadcast). Those to the MAC control group
//     (01:80:C2:00:00:01) go to the mechanism that claims their type if
//     the switch runs one, from host ports too (hosts' NICs send them); it
//     drops what its port does not run, as link_local. The rest are
//     dropped as link_local here, on any switch.
//   - Frames carrying the upstream-queue tag (a switch-to-switch header)
//     are forged on host ports: only a switch may claim an upstream queue,
//     also where this switch runs no mechanism that reads it.
//   - Link-local messages of ours (EtherType 0x88B6) are never forwarded: on
//     a host port they are forged; on a fabric port they go to their
//     mechanism, or are dropped as unclaimed.
//   - The BTS port (UDP 19020) is the switches': a GC message to it, or the
//     first fragment of a datagram to it (its message may sit in a later
//     fragment), is forged on a host port; on a fabric port it goes to its
//     mechanism if this switch runs it, else it is forwarded as data.
//   - Messages hosts may send (in UDP on any port: credits) go to
//     their mechanism if this switch runs it (it may consume them or set
//     their lane), else they are forwarded as plain data.
//
// Only the frames a mechanism of this switch handles keep the control
// flag: the mechanisms' other hooks treat the rest as the data they are
// here (a credit on a switch whose mechanisms do not claim credits is
// data to the others).
func (w *worker) control(in int, b *mech.Batch) {
	s := w.s
	c := &w.ctr[in]
	host := s.ports[in].Role == mech.RoleHost
	for i := range b.Pkts {
		p := &b.Pkts[i]
		if p.Flags&(pkt.FlagControl|pkt.FlagLinkLocal|pkt.FlagUpQ) == 0 && p.EthType != pkt.EtherTypeGC &&
			p.EthType != wire.EtherTypeMACControl {
			continue
		}
		if p.Flags&pkt.FlagUpQ != 0 && host {
			p.DropWith(pkt.ReasonForged)
			c.forgedTags.Add(1)
			continue
		}
		if p.EthType == pkt.EtherTypeGC {
			c.controlRx[p.Ctl].Add(1)
			switch {
			case host:
				p.DropWith(pkt.ReasonForged)
				c.forged[p.Ctl].Add(1)
			case p.Flags&pkt.FlagControl == 0 || !gcLinkLocal(p.Ctl) || s.control[p.Ctl] == nil:
				p.DropWith(pkt.ReasonUnclaimed)
			default:
				w.controlHook(in, b, i)
				if p.Verdict == pkt.Forward || p.Verdict == pkt.Flood {
					p.Verdict = pkt.Consume // link-local: never forwarded
				}
			}
			continue
		}
		if p.EthType == wire.EtherTypeMACControl {
			// MAC control is the link's own: never forwarded, whatever the
			// destination. To the group, it goes to the mechanism that
			// claims it, from any port (hosts' NICs send it); it drops
			// what its port does not run, as link_local.
			if pkt.DstMAC(b.Frame(p)) == macControlGroup && s.control[wire.TypeMACControl] != nil {
				p.Ctl = uint8(wire.TypeMACControl)
				c.controlRx[p.Ctl].Add(1)
				w.controlHook(in, b, i)
				if p.Verdict == pkt.Forward || p.Verdict == pkt.Flood {
					p.Verdict = pkt.Consume // link-local: never forwarded
				}
				continue
			}
			p.DropWith(pkt.ReasonLinkLocal)
			continue
		}
		if p.Flags&pkt.FlagLinkLocal != 0 {
			p.DropWith(pkt.ReasonLinkLocal)
			continue
		}
		if p.Flags&pkt.FlagControl == 0 {
			continue
		}
		// A routed message in UDP (the parse stage flags only those).
		t := p.Ctl
		if binary.BigEndian.Uint16(b.Mem[p.Addr+uint64(p.L4Off)+2:]) == wire.BTSPort {
			c.controlRx[t].Add(1)
			switch {
			case host:
				p.DropWith(pkt.ReasonForged)
				c.forged[t].Add(1)
			case s.control[t] != nil:
				w.controlHook(in, b, i)
			default:
				p.Flags &^= pkt.FlagControl // a message no mechanism of this switch claims: data to it
			}
			continue
		}
		if wire.Type(t).Known() {
			c.controlRx[t].Add(1)
		}
		if s.control[t] == nil {
			p.Flags &^= pkt.FlagControl // no mechanism here handles it: data
			continue
		}
		w.controlHook(in, b, i)
	}
}

// controlHook calls the Control hook of packet i's type with a batch of one.
func (w *worker) controlHook(in int, b *mech.Batch, i int) {
	one := &w.rx.ctlBatch
	one.Pkts, one.Mem, one.Now, one.Worker = b.Pkts[i:i+1], b.Mem, b.Now, b.Worker
	w.s.control[b.Pkts[i].Ctl].Control(in, one)
}

// forwardL2 is the forwarding stage of an L2 port: learn the source MAC on
// the ingress port (and apply the port's binding guard: guard.go), look up
// the destination. Group destinations and unknown unicast flood; a
// destination learnt on the ingress port is filtered.
func (w *worker) forwardL2(in int, b *mech.Batch) {
	s := w.s
	bind := s.ports[in].guard.mode == guardBinding
	for i := range b.Pkts {
		p := &b.Pkts[i]
		if p.Verdict != pkt.Forward {
			continue
		}
		frame := b.Frame(p)
		learnt := s.mac.Learn(pkt.SrcMAC(frame), uint16(in), b.Now)
		if bind && !w.guardL2(in, p, frame, learnt, b.Now) {
			p.DropWith(pkt.ReasonSpoofed)
			continue
		}
		if p.Flags&pkt.FlagMulticast != 0 {
			p.Verdict = pkt.Flood
			continue
		}
		out, ok := s.mac.Lookup(pkt.DstMAC(frame), b.Now)
		switch {
		case !ok:
			p.Verdict = pkt.Flood
		case int(out) == in:
			p.DropWith(pkt.ReasonSamePort)
		default:
			p.OutPort = out
		}
	}
}

// dispatch acts on every packet's verdict after the ingress stages.
func (w *worker) dispatch(in int, b *mech.Batch) {
	c := &w.ctr[in]
	nports := len(w.s.ports)
	for i := range b.Pkts {
		p := &b.Pkts[i]
		switch p.Verdict {
		case pkt.Forward:
			if int(p.OutPort) >= nports {
				c.drops[pkt.ReasonBadDesc].Add(1)
				w.pool.release(p.Addr)
				continue
			}
			w.stage(p)
		case pkt.Flood:
			c.flooded.Add(1)
			w.floodPacket(p)
		case pkt.Drop:
			c.drops[p.Reason].Add(1)
			w.pool.release(p.Addr)
		default: // Consume
			w.pool.release(p.Addr)
		}
	}
	w.flushOut()
}

// floodPacket sends p to every port but its ingress port: copies to all but
// the last, the frame itself to the last. Copies come from the worker's
// free frames down to the emit reserve; a copy that finds none is dropped
// (no_frames, counted on the port it was for).
func (w *worker) floodPacket(p *pkt.Packet) {
	s := w.s
	k := 0
	flood := w.rx.flood
	for i := range s.ports {
		if i != int(p.InPort) && !s.ports[i].link.down.Load() && !s.ports[i].L3() { // the L2 ports are one bridge domain
			flood[k] = uint16(i)
			k++
		}
	}
	if k == 0 {
		w.ctr[p.InPort].drops[pkt.ReasonSamePort].Add(1)
		w.pool.release(p.Addr)
		return
	}
	frame := s.mem[p.Addr : p.Addr+uint64(p.Len)]
	for _, out := range flood[:k-1] {
		base, ok := w.pool.allocFor(p.Len, w.pool.emitReserve)
		if !ok {
			w.ctr[out].drops[pkt.ReasonNoFrames].Add(1)
			continue
		}
		addr := base + pkt.Headroom
		copy(s.mem[addr:addr+uint64(len(frame))], frame)
		c := &w.tmp.pk
		*c = *p
		c.Addr, c.OutPort, c.Verdict = addr, out, pkt.Forward
		w.stage(c)
	}
	p.OutPort, p.Verdict = flood[k-1], pkt.Forward
	w.stage(p)
}

// stage queues p for its egress port; a full staging slice is flushed.
func (w *worker) stage(p *pkt.Packet) {
	o := p.OutPort
	w.rx.out[o] = append(w.rx.out[o], *p)
	if len(w.rx.out[o]) == cap(w.rx.out[o]) {
		w.flushPort(int(o))
	}
}

// flushOut sends every staged packet on.
func (w *worker) flushOut() {
	for i := range w.rx.out {
		if len(w.rx.out[i]) > 0 {
			w.flushPort(i)
		}
	}
}

// flushPort hands port i's staged packets to the port's traffic manager:
// directly if this worker owns the port's egress, else over the handoff
// ring (a full ring drops and counts what does not fit).
func (w *worker) flushPort(i int) {
	port := w.s.ports[i]
	h := w.rx.out[i]
	w.rx.out[i] = h[:0]
	if port.eg.owner == w.id {
		w.admit(port, h, w.s.clock.Now())
		return
	}
	n := port.eg.in[w.id].Push(h)
	for _, p := range h[n:] {
		w.ctr[i].drops[pkt.ReasonHandoffFull].Add(1)
		w.pool.release(p.Addr)
	}
	if n > 0 {
		port.eg.wake.wakeIfSleeping()
	}
}
