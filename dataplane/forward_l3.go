package dataplane

import (
	"encoding/binary"
	"net/netip"

	"github.com/gswitch/gswitch/dataplane/l3"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
)

// forwardL3 is the forwarding stage of an L3 port: frames addressed to the
// port's MAC are routed (longest prefix match over the connected subnets
// and static routes, ECMP by a symmetric flow hash, TTL or hop limit
// decremented with the IPv4 checksum updated incrementally, MACs rewritten
// for the next hop); ARP for the switch's addresses is answered, ARP from
// neighbours is learnt, and pings to the switch's addresses are answered.
// Nothing is flooded or learnt by MAC. A host port's source guard (guard.go)
// sees every ARP packet and every frame that would be routed.
func (w *worker) forwardL3(in int, b *mech.Batch) {
	port := w.s.ports[in]
	g := &port.guard
	for i := range b.Pkts {
		p := &b.Pkts[i]
		if p.Verdict != pkt.Forward {
			continue
		}
		frame := b.Frame(p)
		switch {
		case p.EthType != pkt.EtherTypeARP && (p.Flags&pkt.FlagMulticast != 0 || pkt.DstMAC(frame) != mac48(port.MAC) || p.Flags&pkt.FlagTagged != 0):
			p.DropWith(pkt.ReasonNotRouted) // not for us, or not routable here (multicast, VLAN-tagged)
			continue
		case g.mode != guardOff && !w.guardL3(in, g, p, frame, b.Now):
			p.DropWith(pkt.ReasonSpoofed) // a source the port's guard refuses (guard.go)
			continue
		case p.EthType == pkt.EtherTypeARP:
			w.arp(in, p, frame)
			continue
		case p.Flags&pkt.FlagIPv4 != 0:
			w.route4(in, p, frame, b.Now)
		case p.Flags&pkt.FlagIPv6 != 0:
			w.route6(in, p, frame, b.Now)
		default:
			p.DropWith(pkt.ReasonNotRouted)
		}
	}
}

// route4 routes an IPv4 packet.
func (w *worker) route4(in int, p *pkt.Packet, frame []byte, now int64) {
	r := w.s.router
	h := frame[p.L3Off:]
	dst := binary.BigEndian.Uint32(h[16:])
	if _, mine := r.own4[dst]; mine {
		if !w.echoReply4(in, p, frame) {
			p.DropWith(pkt.ReasonLocal)
		}
		return
	}
	if h[8] <= 1 {
		w.timeExceeded(in, p, frame, now)
		p.DropWith(pkt.ReasonTTL)
		return
	}
	nhs, ok := r.routes.Lookup4(dst)
	if !ok {
		p.DropWith(pkt.ReasonNoRoute)
		return
	}
	src := binary.BigEndian.Uint32(h[12:])
	var sport, dport uint16
	if p.L4Off != 0 {
		sport, dport = binary.BigEndian.Uint16(frame[p.L4Off:]), binary.BigEndian.Uint16(frame[p.L4Off+2:])
	}
	nh := w.pickUp(nhs, l3.SymHash4(src, dst, sport, dport, p.Proto))
	if nh == nil {
		p.DropWith(pkt.ReasonPortDown)
		return
	}
	target := dst
	if nh.IP.IsValid() {
		target = be32(nh.IP.As4())
	}
	mac, nport, ok := r.nbrs.Lookup4(target, now)
	if !ok || nport != nh.Port {
		if r.nbrs.ShouldRequest4(target, now, r.retry) {
			w.arpRequest(int(nh.Port), target)
		}
		p.DropWith(pkt.ReasonNoNeighbor)
		return
	}
	// TTL - 1, checksum updated (RFC 1624): the word holding TTL and protocol changes by 0x0100.
	old := binary.BigEndian.Uint16(h[8:])
	h[8]--
	sum := uint32(^binary.BigEndian.Uint16(h[10:])) + uint32(^old) + uint32(binary.BigEndian.Uint16(h[8:]))
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
	copy(frame[0:6], mac[:])
	copy(frame[6:12], w.s.ports[nh.Port].MAC)
	p.OutPort = nh.Port
}

