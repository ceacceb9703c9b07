package l3

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
)

// MaxRoutes is the most routes NewTable takes.
const MaxRoutes = 1 << 24

// NextHop is one way out of a route.
type NextHop struct {
	// IP is the neighbour to send to, of the route's family; the zero Addr
	// for a connected route (send to the packet's destination itself).
	IP netip.Addr
	// Port is the egress port.
	Port uint16
}

// Route sends the destinations of Prefix to one of NextHops. Several next
// hops make an ECMP group (Pick chooses one per flow); a next hop listed
// twice gets twice the share of flows.
type Route struct {
	Prefix   netip.Prefix
	NextHops []NextHop
}

// Table is a read-only routing table for IPv4 and IPv6. It is built once
// by NewTable and never changes: any goroutine may call its methods at
// once, without locks. To change the routes, build a new Table and publish
// it (an atomic.Pointer, say); lookups in flight finish on the old one.
//
// Each family's prefixes are flattened into the sorted list of boundaries
// of the address ranges over which the longest match does not change, with
// the route of each range. A prefix adds at most two boundaries, so n
// routes give at most 2n+1 ranges, and a lookup is one binary search over
// them: about log2(2n) steps whatever the prefix lengths.
type Table struct {
	routes []Route // in the order given; NextHops share one backing array

	b4 []uint32 // starts of the IPv4 ranges, ascending; b4[0] == 0
	r4 []int32  // route of each range, -1 for none
	b6 []u128   // the same for IPv6
	r6 []int32
}

// NewTable checks routes and builds their table. An error names the route
// (its index in routes and its prefix) and says what to fix: an invalid
// prefix or one with host bits set, no next hops, a next hop of the other
// family or with a zone, a prefix given twice.
func NewTable(routes []Route) (*Table, error) {
	if len(routes) > MaxRoutes {
		return nil, fmt.Errorf("routes: %d routes, more than the %d a table holds (aggregate prefixes)", len(routes), MaxRoutes)
	}
	n := 0
	for i, r := range routes {
		if err := checkRoute(i, r); err != nil {
			return nil, err
		}
		n += len(r.NextHops)
	}
	t := &Table{routes: make([]Route, len(routes))}
	hops := make([]NextHop, 0, n)
	for i, r := range routes {
		a := len(hops)
		hops = append(hops, r.NextHops...)
		// A full slice expression: appending to one route's next hops
		// can never write over another's.
		t.routes[i] = Route{Prefix: r.Prefix, NextHops: hops[a:len(hops):len(hops)]}
	}

	var v4, v6 []span
	for i, r := range t.routes {
		s := spanOf(r.Prefix, int32(i))
		if r.Prefix.Addr().Is4() {
			v4 = append(v4, s)
		} else {
			v6 = append(v6, s)
		}
	}
	for _, f := range [2]*[]span{&v4, &v6} {
		if j, k, dup := sortSpans(*f); dup {
			return nil, fmt.Errorf("routes[%d] and routes[%d]: duplicate prefix %s (give it once, with all its next hops)",
				min(j, k), max(j, k), routes[j].Prefix)
		}
	}
	b, r := flatten(v4)
	t.b4 = make([]uint32, len(b))
	for i, x := range b {
		t.b4[i] = uint32(x.hi >> 32) // IPv4 ranges start on whole addresses (the top 32 bits)
	}
	t.r4 = r
	t.b6, t.r6 = flatten(v6)
	return t, nil
}

func checkRoute(i int, r Route) error {
	p := r.Prefix
	if !p.IsValid() {
		return fmt.Errorf("routes[%d].Prefix: invalid prefix %v (set an address and a length, e.g. 10.0.0.0/24 or 2001:db8::/32)", i, p)
	}
	if m := p.Masked(); m != p {
		return fmt.Errorf("routes[%d].Prefix: %s has bits set beyond its length (write %s)", i, p, m)
	}
	if len(r.NextHops) == 0 {
		return fmt.Errorf("routes[%d] (%s).NextHops: none (give at least one next hop)", i, p)
	}
	for j, nh := range r.NextHops {
		if !nh.IP.IsValid() {
			continue // connected
		}
		if nh.IP.Zone() != "" {
			return fmt.Errorf("routes[%d] (%s).NextHops[%d].IP: %s has a zone (remove it; Port names the link)", i, p, j, nh.IP)
		}
		if nh.IP.Is4() != p.Addr().Is4() {
			return fmt.Errorf("routes[%d] (%s).NextHops[%d].IP: %s is not of the prefix's family (give a next hop of the same family, or none for a connected route)", i, p, j, nh.IP)
		}
		if nh.IP.IsUnspecified() {
			return fmt.Errorf("routes[%d] (%s).NextHops[%d].IP: %s is unspecified (leave IP unset for a connected route)", i, p, j, nh.IP)
		}
	}
	return nil
}

// Routes returns a copy of the routes in the order NewTable got them (for
// metrics and operator tools; it allocates).
func (t *Table) Routes() []Route {
	out := make([]Route, len(t.routes))
	for i, r := range t.routes {
		out[i] = Route{Prefix: r.Prefix, NextHops: slices.Clone(r.NextHops)}
	}
	return out
}

