package dataplane

import (
	"encoding/binary"
	"net/netip"

	"github.com/gswitch/gswitch/dataplane/l2"
	"github.com/gswitch/gswitch/dataplane/l3"
	"github.com/gswitch/gswitch/pkt"
)

// The source guard's checks (guard.go says what each mode checks).

// guardL3 applies the source guard of L3 port in to p (IPv4, IPv6 or
// ARP, addressed to the port): whether its source may come from the port.
func (w *worker) guardL3(in int, g *portGuard, p *pkt.Packet, frame []byte, now int64) bool {
	h := frame[p.L3Off:]
	switch {
	case p.Flags&pkt.FlagIPv4 != 0:
		return w.guard4(in, g, binary.BigEndian.Uint32(h[12:]), frame, now)
	case p.Flags&pkt.FlagIPv6 != 0:
		return w.guard6(in, g, (*[16]byte)(h[8:24]), frame)
	case p.EthType == pkt.EtherTypeARP:
		// The ARP rules of the neighbour table bind nothing off the port's
		// subnets and move no binding; what is left is the switch's own
		// addresses, which no host may claim.
		_, mine := w.s.router.own4[binary.BigEndian.Uint32(h[14:])]
		return !mine
	}
	return true
}

// guard4 applies the guard of L3 port in to the IPv4 source src of frame.
func (w *worker) guard4(in int, g *portGuard, src uint32, frame []byte, now int64) bool {
	r := w.s.router
	if on, ok := g.onSubnet4(src); on {
		if !ok || g.mode != guardBinding {
			return ok
		}
		switch r.nbrs.Bound4(src, [6]byte(frame[6:12]), uint16(in), now) {
		case l3.BoundHere:
			return true
		case l3.Unbound:
			// Ask who has it: if it is the sender's, its reply binds it
			// (a reply the switch asked for) and its next packets pass.
			if r.nbrs.ShouldRequest4(src, now, r.retry) {
				w.arpRequest(in, src)
			}
		}
		return false
	}
	if !g.via {
		return false
	}
	// Not on the port's subnets: only a source that a static route sends
	// back out of this port may come from it (strict unicast RPF).
	if _, mine := r.own4[src]; mine {
		return false
	}
	nhs, ok := r.routes.Lookup4(src)
	return ok && w.viaRoute(in, g, nhs, frame, now)
}

// guard6 applies the guard of L3 port in to the IPv6 source src of frame.
func (w *worker) guard6(in int, g *portGuard, src *[16]byte, frame []byte) bool {
	a := netip.AddrFrom16(*src)
	for i := range g.nets6 {
		n := &g.nets6[i]
		if !n.pf.Contains(a) {
			continue
		}
		if a == n.own || a == n.pf.Addr() {
			return false
		}
		return g.mode != guardBinding || w.s.router.nbrs.Bound6(src, [6]byte(frame[6:12]), uint16(in)) == l3.BoundHere
	}
	if !g.via {
		return false
	}
	// Not on the port's subnets: as for IPv4 (guard4), strict unicast RPF.
	nhs, ok := w.s.router.routes.Lookup6(src)
	return ok && w.viaRoute(in, g, nhs, frame, 0)
}

// viaRoute is the source guard's strict unicast RPF for a source off the
// port's subnets whose route's next hops are nhs: it may come from port in
// only if the route sends it back out of in and, with the binding guard,
// only from a next hop the route names on in, at that neighbour's bound
// MAC. A route's next hops are of its own family (l3.NewTable refuses
// others), so each next hop's address says which binding to check; now
// matters for IPv4 bindings only.
func (w *worker) viaRoute(in int, g *portGuard, nhs []l3.NextHop, frame []byte, now int64) bool {
	r := w.s.router
	for i := range nhs {
		nh := &nhs[i]
		if int(nh.Port) != in {
			continue
		}
		if g.mode != guardBinding {
			return true
		}
		switch {
		case nh.IP.Is4():
			if r.nbrs.Bound4(be32(nh.IP.As4()), [6]byte(frame[6:12]), nh.Port, now) == l3.BoundHere {
				return true // from the next hop the route names, at its bound MAC
			}
		case nh.IP.Is6():
			ip := nh.IP.As16()
			if r.nbrs.Bound6(&ip, [6]byte(frame[6:12]), nh.Port) == l3.BoundHere {
				return true
			}
		}
	}
	return false
}

// guardL2 applies the binding guard of L2 port in to p, whose source MAC
// learning said learnt: whether its sources may come from the port.
func (w *worker) guardL2(in int, p *pkt.Packet, frame []byte, learnt l2.Result, now int64) bool {
	if learnt == l2.MoveRefused || learnt == l2.PortFull {
		return false // a MAC held on another port, or one more than the port may have
	}
	var src uint32
	switch {
	case p.Flags&pkt.FlagIPv4 != 0:
		src = binary.BigEndian.Uint32(frame[p.L3Off+12:])
	case p.EthType == pkt.EtherTypeARP:
		src = binary.BigEndian.Uint32(frame[p.L3Off+14:])
	}
	if src == 0 {
		return true // not IPv4, or a host that has no address yet (DHCP, ARP probes)
	}
	switch w.s.bind.Learn(uint64(src), uint16(in), now) {
	case l2.MoveRefused, l2.PortFull:
		return false // bound to another port, or the port's share of bindings is spent
	}
	return true
}
