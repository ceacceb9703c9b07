package topo

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
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
	// Transport is the top-level transport: of every host (nil: none).
	Transport *Transport
	// Designs are the file's designs:, in file order; Design is the one the
	// topology runs under (WithDesign; nil: the file's defaults as written).
	Designs []*Design
	Design  *Design
	// Machines are the file's machines:, in file order (none: the fabric
	// is on one machine). Each switch and host runs on one of them (its
	// Machine, by default the first), and a link whose ends are on two
	// machines is carried by a tunnel (machine.go).
	Machines []*Machine
	// TunnelPort is the tunnels' UDP destination port (tunnel.port,
	// default DefaultTunnelPort); VNIBase the VNI of links[0], link i's
	// being VNIBase + i unless it gives vni (tunnel.vni_base, default
	// DeriveVNIBase of the name).
	TunnelPort int
	VNIBase    uint32
	Switches   []*Switch
	Hosts      []*Host
	Links      []*Link
	// File is the path Load read ("" after Parse).
	File string

	switches map[string]*Switch
	hosts    map[string]*Host
	machines map[string]*Machine
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
	// Machine is the machine the switch runs on ("" when the file has no machines:).
	Machine string
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
	// Transport is the host's own transport:, over the design's (nil: none).
	Transport *Transport
	// Machine is the machine the host's namespace is on ("" when the file has no machines:).
	Machine string
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
	// VNI is the link's tunnel's VXLAN network identifier as the file gives
	// it (0: derived, Topology.LinkVNI); only for a link between machines.
	VNI uint32
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
// here too, under the defaults and under every design, so a Topology that
// Parse returns always plans.
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
	for _, d := range t.Designs {
		dt, _ := t.WithDesign(d.Name)
		if _, err := dt.Plan(); err != nil {
			return nil, fmt.Errorf("designs.%s: %w", d.Name, err)
		}
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
