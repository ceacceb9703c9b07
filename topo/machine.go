package topo

import (
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Fabrics over several machines: the file's machines: name the machines
// and their underlay addresses, switches and hosts name the machine: they
// run on, and a link whose ends are on two machines is a tunnel. Each
// machine brings up its own part (PlanFor, UpOptions.Machine); see
// docs/topology.md, "Fabrics over several machines".

// Tunnel constants.
const (
	// DefaultTunnelPort is the tunnels' UDP destination port (VXLAN's).
	DefaultTunnelPort = 4789
	// MaxVNI is the largest VXLAN network identifier (24 bits).
	MaxVNI = 1<<24 - 1
	// TunnelOverhead is what a VXLAN tunnel over IPv4 adds to a link's
	// MTU on the underlay: the inner frame's Ethernet header (14) and the
	// outer VXLAN (8), UDP (8) and IPv4 (20) headers.
	TunnelOverhead = 50
	// TagRoom is what gswitch's upstream-queue tag (EtherType 0x88B5, BFC)
	// adds to a frame of the link's MTU: a tagged frame is as long as a
	// VLAN-tagged one, and gswitchd budgets a port's frames so.
	TagRoom = 4
	// tunnelMACNode + a link's index is the MAC node number of its tunnel
	// devices (switches are 1 to the number of switches, hosts 0x8000 + n).
	tunnelMACNode = 0x4000
	// tunnelSrcPortBase: a tunnel sends from UDP port tunnelSrcPortBase +
	// VNI mod 16384 (see tunnelSrcPort).
	tunnelSrcPortBase = 49152
)

// UnderlayMTU is the least MTU the underlay must carry for a tunnelled
// link of MTU mtu: mtu + TunnelOverhead + TagRoom.
func UnderlayMTU(mtu int) int { return mtu + TunnelOverhead + TagRoom }

// Machine is one entry of machines:.
type Machine struct {
	Name  string
	Index int // position in the file, from 1
	// Underlay is the machine's IPv4 address on the network between the
	// machines: its tunnels' local address and the others' remote one.
	Underlay netip.Addr
}

// MachinePlan is what one machine holds.
type MachinePlan struct {
	Name     string
	Underlay netip.Addr
	// Switches and Hosts on the machine, in file order.
	Switches, Hosts []string
	// Links are the indexes of the links with both ends on the machine
	// (veths); Tunnels of those with one end on it.
	Links, Tunnels []int
}

// TunnelPlan is a link between two machines. On each machine the link's
// end there (a switch port, or a host's eth0) is one end of a veth whose
// other end, the stitch, tc joins to a VXLAN device both ways (a u32
// filter matching every frame, mirred egress redirect): every frame a
// port sends crosses whatever its EtherType and destination, which a
// Linux bridge would not do for 01:80:C2:00:00:0x (BFC's pauses).
type TunnelPlan struct {
	Link int
	// VNI is the VXLAN network identifier; VNIGiven says the link's vni: set it.
	VNI      uint32
	VNIGiven bool
	// Port is the UDP destination port, SrcPort the one source port the
	// tunnel's frames leave from (so they take one path through the
	// underlay, in order, as on a wire).
	Port, SrcPort int
	// MTU is the link's (the frames'); the underlay carries UnderlayMTU(MTU).
	MTU int
	// Rate and Delay are the link's, shaped by the switch ends as on one machine.
	Rate  string
	Delay time.Duration
	// A and B are the link's ends.
	A, B TunnelEnd
}

// TunnelEnd is a tunnel's half on one machine.
type TunnelEnd struct {
	Machine  string
	Underlay netip.Addr
	// Node is the switch or host at this end; Port its end of the veth (a
	// switch port's interface in the root namespace, or eth0 in the host's
	// Namespace).
	Node      string
	Port      string
	Namespace string
	// Device is the VXLAN device and Stitch the veth end joined to it, both
	// in the machine's root namespace.
	Device, Stitch       string
	DeviceMAC, StitchMAC net.HardwareAddr
}

// Ends returns the tunnel's end on machine and its other end (nil, nil
// when neither end is on machine).
func (tp *TunnelPlan) Ends(machine string) (here, there *TunnelEnd) {
	switch machine {
	case tp.A.Machine:
		return &tp.A, &tp.B
	case tp.B.Machine:
		return &tp.B, &tp.A
	}
	return nil, nil
}

// TunnelDevice is the VXLAN device of link i of topology name.
func TunnelDevice(name string, link int) string { return fmt.Sprintf("%s-v%d", name, link) }

// StitchInterface is the veth end that tc joins to the VXLAN device of link i.
func StitchInterface(name string, link int) string { return fmt.Sprintf("%s-x%d", name, link) }

// DeriveVNIBase is the VNI of links[0] when the file gives no
// tunnel.vni_base: a block of 1024 VNIs chosen by a hash of the topology's
// name (so that two topologies tunnelling between the same machines
// seldom meet), never 0.
func DeriveVNIBase(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte("gswitch-topo/" + name))
	return (h.Sum32()%16383 + 1) << 10
}

