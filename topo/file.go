package topo

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gswitch/gswitch/units"
	"gopkg.in/yaml.v3"
)

// Modes of a topology.
const (
	// ModeL3 (the default): every switch routes; each host's subnet is
	// served by the switch it is linked to; switch-switch links are /31s.
	ModeL3 = "l3"
	// ModeL2: learning switches, all hosts on one subnet, the switches form a tree.
	ModeL2 = "l2"
)

// Defaults of the file.
const (
	DefaultMetricsBase = 9500
	DefaultMTU         = 1500
)

// DefaultFabricPool is where l3 switch-switch links take their /31s from
// when the file has no fabric_pool.
var DefaultFabricPool = netip.MustParsePrefix("10.255.0.0/16")

// Topology is a parsed and validated topology file. Switches, Hosts and
// Links keep the order of the file: it fixes switch numbers, port numbers,
// metrics ports and /31s.
type Topology struct {
	// Name (1-6 characters a-z, 0-9) prefixes every namespace, interface and state directory.
	Name string
	// Mode is ModeL3 or ModeL2.
	Mode string
	// MetricsBase: switch i (from 1) serves metrics on 127.0.0.1:MetricsBase+i.
	MetricsBase int
	// FabricPool holds the l3 switch-switch /31s (unused in l2).
	FabricPool netip.Prefix
	// Timescale is the fabric's time dilation K (1 when the file gives
	// none): the file's rates and delays are the fabric's, and the switches
	// run them K times slower (timescale.go). TimescaleAuto says the file
	// asks Up to choose K by measuring this machine (Timescale is 1 until
	// then), for TimescaleProbe (0: lateness.DefaultDuration).
	Timescale      units.Timescale
	TimescaleAuto  bool
	TimescaleProbe time.Duration
	// Defaults for links, switches and ports.
	Defaults Defaults
	Switches []*Switch
	Hosts    []*Host
	Links    []*Link
	// File is the path Load read ("" after Parse).
	File string

	switches map[string]*Switch
	hosts    map[string]*Host
}

// Defaults are the file's defaults: section.
type Defaults struct {
	// Link holds rate, delay and mtu for links that do not set them.
	Link LinkDefaults
	// Switch holds top-level gswitchd keys for every switch (a YAML mapping, or nil).
	Switch *yaml.Node
	// Port holds gswitchd port keys for every switch port (a YAML mapping, or nil).
	Port *yaml.Node
}

// LinkDefaults are defaults.link.
type LinkDefaults struct {
	Rate  string // "" = unlimited
	Delay string // "" = none
	MTU   int
}

// Switch is one entry of switches:.
type Switch struct {
	Name string
	// Index is the switch's position in the file, from 1: it numbers its
	// interfaces and its metrics port.
	Index int
	// ID is the gswitchd switch_id (default: Index).
	ID int
	// IDSet says the file gave id explicitly.
	IDSet bool
	// Config holds top-level gswitchd keys (over defaults.switch).
	Config *yaml.Node
	// Port holds port keys for all of this switch's ports (over defaults.port).
	Port *yaml.Node
}

// Host is one entry of hosts:.
type Host struct {
	Name  string
	Index int // position in the file, from 1
	// Addr is the host's address with its prefix length, e.g. 10.1.1.1/24.
	Addr netip.Prefix
	// Gateway is the switch's address on the host's subnet (l3; filled in
	// with the last usable address of the subnet when the file has none).
	Gateway netip.Addr
	// CC is the TCP congestion control to set in the host's namespace ("" = the kernel's).
	CC string
	// MTU of the host's eth0 (0 = the link's).
	MTU int
	// RtoMin is the least retransmission timeout of the host's TCP, in the
	// fabric's time (0: the kernel's, 200ms of this machine), set on the
	// host's routes; QuickAck turns delayed ACKs off on them.
	RtoMin   time.Duration
	QuickAck bool
}

// Link is one entry of links:, with the defaults applied.
type Link struct {
	Index int // position in links:, from 0
	A, B  string
	// Rate is the link's rate as written ("" = unlimited); RateBits in bit/s.
	Rate     string
	RateBits uint64
	// Delay is the one-way propagation delay; DelayText as written ("" when zero).
	Delay     time.Duration
	DelayText string
	MTU       int
	// APort and BPort hold port keys for the switch at that end (over the switch's port: and defaults.port).
	APort, BPort *yaml.Node
	// NameA and NameB override the port names at the switch ends.
	NameA, NameB string
}

