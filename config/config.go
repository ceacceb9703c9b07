package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"reflect"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
	"gopkg.in/yaml.v3"
)

// Config is the whole file.
type Config struct {
	// SwitchID identifies the switch in the frames it emits (1..65535, default 1).
	SwitchID int `yaml:"switch_id"`
	// Timescale is the fabric's time dilation K (default 1; 1 to
	// units.MaxTimescale): the file gives rates and times in the fabric's
	// units, and the switch runs every rate divided by K and every time
	// multiplied by K, except the wall-clock fields (tagged
	// `timescale:"wall"`). Parse has applied it: every other field holds
	// the value this machine runs (doc.go, "Timescale").
	Timescale units.Timescale `yaml:"timescale"`
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
	Spin units.Duration `yaml:"spin" timescale:"wall"`
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
	// Realtime runs the workers under SCHED_FIFO at this priority (1 to
	// 99; default 0: ordinary threads at Nice). A woken worker then runs
	// before every ordinary thread of the machine (the hosts' senders, a
	// busy loop), so its timers keep time on a loaded machine: what a
	// switch that stands for hardware wants when it shares CPUs with
	// hosts. A worker sleeps when idle and spins at most spin at a time,
	// and the kernel keeps 5% of every CPU for ordinary threads
	// (sched_rt_runtime_us), so the machine is not starved. A realtime
	// worker does not spin (spin is ignored): SCHED_FIFO does not share a
	// CPU between threads of one priority, so a spinning worker would keep
	// other switches' workers off it. Every other thread of gswitchd runs
	// under SCHED_FIFO one priority lower (the runtime's, the metrics' and
	// the control socket's): a worker back from a system call can wait for
	// one of them, which must not wait behind ordinary threads, and a
	// worker must not wait behind a scrape (dataplane.realtimeProcess). Not with
	// busy_poll, nice or slice (they are for ordinary threads).
	Realtime int `yaml:"realtime"`
	// Slice is the workers' scheduler time slice (Linux 6.12 and later,
	// e.g. 100us; 0 = the kernel's default, which sched_getattr reads as
	// 1.4 ms on our 2-CPU test machine). A shorter slice gives a woken
	// worker an earlier deadline, so the kernel runs it at once instead of
	// after the running task's slice.
	Slice units.Duration `yaml:"slice" timescale:"wall"`
	// CatchUp is the line time a shaped port may make up at once after its
	// worker ran late while frames waited, e.g. 5ms (default
	// DefaultCatchUp; 0 = none: the port loses the time). A real line keeps
	// sending from its NIC's ring while the CPU is away; a worker on a busy
	// machine may be away for milliseconds (docs/results.md).
	CatchUp units.Duration `yaml:"catchup" timescale:"wall"`
	// Buffer is the packet buffer all egress queues share, e.g. 16MB (0: half the UMEM).
	Buffer units.Size `yaml:"buffer"`
	// Alpha is the dynamic threshold factor: a queue may hold Alpha x the free buffer (default 1; 0 turns it off).
	Alpha float64 `yaml:"alpha"`
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
}

// Route is a static route: a prefix and its next hops, each on the subnet
// of an L3 port (RouteTable resolves them to ports).
type Route struct {
	Prefix netip.Prefix `yaml:"prefix"`
	Via    []netip.Addr `yaml:"via"`
}

// Neighbor is a static neighbor entry: an address on the subnet of an L3
// port and its MAC.
type Neighbor struct {
	IP  netip.Addr `yaml:"ip"`
	MAC MAC        `yaml:"mac"`
}

// MACTable configures the learning table.
type MACTable struct {
	// Size is the number of slots (default 4096).
	Size int `yaml:"size"`
	// Aging forgets an address not seen for this long (default 300s).
	Aging units.Duration `yaml:"aging" timescale:"wall"`
	// PortLimit is the most MACs learnt on one port (0: half the table; -1: no limit).
	PortLimit int `yaml:"port_limit"`
	// MoveHold is how long after moving to another port a MAC may not move again (default 1s; 0s: no hold).
	MoveHold units.Duration `yaml:"move_hold" timescale:"wall"`
}