// tunnelSrcPort is the UDP source port of the tunnel with this VNI: one
// port per tunnel, so that an underlay that spreads flows by their
// addresses and ports (ECMP, RSS) keeps a tunnel's frames on one path and
// one queue, in order, and spreads different tunnels.
func tunnelSrcPort(vni uint32) int { return tunnelSrcPortBase + int(vni%16384) }

// LinkVNI is the VNI of link l's tunnel: its vni:, else VNIBase + its index.
func (t *Topology) LinkVNI(l *Link) uint32 {
	if l.VNI != 0 {
		return l.VNI
	}
	return t.VNIBase + uint32(l.Index)
}

// MachineOf is the machine switch or host node runs on ("" when the file
// has no machines:, or for no such node).
func (t *Topology) MachineOf(node string) string {
	if s := t.switches[node]; s != nil {
		return s.Machine
	}
	if h := t.hosts[node]; h != nil {
		return h.Machine
	}
	return ""
}

// MachineNames are the file's machines, in file order.
func (t *Topology) MachineNames() []string {
	var ns []string
	for _, m := range t.Machines {
		ns = append(ns, m.Name)
	}
	return ns
}

func (t *Topology) decodeMachines(n, tunnel *yaml.Node) error {
	names, vals, err := ordered(n, "machines")
	if err != nil {
		return err
	}
	if resolve(n) != nil && len(names) == 0 {
		return fmt.Errorf("machines: none (name each machine with its underlay address, e.g. machines: {m1: {underlay: 192.0.2.1}, m2: {underlay: 192.0.2.2}}, or drop machines:)")
	}
	seen := map[netip.Addr]string{}
	for i, name := range names {
		path := "machines." + name
		if !nodeNameRE.MatchString(name) {
			return fmt.Errorf("%s: %q is not a valid name (1-15 characters: a letter, then letters, digits, - or _)", path, name)
		}
		f, err := fields(vals[i], path, "underlay")
		if err != nil {
			return err
		}
		if f["underlay"] == nil {
			return fmt.Errorf("%s.underlay: missing (the machine's IPv4 address on the network between the machines, e.g. underlay: 192.0.2.1)", path)
		}
		s, err := str(f["underlay"], path+".underlay")
		if err != nil {
			return err
		}
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return fmt.Errorf("%s.underlay: %q is not an IPv4 address (the tunnels run over IPv4: write e.g. underlay: 192.0.2.1)", path, s)
		}
		if a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
			return fmt.Errorf("%s.underlay: %s cannot be a machine's address (give the address of its interface toward the other machines)", path, a)
		}
		if other, dup := seen[a]; dup {
			return fmt.Errorf("%s.underlay: %s is already the underlay address of machines.%s (each machine has its own)", path, a, other)
		}
		seen[a] = name
		m := &Machine{Name: name, Index: i + 1, Underlay: a}
		t.Machines = append(t.Machines, m)
		t.machines[name] = m
	}
	t.TunnelPort = DefaultTunnelPort
	t.VNIBase = DeriveVNIBase(t.Name)
	if tn := resolve(tunnel); tn != nil && !isNull(tn) && len(t.Machines) == 0 {
		return fmt.Errorf("tunnel: the file has no machines: (tunnels join machines; add machines: or drop tunnel:)")
	}
	f, err := fields(tunnel, "tunnel", "port", "vni_base")
	if err != nil {
		return err
	}
	if v := f["port"]; v != nil {
		if t.TunnelPort, err = integer(v, "tunnel.port"); err != nil {
			return err
		}
		if t.TunnelPort < 1 || t.TunnelPort > 65535 {
			return fmt.Errorf("tunnel.port: %d out of range [1, 65535] (the tunnels' UDP port; VXLAN's is 4789)", t.TunnelPort)
		}
	}
	if v := f["vni_base"]; v != nil {
		b, err := integer(v, "tunnel.vni_base")
		if err != nil {
			return err
		}
		if b < 1 || b > MaxVNI {
			return fmt.Errorf("tunnel.vni_base: %d out of range [1, %d] (the VNI of links[0]; link i's is vni_base + i)", b, MaxVNI)
		}
		t.VNIBase = uint32(b)
	}
	return nil
}

// machineKey reads a switch's or host's machine: ("" when absent).
func machineKey(n *yaml.Node, path string) (string, error) {
	if n == nil {
		return "", nil
	}
	s, err := str(n, path)
	if err == nil && s == "" {
		err = fmt.Errorf("%s: empty (name one of the file's machines:)", path)
	}
	return s, err
}