// Load reads and validates a topology file.
func Load(path string) (*Topology, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.File = path
	return t, nil
}

// Parse decodes and validates a topology. Everything Plan checks is checked
// here too, so a Topology that Parse returns always plans.
func Parse(b []byte) (*Topology, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("empty topology file (it needs name:, switches:, hosts: and links:)")
	}
	t, err := decode(doc.Content[0])
	if err != nil {
		return nil, err
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	if _, err := t.Plan(); err != nil {
		return nil, err
	}
	return t, nil
}

var (
	topoNameRE = regexp.MustCompile(`^[a-z0-9]{1,6}$`)
	nodeNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,14}$`)
	portNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,32}$`)
	ccRE       = regexp.MustCompile(`^[a-z0-9_]{1,15}$`)
)

// Keys the topology computes; the opaque maps may not set them.
var (
	reservedSwitchKeys = map[string]string{
		"ports":     "the topology makes one port per link",
		"routes":    "the topology computes them (mode l3)",
		"neighbors": "the topology computes them (mode l3)",
		"switch_id": "use switches.<name>.id",
		"metrics":   "use metrics_base",
		"timescale": "use the topology's top-level timescale",
	}
	reservedPortKeys = map[string]string{
		"name":      "use the link's name_a/name_b",
		"interface": "the topology names interfaces",
		"mac":       "the topology derives MACs",
		"addr":      "the topology assigns addresses (mode l3)",
		"rate":      "use the link's rate (or defaults.link.rate)",
		"delay":     "use the link's delay (or defaults.link.delay)",
	}
)

// decode reads the document's structure; validate checks what needs the whole of it.
func decode(root *yaml.Node) (*Topology, error) {
	t := &Topology{MetricsBase: DefaultMetricsBase, Mode: ModeL3, switches: map[string]*Switch{}, hosts: map[string]*Host{}}
	top, err := fields(root, "", "name", "mode", "metrics_base", "fabric_pool", "timescale", "timescale_probe", "defaults", "switches", "hosts", "links")
	if err != nil {
		return nil, err
	}
	if n := top["name"]; n != nil {
		if t.Name, err = str(n, "name"); err != nil {
			return nil, err
		}
	}
	if t.Name == "" {
		return nil, errors.New("name: missing (give the topology a name of 1-6 characters a-z, 0-9, e.g. name: ls)")
	}
	if !topoNameRE.MatchString(t.Name) {
		return nil, fmt.Errorf("name: %q must be 1-6 characters a-z, 0-9 (it prefixes every namespace and interface, which Linux limits to 15 characters)", t.Name)
	}
	if n := top["mode"]; n != nil {
		if t.Mode, err = str(n, "mode"); err != nil {
			return nil, err
		}
		if t.Mode != ModeL3 && t.Mode != ModeL2 {
			return nil, fmt.Errorf("mode: %q (use l3, routed switches, or l2, learning switches with all hosts on one subnet)", t.Mode)
		}
	}
	if n := top["metrics_base"]; n != nil {
		if t.MetricsBase, err = integer(n, "metrics_base"); err != nil {
			return nil, err
		}
	}
	t.FabricPool = DefaultFabricPool
	if n := top["fabric_pool"]; n != nil {
		s, err := str(n, "fabric_pool")
		if err != nil {
			return nil, err
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("fabric_pool: %q is not an IPv4 prefix (write e.g. 10.255.0.0/16)", s)
		}
		t.FabricPool = p.Masked()
	}
	if err := t.decodeTimescale(top["timescale"], top["timescale_probe"]); err != nil {
		return nil, err
	}
	if err := t.decodeDefaults(top["defaults"]); err != nil {
		return nil, err
	}
	if err := t.decodeSwitches(top["switches"]); err != nil {
		return nil, err
	}
	if err := t.decodeHosts(top["hosts"]); err != nil {
		return nil, err
	}
	if err := t.decodeLinks(top["links"]); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Topology) decodeDefaults(n *yaml.Node) error {
	t.Defaults.Link.MTU = DefaultMTU
	d, err := fields(n, "defaults", "link", "switch", "port")
	if err != nil {
		return err
	}
	l, err := fields(d["link"], "defaults.link", "rate", "delay", "mtu")
	if err != nil {
		return err
	}
	if v := l["rate"]; v != nil {
		if t.Defaults.Link.Rate, err = str(v, "defaults.link.rate"); err != nil {
			return err
		}
		if _, err := parseRate("defaults.link.rate", t.Defaults.Link.Rate); err != nil {
			return err
		}
	}
	if v := l["delay"]; v != nil {
		if t.Defaults.Link.Delay, err = str(v, "defaults.link.delay"); err != nil {
			return err
		}
		if _, err := parseDelay("defaults.link.delay", t.Defaults.Link.Delay); err != nil {
			return err
		}
	}
	if v := l["mtu"]; v != nil {
		if t.Defaults.Link.MTU, err = mtu(v, "defaults.link.mtu"); err != nil {
			return err
		}
	}
	if t.Defaults.Switch, err = opaque(d["switch"], "defaults.switch", false); err != nil {
		return err
	}
	if t.Defaults.Port, err = opaque(d["port"], "defaults.port", true); err != nil {
		return err
	}
	return nil
}

