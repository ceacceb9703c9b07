package topo

import (
	"fmt"
	"net/netip"

	"gopkg.in/yaml.v3"
)

// validate checks the references between sections and the addresses.
func (t *Topology) validate() error {
	if t.MetricsBase < 1024 || t.MetricsBase+len(t.Switches) > 65535 {
		return fmt.Errorf("metrics_base: %d out of range [1024, %d] (switch i serves metrics on 127.0.0.1:metrics_base+i)", t.MetricsBase, 65535-len(t.Switches))
	}
	ids := map[int]string{}
	for _, s := range t.Switches {
		if other, dup := ids[s.ID]; dup {
			return fmt.Errorf("switches.%s.id: %d is already the id of switches.%s (ids must be unique; without id a switch takes its position in the file)", s.Name, s.ID, other)
		}
		ids[s.ID] = s.Name
	}
	hostLink := map[string]int{}
	swLinks := map[string]int{}
	for _, l := range t.Links {
		path := fmt.Sprintf("links[%d]", l.Index)
		for _, end := range []struct{ key, node, name string }{{"a", l.A, l.NameA}, {"b", l.B, l.NameB}} {
			if end.node == "" {
				return fmt.Errorf("%s.%s: missing (name a switch or host)", path, end.key)
			}
			if t.switches[end.node] == nil && t.hosts[end.node] == nil {
				return fmt.Errorf("%s.%s: %q is not a switch or host", path, end.key, end.node)
			}
		}
		if l.A == l.B {
			return fmt.Errorf("%s: a and b are both %q (a link joins two different nodes)", path, l.A)
		}
		if t.hosts[l.A] != nil && t.hosts[l.B] != nil {
			return fmt.Errorf("%s: %s and %s are both hosts (a link joins a host to a switch, or two switches)", path, l.A, l.B)
		}
		for _, end := range []struct {
			key, node, name string
			port            *yaml.Node
		}{{"a", l.A, l.NameA, l.APort}, {"b", l.B, l.NameB, l.BPort}} {
			if t.hosts[end.node] == nil {
				swLinks[end.node]++
				if end.name != "" && !portNameRE.MatchString(end.name) {
					return fmt.Errorf("%s.name_%s: %q is not a valid port name (1-32 characters: letters, digits, _ . : -)", path, end.key, end.name)
				}
				continue
			}
			if end.name != "" {
				return fmt.Errorf("%s.name_%s: %s is host %s (port names are for switch ends)", path, end.key, path+"."+end.key, end.node)
			}
			if end.port != nil {
				return fmt.Errorf("%s.%s_port: %s is host %s (port keys are for switch ends)", path, end.key, path+"."+end.key, end.node)
			}
			if j, dup := hostLink[end.node]; dup {
				return fmt.Errorf("hosts.%s: linked twice (links[%d] and links[%d]; a host has exactly one link)", end.node, j, l.Index)
			}
			hostLink[end.node] = l.Index
			if h := t.hosts[end.node]; h.MTU > l.MTU {
				return fmt.Errorf("hosts.%s.mtu: %d is larger than the mtu of its link %s (%d); frames that big would be dropped", h.Name, h.MTU, path, l.MTU)
			}
		}
	}
	for _, h := range t.Hosts {
		if _, ok := hostLink[h.Name]; !ok {
			return fmt.Errorf("hosts.%s: no link (link it to a switch in links:)", h.Name)
		}
	}
	for _, s := range t.Switches {
		switch n := swLinks[s.Name]; {
		case n == 0:
			return fmt.Errorf("switches.%s: no links (a switch needs at least one port; link it or remove it)", s.Name)
		case n > maxPorts:
			return fmt.Errorf("switches.%s: %d links, at most %d ports per switch", s.Name, n, maxPorts)
		}
	}
	if err := t.validateMachines(); err != nil {
		return err
	}
	if !t.TimescaleAuto { // auto's K is checked once chosen (WithTimescale)
		if err := t.checkTimescale(t.Timescale); err != nil {
			return err
		}
	}
	if err := t.checkTransports(); err != nil {
		return err
	}
	if t.Mode == ModeL2 {
		return t.validateL2()
	}
	return t.validateL3(hostLink)
}

// maxPorts is the most ports a switch may have (a MAC has one byte for the port).
const maxPorts = 255