// validateMachines checks the machines the switches and hosts name, puts
// those that name none on the first machine, and checks every tunnel's VNI.
func (t *Topology) validateMachines() error {
	if len(t.Machines) == 0 {
		for _, s := range t.Switches {
			if s.Machine != "" {
				return fmt.Errorf("switches.%s.machine: %q, but the file has no machines: (list the machines with their underlay addresses under machines:, or drop machine)", s.Name, s.Machine)
			}
		}
		for _, h := range t.Hosts {
			if h.Machine != "" {
				return fmt.Errorf("hosts.%s.machine: %q, but the file has no machines: (list the machines with their underlay addresses under machines:, or drop machine)", h.Name, h.Machine)
			}
		}
		for _, l := range t.Links {
			if l.VNI != 0 {
				return fmt.Errorf("links[%d].vni: the file has no machines:, so no link is a tunnel (drop vni)", l.Index)
			}
		}
		return nil
	}
	names := strings.Join(t.MachineNames(), ", ")
	if t.TimescaleAuto && len(t.Machines) > 1 {
		return fmt.Errorf("timescale: auto with %d machines: each machine's up would measure itself and choose its own K, and the parts of the fabric would run at different speeds (give timescale: K, the K up chooses on the slowest machine)", len(t.Machines))
	}
	held := map[string]int{}
	for _, s := range t.Switches {
		if s.Machine == "" {
			s.Machine = t.Machines[0].Name
		} else if t.machines[s.Machine] == nil {
			return fmt.Errorf("switches.%s.machine: %q is not one of the file's machines: (%s)", s.Name, s.Machine, names)
		}
		held[s.Machine]++
	}
	for _, h := range t.Hosts {
		if h.Machine == "" {
			h.Machine = t.Machines[0].Name
		} else if t.machines[h.Machine] == nil {
			return fmt.Errorf("hosts.%s.machine: %q is not one of the file's machines: (%s)", h.Name, h.Machine, names)
		}
		held[h.Machine]++
	}
	for _, m := range t.Machines {
		if held[m.Name] == 0 {
			return fmt.Errorf("machines.%s: holds no switch or host (put some on it with machine: %s, or remove it; without machine: a switch or host is on %s)", m.Name, m.Name, t.Machines[0].Name)
		}
	}
	vnis := map[uint32]int{}
	for _, l := range t.Links {
		path := fmt.Sprintf("links[%d]", l.Index)
		ma, mb := t.MachineOf(l.A), t.MachineOf(l.B)
		if ma == mb {
			if l.VNI != 0 {
				return fmt.Errorf("%s.vni: %s and %s are both on machine %s: the link is a veth, not a tunnel (drop vni)", path, l.A, l.B, ma)
			}
			continue
		}
		if l.Index >= tunnelMACNode {
			return fmt.Errorf("%s: %s on %s and %s on %s: a link between machines must be among the first %d links of the file (its tunnel devices' MACs number it in 14 bits; list it earlier)", path, l.A, ma, l.B, mb, tunnelMACNode)
		}
		v := uint64(t.LinkVNI(l))
		if v > MaxVNI {
			return fmt.Errorf("%s: its VNI, tunnel.vni_base %d + %d, is above %d (give %s.vni, or a lower tunnel.vni_base)", path, t.VNIBase, l.Index, MaxVNI, path)
		}
		if j, dup := vnis[uint32(v)]; dup {
			return fmt.Errorf("%s: VNI %d is already the VNI of links[%d]'s tunnel (each tunnel needs its own; give %s.vni another)", path, v, j, path)
		}
		vnis[uint32(v)] = l.Index
	}
	return nil
}

// resolveMachine says which machine a plan, Up or Down is for: "" for a
// file without machines: (and then none may be named), the only machine
// of a file with one, else the named one.
func (t *Topology) resolveMachine(name string) (string, error) {
	names := strings.Join(t.MachineNames(), ", ")
	switch {
	case len(t.Machines) == 0 && name != "":
		return "", fmt.Errorf("machine %q: topology %s has no machines: (it runs on one machine; drop -machine)", name, t.Name)
	case len(t.Machines) == 0:
		return "", nil
	case name == "" && len(t.Machines) == 1:
		return t.Machines[0].Name, nil
	case name == "":
		return "", fmt.Errorf("topology %s spans machines %s: each machine brings up and takes down its own part; say which with -machine NAME (e.g. gswitchctl topo up FILE -machine %s, on %s)", t.Name, names, t.Machines[0].Name, t.Machines[0].Name)
	case t.machines[name] == nil:
		return "", fmt.Errorf("machine %q: not a machine of topology %s (its machines: %s)", name, t.Name, names)
	}
	return name, nil
}

