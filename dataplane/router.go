package dataplane

import (
	"encoding/binary"
	"fmt"

	"github.com/gswitch/gswitch/config"

	"github.com/gswitch/gswitch/dataplane/l3"
	"github.com/gswitch/gswitch/pkt"
)

// The neighbour cache's timers.
const (
	arpTTL   = 60e9  // how long a neighbour learnt by ARP is kept (ns)
	arpRetry = 100e6 // at most one ARP request per unresolved next hop per this long (ns)
)

// L3 reports whether the port routes (has addresses) rather than switches.
func (p *Port) L3() bool { return len(p.addrs) > 0 }

// router is the switch's L3 state: the routes (connected subnets and
// static routes, read-only once built) and the neighbour cache (lock-free,
// written by ARP on any receiving worker).
type router struct {
	routes *l3.Table
	nbrs   *l3.Neighbors
	own4   map[uint32]int // the switch's IPv4 addresses -> port
	retry  int64
}

// Emission counter kinds of the frames the L3 stage builds (GC types are
// 1 to 254).
const (
	arpKind  = 0   // ARP requests
	icmpKind = 255 // ICMP errors
)

// newRouter builds the routes of ports (their connected subnets and the
// static routes) and their static neighbours, as the config resolved them
// to ports; nil for an L2 switch (no port has an address, and no route is
// configured).
func newRouter(ports []*Port, static []config.RouteEntry, nbrs []config.NeighborEntry) (*router, error) {
	var routes []l3.Route
	r := &router{own4: map[uint32]int{}, retry: arpRetry}
	for i, p := range ports {
		for _, a := range p.addrs {
			routes = append(routes, l3.Route{Prefix: a.Masked(), NextHops: []l3.NextHop{{Port: uint16(i)}}})
			if a.Addr().Is4() {
				r.own4[be32(a.Addr().As4())] = i
			}
		}
	}
	if len(routes) == 0 && len(static) == 0 {
		return nil, nil // an L2 switch
	}
	for _, sr := range static {
		lr := l3.Route{Prefix: sr.Prefix}
		for _, nh := range sr.NextHops {
			lr.NextHops = append(lr.NextHops, l3.NextHop{IP: nh.IP, Port: uint16(nh.Port)})
		}
		routes = append(routes, lr)
	}
	var err error
	if r.routes, err = l3.NewTable(routes); err != nil {
		return nil, err
	}
	if r.nbrs, err = l3.NewNeighbors(4096, arpTTL, l3.Ports(len(ports))); err != nil {
		return nil, err
	}
	for _, n := range nbrs {
		if len(n.MAC) != 6 {
			return nil, fmt.Errorf("static neighbour %s: MAC %v is not 6 bytes", n.IP, n.MAC)
		}
		if err := r.nbrs.Static(n.IP, [6]byte(n.MAC), uint16(n.Port)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func be32(b [4]byte) uint32 { return binary.BigEndian.Uint32(b[:]) }

// mac48 reads a 6-byte MAC as a number (0 if m is not 6 bytes).
func mac48(m []byte) uint64 {
	if len(m) != 6 {
		return 0
	}
	return pkt.DstMAC(m[:6:6])
}
