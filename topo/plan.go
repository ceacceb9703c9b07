package topo

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"
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
	// Design is the design the plan runs under ("": the file's defaults as
	// written); Designs all the file's, in file order.
	Design  string
	Designs []string
	// Machine is the machine the plan is for (PlanFor): its part of the
	// fabric; "" for the whole fabric. Machines are the file's machines
	// with what each holds, and Tunnels the links between two machines
	// (on a machine's plan those with an end on it), in link order; both
	// nil for a file without machines:.
	Machine  string
	Machines []*MachinePlan
	Tunnels  []*TunnelPlan
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
	// Transport is what the host's gsperf runs under the plan's design
	// (nil when the file gives no transport: anywhere).
	Transport *HostTransport
	// Machine is the machine the host's namespace is on ("": no machines:).
	Machine string
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
	// Machine is the machine the switch runs on ("": no machines:).
	Machine string
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
	// Tunnel is set on a link between two machines. In the whole plan A
	// and B are then the link's ends on their machines; in a machine's plan
	// A is the end on the machine and B the stitch joined to the tunnel's
	// VXLAN device.
	Tunnel *TunnelPlan
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
	p := &Plan{Name: t.Name, Mode: t.Mode, Timescale: t.Timescale, TimescaleAuto: t.TimescaleAuto, Design: t.DesignName(), Designs: t.DesignNames()}
	swPlan := map[string]*SwitchPlan{}
	for _, s := range t.Switches {
		sp := &SwitchPlan{Name: s.Name, Index: s.Index, ID: s.ID, Metrics: fmt.Sprintf("127.0.0.1:%d", t.MetricsBase+s.Index), Machine: s.Machine}
		p.Switches = append(p.Switches, sp)
		swPlan[s.Name] = sp
		labels := map[string]string{"switch": s.Name, "topology": t.Name}
		if s.Machine != "" {
			labels["machine"] = s.Machine
		}
		p.Targets = append(p.Targets, Target{Targets: []string{sp.Metrics}, Labels: labels})
	}
	hostPlan := map[string]*HostPlan{}
	for _, h := range t.Hosts {
		hp := &HostPlan{Name: h.Name, Namespace: Namespace(t.Name, h.Name), Interface: HostInterface,
			MAC: MAC(t.Name, hostNode(h), 0), Addr: h.Addr, CC: h.CC, MTU: h.MTU, RtoMin: t.hostRtoMin(h), QuickAck: h.QuickAck, Machine: h.Machine}
		if t.Mode == ModeL3 {
			hp.Gateway = h.Gateway
		}
		if t.HasTransport() {
			ht := t.hostTransport(h)
			hp.Transport = &ht
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
			port.Keys = t.portKeys(s.Port, e.port)
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
	t.planMachines(p)
	return p, nil
}
