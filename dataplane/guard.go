package dataplane

import (
	"encoding/binary"
	"net/netip"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane/l2"
	"github.com/gswitch/gswitch/dataplane/l3"
	"github.com/gswitch/gswitch/pkt"
)

// The source guard of a host port (the port's source_guard key) checks
// the source address of every frame the port receives before it is
// forwarded; a frame it refuses is dropped as spoofed, counted on the
// port (docs/operations.md, "Source guard"). On an L3 port:
//
//   - subnet: an IPv4 or IPv6 source must be a usable address of one of
//     the port's subnets (not the subnet's own address or broadcast) and
//     not the switch's, or, where a static route leads out of the port,
//     one the routes send back out of it (strict unicast RPF). An ARP
//     sender must not be one of the switch's addresses.
//   - binding: subnet, and the source bound to the frame's MAC and this
//     port by the neighbour table (l3.Neighbors.Bound4, which refreshes
//     the binding as agreeing ARP does); an unbound on-link source makes
//     the switch ask for it by ARP (at most once per retry interval), so
//     a host the switch had not bound yet is bound by its reply. A source
//     behind a static route must come from the MAC bound to one of the
//     route's next hops on the port. IPv6 sources must be static
//     neighbours so bound (there is no ND).
//
// On an L2 port, binding: a source MAC the MAC table refused to move to
// this port (move hold) or to learn on it (its port limit) is refused, and
// every IPv4 source and ARP sender is bound to the port it is first seen
// on, in a table of its own keyed and sized like the MAC table, until it
// ages out as MACs do (a live binding never moves); a port's share of it
// is the MAC table's port limit. When that table has no room for a new
// address, the frame passes unbound: a host that fills the table stops
// later addresses from being bound, never their owners from talking.
// IPv6 sources are not checked on L2 ports.
//
// Everything here runs per packet on the receiving worker: no lock, no
// allocation, one keyed-hash table look-up at most for binding.

// guardMode is a port's source guard as the forwarding stage reads it.
type guardMode uint8

const (
	guardOff guardMode = iota
	guardSubnet
	guardBinding
)

// portGuard is what a host port's source guard checks against.
type portGuard struct {
	mode  guardMode
	nets4 []guardNet4
	nets6 []guardNet6
	// via: a static route has a next hop on the port, so sources outside
	// its subnets may come through it (those the routes send back out of
	// it).
	via bool
}

// guardNet4 is one of a port's IPv4 subnets: addresses with src&mask ==
// net belong to it, those from lo to hi may be a host's, own is the
// switch's.
type guardNet4 struct{ net, mask, lo, hi, own uint32 }

// guardNet6 is one of a port's IPv6 subnets and the switch's address on it.
type guardNet6 struct {
	pf  netip.Prefix
	own netip.Addr
}

// newGuard builds the guard of a port from its config: its mode and the
// subnets of its addresses.
func newGuard(g config.SourceGuard, addrs []netip.Prefix) portGuard {
	var pg portGuard
	switch g {
	case config.GuardSubnet:
		pg.mode = guardSubnet
	case config.GuardBinding:
		pg.mode = guardBinding
	}
	for _, a := range addrs {
		if a.Addr().Is4() {
			bits := a.Bits()
			mask := ^uint32(0) << (32 - bits)
			if bits == 0 {
				mask = 0
			}
			own := be32(a.Addr().As4())
			n := guardNet4{net: own & mask, mask: mask, own: own}
			n.lo, n.hi = n.net, n.net|^mask
			if bits < 31 { // a /31 or /32 has no subnet or broadcast address (RFC 3021)
				n.lo, n.hi = n.lo+1, n.hi-1
			}
			pg.nets4 = append(pg.nets4, n)
			continue
		}
		pg.nets6 = append(pg.nets6, guardNet6{pf: a.Masked(), own: a.Addr()})
	}
	return pg
}

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
	if !ok {
		return false
	}
	for i := range nhs {
		nh := &nhs[i]
		if int(nh.Port) != in {
			continue
		}
		if g.mode != guardBinding {
			return true
		}
		if nh.IP.Is4() && r.nbrs.Bound4(be32(nh.IP.As4()), [6]byte(frame[6:12]), nh.Port, now) == l3.BoundHere {
			return true // from the next hop the route names, at its bound MAC
		}
	}
	return false
}

// onSubnet4 says whether the IPv4 address src is on one of the port's
// subnets (on) and, if so, whether a host there may send from it (ok):
// not the subnet's own address or broadcast, not the switch's.
func (g *portGuard) onSubnet4(src uint32) (on, ok bool) {
	for i := range g.nets4 {
		n := &g.nets4[i]
		if src&n.mask == n.net {
			return true, src >= n.lo && src <= n.hi && src != n.own
		}
	}
	return false, false
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
	nhs, ok := w.s.router.routes.Lookup6(src)
	if !ok {
		return false
	}
	for i := range nhs {
		nh := &nhs[i]
		if int(nh.Port) != in {
			continue
		}
		if g.mode != guardBinding {
			return true
		}
		if nh.IP.Is6() {
			ip := nh.IP.As16()
			if w.s.router.nbrs.Bound6(&ip, [6]byte(frame[6:12]), nh.Port) == l3.BoundHere {
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