// Port is one switch port.
type Port struct {
	// Name labels the port in metrics and logs (default: the interface name).
	Name string `yaml:"name"`
	// Interface is the Linux network interface.
	Interface string `yaml:"interface"`
	// Rate is the egress line rate, e.g. 100Mbit or 10Gbit; 0 = unlimited.
	Rate units.Rate `yaml:"rate"`
	// Burst is the shaper's bucket depth, e.g. 16KB; 0 = max(2 frames, 1 ms of rate).
	Burst units.Size `yaml:"burst"`
	// Buffer is the egress buffer, e.g. 1MB (default: the scheduler's
	// default for the port's rate and RTT, else DefaultBuffer).
	Buffer units.Size `yaml:"buffer"`
	// BufferPackets is the most packets the egress buffer holds (0:
	// min(buffer/128, 8192)). Raise it for a buffer of more than 8192
	// full frames (12 MB), which the default would cap.
	BufferPackets int `yaml:"buffer_packets" range:"0,4194304" hint:"0 = min(buffer/128, 8192); up to 4194304, the most frames"`
	// Scheduler is the egress scheduler, one registered in package sched
	// (default sched.DefaultScheduler).
	Scheduler string `yaml:"scheduler"`
	// Queues is the number of egress queues (default sched.DefaultQueues;
	// one-queue schedulers have one, whatever the file says).
	Queues int `yaml:"queues"`
	// QueueBuffer is each egress queue's static limit, e.g. 256KB (0: the port's buffer).
	QueueBuffer units.Size `yaml:"queue_buffer"`
	// Quantum is the DRR/SFQ quantum in bytes (default: the scheduler's, sched.Spec.Quantum).
	Quantum int `yaml:"quantum"`
	// Classify picks prio's and drr's queue: dscp (default), pcp, or queue
	// (the queue a mechanism chose; forced where one does).
	Classify sched.ClassifyBy `yaml:"classify"`
	// DSCPMap overrides the queue of individual DSCP values (default: queue 7 - DSCP>>3).
	DSCPMap map[int]int `yaml:"dscp_map"`
	// PCPMap gives the queue of each 802.1p priority when classify is pcp (default: queue 7 - PCP).
	PCPMap map[int]int `yaml:"pcp_map"`
	// RxQueues is the number of rx queues to bind (0 or absent = all of the interface's).
	RxQueues int `yaml:"rx_queues"`
	// Role is host (default: faces end hosts) or fabric (faces another switch):
	// control frames of the mechanisms are accepted only on fabric ports.
	Role mech.Role `yaml:"role"`
	// SourceGuard checks the source address of what a host port receives:
	// off, subnet (the port's subnets: L3 ports) or binding (the addresses
	// bound to the port). Default: subnet on an L3 host port, off on an L2
	// host port and on fabric ports (docs/operations.md, "Source guard").
	SourceGuard SourceGuard `yaml:"source_guard"`
	// Uplink says the port faces a higher tier of the fabric (a leaf's port
	// toward a spine). Mechanisms whose pauses must follow up-down routing
	// take it as their default (a mechanism's uplink key); package topo sets it
	// from the tiers of the topology.
	Uplink bool `yaml:"uplink"`
	// MAC is the port's own address, the source of frames the switch emits
	// (default: the interface's MAC).
	MAC MAC `yaml:"mac"`
	// RTT is the port's base round-trip time (default 200us), for schedulers
	// whose default buffer is sized by it.
	RTT units.Duration `yaml:"rtt"`
	// Addrs makes the port an L3 (routed) port: the switch's addresses on
	// the port's subnets, e.g. [10.1.1.254/24]. It answers ARP (and ping)
	// for them; frames arriving on the port are routed, not switched.
	Addrs PortAddrs `yaml:"addr"`
	// Delay is the one-way propagation delay of the link the port sends on,
	// e.g. 50us: every frame is held after the shaper until it is due.
	Delay units.Duration `yaml:"delay"`
	// RxDelay is the delay of the link toward the switch, for a link whose
	// other end cannot delay what it sends (a host): frames received are held
	// that long before the pipeline sees them.
	RxDelay units.Duration `yaml:"rx_delay"`
	// Mechanisms enables congestion-control mechanisms on the port, each by
	// its registered name with its own keys, {NAME: {KEY: VALUE}}; their
	// hooks run in the order the mechanisms declare (mech.Order), not the
	// order listed.
	Mechanisms Mechanisms `yaml:"mechanisms"`
}

// Bounds.
const (
	MaxUMEM  = 8 << 30 // bytes of UMEM (frames x frame_size)
	MaxBurst = 1 << 32 // bytes of a shaper's bucket
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

// Parse decodes YAML over Defaults, puts the fabric's values on this
// machine's clock (the timescale key) and validates the result.
func Parse(b []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, errors.New("empty config: it needs at least a ports: list")
	}
	c := Defaults()
	if err := decode(root.Content[0], reflect.ValueOf(&c).Elem(), ""); err != nil {
		return nil, err
	}
	c.applyTimescale()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
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

// Classifier is the port's classification for the prio and drr
// schedulers: the default map of its classify key, with dscp_map or
// pcp_map over it.
func (p *Port) Classifier() sched.Classifier {
	switch p.Classify {
	case sched.ByQueue:
		c := sched.DefaultClassifier(p.Queues)
		c.By = sched.ByQueue
		return c
	case sched.ByPCP:
		c := sched.DefaultPCPClassifier(p.Queues)
		for k, v := range p.PCPMap {
			c.Map[k] = uint8(v)
		}
		return c
	}
	c := sched.DefaultClassifier(p.Queues)
	for k, v := range p.DSCPMap {
		c.Map[k] = uint8(v)
	}
	return c
}

// Changes lists the top-level keys whose values differ in o, ports
// aside (compare those with Port.Changes).
func (c *Config) Changes(o *Config) []string {
	return changes(reflect.ValueOf(*c), reflect.ValueOf(*o), "ports")
}

// Changes lists the keys of the port whose values differ in o, except
// those in skip.
func (p *Port) Changes(o *Port, skip ...string) []string {
	return changes(reflect.ValueOf(*p), reflect.ValueOf(*o), skip...)
}

// changes lists the YAML keys of two structs of one type whose values
// differ (by value: both were decoded and filled in alike).
func changes(a, b reflect.Value, skip ...string) []string {
	var out []string
	t := a.Type()
	for i := 0; i < t.NumField(); i++ {
		name := yamlKey(t.Field(i))
		if name == "" || contains(skip, name) {
			continue
		}
		if fa, fb := a.Field(i), b.Field(i); !bothEmpty(fa, fb) && !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			out = append(out, name)
		}
	}
	return out
}

// bothEmpty says a and b are lists or mappings with nothing in them ([]
// and an absent key are the same).
func bothEmpty(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Slice, reflect.Map:
		return a.Len() == 0 && b.Len() == 0
	}
	return false
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