func (t *Topology) validateL2() error {
	first := t.Hosts[0]
	seen := map[netip.Addr]string{}
	for _, h := range t.Hosts {
		path := "hosts." + h.Name
		if h.Gateway.IsValid() {
			return fmt.Errorf("%s.gateway: only in mode l3 (in l2 all hosts share one subnet and need no gateway)", path)
		}
		if h.Addr.Masked() != first.Addr.Masked() {
			return fmt.Errorf("%s.addr: %s is not on %s, the subnet of hosts.%s (in mode l2 all hosts share one subnet)", path, h.Addr, first.Addr.Masked(), first.Name)
		}
		if other, dup := seen[h.Addr.Addr()]; dup {
			return fmt.Errorf("%s.addr: %s is already the address of hosts.%s", path, h.Addr.Addr(), other)
		}
		seen[h.Addr.Addr()] = h.Name
	}
	return nil
}

func (t *Topology) validateL3(hostLink map[string]int) error {
	type subnet struct {
		host string // the host on it
		sw   string
	}
	subnets := map[netip.Prefix]*subnet{}
	var order []netip.Prefix
	addrs := map[netip.Addr]string{}
	for _, h := range t.Hosts {
		path := "hosts." + h.Name
		if other, dup := addrs[h.Addr.Addr()]; dup {
			return fmt.Errorf("%s.addr: %s is already the address of hosts.%s", path, h.Addr.Addr(), other)
		}
		addrs[h.Addr.Addr()] = h.Name
		l := t.Links[hostLink[h.Name]]
		sw := l.A
		if sw == h.Name {
			sw = l.B
		}
		net := h.Addr.Masked()
		for _, p := range order {
			if p != net && p.Overlaps(net) {
				return fmt.Errorf("%s.addr: subnet %s overlaps %s of hosts.%s (host subnets must not overlap)", path, net, p, subnets[p].host)
			}
		}
		if sn := subnets[net]; sn != nil {
			if sn.sw != sw {
				return fmt.Errorf("%s.addr: subnet %s is already served by switch %s (hosts.%s); a host subnet belongs to one switch, give this host another subnet", path, net, sn.sw, sn.host)
			}
			// A routed access port: the switch port is the host's gateway
			// and the subnet's only port, so two hosts cannot share it.
			return fmt.Errorf("%s.addr: %s shares %s with %s on %s: in l3 mode each host port is a subnet of its own (give %s e.g. %s)", path, h.Addr, net, sn.host, sw, h.Name, t.freeSubnet(h.Addr))
		}
		subnets[net] = &subnet{host: h.Name, sw: sw}
		order = append(order, net)
		if !h.Gateway.IsValid() {
			h.Gateway = lastAddr(net).Prev()
		}
		if !net.Contains(h.Gateway) || h.Gateway == net.Addr() || h.Gateway == lastAddr(net) {
			return fmt.Errorf("%s.gateway: %s is not a usable address of the host's subnet %s", path, h.Gateway, net)
		}
	}
	for _, h := range t.Hosts {
		if other, clash := addrs[h.Gateway]; clash {
			return fmt.Errorf("hosts.%s.gateway: %s is the address of hosts.%s (the gateway is the switch's address; pick another)", h.Name, h.Gateway, other)
		}
	}
	fabric := 0
	for _, l := range t.Links {
		if t.switches[l.A] != nil && t.switches[l.B] != nil {
			fabric++
		}
	}
	if fabric > 0 {
		for _, p := range order {
			if p.Overlaps(t.FabricPool) {
				return fmt.Errorf("fabric_pool: %s overlaps %s, the subnet of hosts.%s (pick a pool apart from the host subnets)", t.FabricPool, p, subnets[p].host)
			}
		}
		if size := uint64(1) << (32 - t.FabricPool.Bits()); size < 2*uint64(fabric) {
			return fmt.Errorf("fabric_pool: %s holds %d /31 subnet(s), the topology has %d switch-switch links (use a larger pool)", t.FabricPool, size/2, fabric)
		}
	}
	return nil
}

// freeSubnet suggests an address for a host whose subnet is taken: the
// same host part in the first subnet of the same length, after the
// host's, that no host subnet and not the fabric pool overlaps.
func (t *Topology) freeSubnet(a netip.Prefix) netip.Prefix {
	size := uint32(1) << (32 - a.Bits())
	off := addrDiff(a.Addr(), a.Masked().Addr())
	net := a.Masked().Addr()
	for i := 0; i < 1<<16; i++ {
		next := addAddr(net, size)
		if next.Compare(net) <= 0 { // wrapped around
			break
		}
		net = next
		cand := netip.PrefixFrom(net, a.Bits())
		free := !cand.Overlaps(t.FabricPool)
		for _, h := range t.Hosts {
			if h.Addr.Masked().Overlaps(cand) {
				free = false
			}
		}
		if free {
			return netip.PrefixFrom(addAddr(net, off), a.Bits())
		}
	}
	return netip.PrefixFrom(addAddr(a.Masked().Addr(), size), a.Bits())
}