// route6 routes an IPv6 packet (static neighbours only: no ND).
func (w *worker) route6(in int, p *pkt.Packet, frame []byte, now int64) {
	r := w.s.router
	h := frame[p.L3Off:]
	if h[7] <= 1 {
		p.DropWith(pkt.ReasonTTL)
		return
	}
	var dst, src [16]byte
	copy(dst[:], h[24:40])
	copy(src[:], h[8:24])
	nhs, ok := r.routes.Lookup6(&dst)
	if !ok {
		p.DropWith(pkt.ReasonNoRoute)
		return
	}
	var sport, dport uint16
	if p.L4Off != 0 {
		sport, dport = binary.BigEndian.Uint16(frame[p.L4Off:]), binary.BigEndian.Uint16(frame[p.L4Off+2:])
	}
	nh := w.pickUp(nhs, l3.SymHash6(&src, &dst, sport, dport, p.Proto))
	if nh == nil {
		p.DropWith(pkt.ReasonPortDown)
		return
	}
	target := dst
	if nh.IP.IsValid() {
		target = nh.IP.As16()
	}
	mac, nport, ok := r.nbrs.Lookup6(&target, now)
	if !ok || nport != nh.Port {
		p.DropWith(pkt.ReasonNoNeighbor)
		return
	}
	h[7]--
	copy(frame[0:6], mac[:])
	copy(frame[6:12], w.s.ports[nh.Port].MAC)
	p.OutPort = nh.Port
}

// arp learns the sender of an ARP packet received on an L3 port (if it is
// on one of the port's subnets) and answers a request for one of the
// port's addresses in place, back out of the port on its control lane.
func (w *worker) arp(in int, p *pkt.Packet, frame []byte) {
	s := w.s
	a := frame[p.L3Off:]
	if binary.BigEndian.Uint16(a[0:]) != 1 || binary.BigEndian.Uint16(a[2:]) != pkt.EtherTypeIPv4 || a[4] != 6 || a[5] != 4 {
		p.DropWith(pkt.ReasonNotRouted)
		return
	}
	op := binary.BigEndian.Uint16(a[6:])
	spa, tpa := binary.BigEndian.Uint32(a[14:]), binary.BigEndian.Uint32(a[24:])
	port := s.ports[in]
	onLink := false
	for _, pf := range port.addrs {
		if pf.Addr().Is4() && pf.Contains(netip.AddrFrom4([4]byte(a[14:18]))) {
			onLink = true
		}
	}
	owner, mine := s.router.own4[tpa]
	if onLink && spa != 0 {
		// A reply to us, or a request for our address on this port, may
		// bind its sender (a reply only within the window of a request the
		// switch sent); other ARP refreshes a binding at most (l3.ARP4).
		kind := l3.ARPOther
		if mine && owner == in && spa != tpa {
			switch op {
			case 2:
				kind = l3.ARPReply
			case 1:
				kind = l3.ARPRequestForUs
			}
		}
		s.router.nbrs.ARP4(spa, [6]byte(a[8:14]), uint16(in), kind, p.TS)
	}
	if op != 1 || !mine || owner != in {
		p.Verdict = pkt.Consume
		return
	}
	// The request becomes the reply.
	var sha [6]byte
	copy(sha[:], a[8:14])
	binary.BigEndian.PutUint16(a[6:], 2)
	copy(a[18:24], sha[:])
	binary.BigEndian.PutUint32(a[24:], spa)
	copy(a[8:14], port.MAC)
	binary.BigEndian.PutUint32(a[14:], tpa)
	copy(frame[0:6], sha[:])
	copy(frame[6:12], port.MAC)
	p.OutPort, p.Lane = uint16(in), pkt.LaneControl
}