func (t *Topology) decodeSwitches(n *yaml.Node) error {
	names, vals, err := ordered(n, "switches")
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("switches: none (a topology needs at least one switch)")
	}
	for i, name := range names {
		path := "switches." + name
		if !nodeNameRE.MatchString(name) {
			return fmt.Errorf("%s: %q is not a valid name (1-15 characters: a letter, then letters, digits, - or _)", path, name)
		}
		f, err := fields(vals[i], path, "id", "config", "port")
		if err != nil {
			return err
		}
		s := &Switch{Name: name, Index: i + 1, ID: i + 1}
		if v := f["id"]; v != nil {
			if s.ID, err = integer(v, path+".id"); err != nil {
				return err
			}
			if s.ID < 1 || s.ID > 65535 {
				return fmt.Errorf("%s.id: %d out of range [1, 65535]", path, s.ID)
			}
			s.IDSet = true
		}
		if s.Config, err = opaque(f["config"], path+".config", false); err != nil {
			return err
		}
		if s.Port, err = opaque(f["port"], path+".port", true); err != nil {
			return err
		}
		t.Switches = append(t.Switches, s)
		t.switches[name] = s
	}
	return nil
}

func (t *Topology) decodeHosts(n *yaml.Node) error {
	names, vals, err := ordered(n, "hosts")
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("hosts: none (a topology needs at least one host)")
	}
	for i, name := range names {
		path := "hosts." + name
		if !nodeNameRE.MatchString(name) {
			return fmt.Errorf("%s: %q is not a valid name (1-15 characters: a letter, then letters, digits, - or _)", path, name)
		}
		if _, dup := t.switches[name]; dup {
			return fmt.Errorf("%s: %q is also the name of a switch (switch and host names must differ)", path, name)
		}
		f, err := fields(vals[i], path, "addr", "gateway", "cc", "mtu", "rto_min", "quickack")
		if err != nil {
			return err
		}
		h := &Host{Name: name, Index: i + 1}
		if f["addr"] == nil {
			return fmt.Errorf("%s.addr: missing (the host's IPv4 address with its prefix length, e.g. addr: 10.1.1.1/24)", path)
		}
		s, err := str(f["addr"], path+".addr")
		if err != nil {
			return err
		}
		if h.Addr, err = netip.ParsePrefix(s); err != nil || !h.Addr.Addr().Is4() {
			return fmt.Errorf("%s.addr: %q is not an IPv4 address with a prefix length (write e.g. 10.1.1.1/24)", path, s)
		}
		if bits := h.Addr.Bits(); bits > 30 || bits < 8 {
			return fmt.Errorf("%s.addr: prefix length /%d out of range [8, 30] (the subnet needs room for the host and its gateway)", path, bits)
		}
		if a := h.Addr.Addr(); a == h.Addr.Masked().Addr() || a == lastAddr(h.Addr) {
			return fmt.Errorf("%s.addr: %s is the network or broadcast address of %s (pick another address)", path, a, h.Addr.Masked())
		}
		if v := f["gateway"]; v != nil {
			s, err := str(v, path+".gateway")
			if err != nil {
				return err
			}
			if h.Gateway, err = netip.ParseAddr(s); err != nil || !h.Gateway.Is4() {
				return fmt.Errorf("%s.gateway: %q is not an IPv4 address", path, s)
			}
		}
		if v := f["cc"]; v != nil {
			if h.CC, err = str(v, path+".cc"); err != nil {
				return err
			}
			if !ccRE.MatchString(h.CC) {
				return fmt.Errorf("%s.cc: %q is not a TCP congestion control name (e.g. cubic, reno, bbr, dctcp)", path, h.CC)
			}
		}
		if v := f["mtu"]; v != nil {
			if h.MTU, err = mtu(v, path+".mtu"); err != nil {
				return err
			}
		}
		if err := decodeHostTimers(h, f, path); err != nil {
			return err
		}
		t.Hosts = append(t.Hosts, h)
		t.hosts[name] = h
	}
	return nil
}

