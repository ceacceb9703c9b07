package topo

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/gswitch/gswitch/units"
	"gopkg.in/yaml.v3"
)

// Port roles in the gswitchd config.
const (
	RoleHost   = "host"
	RoleFabric = "fabric"
)

// HostInterface is the name of every host's interface inside its namespace.
const HostInterface = "eth0"

// Plan is everything Up makes for a topology, derived from the file alone.
type Plan struct {
	Name string
	Mode string
	// Timescale is the fabric's K, written into every switch's config
	// (TimescaleAuto: the file asks Up to choose it; the plan is at 1).
	Timescale     units.Timescale
	TimescaleAuto bool
	// Namespaces are the hosts' network namespaces, in host order.
	Namespaces []string
	Hosts      []*HostPlan
	Switches   []*SwitchPlan
	// Veths are the links, in link order.
	Veths []*VethPlan
	// Targets is the Prometheus file_sd list, one entry per switch.
	Targets []Target
}

// HostPlan is a host's namespace and interface.
type HostPlan struct {
	Name      string
	Namespace string
	Interface string // HostInterface
	MAC       net.HardwareAddr
	MTU       int
	Addr      netip.Prefix
	// Gateway and GatewayMAC (l3) are the switch port the host is linked to;
	// the host gets a static neighbour entry for it.
	Gateway    netip.Addr
	GatewayMAC net.HardwareAddr
	// Routes are the host's routes to the other host subnets (l3); no default route.
	Routes []Route
	CC     string
	// RtoMin is the least TCP retransmission timeout the host's routes
	// carry, on this machine's clock (the file's rto_min x K, in whole
	// milliseconds; 0: the kernel's); QuickAck turns delayed ACKs off on them.
	RtoMin   time.Duration
	QuickAck bool
	// Switch and Port are where the host is linked.
	Switch, Port string
	// Link is the index of the host's link in links:.
	Link int
}

// SwitchPlan is one gswitchd.
type SwitchPlan struct {
	Name    string
	Index   int
	ID      int
	Metrics string // host:port of its metrics endpoint
	Ports   []*PortPlan
	// Routes and Neighbors (l3) are the switch's static routes and ARP entries.
	Routes    []Route
	Neighbors []Neighbor
	// Config is the gswitchd YAML.
	Config []byte
}

// PortPlan is one switch port: the root-namespace end of a veth.
type PortPlan struct {
	Index     int // from 1, in link order
	Switch    string
	Name      string
	Interface string
	MAC       net.HardwareAddr
	MTU       int
	// Role is the port's role: RoleHost or RoleFabric (l3; a port map's role: wins).
	Role  string
	Rate  string // "" = unlimited
	Delay time.Duration
	// Addr (l3) is the switch's address on the link: the gateway on a host
	// port, the /31 address on a switch-switch port.
	Addr netip.Prefix
	// Peer is the node at the other end; PeerAddr and PeerMAC its address and MAC.
	Peer     string
	PeerAddr netip.Addr
	PeerMAC  net.HardwareAddr
	Link     int
	// Uplink says the port faces a switch of a higher tier (tier 0:
	// switches with hosts, then one more per hop): gswitchd's port key
	// uplink, which mechanisms with up-down pauses (BFC) default to.
	Uplink bool
	// Keys are the merged gswitchd port keys from the file (may be nil).
	Keys *yaml.Node
}

// VethPlan is one link as a veth pair.
type VethPlan struct {
	Link int
	A, B VethEnd
	// Rate and Delay are shaped by the switch ends.
	Rate  string
	Delay time.Duration
}

// VethEnd is one end of a veth.
type VethEnd struct {
	Node      string
	Namespace string // "" = the root namespace
	Name      string
	MAC       net.HardwareAddr
	MTU       int
}

// Route is a static route: prefix via one or more next hops (several = ECMP).
type Route struct {
	Prefix netip.Prefix
	Via    []netip.Addr
}

// Neighbor is a static ARP entry.
type Neighbor struct {
	IP  netip.Addr
	MAC net.HardwareAddr
}

// Target is one Prometheus file_sd entry.
type Target struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// Namespace is the network namespace of host h of topology name.
func Namespace(name, host string) string { return name + "-" + host }

// PortInterface is the root-namespace interface of port p of switch i (both from 1).
func PortInterface(name string, sw, port int) string {
	return fmt.Sprintf("%s-%dp%d", name, sw, port)
}

