// Package config reads and validates gswitchd's YAML configuration.
//
// Every error names the field it is about, as a path like ports[1].rate,
// and says what would be accepted. Load checks the file on its own; Check
// adds the checks that need the host (do the interfaces exist).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/gswitch/gswitch/config/units"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/sched"
	"gopkg.in/yaml.v3"
)

// Config is the whole file.
type Config struct {
	// SwitchID identifies the switch in the frames it emits (1..65535, default 1).
	SwitchID int `yaml:"switch_id"`
	// Ports are the switch ports, in the order of their indices.
	Ports []Port `yaml:"ports"`
	// Workers is the number of forwarding goroutines (0 = half the CPUs, at least 1).
	Workers int `yaml:"workers"`
	// Frames is the number of UMEM frames shared by all ports.
	Frames int `yaml:"frames"`
	// FrameSize is 2048 or 4096; frames longer than one holds travel as multi-buffer chains (docs/architecture.md, "Jumbo frames").
	FrameSize int `yaml:"frame_size"`
	// XDPMode is auto (native, falling back to generic), native or generic.
	XDPMode string `yaml:"xdp_mode"`
	// BindMode is auto (zero-copy where the driver can), copy or zerocopy.
	BindMode string `yaml:"bind_mode"`
	// BusyPoll keeps workers polling when idle instead of sleeping in poll().
	BusyPoll bool `yaml:"busy_poll"`
	// Spin is how long an idle worker polls before it sleeps, e.g. 50us
	// (default); 0: it sleeps at once. Spinning saves a wake-up when frames
	// come less than Spin apart, and costs a CPU at those rates: several
	// switches sharing a few CPUs with their hosts want 0 (docs/results.md).
	Spin string `yaml:"spin"`
	// CPUs pins the workers: worker i runs on CPU CPUs[i mod len(CPUs)].
	// Empty: the kernel places them. A worker that sleeps and is woken on
	// an idle CPU waits for that CPU to come out of its idle state, which
	// in some virtual machines costs tens of microseconds a wake-up
	// (docs/results.md, Latency at low load).
	CPUs []int `yaml:"cpus"`
	// Nice is the workers' nice value (-20 to 19, default 0). On a machine
	// the switch shares with busy hosts (namespaces, VMs), a negative value
	// lets a woken worker run before them: the switch stands for hardware
	// that the hosts' load does not slow.
	Nice int `yaml:"nice"`
	// Slice is the workers' scheduler time slice (Linux 6.12 and later,
	// e.g. 100us; "" or 0 = the kernel's default, which sched_getattr
	// reads as 1.4 ms on our 2-CPU test machine). A shorter
	// slice gives a woken worker an earlier deadline, so the kernel runs it
	// at once instead of after the running task's slice.
	Slice string `yaml:"slice"`
	// CatchUp is the line time a shaped port may make up at once after its
	// worker ran late while frames waited, e.g. 5ms ("" = the default,
	// DefaultCatchUp; 0 = none: the port loses the time). A real line keeps
	// sending from its NIC's ring while the CPU is away; a worker on a busy
	// machine may be away for milliseconds (docs/results.md).
	CatchUp string `yaml:"catchup"`
	// Buffer is the packet buffer all egress queues share, e.g. 16MB (default: half the UMEM).
	Buffer string `yaml:"buffer"`
	// Alpha is the dynamic threshold factor: a queue may hold Alpha x the free buffer (default 1; 0 turns it off).
	Alpha *float64 `yaml:"alpha"`
	// MACTable configures L2 learning.
	MACTable MACTable `yaml:"mac_table"`
	// Routes are the static routes of an L3 switch: a prefix and its next
	// hops (several: ECMP over them, by a symmetric flow hash).
	Routes []Route `yaml:"routes"`
	// Neighbors are static ARP/ND entries (next hops not listed are resolved by ARP).
	Neighbors []Neighbor `yaml:"neighbors"`
	// Metrics is the Prometheus listen address; "off" disables it.
	Metrics string `yaml:"metrics"`
	// Control is the control socket gswitchctl talks to (docs/operations.md).
	Control Control `yaml:"control"`

	SpinDur     time.Duration   `yaml:"-"`
	SliceDur    time.Duration   `yaml:"-"`
	CatchUpDur  time.Duration   `yaml:"-"`
	RouteTable  []RouteEntry    `yaml:"-"`
	NeighborTab []NeighborEntry `yaml:"-"`
	BufferBytes uint64          `yaml:"-"`
	AlphaValue  float64         `yaml:"-"`
}

