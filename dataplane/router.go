package dataplane

import (
	"encoding/binary"
	"net/netip"

	"github.com/gswitch/gswitch/dataplane/l3"
	"github.com/gswitch/gswitch/pkt"
)

// L3 configures the switch's routing: static routes over its L3 ports'
// connected subnets, and static neighbours.
type L3 struct {
	Routes    []l3.Route   // static routes; each next hop names its port
	Neighbors []L3Neighbor // static ARP/ND entries
	ARPTTL    int64        // how long a neighbour learnt by ARP is kept (0 = 60 s)
	ARPRetry  int64        // at most one ARP request per unresolved next hop per this long (0 = 100 ms)
}

// L3Neighbor is a static neighbour.
type L3Neighbor struct {
	IP   netip.Addr
	MAC  [6]byte
	Port int
}

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

// newRouter builds the routes and neighbours of ports from c; nil for an
// L2 switch (no port has an address, and no route is configured).
func newRouter(ports []*Port, c L3) (*router, error) {
	var routes []l3.Route
	r := &router{own4: map[uint32]int{}, retry: c.ARPRetry}
	if r.retry == 0 {
		r.retry = 100e6
	}
	for i, p := range ports {
		for _, a := range p.addrs {
			routes = append(routes, l3.Route{Prefix: a.Masked(), NextHops: []l3.NextHop{{Port: uint16(i)}}})
			if a.Addr().Is4() {
				r.own4[be32(a.Addr().As4())] = i
			}
		}
	}
	if len(routes) == 0 && len(c.Routes) == 0 {
		return nil, nil // an L2 switch
	}
	routes = append(routes, c.Routes...)
	var err error
	if r.routes, err = l3.NewTable(routes); err != nil {
		return nil, err
	}
	ttl := c.ARPTTL
	if ttl == 0 {
		ttl = 60e9
	}
	if r.nbrs, err = l3.NewNeighbors(4096, ttl, l3.Ports(len(ports))); err != nil {
		return nil, err
	}
	for _, n := range c.Neighbors {
		if err := r.nbrs.Static(n.IP, n.MAC, uint16(n.Port)); err != nil {
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