// MAC derives a locally administered unicast MAC from the topology name,
// the node (switches: their index; hosts: 0x8000 + their index) and the
// port (host interfaces: 0). Within a topology every MAC is distinct.
func MAC(name string, node uint16, port uint8) net.HardwareAddr {
	h := sha256.Sum256([]byte("gswitch-topo/" + name))
	return net.HardwareAddr{0x02, h[0], h[1], byte(node >> 8), byte(node), port}
}

func hostNode(h *Host) uint16 { return 0x8000 | uint16(h.Index) }

// Plan derives what Up makes. For a Topology from Parse or Load it does not fail.
func (t *Topology) Plan() (*Plan, error) {
	p := &Plan{Name: t.Name, Mode: t.Mode, Timescale: t.Timescale, TimescaleAuto: t.TimescaleAuto}
	swPlan := map[string]*SwitchPlan{}
	for _, s := range t.Switches {
		sp := &SwitchPlan{Name: s.Name, Index: s.Index, ID: s.ID, Metrics: fmt.Sprintf("127.0.0.1:%d", t.MetricsBase+s.Index)}
		p.Switches = append(p.Switches, sp)
		swPlan[s.Name] = sp
		p.Targets = append(p.Targets, Target{Targets: []string{sp.Metrics}, Labels: map[string]string{"switch": s.Name, "topology": t.Name}})
	}
	hostPlan := map[string]*HostPlan{}
	for _, h := range t.Hosts {
		hp := &HostPlan{Name: h.Name, Namespace: Namespace(t.Name, h.Name), Interface: HostInterface,
			MAC: MAC(t.Name, hostNode(h), 0), Addr: h.Addr, CC: h.CC, MTU: h.MTU, RtoMin: t.hostRtoMin(h), QuickAck: h.QuickAck}
		if t.Mode == ModeL3 {
			hp.Gateway = h.Gateway
		}
		p.Hosts = append(p.Hosts, hp)
		p.Namespaces = append(p.Namespaces, hp.Namespace)
		hostPlan[h.Name] = hp
	}
	// Ports, in link order; the a end's port first.
	portNames := map[string]map[string]int{} // switch -> port name -> link
	pairCount := map[[2]string]int{}
	ifnames := map[string]string{}
	fabricLinks := 0
	for _, l := range t.Links {
		v := &VethPlan{Link: l.Index, Rate: l.Rate, Delay: l.Delay}
		ends := []struct {
			key, node, peer, name string
			port                  *yaml.Node
			ve                    *VethEnd
		}{{"a", l.A, l.B, l.NameA, l.APort, &v.A}, {"b", l.B, l.A, l.NameB, l.BPort, &v.B}}
		var pp [2]*PortPlan
		for i, e := range ends {
			if h := t.hosts[e.node]; h != nil {
				hp := hostPlan[h.Name]
				hp.Link = l.Index
				if hp.MTU == 0 {
					hp.MTU = l.MTU
				}
				*e.ve = VethEnd{Node: h.Name, Namespace: hp.Namespace, Name: HostInterface, MAC: hp.MAC, MTU: hp.MTU}
				continue
			}
			s := t.switches[e.node]
			sp := swPlan[s.Name]
			port := &PortPlan{Index: len(sp.Ports) + 1, Switch: s.Name, Peer: e.peer, MTU: l.MTU, Rate: l.Rate, Delay: l.Delay, Link: l.Index}
			port.Interface = PortInterface(t.Name, s.Index, port.Index)
			port.MAC = MAC(t.Name, uint16(s.Index), uint8(port.Index))
			if len(port.Interface) > 15 {
				return nil, fmt.Errorf("links[%d].%s: interface name %q is longer than 15 characters (use a shorter topology name)", l.Index, e.key, port.Interface)
			}
			if other, dup := ifnames[port.Interface]; dup {
				return nil, fmt.Errorf("links[%d].%s: interface name %q is already used by %s", l.Index, e.key, port.Interface, other)
			}
			ifnames[port.Interface] = fmt.Sprintf("links[%d]", l.Index)
			if e.name != "" {
				port.Name = e.name
			} else {
				pair := [2]string{s.Name, e.peer}
				pairCount[pair]++
				port.Name = e.peer
				if n := pairCount[pair]; n > 1 {
					port.Name = fmt.Sprintf("%s-%d", e.peer, n)
				}
			}
			if portNames[s.Name] == nil {
				portNames[s.Name] = map[string]int{}
			}
			if j, dup := portNames[s.Name][port.Name]; dup {
				return nil, fmt.Errorf("links[%d].name_%s: port name %q is already used on switch %s by links[%d] (port names must be unique on a switch; set name_%s)", l.Index, e.key, port.Name, s.Name, j, e.key)
			}
			portNames[s.Name][port.Name] = l.Index
			port.Keys = mergeMaps(t.Defaults.Port, s.Port, e.port)
			port.Role = RoleHost
			if t.switches[e.peer] != nil {
				port.Role = RoleFabric
			}
			if r := lookup(port.Keys, "role"); r != nil {
				port.Role = r.Value
			}
			sp.Ports = append(sp.Ports, port)
			*e.ve = VethEnd{Node: s.Name, Name: port.Interface, MAC: port.MAC, MTU: l.MTU}
			pp[i] = port
		}
		if pp[0] != nil && pp[1] != nil {
			pp[0].PeerMAC, pp[1].PeerMAC = pp[1].MAC, pp[0].MAC
			if t.Mode == ModeL3 {
				base := addAddr(t.FabricPool.Addr(), uint32(2*fabricLinks))
				pp[0].Addr = netip.PrefixFrom(base, 31)
				pp[1].Addr = netip.PrefixFrom(base.Next(), 31)
				pp[0].PeerAddr, pp[1].PeerAddr = pp[1].Addr.Addr(), pp[0].Addr.Addr()
			}
			fabricLinks++
		} else {
			// A host link: exactly one end is a port.
			port, hostEnd := pp[0], v.B
			if port == nil {
				port, hostEnd = pp[1], v.A
			}
			hp := hostPlan[hostEnd.Node]
			hp.Switch, hp.Port = port.Switch, port.Interface
			port.PeerMAC = hp.MAC
			port.PeerAddr = hp.Addr.Addr()
			if t.Mode == ModeL3 {
				port.Addr = netip.PrefixFrom(hp.Gateway, hp.Addr.Bits())
				hp.GatewayMAC = port.MAC
			}
		}
		p.Veths = append(p.Veths, v)
	}
	tiers := t.tiers()
	for _, sp := range p.Switches {
		for _, port := range sp.Ports {
			_, sw := t.switches[port.Peer]
			port.Uplink = sw && tiers[port.Peer] > tiers[sp.Name]
		}
	}
	if t.Mode == ModeL2 {
		if err := t.checkTree(); err != nil {
			return nil, err
		}
	} else if err := t.route(p, swPlan, hostPlan); err != nil {
		return nil, err
	}
	for _, sp := range p.Switches {
		b, err := t.gswitchdConfig(sp)
		if err != nil {
			return nil, err
		}
		sp.Config = b
	}
	return p, nil
}