func (t *Topology) decodeLinks(n *yaml.Node) error {
	n = resolve(n)
	if n == nil || isNull(n) {
		return errors.New("links: none (list the links, e.g. - {a: h1, b: sw1})")
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("links: line %d: not a list (write one - {a: X, b: Y} per link)", n.Line)
	}
	for i, e := range n.Content {
		path := fmt.Sprintf("links[%d]", i)
		f, err := fields(e, path, "a", "b", "rate", "delay", "mtu", "a_port", "b_port", "name_a", "name_b")
		if err != nil {
			return err
		}
		l := &Link{Index: i, Rate: t.Defaults.Link.Rate, DelayText: t.Defaults.Link.Delay, MTU: t.Defaults.Link.MTU}
		for _, end := range []struct {
			key string
			dst *string
		}{{"a", &l.A}, {"b", &l.B}, {"name_a", &l.NameA}, {"name_b", &l.NameB}} {
			if v := f[end.key]; v != nil {
				if *end.dst, err = str(v, path+"."+end.key); err != nil {
					return err
				}
			}
		}
		if v := f["rate"]; v != nil {
			if l.Rate, err = str(v, path+".rate"); err != nil {
				return err
			}
		}
		if l.RateBits, err = parseRate(path+".rate", l.Rate); err != nil {
			return err
		}
		if l.RateBits == 0 {
			l.Rate = ""
		}
		if v := f["delay"]; v != nil {
			if l.DelayText, err = str(v, path+".delay"); err != nil {
				return err
			}
		}
		if l.Delay, err = parseDelay(path+".delay", l.DelayText); err != nil {
			return err
		}
		if l.Delay == 0 {
			l.DelayText = ""
		}
		if v := f["mtu"]; v != nil {
			if l.MTU, err = mtu(v, path+".mtu"); err != nil {
				return err
			}
		}
		if l.APort, err = opaque(f["a_port"], path+".a_port", true); err != nil {
			return err
		}
		if l.BPort, err = opaque(f["b_port"], path+".b_port", true); err != nil {
			return err
		}
		t.Links = append(t.Links, l)
	}
	if len(t.Links) == 0 {
		return errors.New("links: none (list the links, e.g. - {a: h1, b: sw1})")
	}
	return nil
}

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
	if !t.TimescaleAuto { // auto's K is checked once chosen (WithTimescale)
		if err := t.checkTimescale(t.Timescale); err != nil {
			return err
		}
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

func addrDiff(a, b netip.Addr) uint32 { return addrU32(a) - addrU32(b) }

func addrU32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// lastAddr is the highest address of p (the broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// parseRate reads a link's rate as gswitchd does (units.ParseRate: 100Mbit,
// 1.5Gbit, 10gbps; "" and "unlimited" are 0), within what a port's shaper
// takes.
func parseRate(field, s string) (uint64, error) {
	r, err := units.ParseRate(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", field, err)
	}
	if r != 0 && r < 8000 {
		return 0, fmt.Errorf("%s: %s out of range (8kbit to 1Tbit)", field, s)
	}
	return r, nil
}

// maxDelay bounds a link's delay: the switch holds every frame that long.
const maxDelay = time.Second

// parseDelay reads a link's delay as gswitchd does (units.ParseDuration:
// 50us, 1ms; "" is none), at most maxDelay.
func parseDelay(field, s string) (time.Duration, error) {
	d, err := units.ParseDuration(s, 0)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", field, err)
	}
	if d > maxDelay {
		return 0, fmt.Errorf("%s: %s is longer than %s (the switch holds every frame for the delay)", field, s, maxDelay)
	}
	return d, nil
}

func mtu(n *yaml.Node, field string) (int, error) {
	v, err := integer(n, field)
	if err != nil {
		return 0, err
	}
	if v < 68 || v > 9000 {
		return 0, fmt.Errorf("%s: %d out of range [68, 9000]", field, v)
	}
	return v, nil
}

// YAML helpers: every error names the field as a path.

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return resolve(n.Content[0])
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