// Lookup4 returns the next hops of the longest prefix that holds dst (an
// IPv4 address as a big-endian uint32), or ok false when no route does.
// nhs is the table's own slice (never empty): read it, do not change it.
// It allocates nothing.
func (t *Table) Lookup4(dst uint32) (nhs []NextHop, ok bool) {
	b := t.b4
	if len(b) == 0 {
		return nil, false
	}
	// The last range starting at or below dst; b[0] == 0 <= dst.
	lo, n := 0, len(b)
	for n > 1 {
		half := n >> 1
		// Without a branch (a branch here is mispredicted half the
		// time): le is 1 if b[lo+half] <= dst, else 0.
		le := 1 ^ (uint64(dst)-uint64(b[lo+half]))>>63
		lo += half & -int(le)
		n -= half
	}
	r := t.r4[lo]
	if r < 0 {
		return nil, false
	}
	return t.routes[r].NextHops, true
}

// Lookup6 is Lookup4 for an IPv6 address (16 bytes in network order).
func (t *Table) Lookup6(dst *[16]byte) (nhs []NextHop, ok bool) {
	b := t.b6
	if len(b) == 0 {
		return nil, false
	}
	hi, lo64 := binary.BigEndian.Uint64(dst[:8]), binary.BigEndian.Uint64(dst[8:])
	lo, n := 0, len(b)
	for n > 1 {
		half := n >> 1
		x := &b[lo+half]
		// le is 1 if x <= dst (no borrow in dst - x), else 0.
		_, br := bits.Sub64(lo64, x.lo, 0)
		_, br = bits.Sub64(hi, x.hi, br)
		lo += half & -int(1^br)
		n -= half
	}
	r := t.r6[lo]
	if r < 0 {
		return nil, false
	}
	return t.routes[r].NextHops, true
}

// u128 is an address as a 128-bit number; IPv4 addresses are its top 32
// bits (so a /n is a /n of either family, and all IPv4 range starts have
// the low 96 bits zero).
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// next returns a+1; wrapped is true when a was the last address.
func (a u128) next() (u128, bool) {
	a.lo++
	if a.lo == 0 {
		a.hi++
		return a, a.hi == 0
	}
	return a, false
}

// span is a prefix as the range first..last of addresses it holds.
type span struct {
	first, last u128
	bits        int
	route       int32
}

func spanOf(p netip.Prefix, route int32) span {
	var a u128
	if p.Addr().Is4() {
		b := p.Addr().As4()
		a.hi = uint64(binary.BigEndian.Uint32(b[:])) << 32
	} else {
		b := p.Addr().As16()
		a.hi, a.lo = binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	}
	n := p.Bits()
	// host: ones in the bits past the prefix length.
	var host u128
	switch {
	case n == 0:
		host = u128{^uint64(0), ^uint64(0)}
	case n <= 64:
		host = u128{^uint64(0) >> n, ^uint64(0)}
	default:
		host = u128{0, ^uint64(0) >> (n - 64)}
	}
	return span{first: a, last: u128{a.hi | host.hi, a.lo | host.lo}, bits: n, route: route}
}

// sortSpans orders s by first address, containing prefixes before the
// prefixes they contain, and reports a prefix given twice (as the indices
// of its two routes).
func sortSpans(s []span) (int, int, bool) {
	slices.SortFunc(s, func(a, b span) int {
		if a.first != b.first {
			if a.first.less(b.first) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.bits, b.bits)
	})
	for i := 1; i < len(s); i++ {
		if s[i].first == s[i-1].first && s[i].bits == s[i-1].bits {
			return int(s[i-1].route), int(s[i].route), true
		}
	}
	return 0, 0, false
}

// flatten turns sorted, distinct prefixes (which nest or are disjoint)
// into range starts and the route of each range (-1: none). It sweeps the
// prefixes in order with a stack of the prefixes that hold the current
// address, innermost on top.
func flatten(s []span) ([]u128, []int32) {
	if len(s) == 0 {
		return nil, nil
	}
	b := make([]u128, 0, 2*len(s)+1)
	r := make([]int32, 0, 2*len(s)+1)
	emit := func(at u128, route int32) {
		n := len(b)
		if n > 0 && b[n-1] == at {
			// Two changes at one address: the later one wins.
			r[n-1] = route
			if n > 1 && r[n-2] == route {
				b, r = b[:n-1], r[:n-1]
			}
			return
		}
		if n > 0 && r[n-1] == route {
			return
		}
		b = append(b, at)
		r = append(r, route)
	}
	var stack []span
	pop := func() {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		outer := int32(-1)
		if len(stack) > 0 {
			outer = stack[len(stack)-1].route
		}
		if at, wrapped := top.last.next(); !wrapped {
			emit(at, outer)
		}
	}
	emit(u128{}, -1)
	for _, x := range s {
		for len(stack) > 0 && stack[len(stack)-1].last.less(x.first) {
			pop()
		}
		stack = append(stack, x)
		emit(x.first, x.route)
	}
	for len(stack) > 0 {
		pop()
	}
	return slices.Clip(b), slices.Clip(r)
}