// Route is a static route.
type Route struct {
	Prefix string   `yaml:"prefix"`
	Via    []string `yaml:"via"`
}

// Neighbor is a static neighbor entry.
type Neighbor struct {
	IP  string `yaml:"ip"`
	MAC string `yaml:"mac"`
}

// RouteEntry is a validated route with its next hops resolved to ports.
type RouteEntry struct {
	Prefix   netip.Prefix
	NextHops []NextHop
}

// NextHop is a next hop and the port it is reached through.
type NextHop struct {
	IP   netip.Addr
	Port int
}

// NeighborEntry is a validated static neighbor.
type NeighborEntry struct {
	IP   netip.Addr
	MAC  net.HardwareAddr
	Port int
}

// MACTable configures the learning table.
type MACTable struct {
	Size  int    `yaml:"size"`
	Aging string `yaml:"aging"`
	// PortLimit is the most MACs learnt on one port (0: half the table; -1: no limit).
	PortLimit int `yaml:"port_limit"`
	// MoveHold is how long after moving to another port a MAC may not move again (default 1s; 0s: no hold).
	MoveHold    string        `yaml:"move_hold"`
	AgingDur    time.Duration `yaml:"-"`
	MoveHoldDur time.Duration `yaml:"-"`
}

// Port is one switch port.
type Port struct {
	// Name labels the port in metrics and logs (default: the interface name).
	Name string `yaml:"name"`
	// Interface is the Linux network interface.
	Interface string `yaml:"interface"`
	// Rate is the egress line rate, e.g. 100Mbit or 10Gbit; empty = unlimited.
	Rate string `yaml:"rate"`
	// Burst is the shaper's bucket depth, e.g. 16KB; empty = max(2 frames, 1 ms of rate).
	Burst string `yaml:"burst"`
	// Buffer is the egress buffer in bytes, e.g. 1MB.
	Buffer string `yaml:"buffer"`
	// Scheduler is the egress scheduler, one registered in package sched (default fifo).
	Scheduler string `yaml:"scheduler"`
	// Queues is the number of egress queues (default 32; one-queue schedulers use one).
	Queues int `yaml:"queues"`
	// QueueBuffer is each egress queue's static limit, e.g. 256KB (default: the port's buffer).
	QueueBuffer string `yaml:"queue_buffer"`
	// Quantum is the DRR/SFQ quantum in bytes (default 1514).
	Quantum int `yaml:"quantum"`
	// Classify picks prio's and drr's queue: dscp (default) or pcp.
	Classify string `yaml:"classify"`
	// DSCPMap overrides the queue of individual DSCP values (default: queue 7 - DSCP>>3).
	DSCPMap map[int]int `yaml:"dscp_map"`
	// PCPMap gives the queue of each 802.1p priority when classify is pcp (default: queue 7 - PCP).
	PCPMap map[int]int `yaml:"pcp_map"`
	// RxQueues is the number of rx queues to bind (0 or absent = all of the interface's).
	RxQueues int `yaml:"rx_queues"`
	// Role is host (default: faces end hosts) or fabric (faces another switch):
	// control frames of the mechanisms are accepted only on fabric ports.
	Role string `yaml:"role"`
	// MAC is the port's own address, the source of frames the switch emits
	// (default: the interface's MAC).
	MAC string `yaml:"mac"`
	// RTT is the port's base round-trip time (default 200us), for schedulers
	// whose default buffer is sized by it.
	RTT string `yaml:"rtt"`
	// Addr makes the port an L3 (routed) port: the switch's addresses on
	// the port's subnets, e.g. [10.1.1.254/24]. It answers ARP (and ping)
	// for them; frames arriving on the port are routed, not switched.
	Addr StringList `yaml:"addr"`
	// Delay is the one-way propagation delay of the link the port sends on,
	// e.g. 50us: every frame is held after the shaper until it is due.
	Delay string `yaml:"delay"`
	// RxDelay is the delay of the link toward the switch, for a link whose
	// other end cannot delay what it sends (a host): frames received are held
	// that long before the pipeline sees them.
	RxDelay string `yaml:"rx_delay"`
	// Mechanisms enables congestion-control mechanisms on the port, each by
	// its registered name with its own keys, {NAME: {KEY: VALUE}}; their
	// hooks run in the order listed.
	Mechanisms yaml.Node `yaml:"mechanisms"`

	RTTDur           time.Duration    `yaml:"-"`
	DelayDur         time.Duration    `yaml:"-"`
	RxDelayDur       time.Duration    `yaml:"-"`
	Addrs            []netip.Prefix   `yaml:"-"`
	RoleValue        mech.Role        `yaml:"-"`
	MACAddr          net.HardwareAddr `yaml:"-"`
	Mechs            []Mechanism      `yaml:"-"`
	RateBits         uint64           `yaml:"-"`
	BurstBytes       int64            `yaml:"-"`
	BufferBytes      uint64           `yaml:"-"`
	QueueBufferBytes uint64           `yaml:"-"`
}