func where(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// pairs returns a mapping's key and value nodes with YAML merge keys (<<)
// applied: explicit keys win over merged ones.
func pairs(n *yaml.Node, path string) ([][2]*yaml.Node, error) {
	var out [][2]*yaml.Node
	explicit := map[string]bool{}
	var merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: line %d: a key must be a plain name", where(path), k.Line)
		}
		if k.ShortTag() == "!!merge" {
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, s := range srcs {
				s = resolve(s)
				if s.Kind != yaml.MappingNode {
					return nil, fmt.Errorf("%s: line %d: << merges a mapping, not %s", where(path), k.Line, kind(s))
				}
				sp, err := pairs(s, path)
				if err != nil {
					return nil, err
				}
				merged = append(merged, sp...)
			}
			continue
		}
		if explicit[k.Value] {
			return nil, fmt.Errorf("%s: line %d: key %q appears twice", at(path, k.Value), k.Line, k.Value)
		}
		explicit[k.Value] = true
		out = append(out, [2]*yaml.Node{k, v})
	}
	seen := map[string]bool{}
	for _, p := range merged {
		if !explicit[p[0].Value] && !seen[p[0].Value] {
			seen[p[0].Value] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func at(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields reads a mapping with the given keys; null or absent is empty.
func fields(n *yaml.Node, path string, known ...string) (map[string]*yaml.Node, error) {
	n = resolve(n)
	m := map[string]*yaml.Node{}
	if n == nil || isNull(n) {
		return m, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: %s is not a mapping (write key: value, or {key: value})", where(path), n.Line, kind(n))
	}
	ps, err := pairs(n, path)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if !slices.Contains(known, p[0].Value) {
			return nil, fmt.Errorf("%s: unknown key (line %d; known keys here: %s)", at(path, p[0].Value), p[0].Line, strings.Join(known, ", "))
		}
		m[p[0].Value] = p[1]
	}
	return m, nil
}

// ordered reads a mapping of names to entries, in file order.
func ordered(n *yaml.Node, path string) ([]string, []*yaml.Node, error) {
	n = resolve(n)
	if n == nil || isNull(n) {
		return nil, nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%s: line %d: %s is not a mapping of names to entries", path, n.Line, kind(n))
	}
	ps, err := pairs(n, path)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	var vals []*yaml.Node
	for _, p := range ps {
		names = append(names, p[0].Value)
		vals = append(vals, p[1])
	}
	return names, vals, nil
}

func str(n *yaml.Node, path string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s: line %d: %s where a single value belongs", path, n.Line, kind(n))
	}
	if isNull(n) {
		return "", nil
	}
	return n.Value, nil
}

func integer(n *yaml.Node, path string) (int, error) {
	s, err := str(n, path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a whole number", path, s)
	}
	return v, nil
}

// opaque reads a mapping of gswitchd keys (port keys if port, else
// top-level keys) that this package passes through, refusing the keys the
// topology computes. It returns a deep copy with
// aliases and merge keys resolved, or nil when absent or empty.
func opaque(n *yaml.Node, path string, port bool) (*yaml.Node, error) {
	reserved := reservedSwitchKeys
	if port {
		reserved = reservedPortKeys
	}
	n = resolve(n)
	if n == nil || isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: %s is not a mapping of gswitchd keys (write {key: value})", path, n.Line, kind(n))
	}
	c, err := deepCopy(n, path)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(c.Content); i += 2 {
		k := c.Content[i].Value
		if why, ok := reserved[k]; ok {
			return nil, fmt.Errorf("%s: set by the topology (%s)", at(path, k), why)
		}
	}
	if len(c.Content) == 0 {
		return nil, nil
	}
	if r := lookup(c, "role"); r != nil && port {
		if r.Kind != yaml.ScalarNode || (r.Value != RoleHost && r.Value != RoleFabric) {
			return nil, fmt.Errorf("%s.role: %s (use host or fabric; without it host links are host ports and switch-switch links fabric ports)", path, kind(r))
		}
	}
	return c, nil
}

// deepCopy copies a node tree, resolving aliases and merge keys, and drops
// comments and styles so the emitted YAML is uniform.
func deepCopy(n *yaml.Node, path string) (*yaml.Node, error) {
	n = resolve(n)
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Style: n.Style &^ (yaml.FlowStyle), Line: n.Line, Column: n.Column}
	switch n.Kind {
	case yaml.MappingNode:
		ps, err := pairs(n, path)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			v, err := deepCopy(p[1], at(path, p[0].Value))
			if err != nil {
				return nil, err
			}
			c.Content = append(c.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p[0].Value}, v)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			v, err := deepCopy(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			c.Content = append(c.Content, v)
		}
	}
	return c, nil
}