// PlanFor is the plan of what machine holds: Plan, keeping its switches,
// hosts and namespaces, the links with both ends on it (veths), and for
// each link with one end on it that end's half of the tunnel (a veth from
// the end to the stitch, and the tunnel in Tunnels). The switches' configs
// are the whole plan's. For a file without machines: machine must be ""
// and PlanFor is Plan; "" names the only machine of a file with one.
func (t *Topology) PlanFor(machine string) (*Plan, error) {
	m, err := t.resolveMachine(machine)
	if err != nil {
		return nil, err
	}
	p, err := t.Plan()
	if err != nil || m == "" {
		return p, err
	}
	return p.forMachine(m), nil
}

// planMachines adds the machines and the tunnels to a whole plan.
func (t *Topology) planMachines(p *Plan) {
	if len(t.Machines) == 0 {
		return
	}
	byName := map[string]*MachinePlan{}
	for _, m := range t.Machines {
		mp := &MachinePlan{Name: m.Name, Underlay: m.Underlay}
		p.Machines = append(p.Machines, mp)
		byName[m.Name] = mp
	}
	for _, s := range p.Switches {
		byName[s.Machine].Switches = append(byName[s.Machine].Switches, s.Name)
	}
	for _, h := range p.Hosts {
		byName[h.Machine].Hosts = append(byName[h.Machine].Hosts, h.Name)
	}
	for _, v := range p.Veths {
		l := t.Links[v.Link]
		ma, mb := t.MachineOf(l.A), t.MachineOf(l.B)
		if ma == mb {
			byName[ma].Links = append(byName[ma].Links, l.Index)
			continue
		}
		vni := t.LinkVNI(l)
		tp := &TunnelPlan{Link: l.Index, VNI: vni, VNIGiven: l.VNI != 0, Port: t.TunnelPort, SrcPort: tunnelSrcPort(vni),
			MTU: l.MTU, Rate: l.Rate, Delay: l.Delay,
			A: t.tunnelEnd(l, ma, v.A, 1), B: t.tunnelEnd(l, mb, v.B, 3)}
		v.Tunnel = tp
		p.Tunnels = append(p.Tunnels, tp)
		byName[ma].Tunnels = append(byName[ma].Tunnels, l.Index)
		byName[mb].Tunnels = append(byName[mb].Tunnels, l.Index)
	}
}

// tunnelEnd is link l's tunnel half on machine, at veth end ve; its
// devices' MACs take ports mac and mac+1 of the link's MAC node.
func (t *Topology) tunnelEnd(l *Link, machine string, ve VethEnd, mac uint8) TunnelEnd {
	node := uint16(tunnelMACNode + l.Index)
	return TunnelEnd{Machine: machine, Underlay: t.machines[machine].Underlay, Node: ve.Node, Port: ve.Name, Namespace: ve.Namespace,
		Device: TunnelDevice(t.Name, l.Index), Stitch: StitchInterface(t.Name, l.Index),
		DeviceMAC: MAC(t.Name, node, mac), StitchMAC: MAC(t.Name, node, mac+1)}
}

// forMachine is the part of a whole plan that machine m holds (PlanFor).
func (p *Plan) forMachine(m string) *Plan {
	q := *p
	q.Machine = m
	q.Namespaces, q.Hosts, q.Switches, q.Veths, q.Targets, q.Tunnels = nil, nil, nil, nil, nil, nil
	on := map[string]bool{}
	for _, h := range p.Hosts {
		if h.Machine == m {
			q.Hosts = append(q.Hosts, h)
			q.Namespaces = append(q.Namespaces, h.Namespace)
			on[h.Name] = true
		}
	}
	for i, s := range p.Switches {
		if s.Machine == m {
			q.Switches = append(q.Switches, s)
			q.Targets = append(q.Targets, p.Targets[i])
			on[s.Name] = true
		}
	}
	for _, v := range p.Veths {
		if v.Tunnel == nil {
			if on[v.A.Node] {
				q.Veths = append(q.Veths, v)
			}
			continue
		}
		here := v.A
		te, _ := v.Tunnel.Ends(m)
		switch {
		case te == nil:
			continue
		case te == &v.Tunnel.B:
			here = v.B
		}
		q.Veths = append(q.Veths, &VethPlan{Link: v.Link, A: here, B: VethEnd{Name: te.Stitch, MAC: te.StitchMAC, MTU: v.Tunnel.MTU},
			Rate: v.Rate, Delay: v.Delay, Tunnel: v.Tunnel})
		q.Tunnels = append(q.Tunnels, v.Tunnel)
	}
	return &q
}
