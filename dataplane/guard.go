package dataplane

import (
	"encoding/binary"
	"net/netip"

	"github.com/gswitch/gswitch/config"
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
// This file holds what a port's guard checks against; the checks, which
// run per packet on the receiving worker (no lock, no allocation, one
// keyed-hash table look-up at most for binding), are in guardcheck.go.

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
			mask := ^uint32(0) << (32 - bits) // 0 for a /0
			b := a.Addr().As4()
			own := binary.BigEndian.Uint32(b[:])
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