// echoReply4 answers an ICMP echo request to one of the switch's addresses
// in place, back out of the port it came in on. It reports false for
// anything else addressed to the switch.
func (w *worker) echoReply4(in int, p *pkt.Packet, frame []byte) bool {
	h := frame[p.L3Off:]
	ihl := int(h[0]&0x0f) * 4
	if p.Proto != 1 || p.Flags&pkt.FlagFragment != 0 || len(h) < ihl+8 || h[ihl] != 8 || h[ihl+1] != 0 {
		return false
	}
	icmp := h[ihl:]
	icmp[0] = 0 // echo reply; the checksum word changes by 0x0800
	sum := uint32(binary.BigEndian.Uint16(icmp[2:])) + 0x0800
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(icmp[2:], uint16(sum))
	var a [4]byte
	copy(a[:], h[12:16])
	copy(h[12:16], h[16:20])
	copy(h[16:20], a[:])
	h[8] = 64
	binary.BigEndian.PutUint16(h[10:], 0)
	binary.BigEndian.PutUint16(h[10:], ipChecksum(h[:ihl]))
	copy(frame[0:6], frame[6:12])
	copy(frame[6:12], w.s.ports[in].MAC)
	p.OutPort, p.Lane = uint16(in), pkt.LaneControl
	return true
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	if len(h)%2 == 1 {
		sum += uint32(h[len(h)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// pickUp chooses the next hop for flow hash h among those whose port is
// up: with every port up, l3.Pick's choice (the same on every switch, so a
// flow and its reverse meet the same switches); with some down, the same
// hash over the ones left, so flows move off a dead link (their reverse
// paths may differ until it is back). nil when every next hop is down.
func (w *worker) pickUp(nhs []l3.NextHop, h uint32) *l3.NextHop {
	nh := l3.Pick(nhs, h)
	if nh == nil || !w.s.ports[nh.Port].link.down.Load() {
		return nh
	}
	up := 0
	for i := range nhs {
		if !w.s.ports[nhs[i].Port].link.down.Load() {
			up++
		}
	}
	if up == 0 {
		return nil
	}
	k := int((uint64(h) * uint64(up)) >> 32)
	for i := range nhs {
		if !w.s.ports[nhs[i].Port].link.down.Load() {
			if k == 0 {
				return &nhs[i]
			}
			k--
		}
	}
	return nil
}

// timeExceeded answers an IPv4 packet whose TTL expired with an ICMP time
// exceeded (type 11) from the ingress port's address, quoting the packet's
// IP header and 8 bytes (RFC 792), routed back to its source: traceroute
// sees every switch. At most one per millisecond per worker.
func (w *worker) timeExceeded(in int, p *pkt.Packet, frame []byte, now int64) {
	if now-w.lastICMP < 1e6 {
		return
	}
	h := frame[p.L3Off:]
	ihl := int(h[0]&0x0f) * 4
	if h[9] == 1 && len(h) > ihl && h[ihl] != 0 && h[ihl] != 8 {
		return // never an error about an ICMP error
	}
	var src [4]byte
	for _, pf := range w.s.ports[in].addrs {
		if pf.Addr().Is4() {
			src = pf.Addr().As4()
			break
		}
	}
	if src == [4]byte{} {
		return
	}
	w.lastICMP = now
	quote := min(len(h), ihl+8)
	buf := w.em.Frame(mech.Routed, icmpKind)
	if buf == nil {
		return
	}
	binary.BigEndian.PutUint16(buf[12:], pkt.EtherTypeIPv4)
	ip := buf[14:]
	ip[0], ip[1] = 0x45, 0xc0 // DSCP CS6: network control
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+quote))
	binary.BigEndian.PutUint32(ip[4:], 0)
	ip[8], ip[9] = 64, 1
	copy(ip[12:16], src[:])
	copy(ip[16:20], h[12:16])
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip[:20]))
	icmp := ip[20:]
	icmp[0], icmp[1] = 11, 0
	clear(icmp[2:8])
	copy(icmp[8:], h[:quote])
	binary.BigEndian.PutUint16(icmp[2:], ipChecksum(icmp[:8+quote]))
	n := 14 + 20 + 8 + quote
	if n < 60 {
		clear(buf[n:60])
		n = 60
	}
	w.em.Send(n, pkt.LaneControl)
}