// Mechanism is one mechanism enabled on a port, with its decoded config
// (the value its mech.Spec.Config made).
type Mechanism struct {
	Name   string
	Config any
}

// Bounds.
const (
	MaxUMEM  = 8 << 30 // bytes of UMEM (frames x frame_size)
	MaxBurst = 1 << 32 // bytes of a shaper's bucket
	// DefaultCatchUp is the line time a shaped port makes up after its
	// worker ran late (the catchup key).
	DefaultCatchUp = 5 * time.Millisecond
)

// Defaults.
const (
	DefaultFrames    = 32768
	DefaultFrameSize = 2048
	DefaultMetrics   = "127.0.0.1:9100"
	DefaultBuffer    = 1 << 20
)

// Load reads and validates a config file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and validates YAML.
func Parse(b []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, errors.New("empty config: it needs at least a ports: list")
	}
	if err := checkKeys(root.Content[0], reflect.TypeOf(Config{}), ""); err != nil {
		return nil, err
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkKeys reports the first mapping key that the struct type t does not have.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(yaml.Node{}) {
		return nil // checked by whoever decodes it
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag != "" && tag != "-" {
				fields[tag] = t.Field(i).Type
				names = append(names, tag)
			}
		}
		sort.Strings(names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			ft, ok := fields[k]
			if !ok {
				where := "at the top level"
				if path != "" {
					where = "in " + path
				}
				return fmt.Errorf("line %d: unknown key %q %s (known keys: %s)", n.Content[i].Line, k, where, strings.Join(names, ", "))
			}
			if err := checkKeys(n.Content[i+1], ft, join(path, k)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			if err := checkKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func (c *Config) validate() error {
	if err := c.Control.validate(); err != nil {
		return err
	}
	if len(c.Ports) == 0 {
		return errors.New("ports: no ports configured (add at least one entry with an interface:)")
	}
	if len(c.Ports) > 4096 {
		return fmt.Errorf("ports: %d ports, at most 4096", len(c.Ports))
	}
	if c.Workers < 0 || c.Workers > 256 {
		return fmt.Errorf("workers: %d out of range (0 = half the CPUs, up to 256)", c.Workers)
	}
	if len(c.CPUs) > 256 {
		return fmt.Errorf("cpus: %d entries, at most 256 (one per worker)", len(c.CPUs))
	}
	for i, cpu := range c.CPUs {
		if cpu < 0 || cpu >= 8192 {
			return fmt.Errorf("cpus[%d]: %d is not a CPU number (0 up to the machine's last CPU)", i, cpu)
		}
	}
	if c.FrameSize == 0 {
		c.FrameSize = DefaultFrameSize
	}
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return fmt.Errorf("frame_size: %d (use 2048 or 4096; longer frames travel as multi-buffer chains)", c.FrameSize)
	}
	if c.Frames == 0 {
		c.Frames = DefaultFrames
	}
	if c.Frames < 1024 || c.Frames > 1<<22 {
		return fmt.Errorf("frames: %d out of range [1024, %d]", c.Frames, 1<<22)
	}
	if umem := uint64(c.Frames) * uint64(c.FrameSize); umem > MaxUMEM {
		return fmt.Errorf("frames: %d frames of %d B make a %d MiB UMEM, more than %d MiB (lower frames or frame_size)", c.Frames, c.FrameSize, umem>>20, MaxUMEM>>20)
	}
	if c.SwitchID == 0 {
		c.SwitchID = 1
	}
	if c.SwitchID < 1 || c.SwitchID > 65535 {
		return fmt.Errorf("switch_id: %d out of range [1, 65535]", c.SwitchID)
	}
	switch c.XDPMode {
	case "":
		c.XDPMode = "auto"
	case "auto", "native", "generic":
	default:
		return fmt.Errorf("xdp_mode: %q (use auto, native or generic)", c.XDPMode)
	}
	switch c.BindMode {
	case "":
		c.BindMode = "auto"
	case "auto", "copy", "zerocopy":
	default:
		return fmt.Errorf("bind_mode: %q (use auto, copy or zerocopy)", c.BindMode)
	}
	if c.Metrics == "" {
		c.Metrics = DefaultMetrics
	}
	var err error
	if c.SpinDur, err = duration("spin", c.Spin, 50*time.Microsecond); err != nil {
		return err
	}
	if c.Nice < -20 || c.Nice > 19 {
		return fmt.Errorf("nice: %d out of range (-20, the most favoured, to 19; 0 = the default)", c.Nice)
	}
	if c.SliceDur, err = duration("slice", c.Slice, 0); err != nil {
		return err
	}
	if c.SliceDur != 0 && (c.SliceDur < 100*time.Microsecond || c.SliceDur > 100*time.Millisecond) {
		return fmt.Errorf("slice: %v out of range (the kernel takes 100us to 100ms; 0 = its default)", c.SliceDur)
	}
	if c.CatchUpDur, err = duration("catchup", c.CatchUp, DefaultCatchUp); err != nil {
		return err
	}
	if c.CatchUpDur < 0 || c.CatchUpDur > time.Second {
		return fmt.Errorf("catchup: %v out of range (0, none, to 1s)", c.CatchUpDur)
	}
	if c.BufferBytes, err = ParseSize(c.Buffer); err != nil {
		return fmt.Errorf("buffer: %w", err)
	}
	c.AlphaValue = 1
	if c.Alpha != nil {
		c.AlphaValue = *c.Alpha
	}
	if c.AlphaValue < 0 || c.AlphaValue > 64 {
		return fmt.Errorf("alpha: %v out of range [0, 64] (0 turns the dynamic threshold off)", c.AlphaValue)
	}
	if c.MACTable.Size == 0 {
		c.MACTable.Size = 4096
	}
	if c.MACTable.Size < 16 || c.MACTable.Size > 1<<24 {
		return fmt.Errorf("mac_table.size: %d out of range [16, %d]", c.MACTable.Size, 1<<24)
	}
	if c.MACTable.AgingDur, err = duration("mac_table.aging", c.MACTable.Aging, 300*time.Second); err != nil {
		return err
	}
	if c.MACTable.AgingDur < time.Second {
		return fmt.Errorf("mac_table.aging: %s is shorter than 1s", c.MACTable.AgingDur)
	}
	if c.MACTable.PortLimit < -1 || c.MACTable.PortLimit > c.MACTable.Size {
		return fmt.Errorf("mac_table.port_limit: %d out of range (0 = half the table, -1 = no limit, up to mac_table.size %d)", c.MACTable.PortLimit, c.MACTable.Size)
	}
	if c.MACTable.MoveHoldDur, err = duration("mac_table.move_hold", c.MACTable.MoveHold, time.Second); err != nil {
		return err
	}
	ifaces := map[string]int{}
	names := map[string]int{}
	for i := range c.Ports {
		p := &c.Ports[i]
		f := fmt.Sprintf("ports[%d]", i)
		if p.Interface == "" {
			return fmt.Errorf("%s.interface: missing (name the Linux interface, e.g. interface: veth0)", f)
		}
		if len(p.Interface) >= 16 || strings.ContainsAny(p.Interface, "/ \t") {
			return fmt.Errorf("%s.interface: %q is not a valid interface name", f, p.Interface)
		}
		if j, dup := ifaces[p.Interface]; dup {
			return fmt.Errorf("%s.interface: %s is already ports[%d] (each interface can be one port only)", f, p.Interface, j)
		}
		ifaces[p.Interface] = i
		if p.Name == "" {
			p.Name = p.Interface
		}
		if j, dup := names[p.Name]; dup {
			return fmt.Errorf("%s.name: %q is already the name of ports[%d] (port names must be unique)", f, p.Name, j)
		}
		names[p.Name] = i
		if p.RateBits, err = ParseRate(p.Rate); err != nil {
			return fmt.Errorf("%s.rate: %w", f, err)
		}
		if p.RateBits != 0 && (p.RateBits < 8000 || p.RateBits > 1e12) {
			return fmt.Errorf("%s.rate: %s out of range (8kbit to 1Tbit)", f, p.Rate)
		}
		var b uint64
		if b, err = ParseSize(p.Burst); err != nil {
			return fmt.Errorf("%s.burst: %w", f, err)
		}
		if b > MaxBurst {
			return fmt.Errorf("%s.burst: %s is more than %d B (the shaper counts burst x 1e9 in 64 bits)", f, p.Burst, uint64(MaxBurst))
		}
		p.BurstBytes = int64(b)
		if p.BurstBytes != 0 && p.BurstBytes < 1538 {
			return fmt.Errorf("%s.burst: %s is less than one full-size frame on the wire (1538 B)", f, p.Burst)
		}
		if p.BufferBytes, err = ParseSize(p.Buffer); err != nil {
			return fmt.Errorf("%s.buffer: %w", f, err)
		}
		if p.BufferBytes == 0 {
			p.BufferBytes = DefaultBuffer
		}
		if p.BufferBytes < 1514 {
			return fmt.Errorf("%s.buffer: %s cannot hold one full-size frame (1514 B)", f, p.Buffer)
		}
		if p.Scheduler == "" {
			p.Scheduler = "fifo"
		}
		spec, ok := sched.Lookup(p.Scheduler)
		if !ok {
			return fmt.Errorf("%s.scheduler: %q (use one of %s)", f, p.Scheduler, strings.Join(sched.Names(), ", "))
		}
		if p.Queues < 0 || p.Queues > 64 {
			return fmt.Errorf("%s.queues: %d out of range (0 = 32, up to 64)", f, p.Queues)
		}
		if p.QueueBufferBytes, err = units.ParseSize(p.QueueBuffer); err != nil {
			return fmt.Errorf("%s.queue_buffer: %w", f, err)
		}
		if p.Quantum != 0 && (p.Quantum < 64 || p.Quantum > 1<<20) {
			return fmt.Errorf("%s.quantum: %d out of range [64, 1048576] bytes", f, p.Quantum)
		}
		switch p.Classify {
		case "", "dscp", "pcp", "queue":
		default:
			return fmt.Errorf("%s.classify: %q (use dscp, pcp or queue: the queue a mechanism chose)", f, p.Classify)
		}
		nq := p.Queues
		if nq == 0 {
			nq = sched.DefaultQueues
		}
		if spec.OneQueue {
			nq = 1
		}
		for k, v := range p.DSCPMap {
			if k < 0 || k > 63 || v < 0 || v >= nq {
				return fmt.Errorf("%s.dscp_map: %d: %d (DSCP 0..63 to a queue 0..%d)", f, k, v, nq-1)
			}
		}
		for k, v := range p.PCPMap {
			if k < 0 || k > 7 || v < 0 || v >= nq {
				return fmt.Errorf("%s.pcp_map: %d: %d (PCP 0..7 to a queue 0..%d)", f, k, v, nq-1)
			}
		}
		if p.RTTDur, err = units.ParseDuration(p.RTT, 200*time.Microsecond); err != nil {
			return fmt.Errorf("%s.rtt: %w", f, err)
		}
		if spec.DefaultBuffer != nil && p.Buffer == "" && p.RateBits > 0 {
			p.BufferBytes = spec.DefaultBuffer(p.RateBits, p.RTTDur)
		}
		if p.RoleValue, err = mech.ParseRole(p.Role); err != nil {
			return fmt.Errorf("%s.role: %w", f, err)
		}
		if p.MAC != "" {
			if p.MACAddr, err = net.ParseMAC(p.MAC); err != nil || len(p.MACAddr) != 6 || p.MACAddr[0]&1 != 0 {
				return fmt.Errorf("%s.mac: %q is not a unicast Ethernet address (write e.g. 02:00:00:00:01:01)", f, p.MAC)
			}
		}
		if p.DelayDur, err = units.ParseDuration(p.Delay, 0); err != nil || p.DelayDur > time.Second {
			if err == nil {
				err = fmt.Errorf("%q is longer than 1s", p.Delay)
			}
			return fmt.Errorf("%s.delay: %w", f, err)
		}
		if p.RxDelayDur, err = units.ParseDuration(p.RxDelay, 0); err != nil || p.RxDelayDur > time.Second {
			if err == nil {
				err = fmt.Errorf("%q is longer than 1s", p.RxDelay)
			}
			return fmt.Errorf("%s.rx_delay: %w", f, err)
		}
		for j, a := range p.Addr {
			pf, err := netip.ParsePrefix(a)
			if err != nil || pf.Bits() == pf.Addr().BitLen() {
				return fmt.Errorf("%s.addr[%d]: %q is not an address with its subnet (write e.g. 10.1.1.254/24)", f, j, a)
			}
			if pf.Addr() == pf.Masked().Addr() && pf.Bits() < pf.Addr().BitLen()-1 { // a /31 has no subnet address (RFC 3021)
				return fmt.Errorf("%s.addr[%d]: %s is the subnet's own address, not one of its hosts", f, j, a)
			}
			p.Addrs = append(p.Addrs, pf)
		}
		info := mech.PortInfo{Name: p.Name, Role: p.RoleValue, RateBits: p.RateBits, Scheduler: p.Scheduler, Queues: nq}
		if p.Mechs, err = decodeMechanisms(&p.Mechanisms, f+".mechanisms", info); err != nil {
			return err
		}
		var names []string
		for _, m := range p.Mechs {
			names = append(names, m.Name)
		}
		if mech.SetsQueue(names) {
			if p.Classify != "" && p.Classify != "queue" {
				return fmt.Errorf("%s.classify: %s assigns the queues on this port (classify: queue), not %s", f, strings.Join(names, ", "), p.Classify)
			}
			p.Classify = "queue"
		}
		if err := mech.Check(names, p.Scheduler); err != nil {
			if len(names) == 0 {
				return fmt.Errorf("%s.scheduler: %w", f, err)
			}
			return fmt.Errorf("%s.mechanisms: %w", f, err)
		}
		if p.RxQueues < 0 || p.RxQueues > 64 {
			return fmt.Errorf("%s.rx_queues: %d out of range (0 = all rx queues, up to 64)", f, p.RxQueues)
		}
	}
	return c.validateL3()
}

// validateL3 checks the ports' addresses against each other and resolves
// the routes' next hops and the static neighbors to ports.
func (c *Config) validateL3() error {
	type subnet struct {
		pf   netip.Prefix
		port int
		j    int
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
	portOf := func(ip netip.Addr) (int, bool) {
		for _, s := range subnets {
			if s.pf.Contains(ip) {
				return s.port, true
			}
		}
		return 0, false
	}
	if len(c.Routes) > 0 && len(subnets) == 0 {
		return errors.New("routes: routes need L3 ports (give the ports facing next hops an addr:)")
	}
	seen := map[netip.Prefix]int{}
	for i, r := range c.Routes {
		f := fmt.Sprintf("routes[%d]", i)
		pf, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			return fmt.Errorf("%s.prefix: %q is not a prefix (write e.g. 10.1.2.0/24)", f, r.Prefix)
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
		e := RouteEntry{Prefix: pf}
		for j, v := range r.Via {
			ip, err := netip.ParseAddr(v)
			if err != nil || ip.Is4() != pf.Addr().Is4() {
				return fmt.Errorf("%s.via[%d]: %q is not an %s address", f, j, v, map[bool]string{true: "IPv4", false: "IPv6"}[pf.Addr().Is4()])
			}
			if w, mine := own[ip]; mine {
				return fmt.Errorf("%s.via[%d]: %s is this switch's own address (%s)", f, j, ip, w)
			}
			port, ok := portOf(ip)
			if !ok {
				return fmt.Errorf("%s.via[%d]: %s is on no connected subnet (no port has an addr: covering it)", f, j, ip)
			}
			for _, nh := range e.NextHops {
				if nh.IP == ip {
					return fmt.Errorf("%s.via[%d]: %s listed twice", f, j, ip)
				}
			}
			e.NextHops = append(e.NextHops, NextHop{IP: ip, Port: port})
		}
		c.RouteTable = append(c.RouteTable, e)
	}
	for i, n := range c.Neighbors {
		f := fmt.Sprintf("neighbors[%d]", i)
		ip, err := netip.ParseAddr(n.IP)
		if err != nil {
			return fmt.Errorf("%s.ip: %q is not an address", f, n.IP)
		}
		port, ok := portOf(ip)
		if !ok {
			return fmt.Errorf("%s.ip: %s is on no connected subnet", f, ip)
		}
		mac, err := net.ParseMAC(n.MAC)
		if err != nil || len(mac) != 6 || mac[0]&1 != 0 {
			return fmt.Errorf("%s.mac: %q is not a unicast Ethernet address", f, n.MAC)
		}
		c.NeighborTab = append(c.NeighborTab, NeighborEntry{IP: ip, MAC: mac, Port: port})
	}
	return nil
}

// StringList is a YAML list of strings that may also be written as one string.
type StringList []string

// UnmarshalYAML implements yaml.Unmarshaler.
func (l *StringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = StringList{n.Value}
		return nil
	}
	var s []string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*l = s
	return nil
}

// Check runs the checks that need the host: lookup returns an error when an
// interface does not exist.
func (c *Config) Check(lookup func(name string) error) error {
	for i, p := range c.Ports {
		if err := lookup(p.Interface); err != nil {
			return fmt.Errorf("ports[%d].interface: %s: %v (create it first, or fix the name; `ip link` lists interfaces)", i, p.Interface, err)
		}
	}
	return nil
}

func duration(field, s string, def time.Duration) (time.Duration, error) {
	d, err := units.ParseDuration(s, def)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return d, nil
}

// ParseRate reads a bit rate such as 100Mbit (see units.ParseRate).
func ParseRate(s string) (uint64, error) { return units.ParseRate(s) }

// ParseSize reads a size such as 64KB (see units.ParseSize).
func ParseSize(s string) (uint64, error) { return units.ParseSize(s) }

// decodeMechanisms decodes a port's mechanisms: mapping, in order: each
// key must be a registered mechanism, its value a mapping of that
// mechanism's keys (or empty for the defaults).
func decodeMechanisms(n *yaml.Node, path string, info mech.PortInfo) ([]Mechanism, error) {
	if n.Kind == 0 {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: a mapping of mechanism names (%s) to their settings, each a mapping of that mechanism's keys (configs/reference.yaml) or {}", path, n.Line, strings.Join(mech.Names(), ", "))
	}
	var out []Mechanism
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, val := n.Content[i].Value, n.Content[i+1]
		spec, ok := mech.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("%s: line %d: unknown mechanism %q (known: %s)", path, n.Content[i].Line, name, strings.Join(mech.Names(), ", "))
		}
		for _, m := range out {
			if m.Name == name {
				return nil, fmt.Errorf("%s.%s: listed twice", path, name)
			}
		}
		cfg := spec.Config()
		p := path + "." + name
		if val.Kind != yaml.ScalarNode || val.Tag != "!!null" {
			if val.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%s: line %d: a mapping of %s's settings (or nothing, for the defaults)", p, val.Line, name)
			}
			if err := checkKeys(val, reflect.TypeOf(cfg), p); err != nil {
				return nil, err
			}
			if err := val.Decode(cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
		}
		if v, ok := cfg.(mech.Validator); ok {
			if err := v.Validate(info); err != nil {
				return nil, fmt.Errorf("%s.%w", p, err)
			}
		}
		out = append(out, Mechanism{Name: name, Config: cfg})
	}
	return out, nil
}