func addAddr(a netip.Addr, n uint32) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

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

// lookup returns the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mergeMaps merges YAML mappings, later ones winning; nested mappings merge
// key by key, anything else is replaced. It returns a new tree (nil if all are empty).
func mergeMaps(ms ...*yaml.Node) *yaml.Node {
	var out *yaml.Node
	for _, m := range ms {
		if m == nil {
			continue
		}
		if out == nil {
			out = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		mergeInto(out, m)
	}
	return out
}

func mergeInto(dst, src *yaml.Node) {
	for i := 0; i+1 < len(src.Content); i += 2 {
		k, v := src.Content[i], src.Content[i+1]
		if old := lookup(dst, k.Value); old != nil {
			if old.Kind == yaml.MappingNode && v.Kind == yaml.MappingNode {
				mergeInto(old, v)
			} else {
				*old = *clone(v)
			}
			continue
		}
		dst.Content = append(dst.Content, clone(k), clone(v))
	}
}

func clone(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = nil
	for _, e := range n.Content {
		c.Content = append(c.Content, clone(e))
	}
	return &c
}

// YAML builders for the emitted config.

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// strScalar is a string that stays one (quoted when it would read as something else).
func strScalar(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
}

func quoted(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle}
}

func intScalar(v int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(v)}
}

