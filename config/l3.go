package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// RouteEntry is a route with its next hops resolved to ports.
type RouteEntry struct {
	Prefix   netip.Prefix
	NextHops []NextHop
}

// NextHop is a next hop and the port it is reached through.
type NextHop struct {
	IP   netip.Addr
	Port int
}

// NeighborEntry is a static neighbor resolved to its port.
type NeighborEntry struct {
	IP   netip.Addr
	MAC  net.HardwareAddr
	Port int
}

// RouteTable is the routes with each next hop resolved to the port whose
// subnet holds it (validation has checked that one does).
func (c *Config) RouteTable() []RouteEntry {
	var out []RouteEntry
	for _, r := range c.Routes {
		e := RouteEntry{Prefix: r.Prefix}
		for _, ip := range r.Via {
			port, _ := c.portOf(ip)
			e.NextHops = append(e.NextHops, NextHop{IP: ip, Port: port})
		}
		out = append(out, e)
	}
	return out
}

// NeighborTable is the static neighbours, each resolved to the port whose
// subnet holds it (validation has checked that one does).
func (c *Config) NeighborTable() []NeighborEntry {
	var out []NeighborEntry
	for _, n := range c.Neighbors {
		port, _ := c.portOf(n.IP)
		out = append(out, NeighborEntry{IP: n.IP, MAC: net.HardwareAddr(n.MAC), Port: port})
	}
	return out
}

// portOf is the port with a subnet holding ip (the ports' subnets do not
// overlap).
func (c *Config) portOf(ip netip.Addr) (int, bool) {
	for i, p := range c.Ports {
		for _, a := range p.Addrs {
			if a.Contains(ip) {
				return i, true
			}
		}
	}
	return 0, false
}

// validateL3 checks the ports' addresses against each other, and that
// every route's next hop and every static neighbour is on a port's subnet.
func (c *Config) validateL3() error {
	type subnet struct {
		pf      netip.Prefix
		port, j int
	}
	var subnets []subnet
	own := map[netip.Addr]string{}
	for i, p := range c.Ports {
		for j, a := range p.Addrs {
			f := fmt.Sprintf("ports[%d].addr[%d]", i, j)
			for _, o := range subnets {
				if o.pf.Masked().Overlaps(a.Masked()) {
					return fmt.Errorf("%s: %s overlaps ports[%d].addr[%d] %s (each L3 port is a subnet of its own)", f, a, o.port, o.j, o.pf)
				}
			}
			own[a.Addr()] = f
			subnets = append(subnets, subnet{a, i, j})
		}
	}
	if len(c.Routes) > 0 && len(subnets) == 0 {
		return errors.New("routes: routes need L3 ports (give the ports facing next hops an addr:)")
	}
	seen := map[netip.Prefix]int{}
	for i, r := range c.Routes {
		f := fmt.Sprintf("routes[%d]", i)
		pf := r.Prefix
		if !pf.IsValid() {
			return fmt.Errorf("%s.prefix: missing (write e.g. 10.1.2.0/24)", f)
		}
		if pf != pf.Masked() {
			return fmt.Errorf("%s.prefix: %s has host bits set (write %s)", f, pf, pf.Masked())
		}
		if j, dup := seen[pf]; dup {
			return fmt.Errorf("%s.prefix: %s is already routes[%d]", f, pf, j)
		}
		seen[pf] = i
		if len(r.Via) == 0 {
			return fmt.Errorf("%s.via: no next hop (list the neighbours' addresses on connected subnets)", f)
		}
		for j, ip := range r.Via {
			if !ip.IsValid() {
				return fmt.Errorf("%s.via[%d]: missing (a neighbour's address on a connected subnet)", f, j)
			}
			if ip.Is4() != pf.Addr().Is4() {
				return fmt.Errorf("%s.via[%d]: %q is not an %s address", f, j, ip.String(), map[bool]string{true: "IPv4", false: "IPv6"}[pf.Addr().Is4()])
			}
			if w, mine := own[ip]; mine {
				return fmt.Errorf("%s.via[%d]: %s is this switch's own address (%s)", f, j, ip, w)
			}
			if _, ok := c.portOf(ip); !ok {
				return fmt.Errorf("%s.via[%d]: %s is on no connected subnet (no port has an addr: covering it)", f, j, ip)
			}
			for _, other := range r.Via[:j] {
				if other == ip {
					return fmt.Errorf("%s.via[%d]: %s listed twice", f, j, ip)
				}
			}
		}
	}
	for i, n := range c.Neighbors {
		f := fmt.Sprintf("neighbors[%d]", i)
		if !n.IP.IsValid() {
			return fmt.Errorf("%s.ip: missing (the neighbour's address, e.g. 10.255.0.1)", f)
		}
		if _, ok := c.portOf(n.IP); !ok {
			return fmt.Errorf("%s.ip: %s is on no connected subnet", f, n.IP)
		}
		if len(n.MAC) == 0 {
			return fmt.Errorf("%s.mac: missing (the neighbour's unicast Ethernet address, e.g. \"02:00:00:00:01:01\")", f)
		}
	}
	return nil
}
