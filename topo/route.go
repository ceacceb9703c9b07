package topo

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// checkTree refuses loops and disconnected switches in l2 mode: a learning
// switch floods, and a loop would flood forever.
func (t *Topology) checkTree() error {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		if parent[x] == "" || parent[x] == x {
			return x
		}
		r := find(parent[x])
		parent[x] = r
		return r
	}
	for _, l := range t.Links {
		if t.switches[l.A] == nil || t.switches[l.B] == nil {
			continue
		}
		ra, rb := find(l.A), find(l.B)
		if ra == rb {
			return fmt.Errorf("links[%d]: %s-%s closes a loop of switches (mode l2 needs a tree of switches: a learning switch floods, and a loop would flood forever)", l.Index, l.A, l.B)
		}
		parent[ra] = rb
	}
	root := find(t.Switches[0].Name)
	for _, s := range t.Switches[1:] {
		if find(s.Name) != root {
			return fmt.Errorf("switches.%s: not connected to %s (mode l2 needs one tree of switches)", s.Name, t.Switches[0].Name)
		}
	}
	return nil
}

// route computes the l3 static routes and neighbours: every switch routes
// each host subnet it is not connected to via every neighbour on a shortest
// path (hop count) to the subnet's switch, in the order of the next-hop
// switches' ids.
func (t *Topology) route(p *Plan, swPlan map[string]*SwitchPlan, hostPlan map[string]*HostPlan) error {
	type subnet struct {
		prefix netip.Prefix
		sw     string
		host   string // first host on it
	}
	var subnets []subnet
	seen := map[netip.Prefix]bool{}
	for _, h := range p.Hosts {
		n := h.Addr.Masked()
		if !seen[n] {
			seen[n] = true
			subnets = append(subnets, subnet{n, h.Switch, h.Name})
		}
	}
	for _, h := range p.Hosts {
		for _, s := range subnets {
			if s.prefix != h.Addr.Masked() {
				h.Routes = append(h.Routes, Route{Prefix: s.prefix, Via: []netip.Addr{h.Gateway}})
			}
		}
	}
	dist := map[string]map[string]int{} // target switch -> switch -> hops
	bfs := func(from string) map[string]int {
		d := map[string]int{from: 0}
		queue := []string{from}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for _, port := range swPlan[x].Ports {
				if t.switches[port.Peer] != nil {
					if _, ok := d[port.Peer]; !ok {
						d[port.Peer] = d[x] + 1
						queue = append(queue, port.Peer)
					}
				}
			}
		}
		return d
	}
	for _, sn := range subnets {
		if dist[sn.sw] == nil {
			dist[sn.sw] = bfs(sn.sw)
		}
	}
	for _, sp := range p.Switches {
		for _, port := range sp.Ports {
			sp.Neighbors = append(sp.Neighbors, Neighbor{IP: port.PeerAddr, MAC: port.PeerMAC})
		}
		for _, sn := range subnets {
			if sn.sw == sp.Name {
				continue
			}
			d := dist[sn.sw]
			hops, ok := d[sp.Name]
			if !ok {
				return fmt.Errorf("hosts.%s: no path from %s to %s (switch %s serves it; link the switches)", sn.host, sp.Name, sn.prefix, sn.sw)
			}
			var next []*PortPlan
			for _, port := range sp.Ports {
				if t.switches[port.Peer] == nil {
					continue
				}
				if pd, ok := d[port.Peer]; ok && pd == hops-1 {
					next = append(next, port)
				}
			}
			// Equal-cost next hops in the order of the next-hop switches (id,
			// then name, then link order), the same on every switch: the
			// switches pick from a group by a symmetric, unseeded flow hash,
			// so a flow and its reverse cross the same switches only when the
			// groups of both directions list the switches in one order.
			slices.SortStableFunc(next, func(a, b *PortPlan) int {
				sa, sb := t.switches[a.Peer], t.switches[b.Peer]
				return cmp.Or(cmp.Compare(sa.ID, sb.ID), cmp.Compare(sa.Name, sb.Name), cmp.Compare(a.Link, b.Link))
			})
			r := Route{Prefix: sn.prefix}
			for _, port := range next {
				r.Via = append(r.Via, port.PeerAddr)
			}
			sp.Routes = append(sp.Routes, r)
		}
	}
	return nil
}

// tiers gives each switch its tier: 0 for a switch with a host, then one
// more per hop away from the nearest such switch (a leaf-spine's spines are
// tier 1). A switch no host reaches is tier 0.
func (t *Topology) tiers() map[string]int {
	tier := map[string]int{}
	var q []string
	for _, l := range t.Links {
		for _, e := range [2][2]string{{l.A, l.B}, {l.B, l.A}} {
			if _, h := t.hosts[e[0]]; h {
				if _, sw := t.switches[e[1]]; sw {
					if _, seen := tier[e[1]]; !seen {
						tier[e[1]] = 0
						q = append(q, e[1])
					}
				}
			}
		}
	}
	for len(q) > 0 {
		n := q[0]
		q = q[1:]
		for _, l := range t.Links {
			for _, e := range [2][2]string{{l.A, l.B}, {l.B, l.A}} {
				if e[0] != n {
					continue
				}
				if _, sw := t.switches[e[1]]; !sw {
					continue
				}
				if _, seen := tier[e[1]]; !seen {
					tier[e[1]] = tier[n] + 1
					q = append(q, e[1])
				}
			}
		}
	}
	return tier
}