func mapping(flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

func set(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func seq(flow bool, vs ...*yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: vs}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

// gswitchdConfig writes a switch's gswitchd YAML. Keys the plan computes
// come first; keys whose value is gswitchd's default are left out (so that
// an l2 topology needs nothing beyond an L2 switch's keys): role host, zero
// delay, unlimited rate, uplink false; in l2 mode also mac, addr, routes,
// neighbours, and switch_id unless the file gives an id. Mechanisms' keys
// are the file's alone: the plan sets port facts (role, uplink) that
// mechanisms read, never their keys.
func (t *Topology) gswitchdConfig(sp *SwitchPlan) ([]byte, error) {
	s := t.switches[sp.Name]
	l3 := t.Mode == ModeL3
	root := mapping(false)
	if l3 || s.IDSet {
		set(root, "switch_id", intScalar(sp.ID))
	}
	set(root, "metrics", scalar(sp.Metrics))
	if !t.Timescale.One() {
		// The values stay the fabric's: gswitchd scales them (and its
		// mechanisms' keys, which this package does not read).
		set(root, "timescale", scalar(t.Timescale.String()))
	}
	swKeys := mergeMaps(t.Defaults.Switch, s.Config)
	maxMTU := 0
	for _, port := range sp.Ports {
		maxMTU = max(maxMTU, port.MTU)
	}
	if maxMTU > 1500 && lookup(swKeys, "frame_size") == nil {
		// 2048-byte UMEM frames hold frames of an MTU up to about 1500.
		set(root, "frame_size", intScalar(4096))
	}
	if lookup(swKeys, "control") == nil {
		// One control socket per switch of each topology, so that two
		// topologies with a switch of the same name can be up at once:
		// gswitchctl -s TOPOLOGY-SWITCH.
		c := mapping(false)
		set(c, "socket", scalar(SocketPath(t.Name, sp.Name)))
		set(root, "control", c)
	}
	if swKeys != nil {
		root.Content = append(root.Content, swKeys.Content...)
	}
	ports := seq(false)
	for _, port := range sp.Ports {
		m := mapping(false)
		set(m, "name", strScalar(port.Name))
		set(m, "interface", scalar(port.Interface))
		if l3 && port.Role != RoleHost && lookup(port.Keys, "role") == nil {
			set(m, "role", scalar(port.Role))
		}
		if l3 {
			set(m, "mac", quoted(port.MAC.String()))
		}
		if port.Rate != "" {
			set(m, "rate", scalar(port.Rate))
		}
		if port.Delay != 0 {
			set(m, "delay", scalar(t.Links[port.Link].DelayText))
			if t.hosts[port.Peer] != nil {
				// A host cannot delay what it sends: the switch holds frames from
				// the host as long, so the link is delayed both ways.
				set(m, "rx_delay", scalar(t.Links[port.Link].DelayText))
			}
		}
		if l3 && port.Addr.IsValid() {
			set(m, "addr", seq(true, scalar(port.Addr.String())))
		}
		if port.Uplink && lookup(port.Keys, "uplink") == nil {
			set(m, "uplink", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
		if port.Keys != nil {
			m.Content = append(m.Content, clone(port.Keys).Content...)
		}
		ports.Content = append(ports.Content, m)
	}
	set(root, "ports", ports)
	if l3 && len(sp.Routes) > 0 {
		rs := seq(false)
		for _, r := range sp.Routes {
			m := mapping(true)
			set(m, "prefix", scalar(r.Prefix.String()))
			via := seq(true)
			for _, a := range r.Via {
				via.Content = append(via.Content, scalar(a.String()))
			}
			set(m, "via", via)
			rs.Content = append(rs.Content, m)
		}
		set(root, "routes", rs)
	}
	if l3 && len(sp.Neighbors) > 0 {
		ns := seq(false)
		for _, n := range sp.Neighbors {
			m := mapping(true)
			set(m, "ip", scalar(n.IP.String()))
			set(m, "mac", quoted(n.MAC.String()))
			ns.Content = append(ns.Content, m)
		}
		set(root, "neighbors", ns)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("switches.%s: writing its gswitchd config: %w", sp.Name, err)
	}
	enc.Close()
	src := "a topology file"
	if t.File != "" {
		src = t.File
	}
	head := fmt.Sprintf("# gswitchd config of switch %s of topology %s, generated from %s (gswitchctl topo).\n", sp.Name, t.Name, src)
	return append([]byte(head), out.Bytes()...), nil
}

// SocketPath is the control socket of switch sw of topology name (unless
// the file sets control:): /run/gswitch/NAME-SW.sock, which gswitchctl
// finds as -s NAME-SW.
func SocketPath(name, sw string) string {
	return "/run/gswitch/" + name + "-" + sw + ".sock"
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
